//! One unidirectional link: impairments (random loss, propagation delay with optional
//! variation), a drop-tail queue and a transmitter that either serialises at the link's
//! (possibly time-varying) capacity or releases packets as a token bucket allows (Linux tbf,
//! see `shaper`). The impairments act after the transmitter (a wire, the default) or before
//! the queue (the kernel engine's delayer in front of its egress qdisc).
//!
//! The queue is virtual: a FIFO transmitter's schedule is known the moment a packet reaches the
//! queue (it starts when the previous packet ends, or now; a bucket's tokens follow from the
//! previous departures), so the link computes the packet's departure and arrival times at once
//! and needs no event for the end of serialisation. What is "in the queue" at time t is the
//! set of packets that reached the queue by t and whose service has not started by t;
//! `backlog` keeps the not-yet-departed ones to answer that. With the impairments before the
//! queue, a packet reaches the queue after its delay; that delay line is FIFO, so the queue
//! still sees packets in the order the link accepts them and runs ahead of the clock on its
//! own time. One event per packet and hop remains: its arrival at the far end.

use super::capacity::{Capacity, CapacityConfig, Service};
use super::impairment::Impairment;
use super::jitter::JitterState;
use super::loss::LossState;
use super::ring::{PipeEntry, Ring};
use super::shaper::{Impairments, TokenBucket};
use super::{LinkId, Packet, ROUTE_END};
use crate::rng::Rng;

mod backlog;
#[cfg(test)]
mod backlog_tests;
mod pipe;
mod retime;
mod short;
#[cfg(test)]
mod short_tests;
mod spec;
mod state;

use backlog::{Packed, Pending};
pub(crate) use short::Short;
pub use spec::{LinkSpec, LinkStats, MAX_OVERHEAD_BYTES};
pub use state::LinkState;

/// A framed packet's size as `Pending` keeps it: at most `u32::MAX` bytes of packet plus
/// `MAX_OVERHEAD_BYTES` of framing, and the simulator's packets are at most a 64 KB TSO skb.
#[inline(always)]
fn framed_u32(size: u64) -> u32 {
    debug_assert!(size <= u32::MAX as u64, "a framed packet of {size} bytes");
    size as u32
}

/// Where an accepted packet goes next.
pub(crate) enum Accepted<P> {
    /// Dropped (queue full, random loss, link down); the caller hands it to the sink.
    Dropped(Packet<P>),
    /// Propagating; it reaches the far end at this time. On a FIFO link it joined the pipe.
    Arrives(u64, Option<Packet<P>>),
    /// Held forever (the capacity schedule never resumes).
    Stuck,
    /// In the (reordering) delay line before the queue, which it reaches at this time.
    Delayed(u64, Packet<P>),
}

