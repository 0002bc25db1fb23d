"""The host side of the testbed: running commands, checking the machine can host a run,
finding the native tools, and removing what a crashed run left behind.

Every namespace a run creates is named `mpsb-<pid>-<role>`, so leftovers are recognizable: a
namespace whose creating process is gone belongs to a crashed run and is removed (its
processes killed first). Nothing outside those namespaces is changed: congestion control is
set per socket and the TCP buffer sysctls are per namespace, so no host-wide sysctl needs
restoring (docs/testbed.md, pitfalls 4 and 5).
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from mpsched.engines.base import EngineError, EngineUnavailable

__all__ = ["TestbedUnavailable", "TestbedError", "sh", "ns_sh", "native_tool", "preflight",
           "remove_leftovers", "list_namespaces", "run_processes", "testbed_lock", "PREFIX", "RUN_ENV", "LOCK_PATH"]

PREFIX = "mpsb"
#: Environment variable carrying the run tag (`mpsb-<pid>`) into every process a run starts.
RUN_ENV = "MPSCHED_TESTBED_RUN"
_NS_RE = re.compile(rf"^{PREFIX}-(\d+)-(\w+)$")
#: One testbed per machine (its namespaces, addresses and NFQUEUE numbers are fixed): a run holds
#: an exclusive flock on this file.
LOCK_PATH = Path(os.environ.get("MPSCHED_KERNEL_LOCK", "/run/mpsched-kernel.lock"))
#: The prefix of a run's working directory (in the system's temporary folder).
WORKDIR_PREFIX = "mpsched-kernel-"


class TestbedUnavailable(EngineUnavailable):
    """This machine cannot host a kernel run (not root, no MPTCP, missing tools...)."""

    __test__ = False


class TestbedError(EngineError):
    """A kernel run failed while it was being set up or run."""

    __test__ = False


def sh(*args: str, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
    """Run one command; a failure raises TestbedError with the command and its stderr."""
    try:
        r = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise TestbedUnavailable(f"command not found: {args[0]}") from None
    if check and r.returncode != 0:
        raise TestbedError(f"`{' '.join(args)}` failed ({r.returncode}): {r.stderr.strip()}")
    return r


def ns_sh(ns: str, *args: str, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
    return sh("ip", "netns", "exec", ns, *args, check=check, timeout=timeout)


def _native_dir() -> Path:
    env = os.environ.get("MPSCHED_NATIVE_DIR")
    if env:
        return Path(env)
    # python/mpsched/engines/kernel/host.py -> <repo>/native
    return Path(__file__).resolve().parents[4] / "native"


def native_tool(name: str) -> Path:
    """Path of a native tool (nfqdelay, mpxfer), building it with `make -C native` if needed."""
    src = _native_dir()
    exe = src / "build" / name
    sources = list(src.glob("*.c")) + list(src.glob("*.h")) + [src / "Makefile"]
    stale = not exe.exists() or any(s.exists() and s.stat().st_mtime > exe.stat().st_mtime for s in sources)
    if stale and (src / "Makefile").exists():
        r = subprocess.run(["make", "-s", "-C", str(src)], capture_output=True, text=True)
        if r.returncode != 0:
            raise TestbedUnavailable(
                f"building the testbed tools failed (needs gcc, libnetfilter-queue-dev, libmnl-dev, "
                f"pkg-config; `make setup` installs them):\n{r.stderr.strip()[-800:]}")
    if not exe.exists():
        raise TestbedUnavailable(f"{exe} is missing; run `make setup` (it builds native/)")
    return exe


def preflight() -> None:
    """Raise TestbedUnavailable naming everything the machine lacks for a kernel run."""
    missing = []
    if os.geteuid() != 0:
        raise TestbedUnavailable("the kernel testbed needs root (network namespaces, tc, iptables); "
                                 "run as root or use the simulator")
    for tool in ("ip", "tc", "iptables", "chrt"):
        if shutil.which(tool) is None:
            missing.append(f"the `{tool}` command (apt-get install iproute2 iptables util-linux)")
    mptcp = Path("/proc/sys/net/mptcp/enabled")
    if not mptcp.exists():
        missing.append("kernel MPTCP support (no /proc/sys/net/mptcp; needs CONFIG_MPTCP=y)")
    elif mptcp.read_text().strip() != "1":
        missing.append("MPTCP enabled (sysctl net.mptcp.enabled=1)")
    if missing:
        raise TestbedUnavailable("the kernel testbed cannot run here; missing: " + "; ".join(missing))
    for tool in ("nfqdelay", "mpxfer", "qmon"):
        native_tool(tool)


def probe_features(router_ns: str, dev: str) -> None:
    """Check, in a fresh namespace, the kernel features a run relies on: htb/bfifo shaping and
    the iptables NFQUEUE target. Called once per run after the router namespace exists."""
    problems = []
    r = ns_sh(router_ns, "tc", "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", check=False)
    if r.returncode != 0:
        problems.append(f"the htb qdisc (CONFIG_NET_SCH_HTB): {r.stderr.strip()}")
    else:
        ns_sh(router_ns, "tc", "qdisc", "del", "dev", dev, "root", check=False)
    r = ns_sh(router_ns, "iptables", "-t", "mangle", "-A", "FORWARD", "-i", "none0", "-j", "NFQUEUE",
              "--queue-num", "65000", check=False)
    if r.returncode != 0:
        problems.append(f"the iptables NFQUEUE target (CONFIG_NETFILTER_XT_TARGET_NFQUEUE): {r.stderr.strip()}")
    else:
        ns_sh(router_ns, "iptables", "-t", "mangle", "-D", "FORWARD", "-i", "none0", "-j", "NFQUEUE",
              "--queue-num", "65000", check=False)
    if problems:
        raise TestbedUnavailable("the kernel testbed cannot run here; missing: " + "; ".join(problems))


def list_namespaces() -> list[str]:
    """Names of the testbed's namespaces currently present (any run)."""
    r = sh("ip", "netns", "list", check=False)
    names = [line.split()[0] for line in r.stdout.splitlines() if line.strip()]
    return [n for n in names if _NS_RE.match(n)]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"  # a zombie is dead (docs/testbed.md, pitfall 7)


