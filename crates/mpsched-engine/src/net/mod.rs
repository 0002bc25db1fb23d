//! The network: links joined into routes, and the packets travelling on them.
//!
//! A packet carries its place in its route and the id of the link after it (htsim's
//! packet-carried route), so forwarding never searches a graph, and the next link's state is
//! loaded straight from the arriving packet rather than through the route tables. Each hop
//! costs one event, the arrival at the far end (`PipeArrive` on FIFO links, which keep one
//! pending event each for the head of their pipe; `Arrive` where jitter reorders): a link
//! computes serialisation at once (see `link`).
//! Where reordering jitter acts before the queue, a hop costs two: the packet's arrival at the
//! queue (`Enqueue`) orders it there. The network never owns the event queue: it asks the
//! caller's [`NetSink`] to schedule its events and hands it every packet it drops, so the event
//! loop (in `mpsched-sim`) stays the only owner of time and can free what a packet refers to.
//!
//! The payload type `P` is opaque here: the engine knows nothing of TCP.

mod capacity;
mod impairment;
mod jitter;
mod link;
mod loss;
mod ring;
mod shaper;

pub use capacity::{CapacityConfig, RateStep};
pub use impairment::{Impairment, LossRamp};
pub use jitter::{JitterConfig, JitterDistribution};
pub use link::{LinkSpec, LinkState, LinkStats, MAX_OVERHEAD_BYTES};
pub use loss::LossConfig;
pub use shaper::{Impairments, Transmitter, HTB_DEFAULT_BURST_BYTES};

use crate::rng::Rng;
use link::{Accepted, Link, Short};
use slab::Slab;

/// Index of a link in its [`Network`].
pub type LinkId = u32;
/// Index of a route in its [`Network`].
pub type RouteId = u32;

/// A packet in the network.
#[derive(Debug, Clone)]
pub struct Packet<P> {
    /// Size on the wire, bytes (headers included): what serialisation and queues count.
    pub size_bytes: u32,
    /// Position in the network's `route_links` of the link the packet is on.
    at: u32,
    /// The link after that one on the route (`ROUTE_END`: the route ends there). Carried so
    /// that an arrival reaches the next link in one load from the packet, not three (the
    /// route's start, its link list, then the link), each waiting on the one before.
    next: LinkId,
    /// What the packet carries (opaque to the engine).
    pub payload: P,
}

/// The entry of `route_links` after a route's last link.
const ROUTE_END: LinkId = LinkId::MAX;

/// Cache lines of a link that a plain hop reads (see `Link`'s layout).
const LINK_HOT_LINES: usize = 3;

/// Links from which the network keeps each pipe's front address apart (`Network::fronts`).
/// Below, the links and their pipes' few lines stay in the per-core L2 (512 KiB here) and the
/// bookkeeping would only cost instructions: FatTree k=4 has 96 links, k=8 768, k=16 6 144;
/// a dumbbell a handful.
const MIN_LINKS_FOR_FRONTS: usize = 512;

impl<P> Packet<P> {
    /// A packet on the last link of a route (for tests of the link's records).
    #[cfg(test)]
    pub(crate) fn for_test(size_bytes: u32, payload: P) -> Self {
        Self { size_bytes, at: 0, next: ROUTE_END, payload }
    }
}

/// Network events; the caller schedules them and hands them back to [`Network::handle`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetEvent {
    /// A packet (index in the propagation slab) reached the far end of its current link
    /// (links whose jitter reorders packets).
    Arrive(u32),
    /// The packet at the head of a FIFO link's propagation pipe reached the far end.
    PipeArrive(LinkId),
    /// A packet (index in the propagation slab) reached the queue of its current link after
    /// the delay in front of it (links with reordering jitter before the queue).
    Enqueue(u32),
}

/// Low bits of a packed [`NetEvent`] that hold its index (the top two hold the variant).
const NET_INDEX_BITS: u32 = 30;

impl crate::event::PackedEvent for NetEvent {
    /// The event as a 2-bit variant and a 30-bit index (a link or a propagation-slab entry;
    /// more than 2^30 of either is a run that does not fit memory anyway). The simulator's
    /// loop packs the network's events among its own (`mpsched-sim`'s `run/event.rs`).
    #[inline]
    fn pack(self) -> u32 {
        let (kind, index) = match self {
            NetEvent::Arrive(i) => (0, i),
            NetEvent::PipeArrive(l) => (1, l),
            NetEvent::Enqueue(i) => (2, i),
        };
        assert!(index < 1 << NET_INDEX_BITS, "network event index {index} does not fit {NET_INDEX_BITS} bits");
        kind << NET_INDEX_BITS | index
    }
    #[inline]
    fn unpack(code: u32) -> Self {
        let index = code & ((1 << NET_INDEX_BITS) - 1);
        match code >> NET_INDEX_BITS {
            0 => NetEvent::Arrive(index),
            1 => NetEvent::PipeArrive(index),
            _ => NetEvent::Enqueue(index),
        }
    }
}

