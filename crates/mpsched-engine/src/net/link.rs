//! One unidirectional link: a drop-tail queue, a transmitter that serialises at the link's
//! (possibly time-varying) capacity, random loss as packets leave, and a propagation delay with
//! optional variation.
//!
//! The queue is virtual: a FIFO transmitter's schedule is known the moment a packet is
//! accepted (it starts when the previous packet ends, or now), so the link computes the
//! packet's departure and arrival times at once and needs no event for the end of
//! serialisation. What is "in the queue" at time t is the set of accepted packets whose
//! serialisation has not started by t; `backlog` keeps the not-yet-departed ones to answer
//! that. One event per packet and hop remains: its arrival at the far end.

use super::capacity::{Capacity, CapacityConfig, Service};
use super::impairment::Impairment;
use super::jitter::{JitterConfig, JitterState};
use super::loss::{LossConfig, LossState};
use super::Packet;
use crate::rng::Rng;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Everything that defines a link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// Name used in records, e.g. "wlan.down".
    pub name: String,
    /// Serialisation rate, bit/s (the initial rate when `capacity` varies it).
    pub rate_bps: u64,
    /// One-way propagation delay, ns.
    pub delay_ns: u64,
    /// Drop-tail limit of the queue in bytes (the packet in service not counted); `None`, with
    /// `queue_packets` also `None`, means unlimited.
    #[serde(default)]
    pub queue_bytes: Option<u64>,
    /// Drop-tail limit of the queue in packets.
    #[serde(default)]
    pub queue_packets: Option<u64>,
    /// Random loss as packets leave the link.
    #[serde(default)]
    pub loss: LossConfig,
    /// Variation of the propagation delay.
    #[serde(default)]
    pub jitter: JitterConfig,
    /// Time-varying capacity.
    #[serde(default)]
    pub capacity: CapacityConfig,
}

/// Counters of one link.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Packets that left the link (not lost).
    pub packets_forwarded: u64,
    /// Bytes that left the link (not lost).
    pub bytes_forwarded: u64,
    /// Packets dropped because the queue was full.
    pub packets_dropped_queue: u64,
    /// Packets lost by the random loss model.
    pub packets_lost_random: u64,
    /// Packets lost because the link was down.
    pub packets_lost_down: u64,
    /// Packets lost to an impairment in force (blackhole, loss ramp).
    pub packets_lost_impairment: u64,
    /// Largest queue occupancy seen, bytes.
    pub max_queue_bytes: u64,
}

/// A packet accepted and not yet fully serialised.
#[derive(Debug, Clone, Copy)]
struct Pending {
    start_ns: u64,
    end_ns: u64,
    bytes: u64,
}

/// Where an accepted packet goes next.
pub(crate) enum Accepted<P> {
    /// Dropped (queue full, random loss, link down); the caller hands it to the sink.
    Dropped(Packet<P>),
    /// Propagating; it reaches the far end at this time. On a FIFO link it joined the pipe.
    Arrives(u64, Option<Packet<P>>),
    /// Held forever (the capacity schedule never resumes).
    Stuck,
}

pub(crate) struct Link<P> {
    pub(crate) spec: LinkSpec,
    /// Accepted packets not yet fully serialised, in order (start times non-decreasing).
    backlog: VecDeque<Pending>,
    backlog_bytes: u64,
    /// Packets propagating on a FIFO link, with their arrival times (non-decreasing).
    pub(crate) pipe: VecDeque<(u64, u32, Packet<P>)>,
    /// When the transmitter is next free.
    free_at_ns: u64,
    capacity: Capacity,
    loss: LossState,
    jitter: JitterState,
    rng: Rng,
    /// Arrival time of the last packet sent into propagation (FIFO links never let a packet
    /// arrive before its predecessor).
    last_arrival_ns: u64,
    up: bool,
    /// Incremented each time the link goes down: packets of an older epoch are lost.
    epoch: u32,
    /// Impairments in force (see `impairment`); kept apart from the configured behaviour.
    pub(crate) impairment: Impairment,
    pub(crate) stats: LinkStats,
}

impl<P> Link<P> {
    pub(crate) fn new(spec: LinkSpec, rng: Rng) -> Self {
        Self {
            capacity: Capacity::new(&spec.capacity, spec.rate_bps),
            loss: LossState::new(spec.loss.clone()),
            jitter: JitterState::new(spec.jitter.clone()),
            spec,
            backlog: VecDeque::new(),
            backlog_bytes: 0,
            pipe: VecDeque::new(),
            free_at_ns: 0,
            rng,
            last_arrival_ns: 0,
            up: true,
            epoch: 0,
            impairment: Impairment::default(),
            stats: LinkStats::default(),
        }
    }

    /// Epoch of the link: a packet that entered in an older epoch was lost when the link went
    /// down.
    #[inline]
    pub(crate) fn epoch(&self) -> u32 {
        self.epoch
    }

    /// True when packets may overtake one another in propagation.
    #[inline]
    pub(crate) fn reorders(&self) -> bool {
        self.jitter.reorders()
    }

