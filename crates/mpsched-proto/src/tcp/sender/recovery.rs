//! Loss recovery and timers of a [`Sender`]: loss marking, fast recovery, RACK-TLP, the RTO.
//!
//! RFC 6675 with Linux's ordering (lost segments before new data) and PRR (RFC 6937, Linux
//! `tcp_cwnd_reduction`) for the window during recovery; recovery ends when the cumulative ACK
//! passes the highest sequence sent at its start, and cwnd is set to ssthresh (Linux
//! `tcp_end_cwnd_reduction`, in the ACK path of `mod.rs`). With RACK-TLP on, losses are marked by
//! RACK's time rule and a tail-loss probe is scheduled while in Open state. RTO: every un-SACKed
//! segment is lost, cwnd one segment, slow start; the timer backs off exponentially until new
//! data is acknowledged. Kept apart from ACK intake and transmission (`mod.rs`), which call in
//! here, so each file reads as one mechanism.

use super::{AckOutcome, CaState, Sender};
use crate::cc::{AckSample, CoupledView};
use crate::sched::LossKind;
use crate::tcp::rtt::{timer_wheel_fire_ns, MIN_RTO_NS};
use crate::tcp::scoreboard::{SentSeg, DUP_THRESH};
use crate::PendingNs;

/// Linux `TCP_TIMEOUT_MIN_US` (2 ms, whatever HZ), added to the probe and reordering timeouts
/// before they are turned into jiffies (6.18 `tcp_schedule_loss_probe`, `tcp_rack_mark_lost`:
/// `usecs_to_jiffies(timeout + TCP_TIMEOUT_MIN_US)`); the timer wheel then rounds them.
const TIMEOUT_MIN_NS: u64 = 2_000_000;

/// [`Sender`]'s `tlp_high_seq` when no probe is out: sequence numbers start at 1 (the SYN's
/// is 0), so no probe's `snd_nxt` is 0. 8 bytes where an `Option<u64>` took 16.
pub(super) const NO_PROBE: u64 = 0;

