//! The RTO's marks on the scoreboard and their undo: every outstanding segment lost at a
//! timeout, and none any more when the episode turns out spurious.

use super::{Scoreboard, EVER_RETX, LOST, SACKED};

impl Scoreboard {
    /// Linux `tcp_any_retrans_done`: a retransmission is in flight, or the oldest outstanding
    /// segment was retransmitted at some point.
    pub fn any_retrans_done(&self) -> bool {
        self.retx_segs > 0 || self.segs.front().is_some_and(|s| s.bits & EVER_RETX != 0)
    }

    /// RTO: every outstanding segment not SACKed is lost, retransmissions included
    /// (Linux `tcp_enter_loss()` / `tcp_timeout_mark_lost()`).
    pub fn mark_all_lost(&mut self) {
        for i in 0..self.segs.len() {
            let mut s = self.get(i);
            if s.flags & SACKED != 0 {
                continue;
            }
            if s.flags & LOST == 0 {
                self.lost_bytes += s.len as u64;
                self.lost_segs += 1;
            }
            s.flags = LOST;
            self.put(i, &s);
        }
        self.retx_bytes = 0;
        self.retx_segs = 0;
        self.rtx_fifo.clear();
        self.loss_ptr = self.front_abs + self.segs.len() as u64;
        self.sacked_below_ptr_bytes = self.sacked_bytes;
        self.sacked_below_ptr_segs = self.sacked_segs;
        self.rtx_ptr = self.front_abs;
    }

    /// Undo of a spurious loss episode (Linux `tcp_undo_cwnd_reduction(sk, true)`): no segment
    /// is lost any more (a retransmission stays counted in flight), and loss marking judges
    /// every outstanding segment again (Linux: `rack.advanced`, the retransmit hints cleared).
    pub fn unmark_lost(&mut self) {
        for i in 0..self.segs.len() {
            let mut s = self.get(i);
            if s.flags & LOST != 0 {
                s.flags &= !LOST;
                self.put(i, &s);
            }
        }
        self.lost_bytes = 0;
        self.lost_segs = 0;
        self.loss_ptr = self.front_abs;
        self.sacked_below_ptr_bytes = 0;
        self.sacked_below_ptr_segs = 0;
        self.rtx_ptr = self.front_abs;
    }
}
