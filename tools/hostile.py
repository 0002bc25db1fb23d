"""Hostile scenarios: mutate small valid scenarios with hostile values, then run `mpsched check`
and `mpsched run` on each (a forked child per command, with a timeout) and classify the outcome.

    python tools/hostile.py generate DIR [--n 600] [--seed 14]
    python tools/hostile.py measure DIR [--timeout 20] [--jobs 2]

Outcomes per scenario:
  clean      check and run agree: both accept (run exits 0) or both refuse with exit 2 and a
             message (no traceback); a run failing with exit 1 and one message is also clean
  traceback  either command printed a Python traceback
  hang       either command ran past the timeout
  silent     run exited 0 but its flows never completed and nothing said so (no warning)
  check≠run  check accepted what run refused with a bad-input error (or the other way round)
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import random
import signal
import sys
import tempfile
import time
import tomllib
from pathlib import Path

BASE = {
    "name": "hostile",
    "duration": "300ms",
    "seed": 1,
    "paths": [
        {"name": "fast", "rate": "20Mbit", "rtt": "20ms", "queue": "1BDP"},
        {"name": "slow", "rate": "5Mbit", "rtt": "80ms", "queue": "1BDP"},
    ],
    "connection": {"scheduler": "minrtt", "cc": "cubic"},
    "workload": {"kind": "sized", "size": "32KiB", "repeat": 2, "arrival": "periodic", "interval": "100ms"},
    "record": {"interval": "10ms"},
}

SCHED_PARAMS = {
    "roundrobin": ["num_segments"], "linux": ["sndbuf_factor", "sndbuf_per_mss_bytes", "burst_bytes"],
    "blest": ["lambda_milli"], "ecf": ["r_beta"], "daps": ["max_plan_slots", "round_delay_ms"],
    "freeze": ["threshold_ns", "probe_interval_ns"], "otias": ["queue_limit_cwnds"],
    "bm": ["bm_lambda"], "rp": ["rp_srtt_ratio"], "bwm": ["ewma_gain"],
}

FIELDS = [
    ("duration",), ("seed",), ("name",),
    ("paths", 0, "rate"), ("paths", 0, "rtt"), ("paths", 0, "queue"), ("paths", 1, "loss"),
    ("paths", 0, "jitter"), ("paths", 0, "jitter_period"), ("paths", 1, "down"),
    ("connection", "mss"), ("connection", "rcv_buf"), ("connection", "snd_buf"), ("connection", "init_cwnd"),
    ("connection", "scheduler"),
    ("workload", "size"), ("workload", "repeat"), ("workload", "interval"),
    ("record", "interval"),
]

HOSTILE = [
    0, -1, 1, 2**31, 2**53 + 1, 2**63 - 1, 2**63, 2**64, 10**30, "0", "-1", "", " ", "abc", "nan", "inf",
    float("nan"), float("inf"), float("-inf"), 1e308, -0.0, 0.5, True, [], {}, ["1ms"], "1ns", "1bit", "0bit",
    "1e30Gbit", "1e-30s", "100000s", "1B", "0B", "1TiB", "10EiB", "1000000BDP", "0BDP", "0ms", "1ps",
    "../../escape", "/tmp/abs", "[/x]", "[bold]x[/bold]", "a/b", "..", "é€🙂", "1" * 5000,
]


def _set(doc: dict, path: tuple, value) -> None:
    cur = doc
    for k in path[:-1]:
        cur = cur[k]
    cur[path[-1]] = value


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(v)


def to_toml(doc: dict) -> str:
    lines, tables = [], []
    for k, v in doc.items():
        if isinstance(v, dict):
            tables.append((f"[{k}]", v))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            tables += [(f"[[{k}]]", x) for x in v]
        else:
            lines.append(f"{k} = {_toml_value(v)}")
    for head, t in tables:
        lines.append("")
        lines.append(head)
        lines += [f"{k} = {_toml_value(v)}" for k, v in t.items()]
    return "\n".join(lines) + "\n"


def mutate(rng: random.Random) -> tuple[str, str]:
    """One hostile scenario: (description, TOML text)."""
    doc = copy.deepcopy(BASE)
    r = rng.random()
    if r < 0.06:  # structural hostility
        kind = rng.choice(["deep", "seeds", "product", "samples", "bigint", "pairs"])
        if kind == "deep":
            return "toml nested 1000 deep", "x = " + "[" * 1000 + "]" * 1000 + "\n" + to_toml(doc)
        if kind == "seeds":
            doc["seed"] = list(range(100_000))
        elif kind == "product":
            doc["seed"] = list(range(1000))
            doc["workload"]["size"] = [f"{i}KiB" for i in range(1, 1001)]
            doc["paths"][0]["rate"] = [f"{i}Mbit" for i in range(1, 101)]
        elif kind == "samples":
            doc["design"] = {"kind": "lhs", "samples": 1_000_000, "ranges": {"paths[0].rate": ["1Mbit", "10Mbit"]}}
        elif kind == "bigint":
            return "integer of 5000 digits", to_toml(doc).replace("seed = 1", "seed = " + "9" * 5000)
        else:
            doc["workload"]["pairs"] = 1_000_000
        return kind, to_toml(doc)
    if r < 0.25:  # a scheduler with a hostile parameter
        sched = rng.choice(sorted(SCHED_PARAMS))
        param = rng.choice(SCHED_PARAMS[sched])
        value = rng.choice([0, -1, 2**62, 2**63, 2**64, 10**20, 1e300, float("nan"), float("inf"), 0.0, "x", True])
        doc["connection"] = {"scheduler": sched, "cc": "cubic", "scheduler_params": {param: value}}
        return f"{sched}.{param} = {value!r}", to_toml(doc)
    n = 1 if rng.random() < 0.8 else 2
    desc = []
    for _ in range(n):
        path = rng.choice(FIELDS)
        value = rng.choice(HOSTILE)
        _set(doc, path, value)
        desc.append(f"{'.'.join(map(str, path))} = {str(value)[:40]!r}")
    return "; ".join(desc), to_toml(doc)


def generate(out: Path, n: int, seed: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    index = {}
    for i in range(n):
        desc, text = mutate(rng)
        name = f"h{i:04d}.toml"
        (out / name).write_text(text, encoding="utf-8")
        index[name] = desc
    (out / "index.json").write_text(json.dumps(index, indent=1))
    print(f"{n} scenarios in {out}")


def _cli(argv: list[str], timeout: float, log: Path) -> tuple[int | None, str]:
    """Run `mpsched <argv>` in a forked child (the package is already imported); (status, stderr+stdout).
    status None: killed at the timeout."""
    pid = os.fork()
    if pid == 0:
        os.setsid()
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        sys.argv = ["mpsched", *argv]
        code = 0
        try:
            from mpsched.cli import main
            main()
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except BaseException:
            import traceback
            traceback.print_exc()
            code = 99
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(pid, 0)
            return None, log.read_text(errors="replace")
        time.sleep(0.02)
    return os.waitstatus_to_exitcode(status), log.read_text(errors="replace")


def classify(check: tuple, run: tuple, out: Path) -> str:
    (cs, ctext), (rs, rtext) = check, run
    if cs is None or rs is None:
        return "hang"
    if "Traceback" in ctext or "Traceback" in rtext or cs not in (0, 1, 2) or rs not in (0, 1, 2, 130):
        return "traceback"
    if (cs == 0) != (rs == 0) and not (cs == 0 and rs == 1 and "refused" not in rtext):
        return "check≠run"
    if rs == 0 and not _flows_complete_or_warned(out, rtext):
        return "silent"
    return "clean"


def _flows_complete_or_warned(out: Path, rtext: str) -> bool:
    """Read the stored flows in a forked child: the parent never starts polars' thread pool, so
    forking stays safe (a fork of a process with a running thread pool can deadlock)."""
    pid = os.fork()
    if pid == 0:
        try:
            import polars as pl
            flows = pl.read_parquet(str(out / "*" / "flows.parquet"))
            ok = not flows.height or flows["completed"].any() or "warning" in rtext.lower()
            os._exit(0 if ok else 3)
        except BaseException:
            os._exit(4)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def measure(src: Path, timeout: float, jobs: int) -> None:
    import mpsched.cli  # noqa: F401  (imported once, inherited by every fork; polars is imported,
    import mpsched.study  # noqa: F401  never used here, so no thread pool runs when we fork)

    files = sorted(src.glob("h*.toml"))
    index = json.loads((src / "index.json").read_text())
    work = Path(tempfile.mkdtemp(prefix="hostile-"))
    results = {}
    for f in files:
        out = work / f.stem
        check = _cli(["check", str(f)], timeout, work / f"{f.stem}.check.log")
        run = _cli(["run", str(f), "-o", str(out), "-j", "1"], timeout, work / f"{f.stem}.run.log")
        kind = classify(check, run, out)
        results[f.name] = {"outcome": kind, "check": check[0], "run": run[0], "what": index.get(f.name),
                           "check_tail": check[1][-300:], "run_tail": run[1][-300:]}
        import shutil
        shutil.rmtree(out, ignore_errors=True)
    counts: dict[str, int] = {}
    for r in results.values():
        counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
    (src / "outcomes.json").write_text(json.dumps(results, indent=1, ensure_ascii=False))
    print(json.dumps(counts))
    print(f"details: {src / 'outcomes.json'}; logs: {work}")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("cmd", choices=["generate", "measure"])
    p.add_argument("dir", type=Path)
    p.add_argument("--n", type=int, default=600)
    p.add_argument("--seed", type=int, default=14)
    p.add_argument("--timeout", type=float, default=20)
    p.add_argument("--jobs", type=int, default=1)
    a = p.parse_args()
    generate(a.dir, a.n, a.seed) if a.cmd == "generate" else measure(a.dir, a.timeout, a.jobs)