    /// Forgets packets whose serialisation ended by `now_ns`.
    #[inline]
    fn settle(&mut self, now_ns: u64) {
        while let Some(p) = self.backlog.front() {
            if p.end_ns > now_ns {
                break;
            }
            self.backlog_bytes -= p.bytes;
            self.backlog.pop_front();
        }
    }

    /// (bytes, packets) waiting at `now_ns`: accepted, serialisation not started.
    pub(crate) fn waiting(&self, now_ns: u64) -> (u64, u64) {
        let (mut bytes, mut packets) = (0, 0);
        for p in self.backlog.iter().rev() {
            if p.start_ns <= now_ns {
                break;
            }
            bytes += p.bytes;
            packets += 1;
        }
        (bytes, packets)
    }

    /// A packet arrives at the link's input at `now_ns` (calls come in time order).
    #[inline]
    pub(crate) fn accept(&mut self, now_ns: u64, pkt: Packet<P>) -> Accepted<P> {
        if !self.up {
            self.stats.packets_lost_down += 1;
            return Accepted::Dropped(pkt);
        }
        self.settle(now_ns);
        let size = pkt.size_bytes as u64;
        // Waiting = every pending packet but the one being serialised now (if any).
        let in_service = self.backlog.front().filter(|p| p.start_ns <= now_ns);
        let waiting_bytes = self.backlog_bytes - in_service.map_or(0, |p| p.bytes);
        let waiting_packets = self.backlog.len() as u64 - in_service.is_some() as u64;
        let transmitter_busy = self.free_at_ns > now_ns;
        if transmitter_busy {
            let over_bytes = self.spec.queue_bytes.is_some_and(|l| waiting_bytes + size > l);
            let over_packets = self.spec.queue_packets.is_some_and(|l| waiting_packets + 1 > l);
            if over_bytes || over_packets {
                self.stats.packets_dropped_queue += 1;
                return Accepted::Dropped(pkt);
            }
            self.stats.max_queue_bytes = self.stats.max_queue_bytes.max(waiting_bytes + size);
        }
        if self.free_at_ns == u64::MAX {
            return self.stuck(now_ns, size);
        }
        let mut start_ns = self.free_at_ns.max(now_ns);
        let end_ns = if let Some(rate_bps) = self.impairment.rate_limit_bps {
            start_ns + crate::time::serialization_ns(size, rate_bps.max(1))
        } else {
            loop {
                match self.capacity.serve(start_ns, size) {
                    Service::DoneAt(t) => break t,
                    Service::WaitUntil(t) => start_ns = t,
                    Service::Never => return self.stuck(start_ns, size),
                }
            }
        };
        self.free_at_ns = end_ns;
        self.backlog.push_back(Pending { start_ns, end_ns, bytes: size });
        self.backlog_bytes += size;
        if self.loss.lose(&mut self.rng) {
            self.stats.packets_lost_random += 1;
            return Accepted::Dropped(pkt);
        }
        if !self.impairment.is_none() {
            if self.impairment.loses(end_ns, &mut self.rng) {
                self.stats.packets_lost_impairment += 1;
                return Accepted::Dropped(pkt);
            }
        }
        let mut arrive_ns =
            end_ns + self.jitter.delay_ns(end_ns, self.spec.delay_ns, &mut self.rng) + self.impairment.extra_delay_ns;
        if self.reorders() {
            return Accepted::Arrives(arrive_ns, Some(pkt));
        }
        arrive_ns = arrive_ns.max(self.last_arrival_ns);
        self.last_arrival_ns = arrive_ns;
        self.pipe.push_back((arrive_ns, self.epoch, pkt));
        Accepted::Arrives(arrive_ns, None)
    }

    /// The capacity never resumes: the packet waits forever (and counts in the queue).
    fn stuck(&mut self, start_ns: u64, size: u64) -> Accepted<P> {
        self.free_at_ns = u64::MAX;
        self.backlog.push_back(Pending { start_ns: start_ns.max(1), end_ns: u64::MAX, bytes: size });
        self.backlog_bytes += size;
        Accepted::Stuck
    }

    /// A packet that entered in `epoch` reached the far end: it survives only if the link has
    /// not gone down since.
    #[inline]
    pub(crate) fn arrive_ok(&mut self, epoch: u32, size_bytes: u32) -> bool {
        if !self.up || epoch != self.epoch {
            self.stats.packets_lost_down += 1;
            return false;
        }
        self.stats.packets_forwarded += 1;
        self.stats.bytes_forwarded += size_bytes as u64;
        true
    }

    /// Takes the link down (everything on it is lost) or brings it back up.
    pub(crate) fn set_up(&mut self, now_ns: u64, up: bool) {
        if self.up == up {
            return;
        }
        self.up = up;
        if !up {
            // An interface going down loses what it holds: the queue, the packet being
            // serialised and the packets propagating (dropped when they would arrive).
            // They are all in the pipe (or the propagation slab) and are counted as lost when
            // they would have arrived.
            self.backlog.clear();
            self.backlog_bytes = 0;
            self.free_at_ns = now_ns;
            self.epoch = self.epoch.wrapping_add(1);
        }
    }
}
