"""The two halves of `benches/records_digest.sh` (read its header for the why and the usage).

`configs OUT_DIR E2E_DIR`: with this checkout's Python (its `.venv`), writes one normalized core
configuration (JSON, the serde schema of crates/mpsched-sim/src/config.rs) per scenario and seed
to OUT_DIR, plus a list `scenarios.txt` (name, seed, file). E2E_DIR holds the configurations
of the Rust benches (`cargo bench --bench scale -- --dump-configs=DIR`), added for both seeds.

`run CONFIG_DIR OUT`: with the tree under test's Python (so its compiled core and its
`mpsched.sched`), runs every configuration of CONFIG_DIR through `mpsched.engines.sim.run`, the
path every study takes, and writes `name seed sha256` per run to OUT and one line per record
table (`name seed table rows sha256`) to OUT.tables, to say which table differs.

The digest covers every value of every table the core returns, column by column in the order
it emits them (`json.dumps` of the column: integers exactly, floats by their shortest round-trip
repr, None, booleans, strings), and the run counters `packets_sent`, `packet_hops` and
`end_ns` (the time of the last event; OUT.tables shows their values). The event count is left
out: an engine may schedule fewer events for the same packets.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path

SEEDS = (1, 2)
#: Scenario files (relative to the checkout) and how many of their runs to take (evenly spread
#: over the run list of one seed; a file of one run gives one).
SCENARIOS = (
    [("scenarios/quick.toml", 4), ("scenarios/cfs_wlan_lte_short.toml", 2), ("scenarios/wlan_lte_trace.toml", 2)]
    + [(f"scenarios/validation/{n}.toml", 4) for n in (
        "bufferbloat", "lossy_upload", "lte_trace", "table_a", "table_a_jitter", "two_paths_1mib",
        "wifi_lte_jitter", "wifi_lte_jitter_kernel")]
    # grid cells: first, middle and last of each grid (different burst sizes and transfer sizes)
    + [(f"scenarios/validation/grid/{n}.toml", 3) for n in (
        "asym_wlan_lte", "asym_wlan_lte_16mib", "cross_udp", "equal", "equal_16mib", "fast_slow",
        "jitter", "jitter_16mib", "loss", "tcp_single_16mib", "tcp_single")]
    + [(f"scenarios/datacenter/{n}.toml", 2) for n in (
        "dumbbell_fairness", "permutation_fattree", "query_fattree", "short_message_fattree", "websearch_fattree")]
    + [(f"scenarios/workloads/{n}.toml", 3) for n in (
        "cbr_delay", "long_lived_transfers", "rpc", "voip_messages", "web_pages")]
    + [(f"scenarios/resilience/{n}.toml", 3) for n in ("backup", "dying_wlan")]
)
#: The Python-defined scheduler run: this scenario's first run with its scheduler replaced.
PY_SCHED_BASE = "scenarios/validation/two_paths_1mib.toml"
PY_SCHED_NAME = "py:DigestRoundRobin"


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in text)


def make_configs(out_dir: Path, e2e_dir: Path) -> None:
    from mpsched.scenario import load_scenario
    from mpsched.scenario.normalize import normalize
    from mpsched.scenario.sweep import expand

    root = Path(__file__).resolve().parents[1]
    out_dir.mkdir(parents=True, exist_ok=True)
    lines = []

    def add(name: str, seed: int, config: dict) -> None:
        file = f"{_safe(name)}.s{seed}.json"
        (out_dir / file).write_text(json.dumps(config, sort_keys=True))
        lines.append(f"{name} {seed} {file}")

    for rel, take in SCENARIOS:
        path = root / rel
        if not path.exists():
            print(f"records_digest: {rel} not found, skipped", file=sys.stderr)
            continue
        runs = expand(load_scenario(path))
        first_seed = runs[0].params.get("seed")
        runs = [r for r in runs if r.params.get("seed") == first_seed]
        picks = sorted({round(i * (len(runs) - 1) / max(take - 1, 1)) for i in range(min(take, len(runs)))})
        for i in picks:
            r = runs[i]
            for seed in SEEDS:
                config = normalize(r.scenario.model_copy(update={"seed": seed})).config
                add(f"{rel}#{r.index}", seed, config)
                if rel == PY_SCHED_BASE and i == picks[0]:
                    py = json.loads(json.dumps(config))
                    for t in py["transports"]:
                        t["scheduler"], t["scheduler_params"] = PY_SCHED_NAME, {}
                    add(f"{rel}#{r.index}+{PY_SCHED_NAME}", seed, py)
    for f in sorted(e2e_dir.glob("*.json")):
        config = json.loads(f.read_text())
        for seed in SEEDS:
            add(f"rust-bench:{f.stem}", seed, dict(config, seed=seed))
    (out_dir / "scenarios.txt").write_text("\n".join(lines) + "\n")
    print(f"records_digest: {len(lines)} configurations in {out_dir}", file=sys.stderr)


def _digest_tables(tables: dict) -> tuple[str, list[tuple[str, int, str]]]:
    per_table = []
    for name, columns in tables.items():
        h = hashlib.sha256()
        if name == "_stats":
            columns = {k: v for k, v in columns.items() if k != "events"}
            rows = 1
        else:
            rows = max((len(v) for v in columns.values()), default=0)
        for col, values in columns.items():
            h.update(f"{name}\0{col}\0".encode())
            h.update(json.dumps(values).encode())
            h.update(b"\n")
        # the counters are few: their values, readable in OUT.tables, stand for the digest
        digest = ",".join(f"{k}={v}" for k, v in columns.items()) if name == "_stats" else h.hexdigest()
        per_table.append((name, rows, digest))
    whole = hashlib.sha256("".join(f"{n} {r} {d}\n" for n, r, d in per_table).encode()).hexdigest()
    return whole, per_table


def run_configs(config_dir: Path, out: Path) -> None:
    import mpsched
    from mpsched.engines import sim
    from mpsched.sched import register

    # The documented round-robin example, as benches/bench_pysched.py takes it.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from test_pysched import RoundRobin

    register(RoundRobin, PY_SCHED_NAME)
    source = Path(mpsched.__file__).resolve().parents[2]
    expected = os.environ.get("RECORDS_DIGEST_TREE")
    if expected and source != Path(expected).resolve():
        sys.exit(f"records_digest: this Python imports mpsched from {source}, not from {expected}; "
                 f"rebuild that tree's .venv (make -C {expected} setup)")
    print(f"records_digest: core of {source}", file=sys.stderr)
    lines, table_lines = [], []
    started = time.monotonic()
    for entry in (config_dir / "scenarios.txt").read_text().split("\n"):
        if not entry:
            continue
        name, seed, file = entry.split(" ")
        t0 = time.monotonic()
        tables = sim.run(json.loads((config_dir / file).read_text()))
        whole, per_table = _digest_tables(tables)
        lines.append(f"{name} {seed} {whole}")
        table_lines += [f"{name} {seed} {t} {rows} {d}" for t, rows, d in per_table]
        print(f"records_digest: {name} seed {seed}: {time.monotonic() - t0:.1f} s", file=sys.stderr)
    out.write_text("\n".join(lines) + "\n")
    Path(f"{out}.tables").write_text("\n".join(table_lines) + "\n")
    print(f"records_digest: {len(lines)} runs in {time.monotonic() - started:.0f} s -> {out}", file=sys.stderr)


if __name__ == "__main__":
    mode, a, b = sys.argv[1:4]
    if mode == "configs":
        make_configs(Path(a), Path(b))
    elif mode == "run":
        run_configs(Path(a), Path(b))
    else:
        sys.exit(f"records_digest.py: unknown mode {mode!r} (configs | run)")