/// Where the network sends its outputs: events to schedule and packets it dropped.
///
/// Any `FnMut(u64, NetEvent)` closure is a sink that ignores drops.
pub trait NetSink<P> {
    /// Schedule `event` at absolute time `at_ns`.
    fn schedule(&mut self, at_ns: u64, event: NetEvent);
    /// A packet was dropped (queue overflow, random loss, link down).
    #[allow(unused_variables)]
    fn dropped(&mut self, pkt: Packet<P>) {}
}

impl<P, F: FnMut(u64, NetEvent)> NetSink<P> for F {
    #[inline]
    fn schedule(&mut self, at_ns: u64, event: NetEvent) {
        self(at_ns, event)
    }
}

/// Links, routes and the packets propagating between them.
pub struct Network<P> {
    links: Vec<Link<P>>,
    /// (start in `route_links`, length) of each route.
    routes: Vec<(u32, u32)>,
    /// The links of every route in one vector, each route followed by `ROUTE_END`: a packet
    /// at position `at` goes on to `route_links[at + 1]`.
    route_links: Vec<LinkId>,
    /// Packets propagating on reordering links, with the link's epoch when they entered.
    propagating: Slab<(u32, Packet<P>)>,
    /// With `MIN_LINKS_FOR_FRONTS` links or more, the address of each link's pipe front entry
    /// (empty below): the packet an arrival pops lives behind the link's ring pointer, so
    /// fetching it from the link waits for the link's own lines, a miss with thousands of links;
    /// kept here (8 bytes a link, L2-resident), it is fetched with them an event ahead
    /// (`prefetch_link`). Refreshed whenever a pipe's front moves on the hop's paths; only ever
    /// prefetched, so a stale one (a ring reallocated or cleared since) wastes one prefetch.
    fronts: Vec<usize>,
}

impl<P> Default for Network<P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P> Network<P> {
    /// An empty network.
    pub fn new() -> Self {
        Self {
            links: Vec::new(),
            routes: Vec::new(),
            route_links: Vec::new(),
            propagating: Slab::new(),
            fronts: Vec::new(),
        }
    }

    /// Adds a link; `rng` is the link's own random stream (loss and jitter).
    pub fn add_link(&mut self, spec: LinkSpec, rng: Rng) -> LinkId {
        self.links.push(Link::new(spec, rng));
        if self.links.len() >= MIN_LINKS_FOR_FRONTS {
            let from = self.fronts.len();
            self.fronts.extend(self.links[from..].iter().map(|l| l.pipe.front_addr()));
        }
        (self.links.len() - 1) as LinkId
    }

    /// Adds a route through `links` in order; it must hold at least one link.
    pub fn add_route(&mut self, links: Vec<LinkId>) -> RouteId {
        assert!(!links.is_empty(), "a route needs at least one link");
        self.routes.push((self.route_links.len() as u32, links.len() as u32));
        assert!(links.len() < u32::MAX as usize && !links.contains(&ROUTE_END), "a route of {} links", links.len());
        self.route_links.extend(links);
        self.route_links.push(ROUTE_END);
        (self.routes.len() - 1) as RouteId
    }

    /// Number of links.
    pub fn link_count(&self) -> usize {
        self.links.len()
    }

    /// Name of a link.
    pub fn link_name(&self, link: LinkId) -> &str {
        &self.links[link as usize].spec.name
    }

    /// Counters of a link.
    pub fn link_stats(&self, link: LinkId) -> &LinkStats {
        &self.links[link as usize].stats
    }

    /// Bytes and packets waiting in a link's queue at `now_ns` (the packet being serialised
    /// excluded).
    pub fn queue_occupancy(&self, link: LinkId, now_ns: u64) -> (u64, u64) {
        self.links[link as usize].waiting(now_ns)
    }

    /// Payload of the packet `ahead` places behind the head of a FIFO link's propagation pipe
    /// (0: the head), if the pipe holds that many: the packets this link delivers next, in
    /// order (what the event loop prefetches state for).
    #[inline]
    pub fn pipe_payload(&self, link: LinkId, ahead: usize) -> Option<&P> {
        self.links[link as usize].pipe.get(ahead).map(|e| &e.pkt.payload)
    }

