//! The MPTCP-level retransmission timer of the upstream kernel and the stale-subflow detection
//! it drives (see [`crate::mptcp::stale`]), for schedulers on the upstream machinery.

use super::DataSender;
use crate::mptcp::stale::TCP_RTO_MIN_NS;

impl DataSender {
    /// `msk->timer_ival`: the largest remaining timeout of the active subflows not counting
    /// stale periods (`mptcp_timeout_from_subflow`), or `TCP_RTO_MIN` when there is none.
    pub(super) fn rtx_timer_ival(&self, now_ns: u64) -> u64 {
        let Some(st) = self.stale.as_ref() else {
            return TCP_RTO_MIN_NS;
        };
        let tout = (0..self.subflows.len())
            .filter(|&i| self.usable(i) && !st.is_stale(i) && st.count(i) == 0)
            .filter_map(|i| self.subflows[i].poll_timeout())
            .map(|t| t.saturating_sub(now_ns))
            .max()
            .unwrap_or(0);
        if tout > 0 {
            tout
        } else {
            TCP_RTO_MIN_NS
        }
    }

    /// The MPTCP-level retransmit timer fired (`__mptcp_retrans` -> `mptcp_subflow_get_retrans`):
    /// stale detection on every busy subflow; a subflow just marked stale has the whole
    /// MPTCP-level retransmission queue re-injected (`__mptcp_retransmit_pending_data`).
    pub(super) fn mptcp_retrans_timer(&mut self, now_ns: u64) {
        let Some(mut st) = self.stale.take() else {
            return;
        };
        st.timer_ns = None;
        // Stale marks and counts are in every view.
        self.touch_all();
        let active: Vec<bool> = (0..self.subflows.len()).map(|i| self.usable(i)).collect();
        for i in 0..self.subflows.len() {
            if !active[i] || self.subflows[i].is_idle() {
                continue;
            }
            if st.check(i, &|j| active[j]) {
                self.chunks.add_reinject(self.data_acked, self.next_dsn);
            }
        }
        self.stale = Some(st);
        if self.data_acked < self.next_dsn {
            let at = now_ns + self.rtx_timer_ival(now_ns);
            self.stale.as_mut().map(|st| st.timer_ns = Some(at));
        }
        self.need_schedule = true;
    }

    /// The connection runs the upstream kernel's MPTCP retransmit timer and stale detection.
    pub fn upstream_stale_detection(&self) -> bool {
        self.stale.is_some()
    }

    /// Subflows marked stale so far (upstream stale detection; 0 when it is off).
    pub fn stale_marks(&self) -> u64 {
        self.stale.as_ref().map_or(0, |st| st.marked)
    }

    /// `__mptcp_clean_una` after the DATA_ACK advanced: the timer restarts, or stops once
    /// everything sent is acknowledged.
    pub(super) fn restart_rtx_timer(&mut self, now_ns: u64) {
        if self.stale.is_some() {
            let at =
                (self.data_acked < self.next_dsn).then(|| now_ns + self.rtx_timer_ival(now_ns));
            if let Some(st) = self.stale.as_mut() {
                st.timer_ns = at;
            }
        }
    }

    /// `__mptcp_push_pending` arms the timer if it is not pending and data is unacknowledged.
    pub(super) fn arm_rtx_timer(&mut self, now_ns: u64) {
        if self.stale.as_ref().is_some_and(|st| st.timer_ns.is_none())
            && self.data_acked < self.next_dsn
        {
            let at = now_ns + self.rtx_timer_ival(now_ns);
            if let Some(st) = self.stale.as_mut() {
                st.timer_ns = Some(at);
            }
        }
    }
}
