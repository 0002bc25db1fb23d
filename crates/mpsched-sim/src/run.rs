//! The event loop: assembles a validated [`SimConfig`] onto the engine, drives the protocol
//! endpoints and collects the [`Records`].
//!
//! The loop owns time. Protocol endpoints are sans-IO: after anything happens to an endpoint
//! (a segment, a timer, application data) the loop drains its output with `poll_transmit`,
//! puts each segment on the route of its subflow's path, and re-arms the endpoint's timer from
//! `poll_timeout` (one pending timer event per endpoint; stale ones are ignored).

use crate::app::App;
use crate::config::{ConfigError, SimConfig};
pub use crate::endpoint::CustomSchedulers;
use crate::endpoint::{build_endpoints, build_request_endpoints, ConnConfigs, Endpoint, Ep, Transport};
use crate::records::{ConnSample, LinkSample, Records, RunStats, SubflowSample};
use event::Event;
use host::HostRx;
use inflight::{Destination, InFlight, NO_SEGMENT};
use mpsched_engine::event::{EventQueue, PackedEvent};
use mpsched_engine::net::{LinkId, NetEvent, Network, RouteId};
use mpsched_engine::rng::Rng;
use mpsched_proto::PendingNs;
use rows::FlowRecords;
use wire::{rearm_app, Sink, Wire};

/// The loop's output side ([`Wire`]) of a `Simulation`, borrowed field by field so the flows
/// stay borrowable.
macro_rules! wire {
    ($sim:ident) => {
        Wire {
            cfg: $sim.cfg,
            now_ns: $sim.now_ns,
            net: &mut $sim.net,
            queue: &mut $sim.queue,
            segments: &mut $sim.segments,
            stats: &mut $sim.stats,
            path_routes: &$sim.path_routes,
        }
    };
}

// Declared first, with its macros: `deliver` below expands `after_activity_body!`.
#[macro_use]
mod activity;
mod event;
mod host;
mod inflight;
mod path_events;
#[cfg(test)]
mod pool_tests;
mod prefetch;
mod request;
mod rows;
mod skb;
mod wire;

/// Component-id bases of the random streams (stable: adding a component of one kind never
/// shifts the streams of another).
const RNG_LINK_BASE: u64 = 1 << 32;

/// What travels in a packet: a handle, so the engine moves a few bytes per hop while the
/// segment itself stays put in [`Simulation::segments`] until delivery or drop. Its first word
/// is a segment's index below [`PAYLOAD_APP`], an application message's slot in the same store
/// with that bit set, or [`PAYLOAD_CROSS`] (read it with [`Payload::carried`]). Its second word
/// is a segment's flow and side ([`Payload::receiver`]), so that a delivery loads the flow's
/// slot beside the segment's record rather than after it. The record, the slot, the endpoint
/// and its subflow were a chain of loads, each waiting on the one before; the record's miss
/// now overlaps the endpoint's (FatTree k=12: 0.962 the time a hop, benches/RESULTS.md,
/// Session 22). A link's propagation pipe holds 24-byte entries for it, 20 with one word.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Payload {
    code: u32,
    receiver: u32,
}

/// Flows a run may hold: a packet carries its flow's index in the 30 bits above its side's two
/// ([`Payload::receiver`]).
pub(crate) const MAX_FLOWS: usize = 1 << 30;

/// The bit of an application message's handle; segment indices stay below it (`InFlight`
/// refuses to grow past 2^31 records, ~100 GB of them).
const PAYLOAD_APP: u32 = 1 << 31;
const PAYLOAD_CROSS: u32 = u32::MAX;

/// What a [`Payload`] stands for.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Carried {
    /// Index of a segment in [`InFlight`].
    Segment(u32),
    /// A cross-traffic datagram (absorbed at the end of its route).
    Cross,
    /// An application message from a flow's receiving side to its sending side (a web
    /// request), outside the connection: it queues and can be lost like any packet. Its flow
    /// and tag are in [`InFlight`] at this slot (`take_app_msg`).
    AppMsg(u32),
}

