//! The send queue's head trimmed when data is acknowledged at the connection level, and the
//! DSN ranges queued or outstanding.

use super::view::segs_of;
use super::Sender;

impl Sender {
    /// DSN ranges `(dsn, len)` queued and not transmitted yet.
    pub fn unsent_mappings(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.queue.iter().map(|m| (m.dsn, m.len))
    }

    /// DSN ranges of the outstanding, un-SACKed segments.
    pub fn unacked_mappings(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.board.unsacked_mappings()
    }

    /// Drops queued (untransmitted) data below `dsn`: it was acknowledged at the connection
    /// level through another subflow. Sequence numbers are assigned at transmission, so this
    /// leaves no hole. Looks at the queue head only: O(1) when there is nothing to drop. The
    /// MPTCP sender asks on every DATA_ACK, and the head is almost always at or above `dsn`:
    /// that test is inline, the trim a call (set up in the caller, it loaded the MSS and the
    /// counts first, ~20 instructions an ACK for nothing).
    #[inline(always)]
    pub fn trim_unsent_below(&mut self, dsn: u64) {
        if self.queue.front().is_some_and(|m| m.dsn < dsn) {
            self.trim_unsent_from_head(dsn);
        }
    }

    #[inline(never)]
    fn trim_unsent_from_head(&mut self, dsn: u64) {
        let mss = self.tcb.mss_bytes;
        while let Some(m) = self.queue.front_mut() {
            if m.dsn >= dsn {
                break;
            }
            let cut = (dsn - m.dsn).min(m.len);
            self.queued_segs -= segs_of(m.len, mss);
            m.dsn += cut;
            m.len -= cut;
            self.queued_segs += segs_of(m.len, mss);
            self.queued_bytes -= cut;
            if m.len > 0 {
                break;
            }
            self.queue.pop_front();
        }
    }

    /// Entries of heap room the send queue holds (tests of `tcp::fifo`).
    #[cfg(test)]
    pub(crate) fn queue_heap_entries(&self) -> usize {
        self.queue.heap_capacity()
    }

    /// Entries of heap room the scoreboard's DSN runs hold (tests of `tcp::fifo`).
    #[cfg(test)]
    pub(crate) fn dsn_runs_heap_entries(&self) -> usize {
        self.board.dsn_runs_heap_entries()
    }
}
