"""Reproductions of the seed papers' experiments, one folder per study under `experiments/`.

Each study folder holds its scenario file(s), `published.toml` (the figures the papers print and
the qualitative claims they make) and a README. `run_study` runs the scenarios (or a reduced
`quick` version), reduces the results to a long table of our numbers (`variant`, `metric`,
`setting`, `scheduler`, `value`; the reductions are in `mpsched.experiments.metrics`), and
`compare` sets them beside the published figures and checks every claim against our numbers:
a claim is data in `published.toml`, evaluated here, never a stored verdict.

Claims (``[[claim]]`` in `published.toml`), each on one `metric`:

* ``order = [a, b, ...]``: the values increase along the list (``strict = false``: or stay
  equal; ``tolerance``: relative slack allowed at each step);
* ``similar = [a, b, ...]``: largest / smallest - 1 stays within ``tolerance``;
* ``lowest = a`` / ``highest = a`` with ``among = [...]``.

``at`` says where: ``"each"`` (default; every setting where all the named schedulers have a
number must satisfy it), ``"mean"`` (their means over those settings), or a list of settings.
``magnitude`` (a fraction ``stat(a) / stat(b) - 1``, one or one per setting of ``at``) and
``magnitude_tolerance`` state the size the paper gives; ``scale = "difference"`` compares a
metric that changes sign by difference. `evaluate_claim` here judges a claim on our aggregate
numbers; `mpsched.experiments.claims` judges it on every repetition with an interval (what
`mpsched reproduce` reports).

``[[setup]]`` (``parameter``, ``paper``, ``source``, ``ours``, ``why``; optional
``sensitivity``: what the result does when it changes, from `mpsched.experiments.sensitivity`)
lists the setup beside the paper's, for the report.

Figures beyond one per table: ``[[series]]`` (``source``, ``what``, ``quantity``: a column of the
study's `series`, ``unit``, ``schedulers``, ``labels``) draws our time series per scheduler and
path, with the values the paper states as ``[[series.mark]]`` (``scheduler``, ``from_s``,
``to_s``, ``value``, ``text``: a level over a time span); ``[[distribution]]`` (``source``,
``what``, ``metric``, ``unit``, ``table``: the source of the table whose means are drawn on it)
draws the samples of a metric as box plots per setting and scheduler.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import polars as pl

from mpsched.experiments import datacenter as dc
from mpsched.experiments import metrics as em
from mpsched.experiments import samples as es

__all__ = ["ROOT", "OURS_COLUMNS", "Study", "STUDIES", "load_published", "check_published", "scenarios_of", "run_study", "run_files", "ours_of",
           "compare", "evaluate_claim"]

#: The study folders (next to `scenarios/` in the repository).
ROOT = Path(__file__).resolve().parents[3] / "experiments"

OURS_COLUMNS = ("variant", "metric", "setting", "scheduler", "value")


@dataclass(frozen=True)
class Study:
    """One reproduction: its folder's scenario files, how to reduce their results, and what
    `--quick` changes in each file (dotted field -> value; list items by index, `workload.0.stop`)."""

    name: str
    files: tuple[str, ...]
    extract: Callable[[dict[str, Any]], pl.DataFrame]
    quick: dict[str, dict[str, Any]] = field(default_factory=dict)
    quick_files: tuple[str, ...] | None = None  # the files --quick runs (default: all)
    # the study's own figures from (published, samples): (title, caption, matplotlib Figure)s,
    # and the metrics they draw (the report's generic bars leave those out)
    figures: Callable[[dict[str, Any], pl.DataFrame], list[tuple[str, str, Any]]] | None = None
    figure_metrics: tuple[str, ...] = ()
    # time series for the `[[series]]` figures of published.toml (`metrics.bwm_series`'s columns)
    series: Callable[[dict[str, Any]], pl.DataFrame] | None = None

    @property
    def folder(self) -> Path:
        return ROOT / self.name

    @property
    def samples(self) -> Callable[[dict[str, Any]], pl.DataFrame]:
        """The reduction to raw samples (`samples.SAMPLE_COLUMNS`) matching `extract`."""
        return _SAMPLES[self.extract]


_SAMPLES = {em.cfs_fct: es.cfs_fct, em.bwm_bufferbloat: es.bwm_bufferbloat, dc.ours: dc.samples,
            em.paasch_aggregation: es.paasch_aggregation, em.app_delay: es.app_delay}
_CFS_QUICK = {"seed": [1], "paths.0.rate": ["20Mbit"], "workload.repeat": 4}
_DC_FILES = ("table2.toml", "query_nobg.toml", "query.toml", "short_message.toml")
STUDIES: dict[str, Study] = {s.name: s for s in (
    Study("cfs_short_flows", ("scenario.toml", "reorder.toml"), em.cfs_fct,
          {"scenario.toml": {**_CFS_QUICK, "workload.size": ["64KiB", "1MiB"], "duration": "20s"}},
          quick_files=("scenario.toml",)),
    Study("cfs_large_flows", ("scenario.toml", "reorder.toml"), em.cfs_fct,
          {"scenario.toml": {**_CFS_QUICK, "workload.size": ["4MiB"], "workload.repeat": 2, "duration": "30s"}},
          quick_files=("scenario.toml",)),
    Study("cfs_web", ("scenario.toml", "reorder.toml"), em.cfs_fct,
          {"scenario.toml": {"seed": [1], "paths.0.rate": ["20Mbit"], "workload.0.repeat": 3, "workload.1.repeat": 3,
                             "workload.2.repeat": 3, "workload.3.repeat": 3}}, quick_files=("scenario.toml",)),
    Study("bwm_bufferbloat", ("scenario.toml", "queue_10mb.toml", "bwm_common_rtt.toml"), em.bwm_bufferbloat,
          {"scenario.toml": {"seed": [1]}}, quick_files=("scenario.toml",), series=em.bwm_series),
    Study("datacenter_short_flows", _DC_FILES, dc.ours,
          {f: {"seed": [1], "duration": "3s", "topology.interfaces": [4], "workload.0.stop": "2.5s"}
           | ({} if f == "query_nobg.toml" else {"workload.1.stop": "2.5s"}) for f in _DC_FILES},
          figures=dc.figures, figure_metrics=dc.FIGURE_METRICS),
    Study("paasch_aggregation", ("fixed.toml", "fixed_tcp.toml", "sweep_low.toml", "sweep_low_tcp.toml",
                                 "sweep_high.toml", "sweep_high_tcp.toml"), em.paasch_aggregation,
          {"fixed.toml": {"seed": [1], "duration": "20s"}, "fixed_tcp.toml": {"seed": [1], "duration": "20s"},
           **{f: {"design.samples": 4, "duration": "8s"} for f in ("sweep_low.toml", "sweep_low_tcp.toml")}},
          quick_files=("fixed.toml", "fixed_tcp.toml", "sweep_low.toml", "sweep_low_tcp.toml")),
    Study("paasch_app_delay", ("scenario.toml",), em.app_delay,
          {"scenario.toml": {"seed": [1], "duration": "12s", "workload.stop": "10s"}}),
)}



# --- published figures and claims ---------------------------------------------------------------


def load_published(name: str) -> dict[str, Any]:
    """A study's `published.toml`, checked (`ValueError` naming the problem if it is not well formed)."""
    data = tomllib.loads((ROOT / name / "published.toml").read_text())
    errors = check_published(data)
    if errors:
        raise ValueError(f"experiments/{name}/published.toml: " + "; ".join(errors))
    return data


