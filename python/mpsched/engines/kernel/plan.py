"""From a normalized run configuration to a testbed plan: which emulated link sits on which
router interface, what the delayer does on each, which flows start where.

Pure (no root, no commands), so the refusals and the mapping are tested anywhere. The configuration is the dict
form of `crates/mpsched-sim/src/config.rs` (`SimConfig`); what the real kernel cannot reproduce is refused here.

Topology (docs/testbed.md): client interfaces `p<i>` (10.0.<i+1>.1/24), router `rp<i>` (10.0.<i+1>.254) and `rsrv`
(10.9.0.254) towards the single-homed server `srv0` (10.9.0.1). Path i's downlink is shaped on `rp<i>` egress, its
uplink in class 1:<i+1> of `rsrv` egress; both delayed by NFQUEUE in FORWARD.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mpsched.engines.kernel.errors import TestbedConfigError
from mpsched.engines.kernel.gso import lossy, with_gso
from mpsched.engines.kernel.path_events import collapse, delayer_event_keys, delayer_events, path_events, stale_loss_cnt
from mpsched.engines.kernel import rcvbuf, sndbuf
from mpsched.engines.kernel.shaping import link_shaping
from mpsched.engines.kernel.rpc import MessagesPlan, RpcPlan, messages_plan, rpc_plan

__all__ = ["TestbedConfigError", "LinkPlan", "FlowPlan", "CrossPlan", "Plan", "make_plan", "client_addr", "SERVER_ADDR", "MAX_PATHS"]

SERVER_ADDR = "10.9.0.1"
ROUTER_SERVER_ADDR = "10.9.0.254"
MAX_PATHS = 8
#: Congestion controls the target kernel has (reno, bbr and cubic are built on the target kernel).
KERNEL_CC = ("reno", "cubic", "bbr")
#: Scheduler names a kernel run accepts: upstream Linux has only its default scheduler.
KERNEL_SCHEDULERS = ("linux", "default", "minrtt")
#: Stand-in for "no limit" in bytes for a bfifo (the limit is a u32).
UNLIMITED_QUEUE_BYTES = 1 << 30
#: htb rate of a trace-driven link: the delayer is its bottleneck, the class only counts.
TRACE_HTB_RATE_BPS = 10_000_000_000


def client_addr(path: int) -> str:
    """The client's address on path `path` (0-based)."""
    return f"10.0.{path + 1}.1"


def router_addr(path: int) -> str:
    return f"10.0.{path + 1}.254"


