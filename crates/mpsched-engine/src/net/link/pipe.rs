//! The far end of a link: its propagation pipe's head and the packets that reach it, kept apart
//! from `link.rs` (a child module: it reads the link's private pipe and counters).

use super::Link;
use crate::net::ring::PipeEntry;
use crate::net::{LinkId, ROUTE_END};

impl<P> Link<P> {
    /// Whether the pipe's head has arrived by `now_ns`. An arrival event that finds it not
    /// yet there was outdated by [`Link::retime_waiting`] (the head's new event follows).
    #[inline]
    pub(crate) fn head_arrived(&self, now_ns: u64) -> bool {
        self.pipe.front().is_some_and(|e| e.arrive_ns() <= now_ns)
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
        let entry = self.pipe.pop_front()?;
        (self.head_next, self.head_at) = self.pipe.front().map_or((ROUTE_END, 0), |e| (e.pkt.next, e.pkt.at));
        let stale = self.stale > 0;
        self.stale -= stale as u32;
        Some((entry, stale))
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
