//! Sender-side record of transmitted segments: SACK scoreboard, loss marking and "pipe".
//!
//! RFC 6675 terms: a segment is SACKed, deemed lost (`IsLost`: more than
//! (DupThresh - 1) * SMSS bytes or DupThresh segments SACKed above it), retransmitted.
//! `pipe` uses Linux's bookkeeping (`tcp_packets_in_flight()`, in bytes):
//! outstanding - (SACKed + lost) + retransmitted-in-flight.
//!
//! Cost: segments live in a `VecDeque` in sequence order (binary search by sequence number);
//! newly SACKed ranges are found against a merged [`RangeSet`], so an ACK only touches the
//! segments whose state changes. Loss marking and the retransmission candidate are two forward
//! pointers (absolute segment indices), so each segment is visited O(1) times per episode.
//!
//! Lost retransmissions: RFC 6675 alone finds them only by RTO. Linux (RACK, RFC 8985, on by
//! default) marks a retransmission lost once a segment sent after it has been delivered; with
//! no reordering seen Linux uses a zero reordering window in recovery (`tcp_rack_reo_wnd`).
//! We keep that one RACK rule for retransmissions (a FIFO in send order, O(1) per ACK) and
//! keep DupThresh for first transmissions (what RACK reduces to with >= 3 SACKed segments),
//! unless the sender enables RACK-TLP, which uses [`Scoreboard::rack_mark_lost`] instead: first
//! transmissions are in send order too, so the same left-to-right pointer serves.

use super::rangeset::RangeSet;
use std::collections::VecDeque;

/// RFC 6675 §2 DupThresh, also Linux's default `tp->reordering` (`TCP_FASTRETRANS_THRESH`).
pub const DUP_THRESH: u64 = 3;

const SACKED: u8 = 1;
const LOST: u8 = 2;
/// Retransmitted and the retransmission is presumed in flight.
const RETX: u8 = 4;

/// One transmitted segment.
#[derive(Debug, Clone, Copy)]
pub struct SentSeg {
    /// First subflow sequence number.
    pub seq: u64,
    /// Payload length, bytes.
    pub len: u32,
    /// DSN of the first byte.
    pub dsn: u64,
    /// Carries DATA_FIN.
    pub data_fin: bool,
    flags: u8,
    /// Retransmitted at least once (its delivery time is then ambiguous for RACK).
    ever_retx: bool,
    /// Time of the latest (re)transmission, ns.
    xmit_ns: u64,
}

/// The scoreboard. Invariant: `segs` are contiguous in sequence space starting at `snd_una`.
#[derive(Debug, Clone, Default)]
pub struct Scoreboard {
    segs: VecDeque<SentSeg>,
    /// Absolute index of `segs[0]` (segments ever popped).
    front_abs: u64,
    sacked_ranges: RangeSet,
    out_bytes: u64,
    sacked_bytes: u64,
    sacked_segs: u64,
    lost_bytes: u64,
    retx_bytes: u64,
    /// Segments below this absolute index have been judged by `IsLost` (lost or SACKed).
    loss_ptr: u64,
    sacked_below_ptr_bytes: u64,
    sacked_below_ptr_segs: u64,
    /// Next candidate for retransmission (absolute index).
    rtx_ptr: u64,
    /// Retransmissions in send order: (absolute index, send time).
    rtx_fifo: VecDeque<(u64, u64)>,
    /// RACK.xmit_ts: latest send time of a delivered, never-retransmitted segment.
    rack_xmit_ns: u64,
    /// RACK.end_seq: its end sequence number (breaks ties between equal send times).
    rack_end_seq: u64,
    /// RACK.rtt: RTT of that segment, ns.
    rack_rtt_ns: u64,
    /// Minimum RTT, ns: a retransmitted segment delivered sooner than this after its last
    /// transmission may have been the original (Linux `tcp_rack_advance`).
    min_rtt_ns: u64,
    /// End of the highest SACKed segment (Linux `tcp_highest_sack_seq`, "fack"); 0: none yet.
    fack: u64,
    /// Reordering was seen (Linux `tp->reord_seen`): a never-retransmitted segment below the
    /// highest SACKed one was delivered after it.
    reord_seen: bool,
}

