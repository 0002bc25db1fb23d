//! The far end of a link: its propagation pipe, its head and the packets that reach it, kept
//! apart from `link.rs` (a child module: it reads the link's private pipe and counters).
//!
//! An entry keeps its arrival time as a 32-bit offset from `pipe_base_ns`, which is set by the
//! first packet into an empty pipe and moved to the head's arrival when a later one would not
//! fit (4.29 s after the base: the pipe of a busy link may never empty), shifting the offsets
//! (O(pipe) once per ~4.29 s at most). Arrivals are non-decreasing along the pipe (`enqueue`
//! never lets a packet arrive before its predecessor), so after that rebase only a pipe that
//! spans 4.29 s or more, or a re-timed arrival below the base, does not fit; such a pipe keeps
//! its arrival times whole in `pipe_times` until it empties (`pipe_wide`). Reading back gives
//! the stored time either way.

use super::Link;
use crate::net::ring::PipeEntry;
use crate::net::{LinkId, Packet, ROUTE_END};

/// Offsets at or past this do not fit (`u32::MAX` itself is never stored, for clarity).
const OFFSET_LIMIT: u64 = u32::MAX as u64;

impl<P> Link<P> {
    /// Whether the pipe's head has arrived by `now_ns`. An arrival event that finds it not
    /// yet there was outdated by [`Link::retime_waiting`] (the head's new event follows).
    #[inline]
    pub(crate) fn head_arrived(&self, now_ns: u64) -> bool {
        self.pipe_front_arrive_ns().is_some_and(|t| t <= now_ns)
    }

    /// Arrival time of the pipe's head.
    #[inline(always)]
    pub(crate) fn pipe_front_arrive_ns(&self) -> Option<u64> {
        let e = self.pipe.front()?;
        if self.pipe_wide {
            return self.pipe_times.front().copied();
        }
        Some(self.pipe_base_ns + u64::from(e.arrive_off))
    }

    /// Arrival time of pipe entry `i` (`i` < the pipe's length).
    pub(crate) fn pipe_arrive_ns(&self, i: usize) -> u64 {
        if self.pipe_wide {
            self.pipe_times[i]
        } else {
            self.pipe_base_ns + u64::from(self.pipe[i].arrive_off)
        }
    }

    /// Appends a packet arriving at `arrive_ns`, no earlier than the pipe's last arrival.
    #[inline(always)]
    pub(crate) fn pipe_push(&mut self, arrive_ns: u64, pkt: Packet<P>) {
        if self.pipe.is_empty() {
            (self.head_next, self.head_at) = (pkt.next, pkt.at);
            // An empty pipe is never wide (`pipe_pop`): offsets count from here.
            self.pipe_base_ns = arrive_ns;
        }
        let off = arrive_ns.wrapping_sub(self.pipe_base_ns);
        if off >= OFFSET_LIMIT || self.pipe_wide {
            return self.pipe_push_far(arrive_ns, pkt);
        }
        self.pipe.push_back(PipeEntry { arrive_off: off as u32, pkt });
    }

    /// `pipe_push` of an arrival that does not fit an offset from the base, or into a wide pipe.
    #[cold]
    #[inline(never)]
    fn pipe_push_far(&mut self, arrive_ns: u64, pkt: Packet<P>) {
        if !self.pipe_wide {
            // Rebase to the head (the earliest arrival) if that makes room.
            let head_ns = self.pipe_arrive_ns(0);
            if arrive_ns >= head_ns && arrive_ns - head_ns < OFFSET_LIMIT {
                let shift = (head_ns - self.pipe_base_ns) as u32;
                for i in 0..self.pipe.len() {
                    self.pipe[i].arrive_off -= shift;
                }
                self.pipe_base_ns = head_ns;
                let arrive_off = (arrive_ns - head_ns) as u32;
                return self.pipe.push_back(PipeEntry { arrive_off, pkt });
            }
            self.pipe_widen();
        }
        self.pipe_times.push_back(arrive_ns);
        self.pipe.push_back(PipeEntry { arrive_off: 0, pkt });
    }

    /// Moves the pipe's arrival times from offsets to `pipe_times`.
    #[cold]
    fn pipe_widen(&mut self) {
        debug_assert!(!self.pipe_wide && self.pipe_times.is_empty());
        for i in 0..self.pipe.len() {
            let t = self.pipe_arrive_ns(i);
            self.pipe_times.push_back(t);
        }
        self.pipe_wide = true;
    }

    /// Moves entry `i`'s arrival (a rate change re-timed it, see `Link::retime_waiting`).
    pub(crate) fn pipe_set_arrive_ns(&mut self, i: usize, arrive_ns: u64) {
        if !self.pipe_wide {
            let off = arrive_ns.wrapping_sub(self.pipe_base_ns);
            if off < OFFSET_LIMIT {
                self.pipe[i].arrive_off = off as u32;
                return;
            }
            self.pipe_widen();
        }
        self.pipe_times[i] = arrive_ns;
    }

