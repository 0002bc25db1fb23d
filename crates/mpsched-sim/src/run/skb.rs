//! TSO skbs on a path with `gso` (`PathConfig::gso`): the segments a sender emits at one
//! instant leave as one network packet per skb, as the kernel testbed's veths carry them.
//! Without `gso` nothing here runs and every segment is its own packet.

use super::inflight::{InFlight, NO_SEGMENT};
use super::wire::Sink;
use super::{Payload, Receiver};
use crate::config::SimConfig;
use crate::records::RunStats;
use mpsched_engine::net::{Network, RouteId};
use mpsched_proto::tcp::Segment;

/// Where an skb's first segment goes: on `path`'s `route` (the client's direction unless it goes
/// to the client), from `subflow`, to `receiver`; stored at `idx`.
pub(super) struct SkbStart {
    pub(super) path: usize,
    pub(super) route: RouteId,
    pub(super) receiver: Receiver,
    pub(super) subflow: usize,
    pub(super) idx: u32,
}

/// A TSO skb being built from the segments a sender emits at one instant.
pub(super) struct OpenSkb {
    subflow: usize,
    receiver: Receiver,
    first: u32,
    last: u32,
    segs: u64,
    /// Bytes the queues and the rate count: every segment's headers, and the framing overhead
    /// of each segment after the first (the link adds the first one's).
    bytes: u64,
    next_seq: u64,
    max_segs: u64,
    route: RouteId,
    overhead_bytes: u64,
    /// The shallowest token bucket on the route, bytes (`u64::MAX`: none).
    bucket_bytes: u64,
}

impl OpenSkb {
    /// Opens an skb of at most `max_segs` segments with `seg`, sent as `at` says.
    pub(super) fn start(cfg: &SimConfig, at: SkbStart, seg: &Segment, max_segs: u64) -> Self {
        let SkbStart { path, route, receiver, subflow, idx } = at;
        let up = !receiver.to_client;
        let p = &cfg.paths[path];
        let route_links = || (if up { &p.up } else { &p.down }).iter().map(|&l| &cfg.links[l]);
        OpenSkb {
            subflow,
            receiver,
            first: idx,
            last: idx,
            segs: 1,
            bytes: seg.wire_bytes(),
            next_seq: seg.seq + seg.len as u64,
            max_segs,
            route,
            overhead_bytes: route_links().map(|l| l.overhead_bytes).max().unwrap_or(0),
            bucket_bytes: route_links().filter_map(|l| l.burst_bytes).min().unwrap_or(u64::MAX),
        }
    }

    /// Appends data segment `idx` (`seg`) of `subflow` when it continues this skb (Linux
    /// `tcp_write_xmit`: contiguous data leaves in skbs of `tcp_tso_autosize` segments; the
    /// qdisc counts each segment's headers); false when it starts another.
    pub(super) fn extend(&mut self, segments: &mut InFlight, subflow: usize, idx: u32, seg: &Segment) -> bool {
        if self.subflow != subflow || self.next_seq != seg.seq || self.segs >= self.max_segs {
            return false;
        }
        segments.set_next(self.last, idx);
        self.last = idx;
        self.segs += 1;
        self.bytes += seg.wire_bytes() + self.overhead_bytes;
        self.next_seq = seg.seq + seg.len as u64;
        true
    }

    /// Sends the skb as one packet, or its segments one by one when a token bucket on the route
    /// is shallower than the skb (Linux `tbf_segment`: tbf segments a GSO skb longer than its
    /// bucket instead of dropping it).
    pub(super) fn send(self, net: &mut Network<Payload>, sink: &mut Sink<'_>, stats: &mut RunStats, now: u64) {
        if self.segs > 1 && self.bytes + self.overhead_bytes > self.bucket_bytes {
            let mut at = self.first;
            while at != NO_SEGMENT {
                let (next, size) = (sink.segments.take_next(at), sink.segments.segment(at).wire_bytes());
                net.send(now, self.route, size as u32, Payload::segment(at, self.receiver), sink);
                stats.packets_sent += 1;
                at = next;
            }
            return;
        }
        net.send(now, self.route, self.bytes as u32, Payload::segment(self.first, self.receiver), sink);
        stats.packets_sent += 1;
    }
}
