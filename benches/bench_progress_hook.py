"""The progress hook's cost (issue 14): one 20 s bulk run through `_core.run_json`, best of 5.
Run it with two builds of the core (e.g. main's .venv and a branch's) and compare:
`.venv/bin/python benches/bench_progress_hook.py LABEL`."""
import json, sys, time, textwrap
import mpsched
from mpsched import _core
from mpsched.scenario.normalize import to_config
s = mpsched.loads_scenario(textwrap.dedent("""\
    duration = "20s"
    [[paths]]
    name = "fast"
    rate = "200Mbit"
    rtt = "10ms"
    [[paths]]
    name = "slow"
    rate = "50Mbit"
    rtt = "40ms"
    [connection]
    scheduler = "minrtt"
    [workload]
    kind = "bulk"
    """))
text = json.dumps(to_config(s.expand()[0]))
best = None
for _ in range(5):
    t = time.perf_counter(); r = _core.run_json(text); dt = time.perf_counter() - t
    best = dt if best is None else min(best, dt)
print(sys.argv[1], "events", r["_stats"]["events"], "best of 5: %.3f s, %.2f M events/s" % (best, r["_stats"]["events"] / best / 1e6))