impl Scoreboard {
    /// Bytes sent and not cumulatively acknowledged.
    #[inline]
    pub fn outstanding_bytes(&self) -> u64 {
        self.out_bytes
    }
    /// Bytes SACKed above the cumulative ACK.
    #[cfg(test)]
    pub fn sacked_bytes(&self) -> u64 {
        self.sacked_bytes
    }
    /// Bytes deemed lost and not SACKed.
    #[inline]
    pub fn lost_bytes(&self) -> u64 {
        self.lost_bytes
    }
    /// RFC 6675 pipe (Linux `tcp_packets_in_flight()` in bytes).
    #[inline]
    pub fn pipe_bytes(&self) -> u64 {
        self.out_bytes + self.retx_bytes - self.sacked_bytes - self.lost_bytes
    }
    /// True when nothing is outstanding.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }

    /// Records a first transmission (appended at the right edge).
    pub fn push(&mut self, seq: u64, len: u32, dsn: u64, data_fin: bool, now_ns: u64) {
        debug_assert!(
            self.segs
                .back()
                .map(|b| b.seq + b.len as u64)
                .unwrap_or(seq)
                == seq
        );
        self.segs.push_back(SentSeg {
            seq,
            len,
            dsn,
            data_fin,
            flags: 0,
            ever_retx: false,
            xmit_ns: now_ns,
        });
        self.out_bytes += len as u64;
    }

    /// Cumulative ACK up to `ack` (exclusive): drops covered segments, returns acked bytes.
    pub fn advance_una(&mut self, ack: u64, now_ns: u64) -> u64 {
        let mut acked = 0;
        while let Some(s) = self.segs.front() {
            if s.seq + s.len as u64 > ack {
                break;
            }
            let s = *s;
            self.segs.pop_front();
            let abs = self.front_abs;
            self.front_abs += 1;
            let len = s.len as u64;
            acked += len;
            self.out_bytes -= len;
            if s.flags & SACKED != 0 {
                self.sacked_bytes -= len;
                self.sacked_segs -= 1;
                if abs < self.loss_ptr {
                    self.sacked_below_ptr_bytes -= len;
                    self.sacked_below_ptr_segs -= 1;
                }
            } else {
                if s.flags & LOST != 0 {
                    self.lost_bytes -= len;
                }
                if s.flags & RETX != 0 {
                    self.retx_bytes -= len;
                }
                self.note_reordering(&s, self.fack);
                self.rack_advance(&s, now_ns);
            }
        }
        self.loss_ptr = self.loss_ptr.max(self.front_abs);
        self.rtx_ptr = self.rtx_ptr.max(self.front_abs);
        while self
            .rtx_fifo
            .front()
            .is_some_and(|&(abs, _)| abs < self.front_abs)
        {
            self.rtx_fifo.pop_front();
        }
        self.sacked_ranges.remove_below(ack);
        acked
    }

    /// Applies SACK blocks; returns newly SACKed bytes.
    pub fn apply_sack(&mut self, blocks: &[(u64, u64)], now_ns: u64) -> u64 {
        let (lo, hi) = match (self.segs.front(), self.segs.back()) {
            (Some(f), Some(b)) => (f.seq, b.seq + b.len as u64),
            _ => return 0,
        };
        let mut newly = 0;
        let prior_fack = self.fack;
        for &(s, e) in blocks {
            let (s, e) = (s.max(lo), e.min(hi));
            if s >= e {
                continue;
            }
            // Split borrow: collect gaps first (at most a few per block), then mark.
            let mut gaps: [(u64, u64); 8] = [(0, 0); 8];
            let mut n = 0;
            let mut overflow = false;
            self.sacked_ranges.insert_with(s, e, |a, b| {
                if n < gaps.len() {
                    gaps[n] = (a, b);
                    n += 1;
                } else {
                    overflow = true;
                }
            });
            if overflow {
                // Pathological block pattern: mark the whole block (already SACKed segments
                // are skipped inside).
                newly += self.mark_sacked(s, e, now_ns, prior_fack);
            } else {
                for &(a, b) in &gaps[..n] {
                    newly += self.mark_sacked(a, b, now_ns, prior_fack);
                }
            }
        }
        newly
    }

    /// Linux `tcp_sacktag_one` / `tcp_clean_rtx_queue` feeding `tcp_check_sack_reordering`: a
    /// segment sent once and delivered below the highest segment SACKed before this ACK
    /// arrived out of order.
    fn note_reordering(&mut self, s: &SentSeg, prior_fack: u64) {
        if !s.ever_retx && s.seq + (s.len as u64) <= prior_fack {
            self.reord_seen = true;
        }
    }