    /// A packet that entered in `epoch` left the delay line before the queue: it survives only
    /// if the link has not gone down since.
    #[inline]
    pub(crate) fn delay_ok(&mut self, epoch: u32) -> bool {
        if !self.up || epoch != self.epoch {
            self.stats.packets_lost_down += 1;
            return false;
        }
        true
    }

    /// The packet at the head of the pipe reached the far end: the entry, and whether the
    /// link went down since the packet entered (it is lost).
    #[inline]
    pub(crate) fn pipe_pop(&mut self) -> Option<(PipeEntry<P>, bool)> {
        self.backlog_forget_popped();
        let entry = self.pipe.pop_front()?;
        if self.pipe_wide {
            self.pipe_pop_time();
        }
        (self.head_next, self.head_at) = self.pipe.front().map_or((ROUTE_END, 0), |e| (e.pkt.next, e.pkt.at));
        let stale = self.stale > 0;
        self.stale -= stale as u32;
        Some((entry, stale))
    }

    /// Drops the popped entry's time of a wide pipe; an emptied pipe goes back to offsets.
    #[cold]
    #[inline(never)]
    fn pipe_pop_time(&mut self) {
        self.pipe_times.pop_front();
        if self.pipe.is_empty() {
            self.pipe_wide = false;
        }
    }

    /// The pipe head's next link (`ROUTE_END` at its route's end or for an empty pipe) and
    /// its position in the route table.
    #[inline(always)]
    pub(crate) fn head_hint(&self) -> (LinkId, u32) {
        (self.head_next, self.head_at)
    }

    /// A packet reached the far end (`stale`: the link went down since it entered): it
    /// survives only if the link is up and has not gone down since.
    #[inline]
    pub(crate) fn arrive_ok(&mut self, stale: bool, size_bytes: u32) -> bool {
        if !self.up || stale {
            self.stats.packets_lost_down += 1;
            return false;
        }
        self.stats.packets_forwarded += 1;
        self.stats.bytes_forwarded += size_bytes as u64;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link() -> Link<u64> {
        let spec = crate::net::LinkSpec::plain(1_000_000, 0);
        Link::new(spec, crate::rng::Rng::stream(0, 0))
    }

    /// Pops the whole pipe: (arrival, payload) in order.
    fn drain(l: &mut Link<u64>) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        while let Some(t) = l.pipe_front_arrive_ns() {
            let (e, _) = l.pipe_pop().expect("not empty");
            out.push((t, e.pkt.payload));
        }
        out
    }

    #[test]
    fn arrivals_past_32_bits_of_offset_rebase_or_widen_and_read_back_exact() {
        let mut l = link();
        let lim = OFFSET_LIMIT;
        // The largest offset fits; after the head leaves, one past it rebases to the new head.
        let times = [5 * lim, 5 * lim + 10, 5 * lim + 20, 6 * lim - 1];
        for (i, &t) in times.iter().enumerate() {
            l.pipe_push(t, Packet::for_test(1, i as u64));
        }
        assert!(!l.pipe_wide && l.pipe_base_ns == 5 * lim);
        l.pipe_pop();
        l.pipe_push(6 * lim + 5, Packet::for_test(1, 4));
        assert!(!l.pipe_wide && l.pipe_base_ns == 5 * lim + 10, "rebased to the head");
        let want: Vec<(u64, u64)> = vec![(5 * lim + 10, 1), (5 * lim + 20, 2), (6 * lim - 1, 3), (6 * lim + 5, 4)];
        assert_eq!(
            (0..4).map(|i| l.pipe_arrive_ns(i)).collect::<Vec<_>>(),
            want.iter().map(|w| w.0).collect::<Vec<_>>()
        );
        // A pipe spanning 4.29 s from its head: wide until it empties, times exact.
        l.pipe_push(7 * lim + 10, Packet::for_test(1, 5));
        assert!(l.pipe_wide);
        l.pipe_push(u64::MAX, Packet::for_test(1, 6));
        let mut want = want;
        want.extend([(7 * lim + 10, 5), (u64::MAX, 6)]);
        assert_eq!(drain(&mut l), want);
        assert!(!l.pipe_wide && l.pipe_times.is_empty());
        // Offsets again once empty; a re-timed arrival below the base widens the pipe.
        for (i, t) in [100, 200, 300].into_iter().enumerate() {
            l.pipe_push(t, Packet::for_test(1, i as u64));
        }
        assert!(!l.pipe_wide && l.pipe_base_ns == 100);
        l.pipe_set_arrive_ns(2, 250);
        assert!(!l.pipe_wide);
        l.pipe_set_arrive_ns(0, 50);
        assert!(l.pipe_wide);
        l.pipe_set_arrive_ns(1, 60);
        assert_eq!(drain(&mut l), vec![(50, 0), (60, 1), (250, 2)]);
    }
}
