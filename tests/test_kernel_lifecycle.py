"""A kernel run's life on the real stack (needs root and MPTCP; skipped otherwise): interrupted,
it leaves no namespace, rule or process behind; what a killed run left is removed, by the next
run or by `mpsched doctor`; a second run on the machine is refused while one holds the testbed."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from kernel_testbed import run_leftovers, skip_reason, two_path_config

pytestmark = pytest.mark.kernel

_reason = skip_reason()
if _reason:
    pytest.skip(_reason, allow_module_level=True)

from mpsched.engines.kernel import run_once  # noqa: E402
from mpsched.engines.kernel.host import PREFIX, list_namespaces, remove_leftovers, run_processes  # noqa: E402


def _run_phase(pid: int) -> str:
    """Which files the kernel run of process `pid` has written so far (its work directory lives
    in the system temp dir): tells a failure which phase the run was in."""
    import tempfile

    from mpsched.engines.kernel.host import WORKDIR_PREFIX
    dirs = sorted(Path(tempfile.gettempdir()).glob(f"{WORKDIR_PREFIX}{pid}-*"))
    return "; ".join(f"{d.name}: {sorted(f.name for f in d.iterdir())}" for d in dirs) or "no work directory"


def test_interrupted_run_cleans_up(tmp_path):
    """SIGINT in the middle of a run: every namespace, rule and process goes away."""
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from kernel_testbed import two_path_config
        from mpsched.engines.kernel import run_kernel
        cfg = two_path_config([{{"id": 1, "transport": 0, "start_ns": 0,
                                 "app": {{"kind": "bulk", "stop_ns": 30_000_000_000}}}}],
                              duration_ns=30_000_000_000)
        print("start", flush=True)
        run_kernel(cfg)
    """))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    tag = f"{PREFIX}-{proc.pid}"
    try:
        # Interrupt once the transfer runs: the client is started last (after the delayer, the
        # server and the warm-up transfers), so its client.jsonl marks the transfer phase. The
        # bound is generous because a busy CI machine is slow, not wrong; a run that ends early
        # fails at once with what it printed.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None and "client.jsonl" not in _run_phase(proc.pid):
            time.sleep(0.1)
        if proc.poll() is not None:
            _out, err = proc.communicate()
            pytest.fail(f"the run ended before it was interrupted (exit {proc.returncode}): {err[-2000:]}")
        assert "client.jsonl" in _run_phase(proc.pid), f"no transfer after 120 s; the run has {_run_phase(proc.pid)}"
        time.sleep(0.5)  # into the transfer
        assert any(n.startswith(tag + "-") for n in list_namespaces()), "the run has no namespaces"
        assert len(run_processes(tag)) >= 3, f"delayer, server and client should run: {run_processes(tag)}"
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=30)
        assert "KeyboardInterrupt" in err  # it was interrupted mid-run, not finished
        assert run_leftovers(proc.pid) == ([], [])
    finally:
        # Whatever failed above, the run must not outlive the test: it holds the testbed lock,
        # and the next kernel test would find the testbed busy.
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
        remove_leftovers()


def test_leftovers_of_a_crashed_run_are_removed():
    dead = subprocess.Popen(["true"])
    dead.wait()
    name = f"{PREFIX}-{dead.pid}-r0"
    subprocess.run(["ip", "netns", "add", name], check=True)
    sleeper = subprocess.Popen(["ip", "netns", "exec", name, "sleep", "60"])
    time.sleep(0.2)
    removed = remove_leftovers()
    assert name in removed
    assert name not in list_namespaces()
    assert sleeper.wait(timeout=5) != 0  # killed with its namespace


def test_one_kernel_run_per_machine_the_second_is_refused_naming_the_first(tmp_path, monkeypatch):
    from mpsched.engines.kernel import host

    lock = tmp_path / "kernel.lock"
    monkeypatch.setattr(host, "LOCK_PATH", lock)
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from mpsched.engines.kernel import host
        host.LOCK_PATH = Path({str(lock)!r})
        with host.testbed_lock():
            print("held", flush=True)
            time.sleep(600)
        """)], stdout=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    try:
        assert holder.stdout.readline().strip() == "held"
        cfg = two_path_config([{"id": 1, "transport": 0, "start_ns": 0, "app": {"kind": "sized", "size_bytes": 1000}}])
        with pytest.raises(host.TestbedError, match=re.escape(f"another kernel run (pid {holder.pid})")):
            run_once(cfg)
        assert not run_leftovers(os.getpid())[0]  # refused before building anything
    finally:
        holder.kill()
        holder.communicate()


def test_doctor_removes_what_a_killed_run_left(tmp_path):
    """A run killed with -9 leaves its namespaces, processes tagged with its run (started
    outside a namespace too) and its working directory; `mpsched doctor` removes them all."""
    import tempfile

    from mpsched.engines.kernel.host import RUN_ENV, WORKDIR_PREFIX

    dead = subprocess.Popen(["true"])
    dead.wait()  # a pid whose process is gone: the "killed run"
    tag = f"{PREFIX}-{dead.pid}"
    subprocess.run(["ip", "netns", "add", f"{tag}-c0"], check=True)
    inside = subprocess.Popen(["ip", "netns", "exec", f"{tag}-c0", "sleep", "600"])
    outside = subprocess.Popen(["sleep", "600"], env=dict(os.environ, **{RUN_ENV: tag}))
    workdir = Path(tempfile.mkdtemp(prefix=f"{WORKDIR_PREFIX}{dead.pid}-"))
    alive = Path(tempfile.mkdtemp(prefix=f"{WORKDIR_PREFIX}{os.getpid()}-"))  # a live run's: kept
    try:
        r = subprocess.run([str(Path(sys.executable).parent / "mpsched"), "doctor"], capture_output=True, text=True,
                           env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)), timeout=120)
        assert r.returncode == 0, r.stderr
        assert f"{tag}-c0" not in list_namespaces()
        assert inside.wait(timeout=30) is not None and outside.wait(timeout=30) is not None
        assert not workdir.exists() and alive.exists()
        assert "removed" in r.stdout
    finally:
        alive.rmdir()
        for p in (inside, outside):
            p.kill()
            p.wait()
        subprocess.run(["ip", "netns", "del", f"{tag}-c0"], capture_output=True)
