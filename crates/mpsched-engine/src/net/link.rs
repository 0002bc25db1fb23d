//! One unidirectional link: a drop-tail queue, a transmitter that serialises at the link's
//! (possibly time-varying) capacity, random loss as packets leave, and a propagation delay with
//! optional variation.

use super::capacity::{Capacity, CapacityConfig, Service};
use super::jitter::{JitterConfig, JitterState};
use super::loss::{LossConfig, LossState};
use super::{LinkId, NetEvent, NetSink, Packet};
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
    /// Largest queue occupancy seen, bytes.
    pub max_queue_bytes: u64,
}

pub(crate) struct Link<P> {
    pub(crate) spec: LinkSpec,
    pub(crate) queue: VecDeque<Packet<P>>,
    pub(crate) queue_bytes: u64,
    /// Packets propagating on a FIFO link, with their arrival times (non-decreasing).
    pub(crate) pipe: VecDeque<(u64, Packet<P>)>,
    in_service: Option<Packet<P>>,
    /// The link went down while `in_service` was being serialised: drop it at its TxDone.
    in_service_lost: bool,
    /// A `Wake` event is pending (capacity was zero): do not start service before it.
    waiting_for_capacity: bool,
    capacity: Capacity,
    loss: LossState,
    jitter: JitterState,
    rng: Rng,
    /// Arrival time of the last packet sent into propagation (FIFO links never let a packet
    /// arrive before its predecessor).
    last_arrival_ns: u64,
    up: bool,
    pub(crate) stats: LinkStats,
}

impl<P> Link<P> {
    pub(crate) fn new(spec: LinkSpec, rng: Rng) -> Self {
        Self {
            capacity: Capacity::new(&spec.capacity, spec.rate_bps),
            loss: LossState::new(spec.loss.clone()),
            jitter: JitterState::new(spec.jitter.clone()),
            spec,
            queue: VecDeque::new(),
            queue_bytes: 0,
            pipe: VecDeque::new(),
            in_service: None,
            in_service_lost: false,
            waiting_for_capacity: false,
            rng,
            last_arrival_ns: 0,
            up: true,
            stats: LinkStats::default(),
        }
    }

    /// A packet arrives at the link's input.
    #[inline]
    pub(crate) fn enqueue(&mut self, now_ns: u64, id: LinkId, pkt: Packet<P>, sink: &mut impl NetSink<P>) {
        if !self.up {
            self.stats.packets_lost_down += 1;
            sink.dropped(pkt);
            return;
        }
        if self.in_service.is_none() && self.queue.is_empty() && !self.waiting_for_capacity {
            self.start_service(now_ns, id, pkt, sink);
            return;
        }
        let size = pkt.size_bytes as u64;
        let over_bytes = self.spec.queue_bytes.is_some_and(|l| self.queue_bytes + size > l);
        let over_packets = self.spec.queue_packets.is_some_and(|l| self.queue.len() as u64 + 1 > l);
        if over_bytes || over_packets {
            self.stats.packets_dropped_queue += 1;
            sink.dropped(pkt);
            return;
        }
        self.queue_bytes += size;
        self.stats.max_queue_bytes = self.stats.max_queue_bytes.max(self.queue_bytes);
        self.queue.push_back(pkt);
    }

    fn start_service(&mut self, now_ns: u64, id: LinkId, pkt: Packet<P>, sink: &mut impl NetSink<P>) {
        match self.capacity.serve(now_ns, pkt.size_bytes as u64) {
            Service::DoneAt(t) => {
                self.in_service = Some(pkt);
                sink.schedule(t, NetEvent::TxDone(id));
            }
            Service::WaitUntil(t) => {
                // No capacity now: put the packet back at the head and wake up later.
                self.queue_bytes += pkt.size_bytes as u64;
                self.queue.push_front(pkt);
                self.waiting_for_capacity = true;
                sink.schedule(t, NetEvent::Wake(id));
            }
            Service::Never => {
                self.queue_bytes += pkt.size_bytes as u64;
                self.queue.push_front(pkt);
                self.waiting_for_capacity = true;
            }
        }
    }

    fn serve_next(&mut self, now_ns: u64, id: LinkId, sink: &mut impl NetSink<P>) {
        if let Some(next) = self.queue.pop_front() {
            self.queue_bytes -= next.size_bytes as u64;
            self.start_service(now_ns, id, next, sink);
        }
    }

    /// Serialisation of the packet in service ended. Returns it with its arrival time at the
    /// far end, unless it is lost.
    #[inline]
    pub(crate) fn finish_service(
        &mut self,
        now_ns: u64,
        id: LinkId,
        sink: &mut impl NetSink<P>,
    ) -> Option<(u64, Packet<P>)> {
        let pkt = self.in_service.take()?;
        self.serve_next(now_ns, id, sink);
        if std::mem::take(&mut self.in_service_lost) {
            self.stats.packets_lost_down += 1;
            sink.dropped(pkt);
            return None;
        }
        if self.loss.lose(&mut self.rng) {
            self.stats.packets_lost_random += 1;
            sink.dropped(pkt);
            return None;
        }
        self.stats.packets_forwarded += 1;
        self.stats.bytes_forwarded += pkt.size_bytes as u64;
        let mut arrive_ns = now_ns + self.jitter.delay_ns(now_ns, self.spec.delay_ns, &mut self.rng);
        if !self.jitter.reorders() {
            arrive_ns = arrive_ns.max(self.last_arrival_ns);
            self.last_arrival_ns = arrive_ns;
        }
        Some((arrive_ns, pkt))
    }

    /// True when packets may overtake one another in propagation.
    #[inline]
    pub(crate) fn reorders(&self) -> bool {
        self.jitter.reorders()
    }

    /// A capacity wake-up fired.
    pub(crate) fn wake(&mut self, now_ns: u64, id: LinkId, sink: &mut impl NetSink<P>) {
        if self.waiting_for_capacity {
            self.waiting_for_capacity = false;
            if self.in_service.is_none() {
                self.serve_next(now_ns, id, sink);
            }
        }
    }

    /// A packet reached the far end: it survives only if the link is still up.
    #[inline]
    pub(crate) fn arrive_ok(&mut self) -> bool {
        if !self.up {
            self.stats.packets_lost_down += 1;
        }
        self.up
    }

    pub(crate) fn set_up(&mut self, now_ns: u64, id: LinkId, up: bool, sink: &mut impl NetSink<P>) {
        if self.up == up {
            return;
        }
        self.up = up;
        if !up {
            // An interface going down loses what it holds. The packet in service stays until its
            // TxDone fires and is dropped then, so its pending event cannot finish another one.
            self.stats.packets_lost_down += self.queue.len() as u64;
            for pkt in self.queue.drain(..) {
                sink.dropped(pkt);
            }
            self.queue_bytes = 0;
            self.in_service_lost = self.in_service.is_some();
        } else if self.in_service.is_none() && !self.waiting_for_capacity {
            self.serve_next(now_ns, id, sink);
        }
    }
}
