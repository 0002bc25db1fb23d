//! RACK's part of the scoreboard (RFC 8985, Linux `tcp_rack_detect_loss`, `tcp_rack_advance`):
//! the most recently sent delivered segment and the time-based loss marking it drives (for first
//! transmissions, and with a zero reordering window for retransmissions); and the
//! congestion control's RTT sample of an ACK, also taken from its latest-sent delivered segment.

use super::{Scoreboard, SentSeg, LOST, RETX, SACKED};

impl Scoreboard {
    /// RACK for retransmissions: a retransmission sent before the latest delivered segment
    /// is lost (zero reordering window). Returns bytes newly marked lost.
    pub fn detect_lost_retransmissions(&mut self) -> u64 {
        let mut newly = 0;
        while let Some(&(abs, xmit_ns)) = self.rtx_fifo.front() {
            if abs < self.front_abs {
                self.rtx_fifo.pop_front();
                continue;
            }
            let i = (abs - self.front_abs) as usize;
            let mut s = self.get(i);
            if s.flags != LOST | RETX || s.xmit_ns != xmit_ns {
                // SACKed since, or already handled.
                self.rtx_fifo.pop_front();
                continue;
            }
            let end = s.seq + s.len as u64;
            if !self.sent_before_rack(xmit_ns, end) {
                break;
            }
            s.flags = LOST;
            self.put(i, &s);
            let len = s.len as u64;
            self.retx_bytes -= len;
            self.retx_segs -= 1;
            newly += len;
            self.rtx_ptr = self.rtx_ptr.min(abs);
            self.rtx_fifo.pop_front();
        }
        newly
    }

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

    /// True when [`Scoreboard::rack_mark_lost`] would find nothing at once (most ACKs): no
    /// segment at the loss pointer, or one not SACKed and not sent before the most recently
    /// sent delivered segment. One slot is read, not the next one for the segment's end: a
    /// segment starting at or above RACK's end sequence ends above it, so (send time, start)
    /// at or above (RACK.xmit_ts, RACK.end_seq) settles RFC 8985's order (segments sent in
    /// one burst share their send time); anything else is left to `rack_mark_lost`.
    #[inline(always)]
    pub fn rack_nothing_to_judge(&self) -> bool {
        let idx = (self.loss_ptr - self.front_abs) as usize;
        idx >= self.segs.len() || {
            let s = self.segs.get(idx);
            s.bits & SACKED == 0 && !self.sent_before_rack(s.xmit_ns, s.seq)
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
        self.rack_advance_to(s.xmit_ns, s.seq + s.len as u64, now_ns);
    }

    /// [`Scoreboard::rack_advance`] for a delivered segment sent at `xmit_ns` and ending at
    /// `end`, that counts (never retransmitted, or delivered at least min RTT after its last
    /// transmission).
    #[inline(always)]
    pub(super) fn rack_advance_to(&mut self, xmit_ns: u64, end: u64, now_ns: u64) {
        if sent_before((self.rack_xmit_ns, self.rack_end_seq), (xmit_ns, end)) {
            self.rack_xmit_ns = xmit_ns;
            self.rack_end_seq = end;
            self.rack_rtt_ns = now_ns.saturating_sub(xmit_ns);
        }
    }

    /// Sent before the most recently sent delivered segment (RFC 8985 `RACK_sent_after`).
    #[inline(always)]
    pub(super) fn sent_before_rack(&self, xmit_ns: u64, end_seq: u64) -> bool {
        sent_before((xmit_ns, end_seq), (self.rack_xmit_ns, self.rack_end_seq))
    }
}

/// RFC 8985's order of segments, (send time, end sequence) `a` before `b`: the tuples' `<`
/// written out. The tuple comparison compiled to flag selects on both fields, the send times
/// then the ends, on every ACK (`rack_advance_to`, `rack_nothing_to_judge`); this tests the
/// ends only on a tie of send times (measured, benches/RESULTS.md Session 16, perf17k4).
#[inline(always)]
pub(super) fn sent_before(a: (u64, u64), b: (u64, u64)) -> bool {
    a.0 < b.0 || (a.0 == b.0 && a.1 < b.1)
}

/// What Linux's `tcp_clean_rtx_queue` and `tcp_sacktag_one` note for `ca_rtt_us` while one ACK
/// is applied: the latest send time of a newly cumulatively acknowledged segment that was
/// neither SACKed nor ever retransmitted (`last_ackt`), of a newly SACKed never-retransmitted
/// one (`last_sackt`), and whether retransmitted data was cumulatively acknowledged
/// (`FLAG_RETRANS_DATA_ACKED`, Karn: no `last_ackt` sample then). Kept by the caller for one
/// ACK, not in the scoreboard (every subflow holds one).
#[derive(Debug, Clone, Copy, Default)]
pub struct CaRttSources {
    pub(super) last_ackt_ns: Option<u64>,
    pub(super) last_sackt_ns: Option<u64>,
    pub(super) retx_acked: bool,
}

impl CaRttSources {
    /// Notes the send time of a newly cumulatively acknowledged segment, neither SACKed nor
    /// ever retransmitted, as `last_ackt`: the latest such time, which is the last one noted.
    /// Such a segment's send time is its first transmission's (only a retransmission moves
    /// it, and marks it), first transmissions go in sequence order at non-decreasing times,
    /// and the cumulative ACK takes segments in sequence order; so no maximum is taken (it
    /// cost ~8 instructions a covered segment).
    #[inline(always)]
    pub(super) fn note_ackt(&mut self, xmit_ns: u64) {
        debug_assert!(self.last_ackt_ns.is_none_or(|t| t <= xmit_ns));
        self.last_ackt_ns = Some(xmit_ns);
    }

    /// Linux `ca_rtt_us` of the ACK: from the latest-sent newly SACKed segment never
    /// retransmitted if there is one, else from the latest-sent newly acknowledged one unless
    /// retransmitted data was acknowledged (Karn); `None` otherwise (the caller may fall back
    /// to the timestamp echo, as `tcp_ack_update_rtt` does).
    pub fn ca_rtt(&self, now_ns: u64) -> Option<u64> {
        let sent = self
            .last_sackt_ns
            .or(self.last_ackt_ns.filter(|_| !self.retx_acked))?;
        Some(now_ns.saturating_sub(sent))
    }
}