/// Fields in the order a packet's hop reads them (`repr(C)` keeps that order): the state a
/// plain link (no loss, jitter, token bucket, capacity schedule or impairment in force) reads
/// per packet is in its first three cache lines (the scalars; the two rings' headers; the
/// flags and the counters a hop updates), with copies of the few `spec` fields it reads, so
/// that with thousands of links a hop touches three lines of its link, not five.
#[repr(C)]
pub(crate) struct Link<P> {
    /// When the transmitter is next free.
    free_at_ns: u64,
    /// Arrival time of the last packet sent into propagation (FIFO links never let a packet
    /// arrive before its predecessor).
    last_arrival_ns: u64,
    backlog_bytes: u64,
    /// `spec.overhead_bytes` (a hot copy; at most `MAX_OVERHEAD_BYTES`, `LinkSpec::validate`).
    overhead_bytes: u32,
    /// Backlog entries read from the pipe's tail, not kept in `backlog`, which is then empty
    /// (see `backlog`; a pipe of 2^32 packets would not fit memory).
    derived: u32,
    /// `spec.delay_ns` (a hot copy; the spec never changes).
    delay_ns: u64,
    /// The serialisation rate of a constant capacity (`capacity` is a rate without steps),
    /// bit/s; 0 when the capacity varies or is zero (then `capacity` serves every packet).
    fixed_rate_bps: u64,
    /// `spec.queue_bytes` and `spec.queue_packets` (hot copies; `u64::MAX`: no limit).
    queue_bytes: u64,
    queue_packets: u64,
    /// Accepted packets not yet fully served, in order (queue, start and end times
    /// non-decreasing), packed (see `backlog`).
    backlog: Ring<Packed>,
    /// Packets propagating on a FIFO link, with their arrival times (non-decreasing).
    pub(crate) pipe: Ring<PipeEntry<P>>,
    /// Not down: what the link holds reaches the far end (see [`LinkState`]).
    up: bool,
    /// The link takes packets: up and its entrance not closed.
    open: bool,
    /// `spec.impairments` is `AfterQueue` (hot copy).
    after_queue: bool,
    /// No loss model, no jitter and no impairment in force: a packet that leaves the
    /// transmitter arrives `delay_ns` later, and no random number is drawn.
    plain: bool,
    /// A token bucket is configured (`bucket.is_some()`).
    has_bucket: bool,
    /// The pipe's arrival times are in `pipe_times`, not offsets from `pipe_base_ns` (some did
    /// not fit 32 bits; until the pipe empties). See [`Link::pipe_push`].
    pipe_wide: bool,
    /// A piped entry's service is what `backlog` derives (none on a token bucket that shapes
    /// at the rate in force, the serialisation time at `fixed_rate_bps` on a plain link
    /// without one), and its impairments come after the queue: such an entry arriving at its
    /// end plus `delay_ns` is read from the pipe. Kept in step by [`Link::set_impairment`].
    derives: bool,
    /// The link's hops may take the short path (`short`: a plain, open, constant-rate link
    /// without a bucket, impairments after the queue). Kept in step by [`Link::set_impairment`]
    /// and `Link::set_state`.
    short: bool,
    /// Incremented each time the link goes down: packets of an older epoch are lost.
    epoch: u32,
    /// Leading packets of `pipe` that were on the link when it last went down (lost when they
    /// arrive): the pipe is FIFO, so these are exactly the packets of an older epoch. (A pipe
    /// of 2^32 packets would not fit memory.)
    stale: u32,
    /// The pipe head's next link and position in the route table (`Packet::next`, `at`;
    /// `ROUTE_END` for an empty pipe): kept beside the link's hot fields so that the head's
    /// arrival starts loading the link it enters before reading the head itself (a hint).
    head_next: LinkId,
    head_at: u32,
    /// Arrival time the pipe entries' offsets count from (the first arrival after the pipe was
    /// last empty, or the head's after a rebase): every entry arrives within 2^32 - 1 ns of it.
    pipe_base_ns: u64,
    pub(crate) stats: LinkStats,
    capacity: Capacity,
    /// The records of the backlog's entries that do not fit 16 bytes, in order (see `backlog`).
    side: Ring<Pending>,
    /// When each entry of `backlog` reached the queue, with the impairments before the queue
    /// only (empty otherwise).
    queued: Ring<u64>,
    /// The pipe's arrival times, in order, while `pipe_wide` (empty otherwise).
    pipe_times: Ring<u64>,
    /// Leading entries of `backlog` whose service started by `queue_clock_ns`, and their bytes
    /// (kept with the impairments before the queue only; zero otherwise).
    served: usize,
    served_bytes: u64,
    /// Time at which the queue last took a packet (ahead of the clock when the impairments
    /// delay packets before the queue).
    queue_clock_ns: u64,
    bucket: Option<TokenBucket>,
    loss: LossState,
    jitter: JitterState,
    rng: Rng,
    /// Impairments in force (see `impairment`); kept apart from the configured behaviour.
    /// Set through [`Link::set_impairment`], which keeps `plain` in step.
    impairment: Impairment,
    pub(crate) spec: LinkSpec,
}