def check_published(data: dict[str, Any]) -> list[str]:
    """What is wrong with a parsed `published.toml` (empty when it is well formed)."""
    errors = []
    if not isinstance(data.get("study"), dict) or not data["study"].get("papers"):
        errors.append("[study] needs `papers` (which papers the figures come from)")
    for i, t in enumerate(data.get("table", [])):
        where = f"table[{i}]"
        for key in ("source", "what", "metric", "unit", "settings", "values"):
            if not t.get(key):
                errors.append(f"{where}: missing {key}")
        if not isinstance(t.get("values"), dict):
            continue
        for sched, vals in t["values"].items():
            if not isinstance(vals, list) or len(vals) != len(t.get("settings", [])):
                errors.append(f"{where}.values.{sched}: one number per setting ({len(t.get('settings', []))})")
            elif not all(isinstance(v, (int, float)) for v in vals):
                errors.append(f"{where}.values.{sched}: numbers only")
    for i, c in enumerate(data.get("claim", [])):
        where = f"claim[{i}]"
        for key in ("text", "source", "metric"):
            if not c.get(key):
                errors.append(f"{where}: missing {key}")
        kinds = [k for k in ("order", "similar", "lowest", "highest") if k in c]
        if len(kinds) != 1:
            errors.append(f"{where}: exactly one of order, similar, lowest, highest")
        elif kinds[0] in ("order", "similar") and (not isinstance(c[kinds[0]], list) or len(c[kinds[0]]) < 2):
            errors.append(f"{where}.{kinds[0]}: at least two schedulers")
        elif kinds[0] in ("lowest", "highest") and c[kinds[0]] not in c.get("among", []):
            errors.append(f"{where}: `among` must list the {kinds[0]} one")
        at = c.get("at", "each")
        if not (at in ("each", "mean") or (isinstance(at, list) and at)):
            errors.append(f"{where}.at: \"each\", \"mean\" or a list of settings")
        m = c.get("magnitude")
        if m is not None and not (isinstance(m, (int, float)) or (
                isinstance(m, list) and isinstance(at, list) and len(m) == len(at)
                and all(isinstance(x, (int, float)) for x in m))):
            errors.append(f"{where}.magnitude: a number, or one per setting of `at`")
        if not isinstance(c.get("magnitude_tolerance", 0.5), (int, float)) or c.get("magnitude_tolerance", 0.5) <= 0:
            errors.append(f"{where}.magnitude_tolerance: a positive number (0.5: within half the paper's size)")
        if c.get("scale", "ratio") not in ("ratio", "difference"):
            errors.append(f"{where}.scale: \"ratio\" or \"difference\"")
    tables = {t.get("source") for t in data.get("table", [])}
    for i, f in enumerate(data.get("series", [])):
        for key in ("source", "what", "quantity", "unit"):
            if not f.get(key):
                errors.append(f"series[{i}]: missing {key}")
        for j, m in enumerate(f.get("mark", [])):
            if not all(isinstance(m.get(k), (int, float)) for k in ("from_s", "to_s", "value")) or not m.get("text"):
                errors.append(f"series[{i}].mark[{j}]: needs from_s, to_s, value (numbers) and text")
    for i, d in enumerate(data.get("distribution", [])):
        for key in ("source", "what", "metric", "unit"):
            if not d.get(key):
                errors.append(f"distribution[{i}]: missing {key}")
        if d.get("table") and d["table"] not in tables:
            errors.append(f"distribution[{i}].table: no [[table]] with source {d['table']!r}")
    for i, s in enumerate(data.get("setup", [])):
        missing = [k for k in ("parameter", "paper", "source", "ours", "why") if not isinstance(s.get(k), str)]
        if missing:
            errors.append(f"setup[{i}]: missing {', '.join(missing)} (text; `why` may be empty)")
        if not isinstance(s.get("sensitivity", ""), str):
            errors.append(f"setup[{i}].sensitivity: text (what the result does when the parameter changes)")
    return errors


