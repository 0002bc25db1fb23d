"""The reproduction studies of experiments/: their files load, their published figures are well
formed, claims are judged from the numbers, and `mpsched reproduce --quick` runs end to end."""

from __future__ import annotations

import tomllib

import polars as pl
import pytest
from typer.testing import CliRunner

import mpsched
from mpsched import experiments as ex
from mpsched.cli import app
from mpsched.study import plan


def test_every_study_folder_is_registered_and_complete():
    folders = sorted(p.name for p in ex.ROOT.iterdir() if p.is_dir())
    assert folders == sorted(ex.STUDIES)
    for name, study in ex.STUDIES.items():
        assert (study.folder / "README.md").is_file(), name
        assert (study.folder / "published.toml").is_file(), name
        on_disk = sorted(p.name for p in study.folder.glob("*.toml") if p.name != "published.toml")
        assert on_disk == sorted(study.files), f"{name}: every scenario file is run"


@pytest.mark.parametrize("name", sorted(ex.STUDIES))
def test_study_scenarios_validate_full_and_quick(name):
    study = ex.STUDIES[name]
    full = ex.scenarios_of(study)
    quick = ex.scenarios_of(study, quick=True)
    n_full = sum(len(plan(s)) for s in full.values())
    n_quick = sum(len(plan(s)) for s in quick.values())
    assert n_full > 0 and 0 < n_quick <= n_full
    # every quick override names a field the file has (a typo would silently change nothing)
    for f, overrides in study.quick.items():
        data = tomllib.loads((study.folder / f).read_text())
        for key in overrides:
            node = data
            for part in key.split(".")[:-1]:
                node = node[int(part)] if isinstance(node, list) else node[part]
            last = key.split(".")[-1]
            assert (int(last) < len(node)) if isinstance(node, list) else (last in node), f"{name}/{f}: {key}"


def _names_run(study) -> set[str]:
    """Schedulers and protocols the study's scenario files sweep."""
    names = set()
    for f in study.files:
        data = tomllib.loads((study.folder / f).read_text())
        conns = data.get("connection", [])
        for c in conns if isinstance(conns, list) else [conns]:
            for key in ("scheduler", "protocol"):
                v = c.get(key, [])
                names |= set(v if isinstance(v, list) else [v])
    return names


@pytest.mark.parametrize("name", sorted(ex.STUDIES))
def test_published_entries_are_well_formed_and_name_what_we_run(name):
    pub = ex.load_published(name)  # raises on a malformed file
    assert pub.get("table") or pub.get("claim"), "a study compares something"
    run = _names_run(ex.STUDIES[name])
    for t in pub.get("table", []):
        assert set(t["values"]) <= run, f"{t['source']}: a published row for a scheduler we do not run"
    for c in pub.get("claim", []):
        named = c.get("order") or c.get("similar") or c.get("among")
        assert set(named) <= run, f"{c['text']}: names a scheduler we do not run"


def test_malformed_published_files_are_refused():
    good = {"study": {"papers": ["x"]}, "table": [{"source": "T1", "what": "fct", "metric": "m", "unit": "s",
                                                   "settings": ["a", "b"], "values": {"minrtt": [1.0, 2.0]}}],
            "claim": [{"text": "t", "source": "s", "metric": "m", "order": ["a", "b"]}]}
    assert ex.check_published(good) == []
    short = {**good, "table": [{**good["table"][0], "values": {"minrtt": [1.0]}}]}
    assert any("one number per setting" in e for e in ex.check_published(short))
    two_kinds = {**good, "claim": [{**good["claim"][0], "similar": ["a", "b"]}]}
    assert any("exactly one of" in e for e in ex.check_published(two_kinds))
    no_papers = {**good, "study": {}}
    assert ex.check_published(no_papers)


def _ours(rows):
    return pl.DataFrame(rows, schema=list(ex.OURS_COLUMNS), orient="row")