/// Where a delivered packet goes, as its [`Payload`] carries it: the flow and the endpoint, not
/// the subflow (the segment's record holds that, and it is read at delivery anyway).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Receiver {
    pub(crate) flow: u32,
    pub(crate) to_client: bool,
    pub(crate) request: bool,
}

impl Receiver {
    #[inline(always)]
    fn of(dest: Destination) -> Self {
        Self { flow: dest.flow, to_client: dest.to_client, request: dest.request }
    }
}

impl Payload {
    /// Segment `idx`, going to `receiver` (its flow below [`MAX_FLOWS`]).
    #[inline(always)]
    fn segment(idx: u32, receiver: Receiver) -> Self {
        debug_assert!(idx < PAYLOAD_APP && (receiver.flow as usize) < MAX_FLOWS);
        let sides = (receiver.to_client as u32) << 1 | receiver.request as u32;
        Self { code: idx, receiver: receiver.flow << 2 | sides }
    }
    fn cross() -> Self {
        Self { code: PAYLOAD_CROSS, receiver: 0 }
    }
    /// The message in slot `slot` of `InFlight`'s messages (below `PAYLOAD_APP - 1`).
    fn app_msg(slot: u32) -> Self {
        debug_assert!(slot < PAYLOAD_APP - 1);
        Self { code: PAYLOAD_APP | slot, receiver: 0 }
    }
    #[inline]
    pub(crate) fn carried(self) -> Carried {
        match self.code {
            idx if idx < PAYLOAD_APP => Carried::Segment(idx),
            PAYLOAD_CROSS => Carried::Cross,
            v => Carried::AppMsg(v & !PAYLOAD_APP),
        }
    }
    /// The flow and endpoint a segment goes to (meaningless for the other kinds).
    #[inline(always)]
    pub(crate) fn receiver(self) -> Receiver {
        let r = self.receiver;
        Receiver { flow: r >> 2, to_client: r & 2 != 0, request: r & 1 != 0 }
    }
}

/// Side of a connection.
struct Side {
    ep: Ep,
    timer_at_ns: PendingNs,
    /// The endpoint timing model (None without `host_delay`).
    host: Option<Box<HostRx>>,
}

/// A running flow's slot, the first thing every event of the flow reads: 128 bytes, two
/// cache lines, which mimalloc's line-aligned buffers for the slot vector keep whole (at 112
/// bytes, half the slots spanned three). 16 of its bytes hold the flow's paths, read here
/// instead of from `cfg.flows[fi]` (another cold line a packet at 10 000 flows). Not
/// `#[repr(align(64))]`: that made the compiled event loop ~8.5 instructions a packet dearer
/// (benches (1), (2)) and 7 a hop on the FatTree (callgrind, perf17h5).
struct Flow<'a> {
    /// The flow's paths (its own or its transport's, `SimConfig::flow_paths`), subflow `i`
    /// on `paths[i]`.
    paths: &'a [usize],
    client: Side,
    server: Side,
    /// The client-to-server stream of an application whose client writes too (an RPC's
    /// requests), on the same paths: see `run/request.rs`.
    request: Option<Box<RequestHalf>>,
    app: App,
    /// Time of the pending application wake-up event, if any.
    app_wakeup_ns: PendingNs,
    /// The flow completed at this time; its records wait for the sender to see the last ACK.
    completed_ns: PendingNs,
}

/// The endpoints of a flow's request half-connection (client: its data sender). They run on
/// the flow's hosts: segments to them wait for the host timing model of the data connection's
/// side on the same host.
struct RequestHalf {
    client: Side,
    server: Side,
}

