//! Undo of a loss episode that was spurious, by timestamps (the Eifel detection, RFC 3522, as
//! Linux 6.18 applies it in net/ipv4/tcp_input.c: `tcp_init_undo`, `tcp_packet_delayed`,
//! `tcp_may_undo`, `tcp_try_undo_loss`, `tcp_try_undo_recovery`, `tcp_undo_cwnd_reduction`).
//!
//! An ACK that echoes a timestamp older than the episode's first retransmission was sent for
//! an original transmission: the "lost" segment arrived, only its ACK (or the segment) was
//! late, so the window is restored. After lost ACKs this is the common case: the receiver
//! refuses a retransmission wholly below its last ACK (`tcp_sequence`) before it would update
//! TS.Recent, so the dupack echoes the original's time (`receiver.rs`).
//!
//! Not modelled: D-SACK (the receiver sends none, so Linux's `undo_retrans` never reaches 0 and
//! `tcp_try_undo_dsack` never fires: the undo rests on timestamps alone, as here), the partial
//! undo within fast recovery (`tcp_try_undo_partial`) and F-RTO (`tcp_process_loss`'s
//! `frto_undo`).

use super::{CaState, Sender};

/// A time as Linux's TCP timestamp clock gives it: milliseconds (`tcp_time_stamp_ts` without
/// usec timestamps), 32 bits; the model's timestamps are ns, compared at Linux's resolution.
fn ts_ms(ns: u64) -> u32 {
    (ns / 1_000_000) as u32
}

impl Sender {
    /// Linux `tcp_init_undo` at the start of an episode (`tcp_enter_recovery`, the first RTO
    /// of `tcp_enter_loss`), with `prior_ssthresh` as `tcp_current_ssthresh` gives it outside a
    /// window reduction: the larger of ssthresh and three quarters of cwnd. The caller saves
    /// `prior_cwnd` and then lowers ssthresh.
    pub(super) fn init_undo(&mut self) {
        let mss = self.tcb.mss_bytes.max(1);
        let (cwnd, ssthresh) = (self.cwnd_segs(), self.tcb.ssthresh_bytes / mss);
        let prior = ssthresh.max(cwnd / 2 + cwnd / 4);
        self.prior_ssthresh_segs = u32::try_from(prior).unwrap_or(u32::MAX);
        self.undo_marker = true;
    }

    /// Linux `tcp_try_to_open` / `tcp_try_keep_open`: the stamp is forgotten once no
    /// retransmitted data is outstanding (`tcp_any_retrans_done`). Cleared with retransmissions
    /// still out, a later ACK for one of them would pass `tcp_packet_delayed` as "nothing
    /// retransmitted yet" and undo a real loss.
    pub(super) fn clear_retrans_stamp_if_done(&mut self) {
        if !self.board.any_retrans_done() {
            self.retrans_stamp_ms = 0;
        }
    }

    /// Linux `tcp_retransmit_skb`: the first retransmission of an episode stamps it.
    #[inline]
    pub(super) fn note_retransmission(&mut self, now_ns: u64) {
        if self.retrans_stamp_ms == 0 {
            self.retrans_stamp_ms = ts_ms(now_ns).max(1);
        }
    }

    /// Linux `tcp_packet_delayed` (a SACK connection): the ACK echoes a timestamp from before
    /// the first retransmission; with nothing retransmitted yet, the ACK cannot be for one.
    fn packet_delayed(&self, ts_ecr: u64) -> bool {
        if self.retrans_stamp_ms == 0 {
            return true;
        }
        ts_ecr > 0 && ts_ms(ts_ecr) < self.retrans_stamp_ms
    }

    /// Linux `tcp_may_undo`; without D-SACK `undo_retrans` stays above 0 once anything was
    /// retransmitted, so only the timestamp test remains.
    fn may_undo(&self, ts_ecr: u64) -> bool {
        self.undo_marker && self.packet_delayed(ts_ecr)
    }