def test_claims_are_judged_from_the_numbers():
    ours = _ours([("", "fct", "64K", "cfs", 1.0), ("", "fct", "64K", "minrtt", 2.0), ("", "fct", "64K", "ecf", 3.0),
                  ("", "fct", "1M", "cfs", 4.5), ("", "fct", "1M", "minrtt", 4.0), ("", "fct", "1M", "ecf", 4.1)])
    order = {"metric": "fct", "order": ["cfs", "minrtt", "ecf"]}
    assert ex.evaluate_claim(order, ours, "")[0] == "fails"              # 1M breaks it
    assert ex.evaluate_claim({**order, "at": ["64K"]}, ours, "")[0] == "holds"
    assert ex.evaluate_claim({**order, "at": "mean"}, ours, "")[0] == "holds"  # 2.75 < 3.0 < 3.55
    assert ex.evaluate_claim({"metric": "fct", "similar": ["minrtt", "ecf"], "tolerance": 0.05, "at": ["1M"]},
                             ours, "")[0] == "holds"
    assert ex.evaluate_claim({"metric": "fct", "similar": ["minrtt", "ecf"], "tolerance": 0.01, "at": ["1M"]},
                             ours, "")[0] == "fails"
    assert ex.evaluate_claim({"metric": "fct", "lowest": "cfs", "among": ["cfs", "ecf"]}, ours, "")[0] == "fails"
    assert ex.evaluate_claim({"metric": "fct", "highest": "ecf", "among": ["cfs", "ecf"], "at": ["64K"]},
                             ours, "")[0] == "holds"
    assert ex.evaluate_claim({"metric": "other", "order": ["cfs", "ecf"]}, ours, "")[0] == "no data"


def test_a_tie_does_not_satisfy_a_strict_order():
    ours = _ours([("", "m", "s", "a", 1.0), ("", "m", "s", "b", 1.0)])
    assert ex.evaluate_claim({"metric": "m", "order": ["a", "b"]}, ours, "")[0] == "fails"
    assert ex.evaluate_claim({"metric": "m", "order": ["a", "b"], "strict": False}, ours, "")[0] == "holds"


def test_reproduce_list_and_unknown_study():
    r = CliRunner().invoke(app, ["reproduce", "--list"])
    assert r.exit_code == 0, r.output
    for name in ex.STUDIES:
        assert name in r.output
    r = CliRunner().invoke(app, ["reproduce", "no_such_study"])
    assert r.exit_code == 2 and "unknown study" in r.output


VERDICTS = ("holds", "magnitude off", "tie", "fails", "no data")


def _claim_lines(output: str, published: dict) -> list[str]:
    return [c["text"][:30] for c in published["claim"] if c["text"][:30] not in output]


def test_reproduce_quick_cfs_short_flows_prints_our_numbers(tmp_path):
    out = tmp_path / "cfs"
    r = CliRunner().invoke(app, ["reproduce", "cfs_short_flows", "--quick", "-o", str(out), "--jobs", "2"])
    assert r.exit_code == 0, r.output
    # our number, computed here from the stored flows, is in the printed table
    flows = mpsched.load(out / "scenario").flows.filter(pl.col("completed"))
    assert flows.height > 0
    for sched in ("minrtt", "ecf", "cfs"):
        mean_s = flows.filter((pl.col("scheduler") == sched) & (pl.col("size") == "1MiB"))["fct_ns"].mean() / 1e9
        assert f"{mean_s:.3f}" in r.output, sched
    assert "5.440" in r.output and "1.230" in r.output     # the published Table 2 beside them
    assert not _claim_lines(r.output, ex.load_published("cfs_short_flows"))
    assert sum(r.output.count(f"{v}:") for v in VERDICTS) >= 4  # every claim judged
    assert (out / "report.html").is_file() and (out / "report.md").is_file()  # `reproduce NAME -o DIR`


