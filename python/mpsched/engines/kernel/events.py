"""Changes during a run: capacity steps and rate collapses (`tc class change` on the link's htb
class), paths blackholed, both ways or one (DROP rules in the router's FORWARD chain, ahead of
the delayer's rules, so packets on a blackholed path are lost as in the simulator), and a path
going down and back (the client's interface: `ip link set p<i> down`, then up with its routes
added again). Played by a thread against the run's epoch; each change takes effect a few ms
after its time (one `ip netns exec` command each), which the `events` diagnostics record.
"""

from __future__ import annotations

import threading
import time

from mpsched.engines.kernel.host import ns_sh
from mpsched.engines.kernel.network import HTB_QUANTUM_BYTES, Testbed, client_routes
from mpsched.engines.kernel.plan import Plan

__all__ = ["EventPlayer", "actions_for", "played_path_events"]

#: htb cannot run at 0 bit/s; a link "down" in a capacity schedule holds its packets at 8 bit/s.
MIN_RATE_BPS = 8


def _drop_rules(path: int, direction: str = "both") -> list[list[str]]:
    """DROP rules of a path's downlink (server to client) and / or uplink in the router."""
    down = ["FORWARD", "-i", "rsrv", "-o", f"rp{path}", "-j", "DROP"]
    up = ["FORWARD", "-i", f"rp{path}", "-o", "rsrv", "-j", "DROP"]
    return {"both": [down, up], "down": [down], "up": [up]}[direction]


def actions_for(plan: Plan) -> list[tuple[int, str, list[tuple[str, list[str]]], int]]:
    """(at_ns, label, [(where, command)], path), in time order; `where` is "router" or "client"."""
    out = []
    for lk in plan.links:
        for at_ns, rate_bps in lk.rate_steps:
            rate = f"{max(rate_bps, MIN_RATE_BPS)}bit"
            cmd = ["tc", "class", "change", "dev", lk.out_dev, "parent", "1:", "classid", f"1:{lk.path + 1:x}",
                   "htb", "rate", rate, "ceil", rate, "quantum", str(HTB_QUANTUM_BYTES)]
            out.append((at_ns, f"{lk.name} rate {rate_bps}", [("router", cmd)], lk.path))
    for at_ns, path, up in plan.path_events:
        link = [("client", ["ip", "link", "set", f"p{path}", "up" if up else "down"])]
        out.append((at_ns, f"path {path} {'up' if up else 'down'}",
                    link + ([("client", c) for c in client_routes(plan, path)] if up else []), path))
    for at_ns, path, up, direction in plan.drops:
        if up:
            cmds = [["iptables", "-t", "mangle", "-D", *r] for r in _drop_rules(path, direction)]
        else:
            cmds = [["iptables", "-t", "mangle", "-I", r[0], "1", *r[1:]] for r in _drop_rules(path, direction)]
        which = "" if direction == "both" else f" {direction}link"
        out.append((at_ns, f"path {path}{which} blackhole {'off' if up else 'on'}", [("router", c) for c in cmds],
                    path))
    return sorted(out, key=lambda a: a[0])


def played_path_events(table: dict[str, list], log: list[dict]) -> dict[str, list]:
    """The `path_events` table (`path_table.path_event_table`) with each start and end the
    player's: when the last command of that change had returned (`done_ns`), not when it was
    due. Each change is one `ip netns exec` away and lands 5-60 ms late on a loaded host, which
    a failover or failback measured from the due time would count as the stack's. Events the
    delayer plays (a loss ramp, an RTT spike) are timed by it from the epoch and keep their
    times; so does a change whose command failed."""
    done: dict[tuple[int, int], int] = {}
    for e in log:
        if e["ok"]:
            key = (e["path"], e["at_ns"])
            done[key] = max(done.get(key, 0), e["done_ns"])  # in force once every link has changed
    out = {k: list(v) for k, v in table.items()}
    for i, path in enumerate(out.get("path_index", [])):
        for col in ("at_ns", "end_ns"):
            due = out[col][i]
            if due is not None:
                out[col][i] = done.get((path, due), due)
    return out


class EventPlayer(threading.Thread):
    """Runs `actions_for(plan)` at epoch + at_ns; `stop()` ends it early."""

    def __init__(self, tb: Testbed, epoch_ns: int):
        super().__init__(daemon=True, name="testbed-events")
        self.tb = tb
        self.epoch_ns = epoch_ns
        self.actions = actions_for(tb.plan)
        self.log: list[dict] = []
        self._stop_evt = threading.Event()

    def run(self) -> None:
        for at_ns, label, cmds, path in self.actions:
            wait_s = (self.epoch_ns + at_ns - time.monotonic_ns()) / 1e9
            if wait_s > 0 and self._stop_evt.wait(wait_s):
                return
            ok = True
            for where, cmd in cmds:
                ns = self.tb.rtr if where == "router" else self.tb.cli
                ok &= ns_sh(ns, *cmd, check=False).returncode == 0
            self.log.append({"at_ns": at_ns, "done_ns": time.monotonic_ns() - self.epoch_ns, "what": label, "ok": ok,
                             "path": path})

    def stop(self) -> None:
        self._stop_evt.set()
        if self.is_alive():
            self.join(timeout=5)
