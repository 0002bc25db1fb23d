"""Decisions per second of a scheduler written in Python, beside the same algorithm in Rust.

Run: `.venv/bin/python benches/bench_pysched.py` (part of `make bench`). Prints a Markdown table:
the Python round-robin of `mpsched.sched`'s docstring against the built-in `roundrobin`, on the
same 20 MB two-path transfer, with the wall time of each run and their ratio.
"""

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from test_pysched import RoundRobin, _config  # noqa: E402  (the documented example)

from mpsched import _core  # noqa: E402
from mpsched.sched import register  # noqa: E402


class CountingRoundRobin(RoundRobin):
    calls = 0

    def schedule(self, view):
        CountingRoundRobin.calls += 1
        return super().schedule(view)


def best_of(n, f):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    name = register(CountingRoundRobin)
    py_cfg = json.dumps(_config(name, "20MB"))
    rust_cfg = json.dumps(_config("roundrobin", "20MB"))
    CountingRoundRobin.calls = 0
    _core.run_json(py_cfg, {name: CountingRoundRobin})
    calls = CountingRoundRobin.calls
    py_s = best_of(3, lambda: _core.run_json(py_cfg, {name: CountingRoundRobin}))
    rust_s = best_of(3, lambda: _core.run_json(rust_cfg))
    print("| scheduler | wall s (best of 3) | schedule() calls | decisions/s | slowdown |")
    print("|---|---|---|---|---|")
    print(f"| Python RoundRobin (mpsched.sched example) | {py_s:.3f} | {calls} | {calls / py_s:,.0f} | {py_s / rust_s:.1f}x |")
    print(f"| Rust roundrobin | {rust_s:.3f} | | | 1.0x |")


if __name__ == "__main__":
    main()
