"""Interruption and orphans, end to end: the `mpsched` command in a subprocess, stopped by
signals. A run here would take many minutes (a bulk flow for 10^5 simulated seconds), so a prompt
exit can only come from the interruption; the waits below are hang guards, not timings."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from conftest import has_core_runner

pytestmark = pytest.mark.skipif(not has_core_runner(), reason="needs the compiled core")

MPSCHED = Path(sys.executable).parent / "mpsched"
GUARD_S = 60  # far below one run of LONG (minutes), far above a prompt exit on a loaded machine

LONG = textwrap.dedent("""\
    name = "long"
    duration = "100000s"
    seed = [1, 2]

    [[paths]]
    name = "a"
    rate = "20Mbit"
    rtt = "20ms"

    [[paths]]
    name = "b"
    rate = "20Mbit"
    rtt = "40ms"

    [workload]
    kind = "bulk"

    [record]
    interval = "0"
    """)


def _start(tmp_path: Path, jobs: int) -> tuple[subprocess.Popen, Path]:
    scenario = tmp_path / "long.toml"
    scenario.write_text(LONG)
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    p = subprocess.Popen([str(MPSCHED), "run", str(scenario), "-o", str(out), "-j", str(jobs), "--force"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    # the study holds its lock once it executes runs; then give the runs time to enter the core
    deadline = time.monotonic() + GUARD_S
    while not (out / ".lock").exists():
        assert p.poll() is None, p.communicate()
        assert time.monotonic() < deadline, "the study never started"
        time.sleep(0.1)
    time.sleep(2)
    return p, out


def _workers(p: subprocess.Popen) -> list[psutil.Process]:
    deadline = time.monotonic() + GUARD_S
    while True:
        kids = [c for c in psutil.Process(p.pid).children(recursive=True) if "resource_tracker" not in " ".join(c.cmdline())]
        if kids or time.monotonic() > deadline:
            return kids
        time.sleep(0.1)


def _gone(procs: list[psutil.Process]) -> bool:
    _, alive = psutil.wait_procs(procs, timeout=GUARD_S)
    return not alive


@pytest.mark.parametrize("jobs,sig", [(1, signal.SIGINT), (2, signal.SIGINT), (1, signal.SIGTERM)])
def test_a_signal_stops_the_study_with_one_line_and_no_worker_left(tmp_path, jobs, sig):
    p, out = _start(tmp_path, jobs)
    workers = _workers(p) if jobs > 1 else []
    assert jobs == 1 or workers, "the pool's workers were not found"
    p.send_signal(sig)
    try:
        _, err = p.communicate(timeout=GUARD_S)
    except subprocess.TimeoutExpired:
        p.kill()
        pytest.fail("the study did not stop")
    assert p.returncode == 130, err
    assert "Traceback" not in err
    assert "leaked semaphore" not in err, err  # the resource tracker's warning after an os._exit
    line = [ln for ln in err.splitlines() if ln.startswith("interrupted:")]
    assert len(line) == 1 and "0 of 2 run(s) stored" in line[0], err
    assert f"resume with: mpsched run {tmp_path / 'long.toml'} -o {out}" in line[0]
    assert _gone(workers)
    assert not [d for d in out.iterdir() if not d.name.startswith(".")], "a half-written run is visible"


def test_killing_the_command_kills_its_workers(tmp_path):
    p, _ = _start(tmp_path, 2)
    workers = _workers(p)
    assert workers
    p.kill()
    p.communicate(timeout=GUARD_S)
    assert _gone(workers), "pool workers outlived their parent"


def test_a_python_scheduler_never_swallows_ctrl_c(tmp_path):
    """The Python scheduler runs off the main thread: Ctrl-C lands in the main thread, which
    stops the study (before, the scheduler caught the KeyboardInterrupt as its own error and the
    run went on to its end)."""
    script = tmp_path / "pysched.py"
    script.write_text(textwrap.dedent(f"""\
        import sys, time
        import mpsched
        import mpsched.sched
        from mpsched.study import Interrupted

        class Slow:
            def schedule(self, view):
                time.sleep(0.001)
                return [mpsched.sched.SendNew(s.id, s.mss_bytes) for s in view.subflows if s.available][:1]

        name = mpsched.sched.register(Slow)
        s = mpsched.loads_scenario({LONG!r} + f'\\n[connection]\\nscheduler = "{{name}}"\\n')
        print("ready", flush=True)
        try:
            mpsched.run(s, {str(tmp_path / "out")!r}, force=True)
        except Interrupted as e:
            print("INTERRUPTED", e.stored, e.total, flush=True)
            sys.exit(130)
        """))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert p.stdout.readline().strip() == "ready", p.communicate()
    deadline = time.monotonic() + GUARD_S
    while not (tmp_path / "out" / ".lock").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(2)
    p.send_signal(signal.SIGINT)
    try:
        out, err = p.communicate(timeout=GUARD_S)
    except subprocess.TimeoutExpired:
        p.kill()
        pytest.fail("the Python scheduler's study did not stop")
    assert p.returncode == 130 and "INTERRUPTED 0 2" in out, (out, err)