# --- running --------------------------------------------------------------------------------------


def _set_dotted(data: Any, key: str, value: Any) -> None:
    parts = key.split(".")
    for p in parts[:-1]:
        data = data[int(p)] if isinstance(data, list) else data.setdefault(p, {})
    last = parts[-1]
    if isinstance(data, list):
        data[int(last)] = value
    else:
        data[last] = value


def scenarios_of(study: Study, quick: bool = False) -> dict[str, Any]:
    """The validated scenarios of a study (file name -> `Scenario`), reduced for `quick`."""
    from mpsched.scenario import Scenario

    out = {}
    for f in (study.quick_files or study.files) if quick else study.files:
        path = study.folder / f
        data = tomllib.loads(path.read_text())
        for key, value in (study.quick.get(f, {}) if quick else {}).items():
            _set_dotted(data, key, value)
        out[f] = Scenario.from_dict(data, base_dir=study.folder, source=str(path))
    return out


def run_study(name: str, out: str | Path, *, quick: bool = False, jobs: int = 1,
              on_file: Callable[[str, int], None] | None = None) -> pl.DataFrame:
    """Run every scenario of study `name` into `out/<file stem>/` and return our numbers
    (`OURS_COLUMNS`). Runs already stored by the same code version are reused."""
    return ours_of(name, run_files(name, out, quick=quick, jobs=jobs, on_file=on_file))


def run_files(name: str, out: str | Path, *, quick: bool = False, jobs: int = 1,
              on_file: Callable[[str, int], None] | None = None, client: Any = None) -> dict[str, Any]:
    """Run every scenario of study `name` into `out/<file stem>/` (on a Dask `client` when
    given): its `Results` by file stem."""
    from mpsched.study import plan_stream, run

    results = {}
    for f, scenario in scenarios_of(STUDIES[name], quick).items():
        tasks = plan_stream(scenario)
        if on_file:
            on_file(f, len(tasks))
        results[Path(f).stem] = run(scenario, Path(out) / Path(f).stem, jobs=jobs, tasks=tasks, client=client)
    return results


def ours_of(name: str, results: dict[str, Any]) -> pl.DataFrame:
    """Our numbers (`OURS_COLUMNS`) from a study's results by file stem."""
    ours = STUDIES[name].extract(results)
    return ours.select(OURS_COLUMNS) if not ours.is_empty() else pl.DataFrame(schema=dict.fromkeys(OURS_COLUMNS, pl.String))


# --- comparing ------------------------------------------------------------------------------------