impl<P> Link<P> {
    pub(crate) fn new(spec: LinkSpec, rng: Rng) -> Self {
        let bucket = TokenBucket::for_link(spec.rate_bps, spec.burst_bytes, spec.transmitter);
        let mut link = Self {
            overhead_bytes: u32::try_from(spec.overhead_bytes)
                .expect("overhead_bytes is checked by LinkSpec::validate"),
            derived: 0,
            delay_ns: spec.delay_ns,
            fixed_rate_bps: if spec.capacity == CapacityConfig::Constant { spec.rate_bps } else { 0 },
            after_queue: spec.impairments == Impairments::AfterQueue,
            plain: false,
            has_bucket: bucket.is_some(),
            pipe_wide: false,
            derives: false,
            short: false,
            pipe_base_ns: 0,
            pipe_times: Ring::new(),
            queue_bytes: spec.queue_bytes.unwrap_or(u64::MAX),
            queue_packets: spec.queue_packets.unwrap_or(u64::MAX),
            capacity: Capacity::new(&spec.capacity, spec.rate_bps),
            bucket,
            loss: LossState::new(spec.loss.clone()),
            jitter: JitterState::new(spec.jitter.clone()),
            spec,
            backlog: Ring::new(),
            side: Ring::new(),
            queued: Ring::new(),
            backlog_bytes: 0,
            served: 0,
            served_bytes: 0,
            queue_clock_ns: 0,
            pipe: Ring::new(),
            stale: 0,
            head_next: ROUTE_END,
            head_at: 0,
            free_at_ns: 0,
            rng,
            last_arrival_ns: 0,
            up: true,
            open: true,
            epoch: 0,
            impairment: Impairment::default(),
            stats: LinkStats::default(),
        };
        link.set_impairment(Impairment::default());
        link
    }

    /// Impairments in force.
    pub(crate) fn impairment(&self) -> &Impairment {
        &self.impairment
    }

    /// Puts the link under `impairment` (replacing what was in force).
    pub(crate) fn set_impairment(&mut self, impairment: Impairment) {
        self.impairment = impairment;
        if let Some(b) = self.bucket.as_mut().filter(|b| b.pays_after()) {
            // `tc class change`: an htb class keeps shaping, at the rate in force.
            b.set_rate(self.impairment.rate_limit_bps.unwrap_or(self.spec.rate_bps));
        }
        self.plain = self.loss.is_none() && !self.jitter.is_on() && self.impairment.is_none();
        self.derives = self.derives_now();
        self.short = self.short_now();
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
        self.after_queue && self.jitter.reorders()
    }

    /// Moves the queue's clock to `at_ns`: entries whose service started by then, behind a
    /// predecessor that has finished, join the served prefix. (The predecessor condition only
    /// matters for packets stuck on a link whose capacity never resumes: one of them is at the
    /// transmitter, the others wait.)
    #[inline(never)]
    fn advance_queue(&mut self, at_ns: u64) {
        self.queue_clock_ns = at_ns;
        while let Some(p) = self.backlog_get(self.served) {
            let predecessor_done =
                self.served == 0 || self.backlog_get(self.served - 1).is_some_and(|q| q.end_ns <= at_ns);
            if p.start_ns > at_ns || !predecessor_done {
                break;
            }
            self.served_bytes += u64::from(p.bytes);
            self.served += 1;
        }
    }