impl Sender {
    /// The congestion-state work of an ACK outside the common case (open, nothing lost):
    /// entering fast recovery, PRR in it, leaving it, and the window after an RTO. Out of
    /// line, so the common ACK path stays small.
    // The ACK's pieces stay separate arguments: bundling them costs the common ACK path a
    // struct build for a call it rarely makes.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    pub(super) fn on_ack_with_loss(
        &mut self,
        now_ns: u64,
        delivered: u64,
        una_advanced: bool,
        newly_lost: u64,
        ts_ecr: u64,
        out: &mut AckOutcome,
        ack: &mut AckSample,
        view: &CoupledView<'_>,
    ) {
        if self.state == CaState::Loss && self.try_undo_loss(una_advanced, ts_ecr) {
            // Linux `tcp_fastretrans_alert` goes on to `tcp_identify_packet_loss` with the marks
            // cleared: RACK judges the outstanding segments again, and a loss it finds starts a
            // fast recovery at once.
            if self.mark_lost(now_ns) > 0 || self.board.lost_bytes() > 0 {
                self.enter_recovery(now_ns, view);
                out.loss = Some(LossKind::FastRetransmit);
                self.prr_update(out.delivered_segs, una_advanced, newly_lost);
                return;
            }
        }
        match self.state {
            CaState::Open => {
                if self.board.lost_bytes() > 0 {
                    self.enter_recovery(now_ns, view);
                    out.loss = Some(LossKind::FastRetransmit);
                    self.prr_update(out.delivered_segs, una_advanced, newly_lost);
                } else if delivered > 0 {
                    self.grow(ack, view);
                }
            }
            CaState::Recovery => {
                if self.snd_una >= self.high_seq {
                    // Linux `tcp_try_undo_recovery`, else `tcp_end_cwnd_reduction`.
                    if !self.try_undo_recovery(ts_ecr) {
                        self.tcb.cwnd_bytes = self.tcb.ssthresh_bytes.max(self.tcb.mss_bytes);
                    }
                    self.state = CaState::Open;
                    self.cc.inner_mut().on_recovery_exit(&mut self.tcb, now_ns);
                } else {
                    self.prr_update(out.delivered_segs, una_advanced, newly_lost);
                }
            }
            CaState::Loss => {
                if delivered > 0 {
                    self.grow(ack, view);
                }
                if self.snd_una >= self.high_seq {
                    // Linux `tcp_process_loss`: recovered, `tcp_try_undo_recovery`.
                    self.try_undo_recovery(ts_ecr);
                    self.state = CaState::Open;
                }
            }
        }
    }

    /// Halves cwnd, and ssthresh outside slow start (RP penalisation,
    /// `reference/schedulers.md` §2.2). How often is the scheduler's rule (OOT: once per sRTT
    /// of the retransmitting subflow), not the subflow's.
    pub fn penalize(&mut self) {
        let mss = self.tcb.mss_bytes;
        let prior = self.tcb.cwnd_bytes;
        self.tcb.cwnd_bytes = (prior / 2).max(mss);
        if prior >= self.tcb.ssthresh_bytes {
            self.tcb.ssthresh_bytes = (self.tcb.ssthresh_bytes / 2).max(2 * mss);
        }
    }

    /// The due tail-loss probe (rare: kept out of the per-segment path). Without new data it
    /// resends the highest outstanding segment (returned); with new data the probe is the
    /// next new segment, sent whatever the window (Linux `push_one == 2`).
    #[cold]
    #[inline(never)]
    pub(super) fn take_probe(&mut self, now_ns: u64) -> Option<SentSeg> {
        self.probe_due = false;
        if !self.queue.is_empty() {
            self.rare_stats().tail_loss_probes += 1;
            return None;
        }
        // No new data: probe with the highest outstanding segment.
        let s = self.board.probe_last(now_ns)?;
        let len = s.len as u64;
        self.rare_stats().bytes_retransmitted += len;
        self.rare_stats().tail_loss_probes += 1;
        self.on_sent(now_ns, len);
        self.tlp_high_seq = self.snd_nxt;
        self.tlp_retrans = true;
        Some(s)
    }

    /// In recovery or with losses marked: the next lost segment to resend (`Some(Some)`),
    /// `Some(None)` when the window has no room for it, `None` when nothing is to be resent.
    /// Out of line: most segments are new data.
    #[inline(never)]
    pub(super) fn next_retransmission(&mut self, now_ns: u64) -> Option<Option<SentSeg>> {
        let s = self.board.next_lost()?;
        if !self.can_send(s.len as u64) {
            self.cwnd_validate(true);
            return Some(None);
        }
        self.board.mark_retransmitted(now_ns);
        self.note_retransmission(now_ns);
        let len = s.len as u64;
        self.rare_stats().bytes_retransmitted += len;
        self.on_sent(now_ns, len);
        Some(Some(s))
    }

    /// Marks losses: RACK when RACK-TLP is on, RFC 6675 DupThresh otherwise; lost
    /// retransmissions by RACK's rule in both cases. Most ACKs (Open, RACK with nothing
    /// sent before the latest delivered segment outstanding) end at the inline test: the
    /// reordering window and the marking loop's setup are then not needed.
    #[inline(always)]
    pub(super) fn mark_lost(&mut self, now_ns: u64) -> u64 {
        if self.state == CaState::Open && self.cfg.rack_tlp() && self.board.rack_nothing_to_judge()
        {
            // What `mark_lost_judging` does then: nothing marked, no reordering timer.
            self.rack_timer_ns = PendingNs::NONE;
            return 0;
        }
        self.mark_lost_judging(now_ns)
    }

    /// [`Sender::mark_lost`] past its inline test.
    #[inline(never)]
    fn mark_lost_judging(&mut self, now_ns: u64) -> u64 {
        let mut newly = if self.cfg.rack_tlp() {
            // Linux `tcp_rack_reo_wnd`: min RTT / 4 (at most SRTT); until reordering has been
            // seen, none in recovery or once DupThresh segments are SACKed. (No D-SACK, so
            // the window never grows in steps of min RTT / 4.)
            let aggressive = self.state != CaState::Open || self.board.sacked_segs() >= DUP_THRESH;
            let reo_wnd_ns = if aggressive && !self.board.reord_seen() {
                0
            } else {
                (self.rtt.min_rtt_ns / 4).min(self.rtt.srtt_ns)
            };
            let (n, timer) = self.board.rack_mark_lost(now_ns, reo_wnd_ns);
            // Linux `tcp_rack_mark_lost`: the reordering timer is armed TCP_TIMEOUT_MIN_US after
            // the deadline, in jiffies, on the timer wheel.
            self.rack_timer_ns = PendingNs::from_option(
                timer.map(|t| timer_wheel_fire_ns(now_ns, t - now_ns + TIMEOUT_MIN_NS)),
            );
            n
        } else {
            self.board.update_lost(self.tcb.mss_bytes)
        };
        if self.state != CaState::Open {
            newly += self.board.detect_lost_retransmissions();
        }
        newly
    }

    pub(super) fn enter_recovery(&mut self, now_ns: u64, view: &CoupledView<'_>) {
        let ss = self
            .cc
            .inner_mut()
            .ssthresh_on_loss(&self.tcb, now_ns, view);
        // Linux `tcp_enter_recovery`: `prior_ssthresh` from `tcp_current_ssthresh`,
        // `tcp_init_undo`; `retrans_stamp` cleared in Open unless retransmitted data is still
        // out (`tcp_try_to_open`; here Open can hold retransmissions Linux would recover in).
        self.init_undo();
        self.clear_retrans_stamp_if_done();
        self.tcb.ssthresh_bytes = ss;
        self.prior_cwnd = self.cwnd_segs();
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.high_seq = self.snd_nxt;
        self.state = CaState::Recovery;
        self.rare_stats().fast_retransmits += 1;
        self.tlp_deadline = PendingNs::NONE;
        // Linux `tcp_init_cwnd_reduction`: the recovery ends any probe episode.
        self.tlp_high_seq = NO_PROBE;
        self.l1_bytes = self.l2_bytes;
        self.l2_bytes = 0;
    }

    /// RFC 6937 PRR as Linux 6.18's `tcp_cwnd_reduction()` applies it: proportional while pipe
    /// exceeds ssthresh, then up to ssthresh by what is owed (plus one segment when the
    /// cumulative ACK advanced and nothing new was marked lost). Counted in packets, as Linux
    /// counts them: `delivered_segs` are the segments this ACK newly delivered, each once
    /// (`tcp_newly_delivered`; a segment SACKed earlier and now cumulatively acknowledged is
    /// not delivered again), `prr_out` the segments sent, pipe `tcp_packets_in_flight`. Counted
    /// in acknowledged bytes, the ACK that repairs a hole re-delivered everything SACKed above
    /// it and released that much at once (a 34-segment burst into a 2 Mbit/s path).
    pub(super) fn prr_update(&mut self, delivered_segs: u64, una_advanced: bool, newly_lost: u64) {
        if delivered_segs == 0 {
            return;
        }
        let mss = self.tcb.mss_bytes.max(1);
        self.prr_delivered += delivered_segs;
        let pipe = self.board.pipe_segs();
        let ss = self.tcb.ssthresh_bytes / mss;
        let prior_cwnd = self.prior_cwnd.max(1);
        let mut sndcnt = if pipe > ss {
            let num = ss as u128 * self.prr_delivered as u128 + prior_cwnd as u128 - 1;
            ((num / prior_cwnd as u128) as u64).saturating_sub(self.prr_out)
        } else {
            // Linux 6.x: what PRR still owes (delivered minus sent) or this ACK's delivery,
            // one segment more when the cumulative ACK advanced and nothing new was lost.
            let owed = self
                .prr_delivered
                .saturating_sub(self.prr_out)
                .max(delivered_segs);
            let bonus = u64::from(una_advanced && newly_lost == 0);
            (ss - pipe).min(owed + bonus)
        };
        // Linux: force the fast retransmit upon entering recovery.
        if self.prr_out == 0 {
            sndcnt = sndcnt.max(1);
        }
        self.tcb.cwnd_bytes = (pipe + sndcnt).max(1) * mss;
    }

    /// Linux `tcp_process_tlp_ack`, for an ACK at or beyond the probe's `snd_nxt`: a probe of
    /// new data ends the episode; a resent segment followed by an ACK beyond that point means
    /// the probe repaired a loss, so the window is reduced once (Linux: CWR state, ssthresh
    /// from the congestion control, cwnd = ssthresh); a pure duplicate ACK (the original and
    /// the probe both arrived; Linux also takes a D-SACK of the probe) ends it with no
    /// reduction.
    #[inline(never)]
    pub(super) fn process_tlp_ack(
        &mut self,
        now_ns: u64,
        ack: u64,
        una_advanced: bool,
        newly_sacked: u64,
        view: &CoupledView<'_>,
    ) {
        let high = self.tlp_high_seq;
        if high == NO_PROBE {
            return;
        }
        if ack < high {
            return;
        }
        if !self.tlp_retrans {
            self.tlp_high_seq = NO_PROBE;
        } else if ack > high {
            self.tlp_high_seq = NO_PROBE;
            let ss = self
                .cc
                .inner_mut()
                .ssthresh_on_loss(&self.tcb, now_ns, view);
            self.tcb.ssthresh_bytes = ss;
            self.tcb.cwnd_bytes = ss.max(self.tcb.mss_bytes);
            self.cc.inner_mut().on_recovery_exit(&mut self.tcb, now_ns);
            self.rare_stats().tlp_recoveries += 1;
            self.l1_bytes = self.l2_bytes;
            self.l2_bytes = 0;
        } else if !una_advanced && newly_sacked == 0 {
            self.tlp_high_seq = NO_PROBE;
        }
    }

    /// Linux `tcp_schedule_loss_probe`, noted rather than computed: Linux calls it once per
    /// `tcp_write_xmit`, after its loop, and an ACK's own call (`tcp_set_xmit_timer`) is
    /// overwritten by the transmissions that follow it at the same instant. So a transmission
    /// or an ACK only records that the probe is to be rescheduled (the last one's time, and
    /// whether an ACK asked); the deadline is computed once, when the drain ends (the closing
    /// `None` poll), when a segment, a timer or a path change comes in, or (without storing
    /// it) when [`Sender::poll_timeout`] reads it. Between the noted call and any of those
    /// only transmissions happen, which change nothing the computation reads but the flight,
    /// and the last call's computation wins: the deadline is the one the eager calls gave.
    #[inline(always)]
    pub(super) fn schedule_tlp(&mut self, now_ns: u64, from_ack: bool) {
        if !self.cfg.rack_tlp() {
            return;
        }
        self.tlp_pending_ns = PendingNs::at(now_ns);
        self.tlp_pending_ack |= from_ack;
        #[cfg(test)]
        if self.eager_tlp {
            self.resolve_tlp();
        }
    }

    /// Compute every probe schedule when it is noted (tests: both ways must agree).
    #[cfg(test)]
    pub(crate) fn take_eager_tlp(&mut self) {
        self.eager_tlp = true;
    }

    /// Computes a noted probe schedule ([`Sender::schedule_tlp`]) into `tlp_deadline`.
    #[inline(always)]
    pub(super) fn resolve_tlp(&mut self) {
        if self.tlp_pending_ns.is_some() {
            self.tlp_deadline = self.tlp_deadline_computed();
            self.tlp_pending_ns = PendingNs::NONE;
            self.tlp_pending_ack = false;
        }
    }

    /// The probe deadline with the noted schedule applied (`tlp_deadline` when none is noted).
    /// The schedule itself: in Open state (Linux Open, not Disorder: nothing SACKed) with
    /// data out, probe after 2 SRTT (+ 200 ms for a single segment, which may wait for a
    /// delayed ACK; + `TCP_TIMEOUT_MIN` otherwise), or at the RTO if that comes first. In
    /// Linux the probe and the RTO share one timer: an ACK of new data that cannot schedule a
    /// probe (`from_ack`) leaves only the RTO, a transmission leaves the timer as it was.
    #[inline(never)]
    fn tlp_deadline_computed(&self) -> PendingNs {
        let Some(now_ns) = self.tlp_pending_ns.get() else {
            return self.tlp_deadline;
        };
        let from_ack = self.tlp_pending_ack;
        if self.state != CaState::Open
            || self.board.is_empty()
            || self.board.sacked_segs() > 0
            || self.tlp_high_seq != NO_PROBE
            || !self.rtt.has_sample
        {
            // With a probe outstanding Linux arms the timer anyway, but it then only re-arms
            // the RTO (`tcp_send_loss_probe`: at most one outstanding probe).
            if from_ack || self.state != CaState::Open || self.board.is_empty() {
                return PendingNs::NONE;
            }
            return self.tlp_deadline;
        }
        let extra = if self.board.segs_out() == 1 {
            MIN_RTO_NS
        } else {
            TIMEOUT_MIN_NS
        };
        let at = timer_wheel_fire_ns(now_ns, 2 * self.rtt.srtt_ns + extra);
        // "If the RTO formula yields an earlier time, then use that time."
        PendingNs::at(at).earliest(self.rto_deadline)
    }

    /// Earliest timer deadline (handshake retransmission or RTO), absolute ns. A probe
    /// schedule noted and not yet computed goes to a call: this is asked after every drain.
    pub fn poll_timeout(&self) -> Option<u64> {
        if self.tlp_pending_ns.is_some() {
            return self.poll_timeout_noted();
        }
        self.earliest_timer(self.tlp_deadline)
    }

    /// The earliest of the RTO, the handshake's retransmission, RACK's timer and `tlp`.
    /// Called after every event: plain comparisons, no iterator chain.
    #[inline(always)]
    fn earliest_timer(&self, tlp: PendingNs) -> Option<u64> {
        self.rto_deadline
            .earliest(self.hs.pending_timeout())
            .earliest(self.rack_timer_ns)
            .earliest(tlp)
            .get()
    }

    /// [`Sender::poll_timeout`] with a probe schedule noted and not yet computed (read in the
    /// middle of a drain, or by a caller that stopped one early).
    #[cold]
    #[inline(never)]
    fn poll_timeout_noted(&self) -> Option<u64> {
        self.earliest_timer(self.tlp_deadline_computed())
    }

    /// Path down (`false`): nothing is transmitted; timers keep running as in a kernel that
    /// sees no ACKs. Path up: the backoff is reset and a due retransmission goes out at once.
    /// (With the timers: it restarts the RTO.)
    pub fn set_path_up(&mut self, up: bool, now_ns: u64) {
        self.resolve_tlp();
        if up && !self.path_up {
            self.backoff = 0;
            if !self.board.is_empty() {
                self.rto_deadline = PendingNs::at(timer_wheel_fire_ns(now_ns, self.rtt.rto_ns()));
            }
        }
        self.path_up = up;
    }

    /// Fires due timers (uncoupled).
    pub fn handle_timeout(&mut self, now_ns: u64) -> Option<LossKind> {
        self.handle_timeout_coupled(now_ns, &CoupledView::SINGLE)
    }

    /// Fires due timers; returns `Some(Timeout)` when an RTO fired.
    pub fn handle_timeout_coupled(
        &mut self,
        now_ns: u64,
        view: &CoupledView<'_>,
    ) -> Option<LossKind> {
        self.resolve_tlp();
        self.hs.handle_timeout(now_ns);
        let mut event = None;
        if self.rack_timer_ns.get().is_some_and(|t| now_ns >= t) {
            // RACK reordering timer (Linux `tcp_rack_reo_timeout`).
            self.rack_timer_ns = PendingNs::NONE;
            if self.mark_lost(now_ns) > 0 && self.state == CaState::Open {
                self.enter_recovery(now_ns, view);
                event = Some(LossKind::FastRetransmit);
            }
        }
        if self.tlp_deadline.get().is_some_and(|t| now_ns >= t) {
            // Linux `tcp_send_loss_probe`: one probe, then the RTO is re-armed from now.
            self.tlp_deadline = PendingNs::NONE;
            if self.state == CaState::Open
                && !self.board.is_empty()
                && self.tlp_high_seq == NO_PROBE
            {
                self.probe_due = true;
                self.rto_deadline = PendingNs::at(timer_wheel_fire_ns(
                    now_ns,
                    self.rtt.backed_off_rto_ns(self.backoff),
                ));
            }
        }
        let Some(t) = self.rto_deadline.get() else {
            return event;
        };
        if now_ns < t {
            return event;
        }
        if self.board.is_empty() {
            self.rto_deadline = PendingNs::NONE;
            return None;
        }
        self.rare_stats().rto_count += 1;
        self.potentially_failed = true;
        // Linux `tcp_enter_loss`: a new ssthresh only for the first timeout of an episode.
        if self.state == CaState::Open || (self.state == CaState::Loss && self.backoff == 0) {
            // `prior_ssthresh` and `prior_cwnd` saved, `tcp_init_undo`.
            if self.state == CaState::Open {
                self.clear_retrans_stamp_if_done();
            }
            self.init_undo();
            self.prior_cwnd = self.cwnd_segs();
            self.tcb.ssthresh_bytes = self.cc.inner_mut().on_rto(&self.tcb, now_ns, view);
            self.l1_bytes = self.l2_bytes;
            self.l2_bytes = 0;
        }
        self.tcb.cwnd_bytes = self.tcb.mss_bytes;
        self.board.mark_all_lost();
        self.rack_timer_ns = PendingNs::NONE;
        self.tlp_deadline = PendingNs::NONE;
        self.tlp_high_seq = NO_PROBE;
        self.probe_due = false;
        self.state = CaState::Loss;
        self.high_seq = self.snd_nxt;
        // Linux `tcp_retransmit_skb` of the head: the stamp of the first attempt, sent or not
        // (a path that is down sends nothing).
        self.note_retransmission(now_ns);
        self.backoff += 1;
        self.rto_deadline = PendingNs::at(timer_wheel_fire_ns(
            now_ns,
            self.rtt.backed_off_rto_ns(self.backoff),
        ));
        Some(LossKind::Timeout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::TcpConfig;

    #[test]
    fn prr_below_ssthresh_sends_what_it_owes_even_when_an_ack_marks_new_losses() {
        // Linux 6.18 `tcp_cwnd_reduction` with pipe <= ssthresh: sndcnt = min(ssthresh - pipe,
        // max(prr_delivered - prr_out, newly delivered)), one segment more only when the
        // cumulative ACK advanced and nothing new was lost. (Nothing outstanding: pipe = 0.)
        let mut s = Sender::established(TcpConfig::default(), crate::cc::build("reno").unwrap());
        let mss = s.tcb.mss_bytes;
        s.tcb.ssthresh_bytes = 10 * mss;
        s.prior_cwnd = 20;
        // A SACK of three segments that also marks one lost.
        s.prr_update(3, false, mss);
        assert_eq!(s.tcb.cwnd_bytes, 3 * mss);
        // One segment went out; the next SACK delivers one and marks another lost: PRR still
        // owes 4 - 1 = 3 segments (the CRB-only rule would allow 1).
        s.prr_out = 1;
        s.prr_update(1, false, mss);
        assert_eq!(s.tcb.cwnd_bytes, 3 * mss);
        // A cumulative ACK with no new loss: owed 5 - 1 = 4, plus one.
        s.prr_update(1, true, 0);
        assert_eq!(s.tcb.cwnd_bytes, 5 * mss);
    }

    #[test]
    fn the_ack_that_repairs_a_hole_adds_only_the_retransmission_to_prr() {
        // Linux counts what an ACK newly delivers once (`tcp_clean_rtx_queue` counts a SACKed
        // skb's cumulative ACK in `sacked_out`, not in `delivered`), and PRR adds only that.
        // 40 segments out; segment 0 and 11..38 are lost, 1..10 and 39 SACKed: recovery
        // (ssthresh 20, pipe 0) resends 11. The ACK of segment 0's retransmission then moves
        // snd_una over the ten SACKed segments: one segment delivered, so PRR lets out two
        // (what it owes, 12 - 11, plus one), not twelve.
        use crate::tcp::Segment;
        let mut s = Sender::established(TcpConfig::default(), crate::cc::build("reno").unwrap());
        let mss = s.tcb.mss_bytes;
        s.tcb.cwnd_bytes = 40 * mss;
        s.queue(0, 100 * mss, false);
        let send_all = |s: &mut Sender, now: u64| {
            let mut n = 0;
            while s.poll_transmit(now).is_some() {
                n += 1;
            }
            n
        };
        assert_eq!(send_all(&mut s, 0), 40);
        let seq = |i: u64| 1 + i * mss;
        let ack = |to: u64, blocks: &[(u64, u64)]| {
            let mut a = Segment {
                flags: crate::tcp::flags::ACK,
                ack: to,
                ts_ecr: 1,
                ..Default::default()
            };
            for (k, &b) in blocks.iter().enumerate() {
                a.sack[k] = b;
            }
            a.sack_len = blocks.len() as u8;
            a
        };
        let ms = 1_000_000;
        s.handle_segment(
            20 * ms,
            &ack(seq(0), &[(seq(1), seq(11)), (seq(39), seq(40))]),
        );
        assert_eq!(s.ca_state(), CaState::Recovery);
        assert_eq!(
            send_all(&mut s, 20 * ms),
            11,
            "PRR resends what was delivered"
        );
        s.handle_segment(40 * ms, &ack(seq(11), &[(seq(39), seq(40))]));
        assert_eq!(s.ca_state(), CaState::Recovery);
        assert_eq!(
            send_all(&mut s, 40 * ms),
            2,
            "the repair ACK delivered one segment"
        );
    }
}