    /// Reordering was seen on this subflow (RACK then keeps its reordering window in
    /// recovery and past DupThresh SACKs).
    pub fn reord_seen(&self) -> bool {
        self.reord_seen
    }

    fn mark_sacked(&mut self, start: u64, end: u64, now_ns: u64, prior_fack: u64) -> u64 {
        let mut i = self.segs.partition_point(|x| x.seq + x.len as u64 <= start);
        let mut newly = 0;
        while i < self.segs.len() {
            let abs = self.front_abs + i as u64;
            let s = &mut self.segs[i];
            if s.seq >= end {
                break;
            }
            // Only whole segments count (our receivers SACK whole segments).
            if s.seq >= start && s.seq + s.len as u64 <= end && s.flags & SACKED == 0 {
                let len = s.len as u64;
                if s.flags & LOST != 0 {
                    self.lost_bytes -= len;
                }
                if s.flags & RETX != 0 {
                    self.retx_bytes -= len;
                }
                s.flags = SACKED;
                let s = *s;
                self.note_reordering(&s, prior_fack);
                self.fack = self.fack.max(s.seq + len);
                self.rack_advance(&s, now_ns);
                self.sacked_bytes += len;
                self.sacked_segs += 1;
                newly += len;
                if abs < self.loss_ptr {
                    self.sacked_below_ptr_bytes += len;
                    self.sacked_below_ptr_segs += 1;
                }
            }
            i += 1;
        }
        newly
    }

    /// RFC 6675 `IsLost` applied from the left: marks every not-yet-judged segment that has
    /// enough SACKed data above it. Returns bytes newly marked lost.
    pub fn update_lost(&mut self, mss_bytes: u64) -> u64 {
        let mut newly = 0;
        loop {
            let idx = (self.loss_ptr - self.front_abs) as usize;
            let Some(s) = self.segs.get_mut(idx) else {
                break;
            };
            let len = s.len as u64;
            if s.flags & SACKED != 0 {
                self.sacked_below_ptr_bytes += len;
                self.sacked_below_ptr_segs += 1;
                self.loss_ptr += 1;
                continue;
            }
            let above_bytes = self.sacked_bytes - self.sacked_below_ptr_bytes;
            let above_segs = self.sacked_segs - self.sacked_below_ptr_segs;
            if above_bytes > (DUP_THRESH - 1) * mss_bytes || above_segs >= DUP_THRESH {
                if s.flags & LOST == 0 {
                    s.flags |= LOST;
                    self.lost_bytes += len;
                    newly += len;
                }
                self.loss_ptr += 1;
            } else {
                break;
            }
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
            let Some(s) = self.segs.get_mut(idx) else {
                return (newly, None);
            };
            let len = s.len as u64;
            if s.flags & SACKED != 0 {
                self.sacked_below_ptr_bytes += len;
                self.sacked_below_ptr_segs += 1;
                self.loss_ptr += 1;
                continue;
            }
            let (xmit_ns, end) = (s.xmit_ns, s.seq + len);
            if !self.sent_before_rack(xmit_ns, end) {
                return (newly, None);
            }
            let deadline = xmit_ns + self.rack_rtt_ns + reo_wnd_ns;
            if now_ns < deadline {
                return (newly, Some(deadline));
            }
            let s = &mut self.segs[idx];
            if s.flags & LOST == 0 {
                s.flags |= LOST;
                self.lost_bytes += len;
                newly += len;
            }
            self.loss_ptr += 1;
        }
    }

    /// Sets the minimum RTT used to judge retransmitted deliveries.
    pub fn set_min_rtt(&mut self, min_rtt_ns: u64) {
        self.min_rtt_ns = min_rtt_ns;
    }