impl Flow<'_> {
    /// The data connection's sender is the client (an upload): `build_endpoints` puts the
    /// sending endpoint at the client exactly then, so the variant says what
    /// `cfg.flows[fi].direction` does without reading it.
    #[inline]
    fn sender_is_client(&self) -> bool {
        matches!(self.client.ep, Ep::Sender(_))
    }

    /// The endpoint `client` of the data connection, or (`request`) of the request half.
    #[inline]
    fn side(&self, client: bool, request: bool) -> &Side {
        match (request, &self.request) {
            (true, Some(r)) if client => &r.client,
            (true, Some(r)) => &r.server,
            _ if client => &self.client,
            _ => &self.server,
        }
    }

    /// [`Flow::side`], mutable. (`request` tested first: the request half's `Option` is read
    /// only for its own segments, not for every delivered packet, as a match on the pair did.)
    #[inline]
    fn side_mut(&mut self, client: bool, request: bool) -> &mut Side {
        if request {
            if let Some(r) = self.request.as_deref_mut() {
                return if client { &mut r.client } else { &mut r.server };
            }
        }
        if client {
            &mut self.client
        } else {
            &mut self.server
        }
    }

    /// (sender, receiver) sides of the data connection.
    fn roles(&self) -> (&Side, &Side) {
        if self.sender_is_client() {
            (&self.client, &self.server)
        } else {
            (&self.server, &self.client)
        }
    }
}

/// One simulation: the network, the event queue and the flows.
pub struct Simulation<'a> {
    cfg: &'a SimConfig,
    custom: Option<&'a dyn CustomSchedulers>,
    net: Network<Payload>,
    queue: EventQueue<Event>,
    segments: InFlight,
    now_ns: u64,
    /// (down route, up route) of each path.
    path_routes: Vec<(RouteId, RouteId)>,
    cross_routes: Vec<RouteId>,
    /// The connection settings the last flow was built with (reused while they fit).
    conn_configs: ConnConfigs,
    flows: Vec<Option<Flow<'a>>>,
    /// Flows whose start time has come (a flow starting after the run's end never does).
    started: Vec<bool>,
    /// Flow indices by start time, and the position of the next one to schedule.
    start_order: Vec<u32>,
    next_start: usize,
    finished_rows: Vec<FlowRecords>,
    active_flows: usize,
    /// The most flows that have run at once (bounds the endpoints kept for later flows).
    peak_active_flows: usize,
    pending_flows: usize,
    stats: RunStats,
    subflow_samples: Vec<SubflowSample>,
    conn_samples: Vec<ConnSample>,
    link_samples: Vec<LinkSample>,
    /// What each finished flow's request half carried (unit tests look).
    #[cfg(test)]
    request_tallies: Vec<request::RequestTally>,
}

/// Told the simulated time of a running simulation, for a progress display (a long run shows
/// how far it is). It sees times only: nothing it does changes the run's records.
pub trait Progress {
    /// The run has reached `now_ns` of at most `duration_ns`: every [`PROGRESS_EVENTS`]
    /// events, with times that never decrease, and once at the end with the run's end time.
    fn simulated(&self, now_ns: u64, duration_ns: u64);
}

/// Events between two [`Progress`] reports (a power of two: the loop tests a mask; at several
/// million events per second, some hundred reports a second).
pub const PROGRESS_EVENTS: u64 = 1 << 15;

/// Runs a configuration to the end and returns its records.
pub fn run(cfg: &SimConfig) -> Result<Records, ConfigError> {
    run_with(cfg, None)
}

/// Like [`run`], with schedulers the registry does not know (see [`CustomSchedulers`]).
pub fn run_with(cfg: &SimConfig, custom: Option<&dyn CustomSchedulers>) -> Result<Records, ConfigError> {
    run_with_progress(cfg, custom, None)
}

/// Like [`run_with`], reporting the simulated time to `progress` as the run goes.
pub fn run_with_progress(
    cfg: &SimConfig,
    custom: Option<&dyn CustomSchedulers>,
    progress: Option<&dyn Progress>,
) -> Result<Records, ConfigError> {
    cfg.validate()?;
    // Build every connection once up front so a bad scheduler or CC name is a config error
    // before any time passes, not a failure in the middle of the run.
    for (i, t) in cfg.transports.iter().enumerate() {
        crate::endpoint::check_transport(t, custom)
            .map_err(|message| ConfigError { field: format!("transports[{i}]"), message })?;
    }
    let mut sim = Simulation::new(cfg, custom);
    sim.run_to_end(progress);
    Ok(sim.into_records())
}

