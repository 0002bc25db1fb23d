//! Upstream Linux stale-subflow detection and the MPTCP-level retransmission timer that drives
//! it, for schedulers that run on the upstream kernel's connection machinery
//! ([`crate::sched::Scheduler::upstream_stale_detection`]).
//!
//! Source (Linux `net/mptcp/`): the MPTCP-level retransmit timer (`mptcp_retransmit_timer` ->
//! `__mptcp_retrans`) calls `mptcp_subflow_get_retrans`, which runs
//! `mptcp_pm_subflow_chk_stale` on every busy subflow (unacked or unsent data at TCP level,
//! `!tcp_rtx_and_write_queues_empty`). `chk_stale` (pm.c) counts timer periods in which the
//! subflow's `rcv_tstamp` (time of the last ACK it received) did not change: the first period
//! takes the snapshot (`stale_count` = 1), each later one with the same `rcv_tstamp`
//! increments `stale_count`, and a changed `rcv_tstamp` resets it to 0 and makes the subflow
//! active again (`mptcp_subflow_set_active`). Once `stale_count > stale_loss_cnt`
//! (`net.mptcp.stale_loss_cnt`, default 4), `mptcp_pm_subflows_chk_stale` marks the subflow
//! stale if another subflow is active with `stale_count < max(stale_loss_cnt - 1, 1)` and
//! the stale one still holds data; `__mptcp_retransmit_pending_data` then re-injects the whole
//! MPTCP-level retransmission queue (everything sent and not DATA_ACKed) and the data is
//! pushed again through the scheduler. A stale subflow is skipped by `mptcp_subflow_get_send`
//! (`mptcp_subflow_active`) until its `rcv_tstamp` differs from the snapshot, i.e. until it
//! receives any ACK again.
//!
//! Before any mark, `__mptcp_retrans` already moves data: when `mptcp_subflow_get_retrans`
//! finds an idle subflow (nothing unacked or queued at TCP level; a backup only when
//! `min_stale_count > 1`), the head data frag of the retransmission queue is sent again on it,
//! from the DATA_ACK up to what of the frag was sent (at most one frag per timer period). A
//! subflow RTO does nothing at the MPTCP level. On the testbed (6.18, a blackhole under a bulk
//! download) the first bytes delivered after the outage came from that re-send, at the second
//! timer period, once the other subflow had drained the window; the stale mark came at the
//! fifth.
//!
//! The timer (`mptcp_reset_rtx_timer`) is armed while data is unacknowledged at the connection
//! level and re-armed by every `__mptcp_clean_una`: whenever the DATA_ACK advances, and at the
//! start of each firing (`__mptcp_retrans` calls `mptcp_clean_una_wakeup` before anything
//! else). It is re-armed with the stored `msk->timer_ival`, which only a push attempt
//! recomputes (`mptcp_subflow_get_send`, and `mptcp_set_timeout` per pushed frag): the largest
//! remaining TCP timeout of the active subflows that are not counting stale periods
//! (`mptcp_timeout_from_subflow`), or `TCP_RTO_MIN` (200 ms) when there is none. So the period
//! after a firing is the one computed at the push after the previous firing, when that
//! firing's stale checks had just set `stale_count` = 1 on every busy subflow (and excluded
//! them): `TCP_RTO_MIN`, even if a subflow's count is reset to 0 by the checks of this firing.
//! A push attempt here is a scheduler run while the connection-level window admits unsent
//! data or re-injections are queued (`__mptcp_check_push` on an ACK, an application write),
//! or the push after a firing.
//!
//! Decisions: `rcv_tstamp` is a count of ACKs received on the subflow (the kernel's is in
//! jiffies, so two ACKs within one jiffy look like one: not modelled); the subflow's earliest
//! timer (RTO, loss probe, RACK) stands for `icsk_timeout`; data frags are full page frags
//! from DSN 0 (a writer that keeps the buffer full; the kernel's follow its writes and pages).

/// `TCP_RTO_MIN` (include/net/tcp.h): the MPTCP retransmit timer's period when no active
/// subflow has a timer pending, ns.
pub const TCP_RTO_MIN_NS: u64 = 200_000_000;

/// Data of one full data frag: a page frag (`mptcp_page_frag_refill`, 32 KiB) less the
/// `struct mptcp_data_frag` header carved from its front (`mptcp_carve_data_frag`, 40 bytes);
/// the testbed's MPTCP-level re-sends carried 32728 bytes.
pub(crate) const DFRAG_DATA_BYTES: u64 = crate::mptcp::PAGE_FRAG_BYTES - 40;

/// Default of `net.mptcp.stale_loss_cnt` (net/mptcp/ctrl.c).
pub const DEFAULT_STALE_LOSS_CNT: u8 = 4;

