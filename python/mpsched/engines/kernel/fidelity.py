"""A kernel run's timing against the host's: keeping the CPUs out of halt during a run, and
judging afterwards whether the host kept time: the VM's stolen CPU time during the run
(/proc/stat) and the delayer's lateness split into the host's share and its own (nfqdelay).

A kernel run's timing is only as good as the host's: a vCPU the hypervisor takes away, or a
CPU too busy to wake the real-time delayer, holds packets past their release time and stretches
the run. Such a run is still a real kernel run, but its timing is not the configured network's;
`host_stall` names that (kept in the run's diagnostics as `diag["host"]["stall"]`), so a user
(or a test) knows not to read it as one.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

#: The host's share of the delayer's release lateness above which a run's timing is not the
#: configured network's: 99 % of packets must leave within 1 ms of their time. The simulator's
#: host model allows a p99 of 0.42 ms a packet at each end (docs/testbed.md, "Host timing"), and
#: on an idle host the delayer's host share stays at tens of µs (measured: docs/testbed.md).
HOST_SHARE_P99_LIMIT_NS = 1_000_000
#: Share of the run's CPU time the hypervisor took away (steal) above which the run was stalled.
STEAL_SHARE_LIMIT = 0.02


class CpuWakeHold:
    """Holds a PM QoS request of 0 µs CPU wake-up latency (/dev/cpu_dma_latency) while open, so
    an idle CPU polls instead of halting.

    Why: on a VM a halted vCPU is woken by the hypervisor, which can take milliseconds; every
    packet the delayer releases, and every segment the endpoints answer, waits for such a wake-up
    on a lightly loaded testbed. Measured on this project's Firecracker VMs (haltpoll cpuidle,
    table A's two downloads, three runs each, docs/testbed.md "Holding the CPUs awake"): without
    the hold the hypervisor's steal was 19-28 % of the CPU time and the delayer released 1 % of
    packets 6-17 ms late; with it, steal 0.6-0.7 % and p99 81-131 µs. On bare metal it keeps the
    CPUs out of deep C-states, as latency benchmarks do. The request lasts as long as the file is
    open, so a crashed run cannot leave it behind.
    """

    def __init__(self, device: Path = Path("/dev/cpu_dma_latency")):
        self.device = device
        self._fd: int | None = None
        self.reason_not_held: str | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> bool:
        if self._fd is None:
            try:
                fd = os.open(self.device, os.O_WRONLY | os.O_CLOEXEC)
            except OSError as e:
                self.reason_not_held = f"{self.device}: {e.strerror}"
                return False
            try:
                os.write(fd, struct.pack("i", 0))
            except OSError as e:
                os.close(fd)
                self.reason_not_held = f"{self.device}: {e.strerror}"
                return False
            self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


@dataclass(frozen=True)
class CpuTimes:
    """Cumulative CPU time of the machine, in USER_HZ ticks (/proc/stat's first line)."""

    steal_ticks: int
    total_ticks: int

    @classmethod
    def read(cls, stat: Path = Path("/proc/stat")) -> "CpuTimes | None":
        try:
            fields = stat.read_text().split("\n", 1)[0].split()
        except OSError:
            return None
        if not fields or fields[0] != "cpu":
            return None
        ticks = [int(v) for v in fields[1:]]
        # user nice system idle iowait irq softirq steal [guest guest_nice, already in user]
        steal = ticks[7] if len(ticks) > 7 else 0
        return cls(steal_ticks=steal, total_ticks=sum(ticks[:8]))


def host_summary(before: CpuTimes | None, after: CpuTimes | None, delayer_stats: dict | None,
                 cpus_held_awake: bool) -> dict:
    """The run's host figures for its diagnostics: the hold, steal share, the delayer's worst queue,
    and `stall`, the judgement of `host_stall` on them."""
    out: dict = {"cpus_held_awake": cpus_held_awake}
    if before and after and after.total_ticks > before.total_ticks:
        out["steal_share"] = (after.steal_ticks - before.steal_ticks) / (after.total_ticks - before.total_ticks)
    queues = [q for q in (delayer_stats or {}).get("queues", []) if q.get("packets")]
    for share in ("host", "own"):
        key = f"{share}_lateness_ns"
        worst = [q[key] for q in queues if key in q]
        if worst:
            out[f"delayer_{share}_p99_ns"] = max(w["p99"] for w in worst)
            out[f"delayer_{share}_max_ns"] = max(w["max"] for w in worst)
    out["stall"] = host_stall(out)
    return out


def host_stall(host: dict) -> str | None:
    """A sentence saying how the host held a run's packets, from its figures (`host_summary`'s),
    or None when it kept time."""
    said = []
    p99 = host.get("delayer_host_p99_ns")
    if p99 is not None and p99 > HOST_SHARE_P99_LIMIT_NS:
        said.append(f"the host held the delayer's packets past their time (p99 {p99 / 1e6:.2f} ms, "
                    f"largest {host['delayer_host_max_ns'] / 1e6:.1f} ms; limit {HOST_SHARE_P99_LIMIT_NS / 1e6:g} ms)")
    steal = host.get("steal_share")
    if steal is not None and steal > STEAL_SHARE_LIMIT:
        said.append(f"the hypervisor took {100 * steal:.1f} % of the CPU time (limit {100 * STEAL_SHARE_LIMIT:g} %)")
    return "; ".join(said) or None