impl<'a> Simulation<'a> {
    // Once a run, out of line: inlined into `run_with_progress` beside the event loop, it
    // shifted the loop's register allocation (callgrind: 8.0 instructions a packet more on (1),
    // 7.1 on (2), none of them its own).
    #[inline(never)]
    fn new(cfg: &'a SimConfig, custom: Option<&'a dyn CustomSchedulers>) -> Self {
        let mut net = Network::new();
        for (i, l) in cfg.links.iter().enumerate() {
            net.add_link(l.clone(), Rng::stream(cfg.seed, RNG_LINK_BASE + i as u64));
        }
        let ids = |v: &[usize]| v.iter().map(|&l| l as LinkId).collect::<Vec<_>>();
        let path_routes = cfg.paths.iter().map(|p| (net.add_route(ids(&p.down)), net.add_route(ids(&p.up)))).collect();
        let cross_routes = cfg.cross_traffic.iter().map(|c| net.add_route(ids(&c.links))).collect();
        // Packet events (hops, host handling, cross traffic) go in the queue's first lane;
        // timers, wake-ups, starts, samples and path events, mostly far ahead, in its second
        // (`push_later`), so each hop's arrival does not sift through every pending timer.
        let mut queue = EventQueue::new();
        // Flow starts are scheduled one at a time, in start order, so the event queue holds
        // what is in progress, not the whole workload (a 10 000-flow run keeps a small heap).
        let mut start_order: Vec<u32> = (0..cfg.flows.len() as u32).collect();
        start_order.sort_by_key(|&i| cfg.flows[i as usize].start_ns);
        if let Some(&first) = start_order.first() {
            queue.push_later(cfg.flows[first as usize].start_ns, Event::FlowStart(first));
        }
        for (i, c) in cfg.cross_traffic.iter().enumerate() {
            if c.start_ns < c.stop_ns {
                queue.push(c.start_ns, Event::CrossSend(i as u32));
            }
        }
        for (i, e) in cfg.path_events.iter().enumerate() {
            queue.push_later(e.at_ns(), Event::Path(i as u32));
            if let Some(end) = e.end_ns() {
                queue.push_later(end, Event::PathEnd(i as u32));
            }
        }
        if cfg.record.sample_interval_ns > 0 {
            queue.push_later(0, Event::Sample);
        }
        Self {
            cfg,
            custom,
            net,
            queue,
            segments: InFlight::default(),
            now_ns: 0,
            path_routes,
            cross_routes,
            conn_configs: ConnConfigs::default(),
            flows: (0..cfg.flows.len()).map(|_| None).collect(),
            started: vec![false; cfg.flows.len()],
            start_order,
            next_start: 1,
            // Room for every flow's rows at once: grown by doubling it was copied 9 times in a
            // run of 1 000 flows (~3 instructions a packet); rows are written only as flows end.
            finished_rows: Vec::with_capacity(cfg.flows.len()),
            active_flows: 0,
            peak_active_flows: 0,
            pending_flows: cfg.flows.len(),
            stats: RunStats::default(),
            subflow_samples: Vec::new(),
            conn_samples: Vec::new(),
            link_samples: Vec::new(),
            #[cfg(test)]
            request_tallies: Vec::new(),
        }
    }

    /// True when nothing more can happen that the records care about.
    fn all_done(&self) -> bool {
        self.pending_flows == 0
            && self.active_flows == 0
            && self.cfg.cross_traffic.iter().all(|c| c.stop_ns <= self.now_ns)
    }