    /// RFC 8985 §6.1 / Linux `tcp_rack_advance`: remember the most recently sent delivered
    /// segment. A retransmitted one counts only if delivered at least min RTT after it was
    /// last sent (otherwise the original may have been the one delivered).
    fn rack_advance(&mut self, s: &SentSeg, now_ns: u64) {
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
    fn sent_before_rack(&self, xmit_ns: u64, end_seq: u64) -> bool {
        (xmit_ns, end_seq) < (self.rack_xmit_ns, self.rack_end_seq)
    }

    /// Number of SACKed segments above the cumulative ACK.
    pub fn sacked_segs(&self) -> u64 {
        self.sacked_segs
    }

    /// Number of outstanding segments.
    pub fn segs_out(&self) -> usize {
        self.segs.len()
    }

    /// Tail-loss probe without new data: the highest outstanding segment, to be sent again.
    /// Its state is unchanged (it is not deemed lost); it only stops counting for RACK.
    pub fn probe_last(&mut self, now_ns: u64) -> Option<SentSeg> {
        let s = self.segs.back_mut()?;
        if s.flags & SACKED != 0 {
            return None;
        }
        s.ever_retx = true;
        s.xmit_ns = now_ns;
        Some(*s)
    }

    /// RTO: every outstanding segment not SACKed is lost, retransmissions included
    /// (Linux `tcp_enter_loss()` / `tcp_timeout_mark_lost()`).
    pub fn mark_all_lost(&mut self) {
        for s in self.segs.iter_mut() {
            if s.flags & SACKED != 0 {
                continue;
            }
            if s.flags & LOST == 0 {
                self.lost_bytes += s.len as u64;
            }
            s.flags = LOST;
        }
        self.retx_bytes = 0;
        self.rtx_fifo.clear();
        self.loss_ptr = self.front_abs + self.segs.len() as u64;
        self.sacked_below_ptr_bytes = self.sacked_bytes;
        self.sacked_below_ptr_segs = self.sacked_segs;
        self.rtx_ptr = self.front_abs;
    }

    /// RFC 6675 NextSeg rule 1: the lowest lost, un-SACKed segment not yet retransmitted.
    pub fn next_lost(&mut self) -> Option<SentSeg> {
        while self.rtx_ptr < self.loss_ptr {
            let s = self.segs[(self.rtx_ptr - self.front_abs) as usize];
            if s.flags == LOST {
                return Some(s);
            }
            self.rtx_ptr += 1;
        }
        None
    }

    /// Marks the segment returned by [`Scoreboard::next_lost`] as retransmitted at `now_ns`.
    pub fn mark_retransmitted(&mut self, now_ns: u64) {
        let i = (self.rtx_ptr - self.front_abs) as usize;
        let s = &mut self.segs[i];
        debug_assert_eq!(s.flags, LOST);
        s.flags |= RETX;
        s.ever_retx = true;
        s.xmit_ns = now_ns;
        self.retx_bytes += s.len as u64;
        self.rtx_fifo.push_back((self.rtx_ptr, now_ns));
        self.rtx_ptr += 1;
    }

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
            let s = &mut self.segs[i];
            if s.flags != LOST | RETX || s.xmit_ns != xmit_ns {
                // SACKed since, or already handled.
                self.rtx_fifo.pop_front();
                continue;
            }
            let end = s.seq + s.len as u64;
            if !self.sent_before_rack(xmit_ns, end) {
                break;
            }
            let s = &mut self.segs[i];
            s.flags = LOST;
            let len = s.len as u64;
            self.retx_bytes -= len;
            newly += len;
            self.rtx_ptr = self.rtx_ptr.min(abs);
            self.rtx_fifo.pop_front();
        }
        newly
    }

    /// DSN ranges `(dsn, len)` of the outstanding, un-SACKed segments (for reinjection).
    pub fn unsacked_mappings(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.segs
            .iter()
            .filter(|s| s.flags & SACKED == 0)
            .map(|s| (s.dsn, s.len as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const MSS: u64 = 100;

    fn board(n: u64) -> Scoreboard {
        let mut b = Scoreboard::default();
        for i in 0..n {
            b.push(1 + i * MSS, MSS as u32, i * MSS, false, i);
        }
        b
    }

    #[test]
    fn three_sacked_segments_above_make_a_loss() {
        let mut b = board(10);
        // Segment 0 lost; 1 and 2 SACKed: not yet lost (RFC 6675 IsLost needs > 2 * SMSS).
        assert_eq!(b.apply_sack(&[(101, 301)], 50), 200);
        assert_eq!(b.update_lost(MSS), 0);
        assert_eq!(b.pipe_bytes(), 800);
        assert_eq!(b.apply_sack(&[(101, 401)], 50), 100);
        assert_eq!(b.update_lost(MSS), 100);
        assert_eq!(b.pipe_bytes(), 1000 - 300 - 100);
        let s = b.next_lost().unwrap();
        assert_eq!(s.seq, 1);
        b.mark_retransmitted(100);
        assert_eq!(b.pipe_bytes(), 700);
        assert!(b.next_lost().is_none());
        // The retransmission fills the hole: cumulative ACK up to 401.
        assert_eq!(b.advance_una(401, 60), 400);
        assert_eq!(b.pipe_bytes(), 600);
        assert_eq!(b.sacked_bytes(), 0);
        assert_eq!(b.lost_bytes(), 0);
    }

    #[test]
    fn retransmission_is_lost_once_a_later_sent_segment_is_delivered() {
        let mut b = board(10); // segment i sent at t = i
        b.apply_sack(&[(101, 401)], 50);
        b.update_lost(MSS);
        assert_eq!(b.next_lost().map(|s| s.seq), Some(1));
        b.mark_retransmitted(100);
        // Only segments sent before the retransmission were delivered: nothing to say.
        assert_eq!(b.detect_lost_retransmissions(), 0);
        assert_eq!(b.pipe_bytes(), 10 * MSS - 300 - 100 + 100);
        // New data sent at t = 150 is SACKed: the retransmission (t = 100) must have been lost.
        b.push(1 + 10 * MSS, MSS as u32, 10 * MSS, false, 150);
        b.apply_sack(&[(1 + 10 * MSS, 1 + 11 * MSS)], 200);
        assert_eq!(b.detect_lost_retransmissions(), 100);
        assert_eq!(b.next_lost().map(|s| s.seq), Some(1), "eligible again");
        b.mark_retransmitted(200);
        assert_eq!(b.detect_lost_retransmissions(), 0);
    }

    #[test]
    fn rto_marks_everything_unsacked_lost() {
        let mut b = board(5);
        b.apply_sack(&[(301, 401)], 50);
        b.mark_all_lost();
        assert_eq!(b.pipe_bytes(), 0);
        let mut n = 0;
        while b.next_lost().is_some() {
            b.mark_retransmitted(100);
            n += 1;
        }
        assert_eq!(n, 4);
        assert_eq!(b.pipe_bytes(), 400);
        assert_eq!(b.advance_una(501, 60), 500);
        assert_eq!(b.pipe_bytes(), 0);
    }

    #[test]
    fn rack_marks_a_hole_lost_once_rack_rtt_plus_reo_wnd_has_passed() {
        let mut b = board(10); // segment i sent at t = i
                               // Only segment 2 is SACKed, at t = 50: one SACK, far from DupThresh.
        b.apply_sack(&[(201, 301)], 50);
        assert_eq!(b.update_lost(MSS), 0, "RFC 6675 sees no loss");
        // RACK.rtt = 48 (segment 2); reo_wnd 10: segment 0 is lost at 0 + 48 + 10 = 58,
        // segment 1 at 59. Before that the caller gets the reordering timer.
        assert_eq!(b.rack_mark_lost(50, 10), (0, Some(58)));
        assert_eq!(b.rack_mark_lost(58, 10), (MSS, Some(59)));
        assert_eq!(b.rack_mark_lost(59, 10), (MSS, None));
        // Segments sent after segment 2 are not judged (nothing later was delivered).
        assert_eq!(b.lost_bytes(), 2 * MSS);
        assert_eq!(b.pipe_bytes(), 10 * MSS - MSS - 2 * MSS);
        assert_eq!(b.next_lost().map(|s| s.seq), Some(1));
    }

    #[test]
    fn a_once_sent_segment_delivered_below_the_highest_sack_is_reordering() {
        let mut b = board(10);
        b.apply_sack(&[(301, 401)], 50);
        assert!(!b.reord_seen(), "a hole is not reordering");
        // Segment 1 (sent once) is SACKed after segment 3 was: it arrived out of order.
        b.apply_sack(&[(101, 201), (301, 401)], 51);
        assert!(b.reord_seen());
        // A retransmitted segment filling a hole is not evidence of reordering.
        let mut b = board(10);
        b.apply_sack(&[(201, 401)], 50);
        b.update_lost(MSS);
        b.mark_all_lost();
        assert_eq!(b.next_lost().map(|s| s.seq), Some(1));
        b.mark_retransmitted(60);
        b.advance_una(101, 70);
        assert!(!b.reord_seen());
        // ... but a cumulative ACK of a never-retransmitted segment below the highest SACK is.
        b.advance_una(201, 71);
        assert!(b.reord_seen());
    }
}
