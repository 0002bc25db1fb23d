//! RACK's part of the scoreboard (RFC 8985, Linux `tcp_rack_detect_loss`, `tcp_rack_advance`):
//! the most recently sent delivered segment and the time-based loss marking it drives.

use super::{Scoreboard, SentSeg, SACKED};

impl Scoreboard {
    /// RACK (RFC 8985 §6.2, Linux `tcp_rack_detect_loss`) for first transmissions, used instead
    /// of [`Scoreboard::update_lost`] when RACK-TLP is on: a segment sent before the most
    /// recently sent delivered one is lost once `RACK.rtt + reo_wnd` has passed since it was
    /// sent. Returns (bytes newly marked lost, reordering-timer deadline if one is needed).
    pub fn rack_mark_lost(&mut self, now_ns: u64, reo_wnd_ns: u64) -> (u64, Option<u64>) {
        let mut newly = 0;
        loop {
            let idx = (self.loss_ptr - self.front_abs) as usize;
            if idx >= self.segs.len() {
                return (newly, None);
            }
            let s = self.get(idx);
            if s.flags & SACKED != 0 {
                self.pass_sacked_at_ptr(&s);
                continue;
            }
            let (xmit_ns, end) = (s.xmit_ns, s.seq + s.len as u64);
            if !self.sent_before_rack(xmit_ns, end) {
                return (newly, None);
            }
            let deadline = xmit_ns + self.rack_rtt_ns + reo_wnd_ns;
            if now_ns < deadline {
                return (newly, Some(deadline));
            }
            newly += self.judge_lost_at_ptr(idx, s);
        }
    }

    /// Sets the minimum RTT used to judge retransmitted deliveries.
    pub fn set_min_rtt(&mut self, min_rtt_ns: u64) {
        self.min_rtt_ns = min_rtt_ns;
    }

    /// RFC 8985 §6.1 / Linux `tcp_rack_advance`: remember the most recently sent delivered
    /// segment. A retransmitted one counts only if delivered at least min RTT after it was
    /// last sent (otherwise the original may have been the one delivered).
    pub(super) fn rack_advance(&mut self, s: &SentSeg, now_ns: u64) {
        let rtt = now_ns.saturating_sub(s.xmit_ns);
        if s.ever_retx && rtt < self.min_rtt_ns {
            return;
        }
        let end = s.seq + s.len as u64;
        if (s.xmit_ns, end) > (self.rack_xmit_ns, self.rack_end_seq) {
            self.rack_xmit_ns = s.xmit_ns;
            self.rack_end_seq = end;
            self.rack_rtt_ns = rtt;
        }
    }

    /// Sent before the most recently sent delivered segment (RFC 8985 `RACK_sent_after`).
    pub(super) fn sent_before_rack(&self, xmit_ns: u64, end_seq: u64) -> bool {
        (xmit_ns, end_seq) < (self.rack_xmit_ns, self.rack_end_seq)
    }
}