def kill_namespace(ns: str) -> None:
    """Kill every process in `ns`, then delete it."""
    r = sh("ip", "netns", "pids", ns, check=False)
    pids = [int(p) for p in r.stdout.split() if p.isdigit()]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 2
        while any(_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        pids = [p for p in pids if _alive(p)]
        if not pids:
            break
    sh("ip", "netns", "del", ns, check=False)


def remove_leftovers(keep: Path | None = None) -> list[str]:
    """Remove what crashed runs left (their creating process gone): their namespaces (processes
    inside killed first), processes they started outside one (tagged `RUN_ENV=mpsb-<pid>`, e.g.
    a SCHED_FIFO delayer or a queue monitor) and their working directories
    (`mpsched-kernel-<pid>-*` in the temporary folder; `keep` is kept). Returns what it removed."""
    removed: list[str] = []
    dead_tags = set()
    for ns in list_namespaces():
        pid = int(_NS_RE.match(ns).group(1))
        if pid != os.getpid() and _alive(pid):
            continue  # another run in progress
        kill_namespace(ns)
        removed.append(ns)
        dead_tags.add(f"{PREFIX}-{pid}")
    for tag in sorted(dead_tags | _orphan_tags()):
        for pid in run_processes(tag):
            try:
                os.kill(pid, signal.SIGKILL)
                removed.append(f"process {pid} ({tag})")
            except ProcessLookupError:
                pass
    for d in Path(tempfile.gettempdir()).glob(WORKDIR_PREFIX + "*"):
        m = re.match(rf"^{WORKDIR_PREFIX}(\d+)-", d.name)
        if not m or not d.is_dir() or d.is_symlink() or (keep is not None and d.resolve() == keep.resolve()):
            continue  # not named after its run's process: not provably a leftover
        pid = int(m.group(1))
        if pid == os.getpid() or _alive(pid):
            continue
        shutil.rmtree(d, ignore_errors=True)
        removed.append(str(d))
    return removed


def _process_environments() -> Iterator[tuple[int, list[bytes]]]:
    """(pid, environment entries) of every process whose environment can be read."""
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            yield int(d.name), (d / "environ").read_bytes().split(b"\0")
        except OSError:
            continue


def _orphan_tags() -> set[str]:
    """Run tags of live processes whose run (the tag's pid) is gone."""
    tags = set()
    needle = f"{RUN_ENV}=".encode()
    for _, env in _process_environments():
        for item in env:
            if item.startswith(needle):
                tag = item[len(needle):].decode(errors="replace")
                m = re.match(rf"^{PREFIX}-(\d+)$", tag)
                if m and int(m.group(1)) != os.getpid() and not _alive(int(m.group(1))):
                    tags.add(tag)
    return tags


_HELD: list[int] = []


@contextmanager
def testbed_lock() -> Iterator[None]:
    """Hold the machine's one testbed (re-entrant within a process); a second run is refused
    with a message naming the holder."""
    if _HELD:
        yield
        return
    fd = os.open(LOCK_PATH, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
        os.close(fd)
        raise TestbedError(f"another kernel run (pid {holder}) is using the testbed; one runs per machine "
                           f"(lock {LOCK_PATH}); wait for it to finish") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode(), 0)
    _HELD.append(fd)
    try:
        yield
    finally:
        _HELD.remove(fd)
        os.close(fd)


def run_processes(run_tag: str) -> list[int]:
    """Live processes started by the run tagged `run_tag` (`mpsb-<pid>`)."""
    needle = f"{RUN_ENV}={run_tag}".encode()
    return [pid for pid, env in _process_environments() if needle in env and _alive(pid)]
