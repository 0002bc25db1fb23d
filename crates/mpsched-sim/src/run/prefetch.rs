//! Prefetching the state of the packets a link delivers next, and of the timers that fire next.
//!
//! With thousands of flows, the state one delivered segment touches (its record, the flow's
//! slot, the receiving endpoint and its subflow) has left the caches since that flow's last
//! packet, and each of those loads stalls in turn, as each address is read from the one
//! before. A FIFO link's propagation pipe holds the packets it delivers next, in order, so
//! while the loop handles one packet it starts the loads for the ones behind it, one level of
//! that chain per distance: the record of the packet `RECORD_AHEAD` places back, the flow of
//! the one `FLOW_AHEAD` back (the packet names it), and so on. That pays only where one link's
//! arrivals follow each other closely in the loop (a shared bottleneck), not among thousands of
//! busy links (`MAX_PACKET_EVENTS`). The second lane of the event queue
//! (timers, wake-ups) is ordered too, and its next two are known: a firing timer fetches the
//! next one's endpoint and the flow slot of the one after. Hints only: nothing here writes,
//! and the records cannot change.

use super::{Carried, Event, Simulation};
use crate::endpoint::Endpoint;
use mpsched_engine::event::PackedEvent;
use mpsched_engine::net::LinkId;
use mpsched_engine::prefetch;

/// Pipe positions (0: the next packet to arrive) at which each level of a delivery's state
/// is fetched: each level reads the one fetched at the larger distance, a few events earlier.
const RECORD_AHEAD: usize = 3;
const FLOW_AHEAD: usize = 2;
const ENDPOINT_AHEAD: usize = 1;
const SUBFLOW_AHEAD: usize = 0;

/// Cache lines fetched at most per object (a sender and its subflow are ~11 and ~13).
const MAX_LINES: usize = 16;

/// Concurrent flows from which the pipe lookahead runs: below, their state stays in the
/// caches (a 100-flow dumbbell misses the 1 MiB L2 0.4 times a packet, 1 000 flows 8.5 times)
/// and the lookahead would only cost its ~200 instructions a packet.
const MIN_ACTIVE_FLOWS: usize = 256;

/// Packet events pending above which the pipe look-ahead stops. Each busy link has one event
/// pending in the packet lane, so about that many other arrivals come between two of one
/// link's: the state fetched for a packet three places back waits through a few times that
/// many hops, each touching some 25 lines, and a 512 KiB L2 (8 192 lines) has let it go by
/// then, while the look-ahead's own reads (the record, the slot) stall at once. FatTree k=12
/// holds ~2 000 events and k=16 ~5 000; with the look-ahead off there they ran 9 % and 8 %
/// faster a hop (`benches/RESULTS.md`, session 23). A dumbbell holds 2, FatTree k=4 ~75.
const MAX_PACKET_EVENTS: usize = 256;

impl Simulation<'_> {
    /// Starts loading the state of the segments behind the head of `link`'s pipe (called
    /// after the head arrived).
    #[inline]
    pub(super) fn prefetch_pipe(&self, link: LinkId) {
        if self.active_flows < MIN_ACTIVE_FLOWS || self.queue.packet_lane_len() > MAX_PACKET_EVENTS {
            return;
        }
        let segment = |ahead| {
            let &p = self.net.pipe_payload(link, ahead)?;
            let Carried::Segment(idx) = p.carried() else { return None };
            Some((idx, p.receiver()))
        };
        // Only on a deep pipe (a bottleneck): there the next arrivals come in quick succession,
        // so what is fetched now is still cached when they arrive. On a short pipe (a FatTree
        // link holds a packet or two) the reads below would only stall on packets that arrive
        // much later, or that go on to another link.
        if self.net.pipe_payload(link, RECORD_AHEAD).is_none() {
            return;
        }
        if let Some((idx, _)) = segment(RECORD_AHEAD) {
            self.segments.prefetch(idx);
        }
        // The packet names its flow and endpoint; only the subflow is read from the record.
        if let Some((_, to)) = segment(FLOW_AHEAD) {
            prefetch::object(&self.flows[to.flow as usize], MAX_LINES);
        }
        if let Some((_, to)) = segment(ENDPOINT_AHEAD) {
            if let Some(f) = &self.flows[to.flow as usize] {
                f.side(to.to_client, to.request).ep.prefetch(0, false);
            }
        }
        if let Some((idx, to)) = segment(SUBFLOW_AHEAD) {
            if let Some(f) = &self.flows[to.flow as usize] {
                let subflow = self.segments.destination(idx).subflow as usize;
                f.side(to.to_client, to.request).ep.prefetch(subflow, true);
            }
        }
    }
}

impl Simulation<'_> {
    /// Starts loading the state of the timers or wake-ups due next in the second lane (called
    /// when one fires), one level of the chain per distance as the pipe look-ahead does: the
    /// flow slot of the one after the next, and the endpoint of the next, whose slot the call
    /// before asked for. At scale a firing timer's reads (its flow's slot and pending time,
    /// then its endpoint's deadlines) miss the caches; the next ones fire some tens of events
    /// later, long enough for the lines to arrive and, being few, short enough for them to stay.
    #[inline]
    pub(super) fn prefetch_next_timer(&self) {
        if self.active_flows < MIN_ACTIVE_FLOWS {
            return;
        }
        if let Some(code) = self.queue.peek_later_second_code() {
            if let Some(slot) = timer_flow(code).and_then(|(fi, _)| self.flows.get(fi)) {
                prefetch::object(slot, MAX_LINES);
            }
        }
        let Some((fi, side)) = self.queue.peek_later_code().and_then(timer_flow) else { return };
        let Some(Some(f)) = self.flows.get(fi) else { return };
        match side {
            Some((client, request)) => {
                let ep = &f.side(client, request).ep;
                ep.prefetch(0, false);
                ep.prefetch(0, true);
            }
            None => prefetch::object(f, MAX_LINES),
        }
    }
}

/// The flow of a timer's or wake-up's `code`, with the timer's side (client, request).
#[inline(always)]
fn timer_flow(code: u32) -> Option<(usize, Option<(bool, bool)>)> {
    match Event::unpack(code) {
        Event::Timer { flow, client, request } => Some((flow as usize, Some((client, request)))),
        Event::AppWakeup(flow) => Some((flow as usize, None)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    /// A delivered packet reads its flow's slot first (and the lookahead above fetches it
    /// whole): the slot keeps the two sides' endpoint pointers and timers, not a units
    /// application's queues (boxed). Its pending times are 8 bytes each (`PendingNs`, not
    /// `Option<u64>`): 112 bytes, was 144 (issue 17: every concurrent flow holds one). Now
    /// the flow's paths too: 128 bytes, two cache lines, whole ones in a line-aligned vector
    /// (at 112 bytes half the slots spanned three lines).
    #[test]
    fn a_flow_slot_is_two_cache_lines() {
        let size = std::mem::size_of::<Option<super::super::Flow<'_>>>();
        assert_eq!(size, 2 * 64);
    }
}
