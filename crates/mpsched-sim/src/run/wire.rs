//! The loop's output side: what draining an endpoint touches (the network, the event queue,
//! the segment store) and the network's sink for scheduled events and dropped packets.

use super::event::Event;
use super::inflight::{Destination, InFlight};
use super::skb::{OpenSkb, SkbStart};
use super::{Carried, Flow, Payload, PendingNs, Receiver, Side};
use crate::app::App;
use crate::config::SimConfig;
use crate::endpoint::{Endpoint, StoreSegment};
use crate::records::RunStats;
use mpsched_engine::event::EventQueue;
use mpsched_engine::net::{NetEvent, NetSink, Network, Packet, RouteId};
use mpsched_proto::tcp::{flags, Segment};

// `transmit` reports the subflows that carried data as bits of a u64.
const _: () = assert!(crate::validate::MAX_SUBFLOWS <= 64);

/// The loop's side of the network: schedules network events and frees dropped segments.
pub(super) struct Sink<'q> {
    pub(super) queue: &'q mut EventQueue<Event>,
    pub(super) segments: &'q mut InFlight,
}

impl NetSink<Payload> for Sink<'_> {
    /// Always inlined: with `#[inline]` the compiler may make it a call from the network's
    /// hop scheduling (callgrind: ~4 instructions a packet, more once the push grew).
    #[inline(always)]
    fn schedule(&mut self, at_ns: u64, event: NetEvent) {
        self.queue.push(at_ns, Event::Net(event));
    }
    #[inline]
    fn dropped(&mut self, pkt: Packet<Payload>) {
        match pkt.payload.carried() {
            Carried::Segment(idx) => self.segments.remove_chain(idx),
            Carried::AppMsg(slot) => {
                self.segments.take_app_msg(slot);
            }
            Carried::Cross => {}
        }
    }
}

/// What draining an endpoint's output touches: the network, the queue, the segment store.
pub(super) struct Wire<'s> {
    pub(super) cfg: &'s SimConfig,
    pub(super) now_ns: u64,
    pub(super) net: &'s mut Network<Payload>,
    pub(super) queue: &'s mut EventQueue<Event>,
    pub(super) segments: &'s mut InFlight,
    pub(super) stats: &'s mut RunStats,
    pub(super) path_routes: &'s [(RouteId, RouteId)],
}