    /// Starts loading the state a packet arriving on `link` reads first (its first three cache
    /// lines: see `Link`'s layout) into the cache, and with `fronts` kept, the pipe entry it
    /// pops: a hint, for an arrival that comes soon.
    #[inline]
    pub fn prefetch_link(&self, link: LinkId) {
        if let Some(l) = self.links.get(link as usize) {
            crate::prefetch::object(l, LINK_HOT_LINES);
        }
        if let Some(&front) = self.fronts.get(link as usize) {
            crate::prefetch::line(front as *const u8);
        }
    }

    /// Refreshes `id`'s entry of `fronts` after its pipe's front may have moved.
    #[inline(always)]
    fn note_front(&mut self, id: LinkId) {
        if let Some(front) = self.fronts.get_mut(id as usize) {
            *front = self.links[id as usize].pipe.front_addr();
        }
    }

    /// Links of a route.
    pub fn route_links(&self, route: RouteId) -> &[LinkId] {
        let (start, len) = self.routes[route as usize];
        &self.route_links[start as usize..(start + len) as usize]
    }

    /// The link a packet is on (out of the hop's path: the FIFO arrival knows its link).
    #[inline]
    fn current_link(&self, pkt: &Packet<P>) -> LinkId {
        self.route_links[pkt.at as usize]
    }

    /// Injects a packet at the start of `route` at time `now_ns`.
    pub fn send(&mut self, now_ns: u64, route: RouteId, size_bytes: u32, payload: P, sink: &mut impl NetSink<P>) {
        let (at, _) = self.routes[route as usize];
        let id = self.route_links[at as usize];
        let pkt = Packet { size_bytes, at, next: self.route_links[at as usize + 1], payload };
        self.enter(now_ns, id, pkt, sink);
    }

    /// A packet enters link `id`, the one at position `pkt.at` of `route_links`: a plain
    /// link's hop takes the short path (`Link::enqueue_short`), any other the general one.
    #[inline]
    fn enter(&mut self, now_ns: u64, id: LinkId, pkt: Packet<P>, sink: &mut impl NetSink<P>) {
        debug_assert_eq!(id, self.current_link(&pkt));
        let link = &mut self.links[id as usize];
        let pipe_was_empty = link.pipe.is_empty();
        match link.enqueue_short(now_ns, pkt) {
            // FIFO propagation: see `place`.
            Short::Arrives(at_ns) => {
                if pipe_was_empty {
                    sink.schedule(at_ns, NetEvent::PipeArrive(id));
                }
                // A push moves the front when the pipe was empty or its ring grew.
                self.note_front(id);
            }
            Short::Dropped(pkt) => sink.dropped(pkt),
            Short::General(pkt) => self.enter_general(now_ns, id, pkt, sink),
        }
    }

    /// `enter` off the short path.
    #[inline(never)]
    fn enter_general(&mut self, now_ns: u64, id: LinkId, pkt: Packet<P>, sink: &mut impl NetSink<P>) {
        let link = &mut self.links[id as usize];
        let pipe_was_empty = link.pipe.is_empty();
        let accepted = link.accept_general(now_ns, pkt);
        self.place(id, pipe_was_empty, accepted, sink);
        self.note_front(id);
    }

    /// Puts a packet where its link sent it: dropped, into the propagation pipe or slab, or
    /// into the delay line before the queue.
    #[inline(always)]
    fn place(&mut self, id: LinkId, pipe_was_empty: bool, accepted: Accepted<P>, sink: &mut impl NetSink<P>) {
        let link = &self.links[id as usize];
        match accepted {
            Accepted::Dropped(p) => sink.dropped(p),
            Accepted::Stuck => {}
            Accepted::Arrives(at_ns, Some(p)) => {
                let idx = self.propagating.insert((link.epoch(), p));
                sink.schedule(at_ns, NetEvent::Arrive(idx as u32));
            }
            Accepted::Delayed(at_ns, p) => {
                let idx = self.propagating.insert((link.epoch(), p));
                sink.schedule(at_ns, NetEvent::Enqueue(idx as u32));
            }
            Accepted::Arrives(at_ns, None) => {
                // FIFO propagation: one pending event per link, for the head of its pipe,
                // keeps the event heap as small as the number of links.
                if pipe_was_empty {
                    sink.schedule(at_ns, NetEvent::PipeArrive(id));
                }
            }
        }
    }

