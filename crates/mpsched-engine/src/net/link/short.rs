//! The short path of a plain link's hop (a child module of `link.rs`: it reads the link's
//! private queue and pipe).
//!
//! Most hops are on links with nothing configured or in force beyond a constant rate, a delay
//! and a drop-tail queue: impairments after the queue, no loss, jitter, token bucket, capacity
//! schedule or impairment, the entrance open (`Link::short`). There `enqueue` answers each of
//! its tests the same way every time, and when the backlog is derived from the pipe (or the
//! transmitter is idle, which empties it) the ring is not in use either; `enqueue_short` is
//! `enqueue::<false>` with those answers written in, so a hop tests one flag, not eight. It
//! computes the same times, counts and entries: `short_tests` runs twin links, one kept on the
//! general path (`NO_SHORT`, test-only), through the same random operations.

use super::{framed_u32, Link, Pending};
use crate::net::Packet;

/// What the short path did with a packet.
pub(crate) enum Short<P> {
    /// It joined the pipe; it reaches the far end at this time.
    Arrives(u64),
    /// The queue was full: dropped.
    Dropped(Packet<P>),
    /// Not a hop for the short path (the link is not `short`, or its backlog is in the ring):
    /// the general path takes it.
    General(Packet<P>),
}

impl<P> Link<P> {
    /// `Link::short` for the link's configuration and what is in force.
    pub(super) fn short_now(&self) -> bool {
        self.open && self.after_queue && self.plain && !self.has_bucket && self.fixed_rate_bps > 0
    }

    /// Whether this hop can take the short path: the link is `short` and its backlog is not in
    /// the ring (derived entries, or an idle transmitter, which forgets them all).
    #[cfg(test)]
    pub(crate) fn takes_short(&self, now_ns: u64) -> bool {
        self.short && (self.free_at_ns <= now_ns || self.derived > 0) && !no_short()
    }

    /// Whether a packet of `size` framed bytes joins a busy link's derived backlog whatever
    /// settling it would forget: the entries not yet forgotten (`derived`, `backlog_bytes`)
    /// include every waiting one, so when even they leave room in the queue and stay within
    /// the largest queue seen, the packet is accepted and the peak cannot rise, and the
    /// pipe's entries need not be read (the settle's first read is a cache miss with
    /// thousands of links, the entry written when the link's previous packet came). The
    /// entries that ended stay counted until a packet that does not fit this way settles them,
    /// or the pipe pops them (`backlog_forget_popped`); materialising copies them to the ring,
    /// where the next settle forgets them. Every other reader settles first, but the queue's
    /// samples (`Link::waiting`), which read from the newest entry back and stop at the first
    /// one started.
    #[inline(always)]
    fn fits_unsettled(&self, size: u64) -> bool {
        let bound_bytes = self.backlog_bytes + size;
        bound_bytes <= self.queue_bytes.min(self.stats.max_queue_bytes) && u64::from(self.derived) < self.queue_packets
    }

    /// `enqueue::<false>(now_ns, now_ns, pkt)` if the link `takes_short` (see the module
    /// comment; each step names the general one it replaces).
    #[inline(always)]
    pub(crate) fn enqueue_short(&mut self, now_ns: u64, pkt: Packet<P>) -> Short<P> {
        let busy = self.free_at_ns > now_ns;
        if !self.short || busy && self.derived == 0 || no_short() {
            return Short::General(pkt);
        }
        // While entries are derived the ring is empty (`backlog_push` moves them there first).
        debug_assert!(self.short_now() && (!busy || self.backlog.is_empty()));
        let size = u64::from(pkt.size_bytes) + u64::from(self.overhead_bytes);
        if !busy {
            self.backlog_clear();
            self.backlog_bytes = 0;
        } else if !self.fits_unsettled(size) {
            // `settle::<false>` and the packet in service: a derived front has started (no
            // bucket).
            let (served_bytes, served) = self.settle_derived(now_ns).map_or((0, 0), |(_, bytes)| (u64::from(bytes), 1));
            let waiting_bytes = self.backlog_bytes - served_bytes;
            // The entries left are derived (the ring is empty); the first is in service if any.
            let waiting_packets = u64::from(self.derived) - served;
            if waiting_bytes + size > self.queue_bytes || waiting_packets + 1 > self.queue_packets {
                self.stats.packets_dropped_queue += 1;
                return Short::Dropped(pkt);
            }
            self.stats.max_queue_bytes = self.stats.max_queue_bytes.max(waiting_bytes + size);
        }
        // The fixed-rate branch (a constant positive rate never leaves the transmitter stuck).
        let start_ns = self.free_at_ns.max(now_ns);
        let end_ns = start_ns + crate::time::serialization_ns(size, self.fixed_rate_bps);
        self.free_at_ns = end_ns;
        self.backlog_bytes += size;
        // Plain: the packet arrives `delay_ns` after its end, no earlier than the one before.
        let due_ns = end_ns + self.delay_ns;
        let arrive_ns = due_ns.max(self.last_arrival_ns);
        self.last_arrival_ns = arrive_ns;
        // `backlog_push_piped`: the link derives, and the ring is empty.
        if arrive_ns == due_ns && !super::backlog::no_derive() {
            self.derived += 1;
        } else {
            self.backlog_push(Pending { start_ns, end_ns, bytes: framed_u32(size), piped: true });
        }
        self.pipe_push(arrive_ns, pkt);
        Short::Arrives(arrive_ns)
    }
}

#[cfg(test)]
thread_local! {
    /// Set: links never take the short path (the reference of `short_tests`).
    pub(super) static NO_SHORT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[cfg(test)]
fn no_short() -> bool {
    NO_SHORT.get()
}

#[cfg(not(test))]
#[inline(always)]
const fn no_short() -> bool {
    false
}