impl Wire<'_> {
    /// Drains the output of `side`, endpoint `client_side` of flow `fi` (of its request half
    /// with `request`) over the flow's `paths`, onto its subflows' routes and re-arms the
    /// endpoint's timer. Returns the subflows that carried data, bit `i` for subflow `i` (the
    /// other half's ACKs on them ride along, [`super::Simulation::ack_rides_on_data`]).
    ///
    /// Every segment is its own packet until a data segment leaves on a path with `gso`: the
    /// rest of the drain then builds TSO skbs, out of line ([`Wire::transmit_skbs`]), so the
    /// loop every packet runs carries no skb state.
    #[inline(always)]
    pub(super) fn transmit(
        mut self,
        side: &mut Side,
        fi: usize,
        paths: &[usize],
        client_side: bool,
        request: bool,
    ) -> u64 {
        let now = self.now_ns;
        let mut data_subflows = 0u64;
        let dest = Destination { flow: fi as u32, subflow: 0, to_client: !client_side, request };
        let receiver = Receiver::of(dest);
        let mut to = Store { segments: self.segments, dest };
        // The segment is stored where the endpoint builds it (a data sender's: in its own frame,
        // from registers); only its handle, size and kind come back.
        while let Some(Stored { subflow, idx, size, data }) = side.ep.poll_transmit_to(now, &mut to) {
            let subflow = subflow as usize;
            let path = paths[subflow];
            let route = route(self.path_routes, path, client_side);
            if data {
                data_subflows |= 1u64 << subflow;
            }
            if data && self.cfg.paths[path].gso {
                // Read back as stored (exact): the skb path is out of line and rare.
                let seg = to.segments.segment(idx);
                let first = FirstSkb { paths, path, route, subflow, idx, seg: &seg, receiver };
                return self.transmit_skbs(side, fi, client_side, request, first, data_subflows);
            }
            let mut sink = Sink { queue: self.queue, segments: to.segments };
            self.net.send(now, route, size, Payload::segment(idx, receiver), &mut sink);
            self.stats.packets_sent += 1;
        }
        self.rearm_timer(side, fi, client_side, request);
        data_subflows
    }

    /// The rest of [`Wire::transmit`]'s drain once `skb` is open: a data segment that
    /// continues it joins it, anything else sends it first (and opens the next skb on a path
    /// with `gso`).
    #[inline(never)]
    fn transmit_skbs(
        mut self,
        side: &mut Side,
        fi: usize,
        client_side: bool,
        request: bool,
        first: FirstSkb<'_>,
        mut data_subflows: u64,
    ) -> u64 {
        let now = self.now_ns;
        let max_segs = side.ep.tso_segments(first.subflow);
        let (path, route, subflow, idx) = (first.path, first.route, first.subflow, first.idx);
        let receiver = first.receiver;
        let at = SkbStart { path, route, receiver, subflow, idx };
        let mut skb = Some(OpenSkb::start(self.cfg, at, first.seg, max_segs));
        let paths = first.paths;
        while let Some((subflow, seg)) = side.ep.poll_transmit(now) {
            let Placed { path, route, data, idx } = self.place(paths, subflow, &seg, fi, client_side, request);
            let size = seg.wire_bytes();
            if data {
                data_subflows |= 1u64 << subflow;
            }
            if let Some(o) = skb.as_mut() {
                if data && o.extend(self.segments, subflow, idx, &seg) {
                    continue;
                }
            }
            if let Some(o) = skb.take() {
                let mut sink = Sink { queue: self.queue, segments: self.segments };
                o.send(self.net, &mut sink, self.stats, now);
            }
            if data && self.cfg.paths[path].gso {
                let max_segs = side.ep.tso_segments(subflow);
                let at = SkbStart { path, route, receiver, subflow, idx };
                skb = Some(OpenSkb::start(self.cfg, at, &seg, max_segs));
                continue;
            }
            let mut sink = Sink { queue: self.queue, segments: self.segments };
            self.net.send(now, route, size as u32, Payload::segment(idx, receiver), &mut sink);
            self.stats.packets_sent += 1;
        }
        if let Some(o) = skb.take() {
            let mut sink = Sink { queue: self.queue, segments: self.segments };
            o.send(self.net, &mut sink, self.stats, now);
        }
        self.rearm_timer(side, fi, client_side, request);
        data_subflows
    }

    /// Where `seg`, sent on `subflow` of flow `fi` (`paths`: the flow's), goes, and its handle
    /// in the store (both drains, [`Wire::transmit`] and [`Wire::transmit_skbs`]).
    #[inline(always)]
    fn place(
        &mut self,
        paths: &[usize],
        subflow: usize,
        seg: &Segment,
        fi: usize,
        client_side: bool,
        request: bool,
    ) -> Placed {
        let path = paths[subflow];
        let route = route(self.path_routes, path, client_side);
        let dest = Destination { flow: fi as u32, subflow: 0, to_client: !client_side, request };
        let Stored { idx, data, .. } = store(self.segments, dest, subflow, seg);
        Placed { path, route, data, idx }
    }

    /// Re-arms the endpoint's timer if it now wants an earlier one.
    #[inline(always)]
    fn rearm_timer(&mut self, side: &mut Side, fi: usize, client_side: bool, request: bool) {
        if let Some(want) = side.ep.poll_timeout() {
            if side.timer_at_ns.get().is_none_or(|t| want < t) {
                let at = want.max(self.now_ns);
                side.timer_at_ns = PendingNs::at(at);
                push_later(self.queue, at, Event::Timer { flow: fi as u32, client: client_side, request });
            }
        }
    }
}

/// The route a segment from the `client_side` endpoint takes on `path` (`path_routes`: each
/// path's down and up routes).
#[inline(always)]
fn route(path_routes: &[(RouteId, RouteId)], path: usize, client_side: bool) -> RouteId {
    let (down, up) = path_routes[path];
    if client_side {
        up
    } else {
        down
    }
}