def test_reproduce_quick_bwm_bufferbloat_prints_our_numbers(tmp_path):
    out = tmp_path / "bwm"
    r = CliRunner().invoke(app, ["reproduce", "bwm_bufferbloat", "--quick", "-o", str(out), "--jobs", "2"])
    assert r.exit_code == 0, r.output
    flows = mpsched.load(out / "scenario").flows
    assert sorted(flows["scheduler"].to_list()) == ["bwm", "minrtt+rp", "roundrobin"]
    for total in flows["bytes_delivered"].to_list():
        assert f"{total / 1e6:.3f}" in r.output
    assert "1056" in r.output and "3449" in r.output
    assert sum(r.output.count(f"{v}:") for v in VERDICTS) == len(ex.load_published("bwm_bufferbloat")["claim"])
    # the verdict follows the numbers: total traffic ordered RR < LowRTT < BWM or not (one seed:
    # one run per scheduler, a point without an interval; in order, the size is then checked
    # against Table 1's)
    by = dict(zip(flows["scheduler"], flows["bytes_delivered"]))
    expect = ("holds", "magnitude off") if by["roundrobin"] < by["minrtt+rp"] < by["bwm"] else ("fails",)
    line = next(ln for ln in r.output.splitlines() if "Round-robin < Low-RTT" in ln)
    assert any(f"{e}:" in line for e in expect) and "deterministic: no interval" in r.output


@pytest.mark.parametrize("name", sorted(set(ex.STUDIES) - {"cfs_short_flows", "bwm_bufferbloat"}))
def test_every_other_study_runs_quick_and_compares(name, tmp_path):
    """The reductions of every study run on its quick results: published figures get our numbers
    and claims get verdicts (the two studies above are checked through the command)."""
    ours = ex.run_study(name, tmp_path / name, quick=True, jobs=2)
    assert ours.height > 0 and ours["value"].is_finite().all()
    figures, claims, _ = ex.compare(ex.load_published(name), ours)
    ours_cols = [c for c in figures.columns if c.startswith("ours")]
    if not figures.is_empty():
        assert figures.select(pl.any_horizontal(pl.col(ours_cols).is_not_null())).to_series().any()
    verdicts = [v.split(":")[0] for c in claims.columns if c.startswith("ours") for v in claims[c]]
    assert verdicts and set(verdicts) <= {"holds", "fails", "no data"} and set(verdicts) - {"no data"}


def test_malformed_magnitudes_and_setup_rows_are_refused():
    claim = {"text": "t", "source": "s", "metric": "m", "order": ["a", "b"], "at": ["x", "y"]}
    base = {"study": {"papers": ["x"]}}
    assert ex.check_published({**base, "claim": [{**claim, "magnitude": [-0.1, -0.2]}]}) == []
    assert any("magnitude" in e for e in ex.check_published({**base, "claim": [{**claim, "magnitude": [-0.1]}]}))
    assert any("magnitude_tolerance" in e
               for e in ex.check_published({**base, "claim": [{**claim, "magnitude_tolerance": 0}]}))
    row = {"parameter": "p", "paper": "1", "source": "T1", "ours": "1", "why": ""}
    assert ex.check_published({**base, "claim": [claim], "setup": [row]}) == []
    assert any("setup[0]: missing ours" in e
               for e in ex.check_published({**base, "claim": [claim], "setup": [{**row, "ours": None}]}))


def test_paasch_full_designs_are_slide_20s_size_with_every_extension():
    """004_ slides 14-22: ~400 experiments per design (low- and high-BDP), RR and LowRTT each
    without and with RP and BM; the TCP baselines run the same points. Counted from the
    scenarios (nothing runs); --quick stays small."""
    from mpsched.scenario.sweep import design_points
    from mpsched.study import describe

    study = ex.STUDIES["paasch_aggregation"]
    full, quick = ex.scenarios_of(study), ex.scenarios_of(study, quick=True)
    variants = {f"{s}{e}" for s in ("minrtt", "roundrobin") for e in ("", "+rp", "+bm", "+rp+bm")}
    for cls in ("low", "high"):
        mp, tcp = full[f"sweep_{cls}.toml"], full[f"sweep_{cls}_tcp.toml"]
        d = describe(mp)
        assert d["design"]["samples"] == 400 and d["design"]["kind"] == "wsp"
        assert set(d["axes"]["scheduler"]) == variants and d["runs"] == 400 * len(variants)
        assert describe(tcp)["runs"] == 400
        points = [[(c, v) for _, _, c, v in p] for p in design_points(mp)]
        assert len(points) == 400 and len({tuple(p) for p in points}) == 400
        assert points == [[(c, v) for _, _, c, v in p] for p in design_points(tcp)]  # the same network conditions
    assert "sweep_high.toml" not in quick
    assert describe(quick["sweep_low.toml"])["runs"] == 4 * len(variants)