@dataclass(frozen=True)
class LinkPlan:
    """One emulated unidirectional link."""

    index: int            # index in config["links"]
    name: str
    path: int
    direction: str        # "down" (server -> client) or "up"
    rate_bps: int
    delay_ns: int
    queue_bytes: int | None
    queue_packets: int | None
    loss: float           # Bernoulli probability
    gilbert_elliott: tuple[float, float, float, float] | None  # p_good_bad, p_bad_good, loss_good, loss_bad
    jitter_mode: str      # "none" | "smooth" | "reorder"
    jitter_ns: int
    period_ns: int
    distribution: str     # for reorder: "uniform" | "normal"
    qnum: int             # NFQUEUE number (used only when `needs_delayer`)
    rate_steps: tuple[tuple[int, int], ...] = ()   # (at_ns, rate_bps), applied with `tc class change`
    # Mahimahi trace (opportunities_ms, packet_bytes, period_ms or None): the delayer is the
    # bottleneck (native/nfqdelay_trace.c) and holds the queue; the htb class does not shape.
    trace: tuple[tuple[int, ...], int, int | None] | None = None
    burst_bytes: int | None = None    # tbf bucket depth (downlink) / htb burst (uplink); None: htb
    loss_ramp: tuple[int, int, int, float, float] | None = None  # (at, ramp, end ns, from_p, to_p)
    rtt_spike: tuple[int, int, int] | None = None  # (at, end, extra delay ns), from the epoch
    overhead_bytes: int = 0           # 14: the limit is already in frame bytes (what qdiscs count)
    segment_gso: bool = False         # the delayer segments GSO super-packets (path gso = false)

    @property
    def needs_delayer(self) -> bool:
        return (self.delay_ns > 0 or self.jitter_ns > 0 or self.loss > 0 or self.gilbert_elliott is not None
                or self.trace is not None or self.loss_ramp is not None or self.rtt_spike is not None)

    @property
    def queue_limit_bytes(self) -> int:
        """The drop-tail limit in bytes (a packet limit counts MTU-sized packets)."""
        limit = self.queue_bytes if self.queue_bytes is not None else UNLIMITED_QUEUE_BYTES
        if self.queue_packets is not None:
            limit = min(limit, self.queue_packets * 1500)
        return limit

    @property
    def in_dev(self) -> str:
        """Router interface the link's packets come in on."""
        return "rsrv" if self.direction == "down" else f"rp{self.path}"

    @property
    def out_dev(self) -> str:
        """Router interface whose egress qdisc shapes the link."""
        return f"rp{self.path}" if self.direction == "down" else "rsrv"

    def trace_text(self) -> str:
        """The trace file nfqdelay reads: one opportunity (ms) per line, as Mahimahi."""
        assert self.trace is not None
        return "".join(f"{ms}\n" for ms in self.trace[0])

    def delayer_spec(self, trace_file: str | None = None) -> str:
        """The nfqdelay `-q` argument (native/nfqdelay.c); `trace_file` holds `trace_text()`."""
        spec = f"{self.qnum},delay_us={self.delay_ns / 1e3:.3f}"
        if self.jitter_mode != "none" and self.jitter_ns > 0:
            spec += f",jitter_us={self.jitter_ns / 1e3:.3f},mode={self.jitter_mode}"
            if self.jitter_mode == "smooth":
                spec += f",period_us={self.period_ns / 1e3:.3f}"
            else:
                spec += f",dist={self.distribution}"
        if self.loss > 0:
            spec += f",loss={self.loss!r}"
        if self.gilbert_elliott is not None:
            spec += ",ge=" + ":".join(repr(v) for v in self.gilbert_elliott)
        if self.trace is not None:
            if trace_file is None:
                raise ValueError("a trace link's delayer spec needs the trace file")
            opp, packet_bytes, period_ms = self.trace
            spec += f",trace={trace_file},tpkt={packet_bytes},qlimit={self.queue_limit_bytes}"
            if period_ms:
                spec += f",tperiod_us={int(period_ms) * 1000}"
        spec += delayer_event_keys(self.loss_ramp, self.rtt_spike)
        if self.segment_gso or lossy(self):
            # Let the kernel segment GSO super-packets before they reach this queue, so that
            # loss hits single packets and a trace serves single packets, as in the simulator.
            spec += ",gso=0"
        return spec


@dataclass(frozen=True)
class FlowPlan:
    flow_id: int
    protocol: str         # "mptcp" | "tcp"
    cc: str
    paths: tuple[int, ...]
    direction: str        # "download" | "upload"
    kind: str             # "sized" | "bulk" | "rpc" | "messages"
    size_bytes: int | None  # rpc: all responses; messages: all messages
    stop_ns: int | None
    start_ns: int
    rpc: RpcPlan | MessagesPlan | None = None   # rpc and messages flows: their units
    so_rcvbuf_bytes: int = 0   # SO_RCVBUF of the receiving socket (engines/kernel/rcvbuf.py); 0: autotune
    so_sndbuf_bytes: int = 0   # SO_SNDBUF of the sending socket(s) (engines/kernel/sndbuf.py); 0: autotune
    nodelay: bool = False      # TCP_NODELAY on both sockets (the simulator's writer then runs without Nagle)

    def line(self) -> str:
        """The flow's line in mpxfer's flows file (native/mpxfer.c)."""
        amount = {"sized": self.size_bytes, "bulk": self.stop_ns}.get(self.kind, self.rpc and self.rpc.units)
        client_snd = self.so_sndbuf_bytes if self.direction == "upload" or self.kind == "rpc" else 0  # the client sends
        return (f"{self.flow_id} {self.protocol} {self.cc} {client_addr(self.paths[0])} {self.direction} {self.kind} "
                f"{amount} {self.start_ns} {self.so_rcvbuf_bytes} {client_snd} {int(self.nodelay)}" + (self.rpc.fields() if self.rpc else ""))


@dataclass(frozen=True)
class CrossPlan:
    path: int
    direction: str
    rate_bps: int
    packet_bytes: int
    start_ns: int
    stop_ns: int