/// The drain's [`StoreSegment`]: a segment for `dest` (its `subflow` set by each call) goes into
/// `segments`.
struct Store<'a> {
    segments: &'a mut InFlight,
    dest: Destination,
}

impl StoreSegment for Store<'_> {
    type Out = Stored;
    #[inline(always)]
    fn store(&mut self, subflow: usize, seg: &Segment) -> Stored {
        store(self.segments, self.dest, subflow, seg)
    }
}

/// Stores `seg`, sent on `subflow` to `dest` (whose `subflow` it sets), in `segments`.
#[inline(always)]
fn store(segments: &mut InFlight, dest: Destination, subflow: usize, seg: &Segment) -> Stored {
    let data = seg.len > 0 && seg.flags & (flags::SYN | flags::FIN) == 0;
    let idx = segments.insert(Destination { subflow: subflow as u8, ..dest }, seg);
    // Stored where the sender builds it (its fields in registers, what the sender fixes folded
    // in) or from a segment returned: either way it must read back as the very segment (test
    // and debug builds check every one).
    if cfg!(any(test, debug_assertions)) {
        assert_eq!(segments.segment(idx), *seg, "segment {idx} read back");
    }
    Stored { subflow: subflow as u32, idx, size: seg.wire_bytes() as u32, data }
}

/// A segment of a drain, stored: its subflow, its handle, its bytes on the wire, whether it
/// carries data.
struct Stored {
    subflow: u32,
    idx: u32,
    size: u32,
    data: bool,
}

/// A segment of a drain, stored: its path and route, whether it carries data, its handle.
struct Placed {
    path: usize,
    route: RouteId,
    data: bool,
    idx: u32,
}

/// The data segment that opens a drain's first TSO skb: already in the store at `idx`, going
/// on `path`'s `route` from `subflow` (`paths`: the flow's).
pub(super) struct FirstSkb<'s> {
    paths: &'s [usize],
    path: usize,
    route: RouteId,
    subflow: usize,
    idx: u32,
    seg: &'s Segment,
    receiver: Receiver,
}

/// Sends the receiving application's messages of flow `fi`, `first` then the others `app`
/// has, on the flow's first path (`routes`: its down and up routes) from the `client_side`
/// endpoint.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
pub(super) fn send_app_messages(
    app: &mut App,
    first: (u32, u64),
    fi: usize,
    client_side: bool,
    routes: (RouteId, RouteId),
    now_ns: u64,
    net: &mut Network<Payload>,
    sink: &mut Sink<'_>,
    stats: &mut RunStats,
) {
    let route = if client_side { routes.1 } else { routes.0 };
    let mut next = Some(first);
    while let Some((tag, bytes)) = next {
        let size = bytes.min(u32::MAX as u64) as u32;
        let slot = sink.segments.insert_app_msg(fi as u32, tag);
        net.send(now_ns, route, size, Payload::app_msg(slot), sink);
        stats.packets_sent += 1;
        next = app.poll_message();
    }
}

/// Re-arms the application's wake-up of flow `f` (index `fi`) if it now wants an earlier one.
#[inline(always)]
pub(super) fn rearm_app(f: &mut Flow<'_>, queue: &mut EventQueue<Event>, fi: usize, now_ns: u64) {
    if let Some(want) = f.app.next_wakeup_ns() {
        if f.app_wakeup_ns.get().is_none_or(|t| want < t) {
            let at = want.max(now_ns);
            f.app_wakeup_ns = PendingNs::at(at);
            push_later(queue, at, Event::AppWakeup(fi as u32));
        }
    }
}

/// Schedules a timer or a wake-up the drain re-armed. (Out of line: most drains leave the armed
/// one as it is, and the heap's push inlined in the loop took its registers.)
#[inline(never)]
fn push_later(queue: &mut EventQueue<Event>, at_ns: u64, event: Event) {
    queue.push_later(at_ns, event);
}