    /// Processes one network event. Returns a packet that reached the end of its route.
    #[inline]
    pub fn handle(&mut self, now_ns: u64, event: NetEvent, sink: &mut impl NetSink<P>) -> Option<Packet<P>> {
        let (stale, link, pkt) = match event {
            NetEvent::PipeArrive(link) => {
                // The link the head enters next, and the route entry after it, start loading
                // now, while the head itself loads (the arrival link was prefetched by the
                // event before: `prefetch_link`).
                let (next, at) = self.links[link as usize].head_hint();
                if let Some(n) = self.links.get(next as usize) {
                    crate::prefetch::object(n, LINK_HOT_LINES);
                    crate::prefetch::line(self.route_links.as_ptr().wrapping_add(at as usize + 1));
                }
                let l = &mut self.links[link as usize];
                if !l.head_arrived(now_ns) {
                    // An event outdated by a rate change (`Link::retime_waiting`): the head's
                    // new event follows.
                    return None;
                }
                let (entry, stale) = l.pipe_pop()?;
                if let Some(next_ns) = l.pipe_front_arrive_ns() {
                    sink.schedule(next_ns, NetEvent::PipeArrive(link));
                }
                self.note_front(link);
                (stale, link, entry.pkt)
            }
            NetEvent::Arrive(idx) => {
                let (epoch, pkt) = self.propagating.remove(idx as usize);
                let id = self.current_link(&pkt);
                (epoch != self.links[id as usize].epoch(), id, pkt)
            }
            NetEvent::Enqueue(idx) => {
                let (epoch, pkt) = self.propagating.remove(idx as usize);
                let id = self.current_link(&pkt);
                let link = &mut self.links[id as usize];
                if !link.delay_ok(epoch) {
                    sink.dropped(pkt);
                    return None;
                }
                let pipe_was_empty = link.pipe.is_empty();
                let accepted = link.enqueue_delayed(now_ns, pkt);
                self.place(id, pipe_was_empty, accepted, sink);
                self.note_front(id);
                return None;
            }
        };
        self.forward(now_ns, stale, link, pkt, sink)
    }

    /// A packet reached the far end of `link`, its current one (`stale`: the link went down
    /// since it entered): hand it to the next link, or return it when its route ends here.
    #[inline]
    fn forward(
        &mut self,
        now_ns: u64,
        stale: bool,
        link: LinkId,
        mut pkt: Packet<P>,
        sink: &mut impl NetSink<P>,
    ) -> Option<Packet<P>> {
        if !self.links[link as usize].arrive_ok(stale, pkt.size_bytes) {
            sink.dropped(pkt);
            return None;
        }
        if pkt.next == ROUTE_END {
            return Some(pkt);
        }
        let id = pkt.next;
        pkt.at += 1;
        // The link after the next: read beside the next link's state, not before it.
        pkt.next = self.route_links[pkt.at as usize + 1];
        self.enter(now_ns, id, pkt, sink);
        None
    }

    /// Takes a link down (what it holds is lost: queued, being serialised, propagating) or
    /// brings it back up.
    pub fn set_link_up(&mut self, now_ns: u64, link: LinkId, up: bool) {
        let state = if up { LinkState::Up } else { LinkState::Down };
        self.set_link_state(now_ns, link, state);
    }

    /// Puts a link in `state` (see [`LinkState`]: down loses what it holds, closed delivers
    /// it and takes nothing new).
    pub fn set_link_state(&mut self, now_ns: u64, link: LinkId, state: LinkState) {
        self.links[link as usize].set_state(now_ns, state);
    }

    /// The impairments in force on a link.
    pub fn impairment(&self, link: LinkId) -> &Impairment {
        self.links[link as usize].impairment()
    }

    /// Puts a link under `impairment` (replacing what was in force) at `now_ns`: packets the
    /// link accepts from now are treated under it; those already accepted keep their loss,
    /// delay and arrival, except that a change of the serialisation rate (a rate collapse set
    /// or lifted) re-times the packets still waiting in the queue, as a qdisc re-reads its
    /// rate at each dequeue (see `Link::retime_waiting`).
    pub fn set_impairment(&mut self, now_ns: u64, link: LinkId, impairment: Impairment, sink: &mut impl NetSink<P>) {
        let l = &mut self.links[link as usize];
        let rate_changed = l.impairment().rate_limit_bps != impairment.rate_limit_bps;
        l.set_impairment(impairment);
        if rate_changed {
            if let Some(head_ns) = l.retime_waiting(now_ns) {
                sink.schedule(head_ns, NetEvent::PipeArrive(link));
            }
        }
    }
}

#[cfg(test)]
mod shaper_tests;
#[cfg(test)]
mod tests;