def _value(ours: pl.DataFrame, variant: str, metric: str, setting: str, scheduler: str) -> float | None:
    hit = ours.filter((pl.col("variant") == variant) & (pl.col("metric") == metric)
                      & (pl.col("setting") == setting) & (pl.col("scheduler") == scheduler))
    return None if hit.is_empty() else float(hit.get_column("value")[0])


def _variants(ours: pl.DataFrame, metrics: set[str]) -> list[str]:
    """The variants that have a number for a published metric (each gets an "ours" column)."""
    rows = ours.filter(pl.col("metric").is_in(list(metrics))) if not ours.is_empty() else ours
    return rows.get_column("variant").unique(maintain_order=True).to_list() if not rows.is_empty() else [""]


def evaluate_claim(claim: dict[str, Any], ours: pl.DataFrame, variant: str) -> tuple[str, str]:
    """("holds" | "fails" | "no data", detail) for one claim on one variant of our numbers."""
    metric = claim["metric"]
    names = claim.get("order") or claim.get("similar") or claim.get("among")
    rows = ours.filter((pl.col("variant") == variant) & (pl.col("metric") == metric))
    at = claim.get("at", "each")
    settings = at if isinstance(at, list) else rows.get_column("setting").unique(maintain_order=True).to_list()
    points: list[tuple[str, dict[str, float]]] = []
    for s in settings:
        vals = {n: _value(ours, variant, metric, s, n) for n in names}
        if all(v is not None for v in vals.values()):
            points.append((s, vals))
    if not points:
        return "no data", f"no {metric} for {', '.join(names)}"
    if at == "mean":
        points = [("mean", {n: sum(p[1][n] for p in points) / len(points) for n in names})]
    failed = [(s, v) for s, v in points if not _claim_holds(claim, v)]
    show = lambda v: ", ".join(f"{n} {_fmt(x)}" for n, x in v.items())  # noqa: E731
    if failed:
        s, v = failed[0]
        return "fails", f"at {len(failed)} of {len(points)}; {s}: {show(v)}"
    s, v = points[-1]
    return "holds", f"at {len(points)} of {len(points)}; {s}: {show(v)}"


def _claim_holds(claim: dict[str, Any], v: dict[str, float]) -> bool:
    tol = float(claim.get("tolerance", 0.0))
    if "order" in claim:
        xs = [v[n] for n in claim["order"]]
        strict = claim.get("strict", True)
        return all((a < b * (1 + tol)) if strict else (a <= b * (1 + tol)) for a, b in zip(xs, xs[1:]))
    if "similar" in claim:
        lo, hi = min(v.values()), max(v.values())
        return hi <= lo * (1 + tol) if lo > 0 else hi == lo
    key = "lowest" if "lowest" in claim else "highest"
    best = claim[key]
    others = [x for n, x in v.items() if n != best]
    return all(v[best] < x for x in others) if key == "lowest" else all(v[best] > x for x in others)


def compare(published: dict[str, Any], ours: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(figures, claims, extra): each published figure beside our number for every variant; every
    claim's verdict per variant; and our numbers that have no published counterpart."""
    metrics = {t["metric"] for t in published.get("table", [])} | {c["metric"] for c in published.get("claim", [])}
    variants = _variants(ours, metrics)
    col = {v: f"ours ({v})" if v else "ours" for v in variants}
    fig_rows, used = [], set()
    for t in published.get("table", []):
        for sched, vals in t["values"].items():
            for setting, pub in zip(t["settings"], vals):
                row = {"source": t["source"], "metric": t["metric"], "setting": setting,
                       "scheduler": t.get("labels", {}).get(sched, sched), "published": float(pub)}
                for v in variants:
                    row[col[v]] = _value(ours, v, t["metric"], setting, sched)
                    used.add((v, t["metric"], setting, sched))
                row["unit"] = t["unit"] + (" (approx.)" if t.get("approximate") else "")
                fig_rows.append(row)
    claim_rows = []
    for c in published.get("claim", []):
        row = {"claim": c["text"], "source": c["source"]}
        for v in variants:
            verdict, detail = evaluate_claim(c, ours, v)
            row[col[v]] = f"{verdict}: {detail}"
        claim_rows.append(row)
    keys = ["variant", "metric", "setting", "scheduler"]
    extra = ours.join(pl.DataFrame(sorted(used), schema=keys, orient="row"), on=keys, how="anti") if used else ours
    return pl.DataFrame(fig_rows), pl.DataFrame(claim_rows), extra


def _fmt(x: float | None) -> str:
    if x is None:
        return "–"
    return f"{x:.4g}" if abs(x) < 1000 else f"{x:.0f}"