/// Per-subflow stale state and the connection's MPTCP-level retransmit timer.
#[derive(Debug, Clone, Default)]
pub(crate) struct StaleTracker {
    /// `net.mptcp.stale_loss_cnt`; 0 disables the marking (periods are still counted: the
    /// retransmission picker reads `stale_count`).
    loss_cnt: u8,
    /// Per subflow: ACKs received so far (stands for `rcv_tstamp`).
    rcv: Vec<u64>,
    /// Per subflow: `stale_count`.
    count: Vec<u8>,
    /// Per subflow: `stale_rcv_tstamp`.
    snapshot: Vec<u64>,
    /// Per subflow: `stale` as set by `chk_stale` (see [`StaleTracker::is_stale`]).
    stale: Vec<bool>,
    /// The MPTCP-level retransmit timer, absolute ns.
    pub(crate) timer_ns: Option<u64>,
    /// `msk->timer_ival`: the period the timer is (re)armed with, as computed at the last push
    /// attempt (`mptcp_subflow_get_send`), not when the timer is armed.
    pub(crate) ival_ns: u64,
    /// A push is due whatever the window: the MPTCP timer fired since the last push attempt
    /// (the worker's `release_sock` pushes, `mptcp_check_and_set_pending` ->
    /// `mptcp_release_cb`), or the application wrote (`mptcp_sendmsg`); it recomputes the period.
    pub(crate) push_pending: bool,
    /// Subflows marked stale so far.
    pub(crate) marked: u64,
}

impl StaleTracker {
    pub(crate) fn new(loss_cnt: u8, subflows: usize) -> Self {
        Self {
            loss_cnt,
            rcv: vec![0; subflows],
            count: vec![0; subflows],
            snapshot: vec![0; subflows],
            stale: vec![false; subflows],
            timer_ns: None,
            ival_ns: TCP_RTO_MIN_NS,
            push_pending: false,
            marked: 0,
        }
    }

    /// Subflow `sf` received an ACK (`tcp_ack` sets `rcv_tstamp`).
    pub(crate) fn on_receive(&mut self, sf: usize) {
        if let Some(r) = self.rcv.get_mut(sf) {
            *r += 1;
        }
    }

    /// `mptcp_subflow_active`'s stale test: stale and nothing received since the snapshot.
    pub(crate) fn is_stale(&self, sf: usize) -> bool {
        self.stale[sf] && self.rcv[sf] == self.snapshot[sf]
    }

    /// `stale_count` of subflow `sf`.
    pub(crate) fn count(&self, sf: usize) -> u8 {
        self.count[sf]
    }

    /// `mptcp_pm_subflow_chk_stale` for busy subflow `sf`; `active_other(i)` says whether
    /// subflow `i` can send (`mptcp_subflow_active`: established, interface up, not stale).
    /// Returns true when `sf` has just been marked stale (the caller re-injects the pending
    /// data).
    pub(crate) fn check(&mut self, sf: usize, active: &dyn Fn(usize) -> bool) -> bool {
        if self.count[sf] == 0 {
            self.snapshot[sf] = self.rcv[sf];
            self.count[sf] = 1;
            return false;
        }
        if self.snapshot[sf] != self.rcv[sf] {
            self.count[sf] = 0;
            self.stale[sf] = false;
            return false;
        }
        self.count[sf] = self.count[sf].saturating_add(1);
        if self.stale[sf] || self.loss_cnt == 0 || self.count[sf] <= self.loss_cnt {
            return false;
        }
        let active_max = self.loss_cnt.saturating_sub(1).max(1);
        let alternative = (0..self.count.len())
            .any(|i| i != sf && active(i) && !self.is_stale(i) && self.count[i] < active_max);
        if alternative {
            self.stale[sf] = true;
            self.marked += 1;
        }
        alternative
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subflow_is_stale_after_more_than_stale_loss_cnt_silent_periods_and_active_after_an_ack() {
        let mut t = StaleTracker::new(4, 2);
        let both = |_: usize| true;
        // Period 1 takes the snapshot; periods 2..=4 count; period 5 (count 5 > 4) marks it.
        for period in 1..=4 {
            assert!(!t.check(0, &both), "period {period}");
            assert!(!t.is_stale(0));
        }
        assert!(t.check(0, &both));
        assert!(t.is_stale(0));
        assert_eq!(t.count(0), 5);
        // Any ACK on the subflow makes it active again.
        t.on_receive(0);
        assert!(!t.is_stale(0));
        // The next check sees the change and resets the count.
        assert!(!t.check(0, &both));
        assert_eq!(t.count(0), 0);
    }

    #[test]
    fn without_an_active_alternative_nothing_is_marked() {
        let mut t = StaleTracker::new(4, 2);
        for _ in 0..10 {
            assert!(!t.check(0, &|i| i == 0));
        }
        assert!(!t.is_stale(0));
    }

    #[test]
    fn an_alternative_that_is_itself_counting_does_not_qualify() {
        let mut t = StaleTracker::new(4, 2);
        let both = |_: usize| true;
        // Subflow 1 is silent too: after 3 periods its count (3) is not below max(4 - 1, 1).
        for _ in 0..3 {
            t.check(1, &both);
        }
        for _ in 0..6 {
            assert!(!t.check(0, &both));
        }
        assert!(!t.is_stale(0));
    }
}