    /// Linux `tcp_undo_cwnd_reduction`: cwnd back to at least what it was (`tcp_reno_undo_cwnd`,
    /// CUBIC's too), ssthresh to `prior_ssthresh` if higher; with `unmark_loss` the segments
    /// deemed lost are not any more (retransmissions in flight stay counted).
    fn undo_cwnd_reduction(&mut self, unmark_loss: bool) {
        if unmark_loss {
            self.board.unmark_lost();
        }
        if self.prior_ssthresh_segs > 0 {
            let mss = self.tcb.mss_bytes;
            self.tcb.cwnd_bytes = self.tcb.cwnd_bytes.max(self.prior_cwnd * mss);
            let prior_ssthresh_bytes = match self.prior_ssthresh_segs {
                u32::MAX => u64::MAX,
                segs => u64::from(segs) * mss,
            };
            self.tcb.ssthresh_bytes = self.tcb.ssthresh_bytes.max(prior_ssthresh_bytes);
        }
        self.undo_marker = false;
        self.rare_stats().undos += 1;
    }

    /// Linux `tcp_process_loss` -> `tcp_try_undo_loss(sk, false)`: in Loss, an ACK of new data
    /// for an original transmission ends the episode (Open, losses unmarked, window restored).
    pub(super) fn try_undo_loss(&mut self, una_advanced: bool, ts_ecr: u64) -> bool {
        if !una_advanced || !self.may_undo(ts_ecr) {
            return false;
        }
        self.undo_cwnd_reduction(true);
        self.state = CaState::Open;
        true
    }

    /// Linux `tcp_try_undo_recovery` when the episode's data is all acknowledged: undone if
    /// the ACK was for an original. The caller then opens (and, unless undone, sets cwnd to
    /// ssthresh: `tcp_end_cwnd_reduction` skips that once `undo_marker` is cleared).
    pub(super) fn try_undo_recovery(&mut self, ts_ecr: u64) -> bool {
        if !self.may_undo(ts_ecr) {
            return false;
        }
        self.undo_cwnd_reduction(false);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::CoupledView;
    use crate::tcp::{flags, Segment, TcpConfig};

    const MS: u64 = 1_000_000;

    #[test]
    fn the_stamp_outlives_a_new_episode_while_a_retransmission_is_out() {
        // Linux clears `retrans_stamp` in Open only when `tcp_any_retrans_done` says no
        // retransmitted data is out. Cleared with one out, the ACK for it would pass
        // `tcp_packet_delayed` as "nothing retransmitted yet" and undo a real loss.
        let mut s = Sender::established(TcpConfig::default(), crate::cc::build("reno").unwrap());
        let mss = s.tcb.mss_bytes;
        s.queue(0, 20 * mss, false);
        for _ in 0..10 {
            s.poll_transmit(MS).expect("within the initial window");
        }
        let mut sack = Segment {
            flags: flags::ACK,
            ack: 1,
            ts_ecr: MS,
            sack_len: 1,
            ..Default::default()
        };
        sack.sack[0] = (1 + mss, 1 + 10 * mss);
        s.handle_segment(21 * MS, &sack);
        assert_eq!(s.state, CaState::Recovery);
        assert_eq!(
            s.poll_transmit(21 * MS)
                .expect("the fast retransmission")
                .seq,
            1
        );
        assert_eq!(s.retrans_stamp_ms, 21);
        s.state = CaState::Open;
        s.enter_recovery(30 * MS, &CoupledView::SINGLE);
        assert_eq!(s.retrans_stamp_ms, 21, "the retransmission is still out");
        let all = Segment {
            flags: flags::ACK,
            ack: 1 + 10 * mss,
            ts_ecr: 21 * MS,
            ..Default::default()
        };
        s.handle_segment(41 * MS, &all);
        s.state = CaState::Open;
        s.enter_recovery(50 * MS, &CoupledView::SINGLE);
        assert_eq!(s.retrans_stamp_ms, 0, "nothing retransmitted is out");
    }
}