    /// Forgets packets whose service ended by `now_ns` (at most the queue's clock). `BEFORE`:
    /// the impairments come before the queue (the queue times in `queued` go too). Returns
    /// the end of service and bytes of the first entry left, if any.
    #[inline(always)]
    fn settle<const BEFORE: bool>(&mut self, now_ns: u64) -> Option<(u64, u32)> {
        if !BEFORE && self.free_at_ns <= now_ns {
            // An idle transmitter: every entry ended by `free_at_ns` (the last one's end;
            // entries end in order), so all go, without reading the ring's buffer, which with
            // thousands of links has left the caches since the link's last packet. (After the
            // queue, `served` is always 0 and `queued` empty.)
            debug_assert!(self.backlog_iter().all(|p| p.end_ns <= now_ns));
            debug_assert_eq!(self.backlog_iter().map(|p| u64::from(p.bytes)).sum::<u64>(), self.backlog_bytes);
            self.backlog_clear();
            self.backlog_bytes = 0;
            return None;
        }
        if !BEFORE && self.derived > 0 {
            return self.settle_derived(now_ns);
        }
        while let Some((end_ns, bytes)) = self.ring_front_end_bytes() {
            if end_ns > now_ns {
                return Some((end_ns, bytes));
            }
            self.backlog_bytes -= u64::from(bytes);
            if self.served > 0 {
                // end <= now <= queue clock: the entry is in the served prefix.
                self.served_bytes -= u64::from(bytes);
                self.served -= 1;
            }
            self.ring_pop_front();
            if BEFORE {
                self.queued.pop_front();
            }
        }
        None
    }

    /// (bytes, packets) waiting at `now_ns`: in the queue, service not started.
    pub(crate) fn waiting(&self, now_ns: u64) -> (u64, u64) {
        let (mut bytes, mut packets) = (0, 0);
        // After-queue links keep no queue times: every entry reached the queue by `now_ns`.
        let mut queued = self.queued.iter().rev();
        for p in self.backlog_iter().rev() {
            if queued.next().is_some_and(|&q| q > now_ns) {
                continue; // still in the delay line in front of the queue
            }
            if p.start_ns <= now_ns {
                break;
            }
            bytes += u64::from(p.bytes);
            packets += 1;
        }
        (bytes, packets)
    }

    /// A packet arrives at the link's input at `now_ns` (calls come in time order).
    /// (`Network::enter` takes the two paths itself.)
    #[cfg(test)]
    pub(crate) fn accept(&mut self, now_ns: u64, pkt: Packet<P>) -> Accepted<P> {
        match self.enqueue_short(now_ns, pkt) {
            Short::Arrives(arrive_ns) => Accepted::Arrives(arrive_ns, None),
            Short::Dropped(pkt) => Accepted::Dropped(pkt),
            Short::General(pkt) => self.accept_general(now_ns, pkt),
        }
    }

    /// `accept` off the short path.
    #[inline]
    pub(crate) fn accept_general(&mut self, now_ns: u64, pkt: Packet<P>) -> Accepted<P> {
        if !self.open {
            self.stats.packets_lost_down += 1;
            return Accepted::Dropped(pkt);
        }
        if self.after_queue {
            return self.enqueue::<false>(now_ns, now_ns, pkt);
        }
        self.accept_before_queue(now_ns, pkt)
    }

    /// `accept` on a link whose impairments come before its queue (out of line: it keeps the
    /// default path small).
    #[inline(never)]
    fn accept_before_queue(&mut self, now_ns: u64, pkt: Packet<P>) -> Accepted<P> {
        if self.loss.lose(&mut self.rng) {
            self.stats.packets_lost_random += 1;
            return Accepted::Dropped(pkt);
        }
        if !self.impairment.is_none() && self.impairment.loses(now_ns, &mut self.rng) {
            self.stats.packets_lost_impairment += 1;
            return Accepted::Dropped(pkt);
        }
        let delayed_ns =
            now_ns + self.jitter.delay_ns(now_ns, self.spec.delay_ns, &mut self.rng) + self.impairment.extra_delay_ns;
        if self.jitter.reorders() {
            // Packets overtake one another before the queue: it sees them in arrival order,
            // which only their arrival events give.
            return Accepted::Delayed(delayed_ns, pkt);
        }
        // A FIFO delay line: the queue sees packets in the order the link accepts them.
        self.enqueue::<true>(now_ns, delayed_ns.max(self.queue_clock_ns), pkt)
    }