@dataclass
class Plan:
    n_paths: int
    path_names: list[str]
    links: list[LinkPlan]
    flows: list[FlowPlan]
    cross: list[CrossPlan]
    path_events: list[tuple[int, int, bool]]   # (at_ns, path, up): the client's interface
    mptcp_paths: tuple[int, ...]     # paths with an MPTCP subflow endpoint on the client
    backup_paths: tuple[int, ...]
    duration_ns: int
    sample_interval_ns: int
    seed: int
    rcv_buf_bytes: int
    snd_buf_bytes: int
    init_cwnd_segments: int
    stale_loss_cnt: int = 4          # net.mptcp.stale_loss_cnt, per namespace
    listener_so_rcvbuf_bytes: int = 0  # the server's SO_RCVBUF, for uploads (rcvbuf.py); 0: autotune
    listener_so_sndbuf_bytes: int = 0  # the server's SO_SNDBUF, for downloads and RPC (sndbuf.py)
    #: (at_ns, path, up, direction): a blackhole of a path, both directions or one ("down", "up")
    drops: list[tuple[int, int, bool, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def max_rate_bps(self) -> int:
        return max((lk.rate_bps for lk in self.links), default=0)


def _link(cfg: dict[str, Any], idx: int, path: int, direction: str, qnum: int) -> LinkPlan:
    where = f"links[{idx}]"
    lk = cfg["links"][idx]
    cap = lk.get("capacity") or {"kind": "constant"}
    kind = cap.get("kind", "constant")
    steps: tuple[tuple[int, int], ...] = ()
    trace = None
    if kind == "schedule":
        steps = tuple((int(st["at_ns"]), int(st["rate_bps"])) for st in cap.get("steps", []))
        if any(b[0] < a[0] for a, b in zip(steps, steps[1:])):
            raise TestbedConfigError(f"{where}.capacity.steps", "steps must be in increasing time order")
    elif kind == "trace":
        opp = tuple(int(x) for x in cap.get("opportunities_ms") or [])
        if not opp or any(b < a for a, b in zip(opp, opp[1:])):
            raise TestbedConfigError(f"{where}.capacity.opportunities_ms", "must be a non-empty, non-decreasing list")
        trace = (opp, int(cap.get("packet_bytes", 1500)), cap.get("period_ms"))
    elif kind != "constant":
        raise TestbedConfigError(f"{where}.capacity", f"unknown capacity kind {kind!r}")
    loss = lk.get("loss") or {"model": "none"}
    model = loss.get("model", "none")
    p = 0.0
    ge: tuple[float, float, float, float] | None = None
    if model == "bernoulli":
        p = float(loss["p"])
        if not 0 <= p <= 1:
            raise TestbedConfigError(f"{where}.loss.p", f"must be in [0, 1], got {p}")
    elif model == "gilbert_elliott":
        keys = ("p_good_bad", "p_bad_good", "loss_good", "loss_bad")
        ge = tuple(float(loss[k]) for k in keys)  # type: ignore[assignment]
        for k, v in zip(keys, ge):
            if not 0 <= v <= 1:
                raise TestbedConfigError(f"{where}.loss.{k}", f"must be in [0, 1], got {v}")
    elif model != "none":
        raise TestbedConfigError(f"{where}.loss", f"unknown loss model {model!r}")
    jit = lk.get("jitter") or {"mode": "none"}
    mode = jit.get("mode", "none")
    if mode not in ("none", "smooth", "reorder"):
        raise TestbedConfigError(f"{where}.jitter.mode", f"unknown jitter mode {mode!r}")
    jitter_ns = int(jit.get("jitter_ns", 0))
    period_ns = int(jit.get("period_ns", 0))
    if trace is not None and mode == "reorder" and jitter_ns > 0:
        raise TestbedConfigError(f"{where}.jitter.mode", "a trace-driven link takes smooth jitter, not reorder")
    if mode == "smooth" and jitter_ns > 0 and period_ns <= 0:
        raise TestbedConfigError(f"{where}.jitter.period_ns", "smooth jitter needs a positive period")
    burst, overhead = link_shaping(lk, where, kind, loss=p > 0 or ge is not None, jitter=jitter_ns > 0)
    rate = int(lk["rate_bps"]) if trace is None else TRACE_HTB_RATE_BPS
    if rate <= 0:
        raise TestbedConfigError(f"{where}.rate_bps", "must be positive on the kernel testbed")
    if rate > 10_000_000_000:
        raise TestbedConfigError(f"{where}.rate_bps", "above 10 Gbit/s the 2-core testbed cannot keep up")
    return LinkPlan(
        index=idx, name=lk["name"], path=path, direction=direction, rate_bps=rate,
        delay_ns=int(lk["delay_ns"]), queue_bytes=lk.get("queue_bytes"), queue_packets=lk.get("queue_packets"),
        loss=p, gilbert_elliott=ge, jitter_mode=mode if jitter_ns > 0 else "none", jitter_ns=jitter_ns, period_ns=period_ns,
        distribution=jit.get("distribution", "uniform"), qnum=qnum, rate_steps=steps, trace=trace,
        burst_bytes=burst, overhead_bytes=overhead)


def make_plan(cfg: dict[str, Any]) -> Plan:
    """Check `cfg` against what the testbed can do and lay it out; raises TestbedConfigError."""
    paths = cfg.get("paths") or []
    if not paths:
        raise TestbedConfigError("paths", "at least one path is needed")
    if len(paths) > MAX_PATHS:
        raise TestbedConfigError("paths", f"the testbed builds at most {MAX_PATHS} paths")
    events, drops, link_events = path_events(cfg.get("path_events") or [], len(paths))
    links: list[LinkPlan] = []
    used: dict[int, str] = {}
    for i, p in enumerate(paths):
        for direction, key in (("down", "down"), ("up", "up")):
            chain = p.get(key) or []
            if len(chain) != 1:
                raise TestbedConfigError(
                    f"paths[{i}].{key}", f"the kernel testbed emulates each path direction as exactly one "
                    f"link, got a chain of {len(chain)}; merge the chain into one link (sum the delays, "
                    f"take the slowest rate) or use the simulator")
            idx = chain[0]
            if not 0 <= idx < len(cfg["links"]):
                raise TestbedConfigError(f"paths[{i}].{key}", f"no link {idx}")
            if idx in used:
                raise TestbedConfigError(f"paths[{i}].{key}", f"link {idx} is already {used[idx]}; the testbed "
                                         "cannot share one emulated link between paths or directions")
            used[idx] = f"paths[{i}].{key}"
            # Queue numbers: 1 + 2*i for the downlink, 2 + 2*i for the uplink (any unique ids do).
            links.append(with_gso(_link(cfg, idx, i, direction, 1 + 2 * i + (direction == "up")), p.get("gso"), i))

    transports = cfg.get("transports") or []
    mptcp_sets, backups, so_bufs = set(), set(), []
    for t_i, t in enumerate(transports):
        where = f"transports[{t_i}]"
        if t["protocol"] not in ("mptcp", "tcp"):
            raise TestbedConfigError(f"{where}.protocol", f"unknown protocol {t['protocol']!r}")
        if t["cc"] not in KERNEL_CC:
            raise TestbedConfigError(f"{where}.cc", f"the kernel has {', '.join(KERNEL_CC)}; {t['cc']!r} "
                                     "(coupled MPTCP congestion control) is not in upstream Linux")
        if t.get("scheduler", "linux") not in KERNEL_SCHEDULERS:
            raise TestbedConfigError(f"{where}.scheduler", f"the kernel runs only its default scheduler "
                                     f"(name it 'linux'); {t['scheduler']!r} exists only in the simulator")
        if not t["paths"] or any(not 0 <= p < len(paths) for p in t["paths"]):
            raise TestbedConfigError(f"{where}.paths", "must list existing path indices")
        so_bufs.append((rcvbuf.transport_so_rcvbuf(t, where), sndbuf.transport_so_sndbuf(t, where)))
        if t.get("join_timing", "fully_established") not in ("oot", "fully_established"):
            raise TestbedConfigError(f"{where}.join_timing", "must be 'oot' or 'fully_established'")
        if t["protocol"] == "tcp" and len(t["paths"]) != 1:
            raise TestbedConfigError(f"{where}.paths", "plain TCP uses exactly one path")
        if t["protocol"] == "mptcp":
            mptcp_sets.add(frozenset(t["paths"]))
            backups |= set(t.get("backup_paths") or [])
    if len(mptcp_sets) > 1:
        raise TestbedConfigError("transports", "MPTCP transports must all use the same set of paths on the "
                                 "testbed (the kernel path manager's endpoints are per namespace)")
    mptcp_paths = tuple(sorted(next(iter(mptcp_sets)))) if mptcp_sets else ()
    if transports:
        for key in ("mss_bytes", "init_cwnd_segments"):
            vals = {t.get(key, {"mss_bytes": 1448, "init_cwnd_segments": 10}[key]) for t in transports}
            if len(vals) > 1:
                raise TestbedConfigError(f"transports[*].{key}", "must be equal for all transports on the testbed")
        if transports[0].get("mss_bytes", 1448) != 1448:
            raise TestbedConfigError("transports[0].mss_bytes", "the testbed's veths have MTU 1500, so MSS is 1448")

    flows: list[FlowPlan] = []
    seen: set[int] = set()
    for f_i, f in enumerate(cfg.get("flows") or []):
        where = f"flows[{f_i}]"
        if f["id"] in seen:
            raise TestbedConfigError(f"{where}.id", f"duplicate flow id {f['id']}")
        seen.add(f["id"])
        if not 0 <= f["transport"] < len(transports):
            raise TestbedConfigError(f"{where}.transport", f"no transport {f['transport']}")
        t = transports[f["transport"]]
        app = f["app"]
        kind = app["kind"]
        if kind not in ("sized", "bulk", "rpc", "messages"):
            raise TestbedConfigError(f"{where}.app.kind", f"the testbed runs sized, bulk, rpc, messages, not {kind!r}")
        rpc = {"rpc": lambda: rpc_plan(app, f.get("direction", "download"), where),
               "messages": lambda: messages_plan(app, int(f["start_ns"]), where)}.get(kind, lambda: None)()
        flows.append(FlowPlan(
            flow_id=int(f["id"]), protocol=t["protocol"], cc=t["cc"], paths=tuple(t["paths"]),
            direction=f.get("direction", "download"), kind=kind,
            size_bytes=int(app["size_bytes"]) if kind == "sized" else rpc and rpc.units * rpc.unit_bytes,
            stop_ns=int(app["stop_ns"]) if kind == "bulk" else None, start_ns=int(f["start_ns"]), rpc=rpc,
            so_rcvbuf_bytes=so_bufs[f["transport"]][0], so_sndbuf_bytes=so_bufs[f["transport"]][1],
            nodelay=f.get("nodelay", kind in ("rpc", "messages"))))  # mpxfer's default: the simulator's too

    cross = []
    for c_i, c in enumerate(cfg.get("cross_traffic") or []):
        if len(c["links"]) != 1:
            raise TestbedConfigError(f"cross_traffic[{c_i}].links", "must name exactly one link on the testbed")
        lk = next((lp for lp in links if lp.index == c["links"][0]), None)
        if lk is None:
            raise TestbedConfigError(f"cross_traffic[{c_i}].links", "the link is not on any path")
        cross.append(CrossPlan(path=lk.path, direction=lk.direction, rate_bps=int(c["rate_bps"]),
                               packet_bytes=int(c.get("packet_bytes", 1500)), start_ns=int(c["start_ns"]),
                               stop_ns=int(c["stop_ns"])))

    links = delayer_events(collapse(links, link_events), link_events)
    record, notes = cfg.get("record") or {}, []
    # What the kernel runs differently from the simulator is run as the kernel does and said so (notes).
    if any(t.get("join_timing", "fully_established") != "fully_established" for t in transports):
        notes.append("join_timing: the kernel cannot join at the SYN-ACK ('oot', the out-of-tree kernel); "
                     "it joined once fully established (as join_timing = 'fully_established')")
    if any(cfg["links"][lp.index].get("impairments") is None and (lp.loss or lp.gilbert_elliott or lp.jitter_ns)
           for lp in links):
        notes.append("impairments: the kernel's delayer drops and jitters packets before the queue "
                     "(as impairments = 'before_queue'; the simulator's default is after it)")
    if any(t.get("scheduler") not in (None, "linux") for t in transports):
        notes.append("scheduler: the kernel's default scheduler ran (recorded as 'linux')")
    notes += rcvbuf.window_cap_notes(transports)
    return Plan(
        n_paths=len(paths), path_names=[p["name"] for p in paths], links=links, flows=flows, cross=cross,
        path_events=sorted(events), drops=sorted(drops),
        mptcp_paths=mptcp_paths, backup_paths=tuple(sorted(backups)), duration_ns=int(cfg["duration_ns"]),
        sample_interval_ns=int(record.get("sample_interval_ns", 10_000_000)), seed=int(cfg.get("seed", 1)),
        rcv_buf_bytes=max((int(t["rcv_buf_bytes"]) for t in transports), default=6 << 20),
        snd_buf_bytes=max((int(t["snd_buf_bytes"]) for t in transports), default=6 << 20),
        init_cwnd_segments=int(transports[0].get("init_cwnd_segments", 10)) if transports else 10,
        stale_loss_cnt=stale_loss_cnt(transports),
        listener_so_rcvbuf_bytes=rcvbuf.listener_so_rcvbuf([f.so_rcvbuf_bytes for f in flows if f.direction == "upload"]),
        listener_so_sndbuf_bytes=sndbuf.listener_so_sndbuf([f.so_sndbuf_bytes for f in flows if f.direction == "download"]),
        notes=notes)