    fn run_to_end(&mut self, progress: Option<&dyn Progress>) {
        while let Some((at_ns, code)) = self.queue.pop_code() {
            if at_ns > self.cfg.duration_ns {
                break;
            }
            self.now_ns = at_ns;
            self.stats.events += 1;
            // The next arrival's link state loads while this event is handled (a hint).
            // (The packet lane's head: a timer due first is rare, and a wrong hint costs a load.)
            if let Some(link) = self.queue.peek_packet_code().and_then(event::pipe_arrive_link) {
                self.net.prefetch_link(link);
            }
            if self.stats.events & (PROGRESS_EVENTS - 1) == 0 {
                if let Some(p) = progress {
                    p.simulated(at_ns, self.cfg.duration_ns);
                }
            }
            // Only `on_net` is inline here: the others' bodies took the hot loop's registers.
            // The network's events (nearly all) are told apart from the rest by one test.
            if let Some(ne) = event::net_event(code) {
                self.on_net(ne);
                continue;
            }
            match Event::unpack(code) {
                Event::Net(_) => unreachable!("a network event is decoded by net_event"),
                Event::FlowStart(f) => self.start_flow(f as usize),
                Event::Timer { flow, client, request } => self.on_timer(flow as usize, client, request),
                Event::AppWakeup(flow) => self.on_app_wakeup(flow as usize),
                Event::Sample => {
                    self.sample();
                    // Once nothing more can start, stop sampling and let the packets still in
                    // the network drain (the loop ends when the queue is empty).
                    if !self.all_done() {
                        let next = self.now_ns + self.cfg.record.sample_interval_ns;
                        self.queue.push_later(next, Event::Sample);
                    }
                }
                Event::CrossSend(c) => self.cross_send(c as usize),
                Event::Path(e) => self.path_event(self.cfg.path_events[e as usize], true),
                Event::PathEnd(e) => self.path_event(self.cfg.path_events[e as usize], false),
                Event::HostRx(idx) => {
                    let to = Receiver::of(self.segments.destination(idx));
                    self.deliver(idx, to, false)
                }
            }
        }
        self.stats.end_ns = self.now_ns.min(self.cfg.duration_ns);
        if let Some(p) = progress {
            p.simulated(self.stats.end_ns, self.cfg.duration_ns);
        }
    }

    fn on_net(&mut self, ne: NetEvent) {
        let mut sink = Sink { queue: &mut self.queue, segments: &mut self.segments };
        let arrived = self.net.handle(self.now_ns, ne, &mut sink);
        self.stats.packet_hops += 1;
        if let NetEvent::PipeArrive(link) = ne {
            self.prefetch_pipe(link);
        }
        let Some(pkt) = arrived else { return };
        let carried = pkt.payload.carried();
        if let Carried::AppMsg(slot) = carried {
            let (flow, tag) = self.segments.take_app_msg(slot);
            let fi = flow as usize;
            if let Some(f) = self.flows[fi].as_mut() {
                f.app.on_message(tag);
                let sender_is_client = f.sender_is_client();
                self.after_activity(fi, sender_is_client);
            }
            return;
        }
        if let Carried::Segment(idx) = carried {
            self.deliver(idx, pkt.payload.receiver(), true);
        }
    }

    /// Hands segment `idx` (with the rest of its skb) to its endpoint `to`, which then frees it;
    /// one that has just arrived (`arrived`) at an endpoint with a host delay is handed over
    /// later instead. An skb's segments are handled together and answered once, as the
    /// receiving TCP handles one skb (one ACK for a GSO skb of several segments).
    fn deliver(&mut self, idx: u32, to: Receiver, arrived: bool) {
        let (fi, to_client, request) = (to.flow as usize, to.to_client, to.request);
        let now = self.now_ns;
        let Some(f) = self.flows[fi].as_mut() else {
            self.segments.remove_chain(idx);
            return;
        };
        // The host's timing model is its data connection side's, whichever half the segment is of.
        let host = if to_client { &mut f.client.host } else { &mut f.server.host };
        if let (true, Some(h)) = (arrived, host.as_mut()) {
            self.queue.push(h.handle_at(now), Event::HostRx(idx));
            return;
        }
        if cfg!(any(test, debug_assertions)) {
            assert_eq!(to, Receiver::of(self.segments.destination(idx)), "segment {idx}'s packet names its flow");
        }
        let side = f.side_mut(to_client, request);
        // Each segment is read back and freed before it is handled. (Its record loaded beside
        // the flow's slot: the packet names the flow.)
        let (mut at, mut subflow) = (idx, self.segments.destination(idx).subflow);
        loop {
            let seg = self.segments.take(&mut at);
            side.ep.handle_segment(now, subflow as usize, seg);
            if at == NO_SEGMENT {
                break;
            }
            subflow = self.segments.destination(at).subflow;
        }
        // Every delivered packet ends here: the body inline, not a call (whose prologue and
        // epilogue save and restore the registers the body uses).
        if request {
            self.request_activity(fi, to_client);
        } else {
            after_activity_body!(self, f, fi, to_client);
        }
    }