    /// A packet leaves the reordering delay line before the queue and reaches the queue now.
    #[inline(never)]
    pub(crate) fn enqueue_delayed(&mut self, now_ns: u64, pkt: Packet<P>) -> Accepted<P> {
        self.enqueue::<true>(now_ns, now_ns, pkt)
    }

    /// A packet reaches the queue at `at_ns` (at least `now_ns`, the current time; calls come
    /// with non-decreasing `at_ns`). `BEFORE`: the link's impairments come before the queue
    /// (a constant, so that the default path carries none of that logic).
    #[inline(always)]
    pub(crate) fn enqueue<const BEFORE: bool>(&mut self, now_ns: u64, at_ns: u64, pkt: Packet<P>) -> Accepted<P> {
        let (served_bytes, served) = if BEFORE {
            // The queue runs ahead of the clock: packets served by `at_ns` may not have been
            // forgotten yet.
            self.advance_queue(at_ns);
            self.settle::<true>(now_ns);
            (self.served_bytes, self.served)
        } else {
            // At the clock, only the packet in service (the first, if it started) is served.
            let front = self.settle::<false>(now_ns);
            let in_service = front.filter(|_| self.backlog_front_started(now_ns));
            (in_service.map_or(0, |(_, bytes)| u64::from(bytes)), in_service.is_some() as usize)
        };
        let size = pkt.size_bytes as u64 + u64::from(self.overhead_bytes);
        // Waiting = every pending packet but those served by `at_ns`.
        let waiting_bytes = self.backlog_bytes - served_bytes;
        let waiting_packets = (self.backlog_len() - served) as u64;
        let (queue_bytes, queue_packets) = (self.queue_bytes, self.queue_packets);
        // (No limit is u64::MAX, which no count exceeds.)
        let over = || waiting_bytes + size > queue_bytes || waiting_packets + 1 > queue_packets;
        // A rate collapse in force replaces the bucket's or the capacity model's rate (a
        // plain link has none in force).
        let rate_limit_bps = if self.plain { None } else { self.impairment.rate_limit_bps };
        let (start_ns, end_ns) = if self.has_bucket && (rate_limit_bps.is_none() || self.htb()) {
            match self.bucket_departure(at_ns, size, waiting_bytes, over()) {
                Some(t) => (t, t),
                None => return Accepted::Dropped(pkt),
            }
        } else {
            if self.free_at_ns > at_ns {
                if over() {
                    self.stats.packets_dropped_queue += 1;
                    return Accepted::Dropped(pkt);
                }
                self.stats.max_queue_bytes = self.stats.max_queue_bytes.max(waiting_bytes + size);
            }
            if self.free_at_ns == u64::MAX {
                return self.stuck(at_ns, at_ns, size);
            }
            let mut start_ns = self.free_at_ns.max(at_ns);
            let end_ns = if let Some(rate_bps) = rate_limit_bps {
                start_ns + crate::time::serialization_ns(size, rate_bps.max(1))
            } else if self.fixed_rate_bps > 0 {
                // What `capacity.serve` computes for a constant positive rate.
                start_ns + crate::time::serialization_ns(size, self.fixed_rate_bps)
            } else {
                loop {
                    match self.capacity.serve(start_ns, size) {
                        Service::DoneAt(t) => break t,
                        Service::WaitUntil(t) => start_ns = t,
                        Service::Never => return self.stuck(at_ns, start_ns, size),
                    }
                }
            };
            (start_ns, end_ns)
        };
        self.free_at_ns = end_ns;
        let pending = Pending { start_ns, end_ns, bytes: framed_u32(size), piped: true };
        if BEFORE {
            self.queued.push_back(at_ns);
        }
        self.backlog_bytes += size;
        let mut arrive_ns = end_ns;
        if !BEFORE && self.plain {
            // What the branch below computes when nothing is configured or in force.
            arrive_ns += self.delay_ns;
        } else if !BEFORE {
            if self.loss.lose(&mut self.rng) {
                self.stats.packets_lost_random += 1;
                self.backlog_push(Pending { piped: false, ..pending });
                return Accepted::Dropped(pkt);
            }
            if !self.impairment.is_none() && self.impairment.loses(end_ns, &mut self.rng) {
                self.stats.packets_lost_impairment += 1;
                self.backlog_push(Pending { piped: false, ..pending });
                return Accepted::Dropped(pkt);
            }
            arrive_ns +=
                self.jitter.delay_ns(end_ns, self.spec.delay_ns, &mut self.rng) + self.impairment.extra_delay_ns;
            if self.reorders() {
                self.backlog_push(Pending { piped: false, ..pending });
                return Accepted::Arrives(arrive_ns, Some(pkt));
            }
        }
        arrive_ns = arrive_ns.max(self.last_arrival_ns);
        self.last_arrival_ns = arrive_ns;
        // The entry is read back from the pipe when the pipe's entry gives it (`backlog`).
        self.backlog_push_piped::<BEFORE>(pending, arrive_ns);
        self.pipe_push(arrive_ns, pkt);
        Accepted::Arrives(arrive_ns, None)
    }

    /// Departure of a packet of `size` framed bytes from the token bucket, or `None` when tbf
    /// drops it: its bfifo is full (`over`, which always counts the arriving packet) or the
    /// packet is longer than the bucket.
    #[inline(never)]
    fn bucket_departure(&mut self, at_ns: u64, size: u64, waiting_bytes: u64, over: bool) -> Option<u64> {
        // The packet reaches the bucket once its predecessor has left: the bucket's own last
        // departure, or the end of a packet a rate collapse on a tbf serialised (`enqueue`'s
        // other branch, which the bucket does not see), which may still be in service when
        // the collapse lifts (with nothing waiting behind it, `retime_waiting` re-times
        // nothing). Entries then keep ending in order and `free_at_ns` stays the last end.
        let head_ns = at_ns.max(self.free_at_ns);
        let depart_ns = match &mut self.bucket {
            Some(bucket) if !over => bucket.depart(head_ns, size),
            _ => None,
        };
        match depart_ns {
            None => self.stats.packets_dropped_queue += 1,
            Some(t) if t > at_ns => {
                self.stats.max_queue_bytes = self.stats.max_queue_bytes.max(waiting_bytes + size);
            }
            Some(_) => {}
        }
        depart_ns
    }

    /// The capacity never resumes: the packet waits forever (and counts in the queue).
    fn stuck(&mut self, queued_ns: u64, start_ns: u64, size: u64) -> Accepted<P> {
        self.free_at_ns = u64::MAX;
        self.backlog_push(Pending {
            start_ns: start_ns.max(1),
            end_ns: u64::MAX,
            bytes: framed_u32(size),
            piped: false,
        });
        if !self.after_queue {
            self.queued.push_back(queued_ns);
        }
        self.backlog_bytes += size;
        Accepted::Stuck
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn a_plain_hop_reads_the_first_three_cache_lines_of_its_link() {
        type L = Link<[u32; 2]>;
        assert_eq!(size_of::<Packed>(), 16);
        // Line 0: the scalars of the transmitter and the queue limits.
        assert!(offset_of!(L, queue_packets) + 8 <= 64);
        // Line 1: the headers of the backlog and the pipe.
        assert!(offset_of!(L, backlog) >= 64 && offset_of!(L, pipe) + size_of::<Ring<PipeEntry<[u32; 2]>>>() <= 128);
        // Line 2: the flags, the epoch and outage count, the pipe head's next link, the base
        // of the pipe's arrival offsets, and the counters a hop updates.
        let hot_stats_end = offset_of!(L, stats) + offset_of!(LinkStats, max_queue_bytes) + 8;
        assert!(offset_of!(L, up) >= 128 && hot_stats_end <= 192, "hot counters end at {hot_stats_end}");
        assert!(offset_of!(L, open) >= 128 && offset_of!(L, open) < 192);
    }
}