    /// [`Simulation::after_activity`] of the data connection or (`request`) of the request half.
    #[inline]
    fn activity(&mut self, fi: usize, client_side: bool, request: bool) {
        if request {
            self.request_activity(fi, client_side);
        } else {
            self.after_activity(fi, client_side);
        }
    }

    #[inline(never)]
    fn start_flow(&mut self, fi: usize) {
        if let Some(&next) = self.start_order.get(self.next_start) {
            self.next_start += 1;
            self.queue.push_later(self.cfg.flows[next as usize].start_ns, Event::FlowStart(next));
        }
        let fc = &self.cfg.flows[fi];
        let transport = Transport { index: fc.transport, config: &self.cfg.transports[fc.transport] };
        let nagle = fc.nagle();
        let paths = self.cfg.flow_paths(fi);
        let conns = &mut self.conn_configs;
        let (client, server) = build_endpoints(transport, paths, fc.direction, self.now_ns, self.custom, nagle, conns);
        self.started[fi] = true;
        let side = |ep, client| Side { ep, timer_at_ns: PendingNs::NONE, host: HostRx::new(self.cfg, fi, client) };
        let request = App::carries_requests(&fc.app).then(|| {
            let (client, server) = build_request_endpoints(transport, paths, self.now_ns, self.custom, nagle, conns);
            let side = |ep| Side { ep, timer_at_ns: PendingNs::NONE, host: None };
            Box::new(RequestHalf { client: side(client), server: side(server) })
        });
        self.flows[fi] = Some(Flow {
            paths,
            client: side(client, true),
            server: side(server, false),
            request,
            app: App::new(&fc.app, fc.start_ns),
            app_wakeup_ns: PendingNs::NONE,
            completed_ns: PendingNs::NONE,
        });
        self.pending_flows -= 1;
        self.active_flows += 1;
        self.peak_active_flows = self.peak_active_flows.max(self.active_flows);
        self.after_activity(fi, true);
        self.after_activity(fi, false);
    }

    #[inline(never)]
    fn on_timer(&mut self, fi: usize, client: bool, request: bool) {
        // (Here, out of the event loop: inlined there, the hint's code made the loop compile
        // ~6 instructions a packet dearer on (1), (2) and (5).)
        self.prefetch_next_timer();
        let now = self.now_ns;
        let Some(f) = self.flows[fi].as_mut() else { return };
        let side = f.side_mut(client, request);
        if side.timer_at_ns.get() != Some(now) {
            return; // superseded by an earlier timer
        }
        side.timer_at_ns = PendingNs::NONE;
        if side.ep.poll_timeout().is_some_and(|t| t <= now) {
            side.ep.handle_timeout(now);
        }
        self.activity(fi, client, request);
    }

    #[inline(never)]
    fn on_app_wakeup(&mut self, fi: usize) {
        let now = self.now_ns;
        let Some(f) = self.flows[fi].as_mut() else { return };
        if f.app_wakeup_ns.get() != Some(now) {
            return; // superseded
        }
        f.app_wakeup_ns = PendingNs::NONE;
        f.app.on_wakeup(now);
        // Either end may have something to do (a sender's next block, a client's request).
        self.after_activity(fi, false);
        self.after_activity(fi, true);
    }

    fn cross_send(&mut self, ci: usize) {
        let c = &self.cfg.cross_traffic[ci];
        let now = self.now_ns;
        let mut sink = Sink { queue: &mut self.queue, segments: &mut self.segments };
        self.net.send(now, self.cross_routes[ci], c.packet_bytes as u32, Payload::cross(), &mut sink);
        self.stats.packets_sent += 1;
        // Integer pacing without drift: the k-th packet leaves at start + k * size * 8 / rate.
        let gap_ns = mpsched_engine::time::serialization_ns(c.packet_bytes, c.rate_bps);
        let next = now + gap_ns.max(1);
        if next < c.stop_ns {
            self.queue.push(next, Event::CrossSend(ci as u32));
        }
    }
}
