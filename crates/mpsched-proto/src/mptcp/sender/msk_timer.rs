//! The MPTCP-level retransmission timer of the upstream kernel and the stale-subflow detection
//! it drives (see [`crate::mptcp::stale`]), for schedulers on the upstream machinery.

use super::DataSender;
use crate::mptcp::stale::{DFRAG_DATA_BYTES, TCP_RTO_MIN_NS};
use crate::sched::{Action, ResendKind};
use crate::tcp::timer_wheel_fire_ns;

impl DataSender {
    /// `mptcp_timeout_from_subflow` over the active subflows (`mptcp_subflow_get_send`): the
    /// largest remaining timeout of those not counting stale periods, or `TCP_RTO_MIN` when
    /// there is none.
    fn subflow_timeout_ns(&self, now_ns: u64) -> u64 {
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

    /// `mptcp_reset_rtx_timer`: the timer restarts with the stored `timer_ival` (jiffies,
    /// `sk_reset_timer` on the timer wheel).
    fn reset_rtx_timer(&mut self, now_ns: u64) {
        if let Some(st) = self.stale.as_mut() {
            st.timer_ns = Some(timer_wheel_fire_ns(now_ns, st.ival_ns));
        }
    }

    /// The MPTCP-level retransmit timer fired (`mptcp_retransmit_timer` -> `__mptcp_retrans`).
    /// `mptcp_subflow_get_retrans` walks the subflows in order: a busy one (anything unacked or
    /// queued) gets its stale check, and a subflow just marked stale has the whole MPTCP-level
    /// retransmission queue re-injected (`__mptcp_retransmit_pending_data`) and pushed at once
    /// through the scheduler; the first idle non-backup subflow (an idle backup only when every
    /// busy one has gone more than one period without an ACK, `min_stale_count > 1`) is the
    /// pick. `__mptcp_retrans` then sends the head data frag of the retransmission queue again
    /// on the pick, up to what of it was sent: this, not the stale mark, is what first moves
    /// the data of a silent subflow once another one has drained.
    pub(super) fn mptcp_retrans_timer(&mut self, now_ns: u64) {
        if self.stale.is_none() {
            return;
        }
        // `mptcp_clean_una_wakeup` first: with data unacknowledged the timer is re-armed at
        // once with the period stored at the last push, before the stale checks below.
        if let Some(st) = self.stale.as_mut() {
            st.timer_ns = None;
        }
        if self.data_acked < self.next_dsn {
            self.reset_rtx_timer(now_ns);
        }
        // The backup flags are read below from fresh views (built while the stale state is in
        // place: a view shows its counts); the stale checks then change the marks and counts
        // every view shows, so all are rebuilt again before the next decision.
        self.touch_all();
        self.refresh_views();
        let Some(mut st) = self.stale.take() else {
            return;
        };
        st.push_pending = true;
        let active: Vec<bool> = (0..self.subflows.len()).map(|i| self.usable(i)).collect();
        let (mut pick, mut backup, mut pushed) = (None, None, false);
        let mut min_stale_count = u8::MAX;
        for i in 0..self.subflows.len() {
            if !active[i] {
                continue;
            }
            if !self.subflows[i].is_idle() {
                if st.check(i, &|j| active[j]) {
                    self.chunks.add_reinject(self.data_acked, self.next_dsn);
                    pushed = true;
                }
                min_stale_count = min_stale_count.min(st.count(i));
            } else if pushed {
                // The push after the stale mark (`__mptcp_push_pending` inside
                // `mptcp_pm_subflows_chk_stale`) has made the subflows after it busy.
            } else if self.views[i].backup {
                backup = backup.or(Some(i));
            } else {
                pick = pick.or(Some(i));
            }
        }
        self.stale = Some(st);
        self.touch_all();
        let pick = pick.or(if min_stale_count > 1 { backup } else { None });
        if let (Some(sf), true) = (pick, self.data_acked < self.next_dsn) {
            // The head data frag: from the DATA_ACK to its frag's end, as far as it was sent.
            let frag_end = (self.data_acked / DFRAG_DATA_BYTES + 1) * DFRAG_DATA_BYTES;
            let len = frag_end.min(self.next_dsn) - self.data_acked;
            let _ = self.apply(Action::Resend {
                subflow: sf,
                dsn: self.data_acked,
                len,
                kind: ResendKind::Reinject,
            });
        }
        self.need_schedule = true;
    }

    /// The connection runs the upstream kernel's MPTCP retransmit timer and stale detection.
    pub fn upstream_stale_detection(&self) -> bool {
        self.stale.is_some()
    }

    /// The MPTCP-level retransmit timer's deadline, absolute ns (upstream stale detection).
    pub fn mptcp_timer_ns(&self) -> Option<u64> {
        self.stale.as_ref().and_then(|st| st.timer_ns)
    }

    /// Subflows marked stale so far (upstream stale detection; 0 when it is off).
    pub fn stale_marks(&self) -> u64 {
        self.stale.as_ref().map_or(0, |st| st.marked)
    }

    /// `__mptcp_clean_una` after the DATA_ACK advanced: the timer restarts with the stored
    /// period, or stops once everything sent is acknowledged.
    #[inline(always)]
    pub(super) fn restart_rtx_timer(&mut self, now_ns: u64) {
        if self.stale.is_some() {
            self.restart_upstream_rtx_timer(now_ns);
        }
    }

    /// [`DataSender::restart_rtx_timer`] with the MPTCP-level timer (out of line: the upstream
    /// kernel's machinery only).
    #[inline(never)]
    fn restart_upstream_rtx_timer(&mut self, now_ns: u64) {
        if self.data_acked < self.next_dsn {
            self.reset_rtx_timer(now_ns);
        } else if let Some(st) = self.stale.as_mut() {
            st.timer_ns = None;
        }
    }

    /// Before a scheduler run: is it a push attempt (`__mptcp_push_pending` runs): an
    /// application write (`mptcp_sendmsg`, whatever the window), an ACK while the
    /// connection-level window admits unsent data (`ack_update_msk` -> `__mptcp_check_push`),
    /// or the MPTCP timer fired since the last one (the worker's push; a stale mark's
    /// re-injection is pushed from there too)?
    pub(super) fn push_attempt(&self) -> bool {
        self.stale.as_ref().is_some_and(|st| {
            st.push_pending || (self.wnd_end > self.next_dsn && self.app_written > self.next_dsn)
        })
    }

    /// After a scheduler run that was a push attempt (`push`), `mptcp_subflow_get_send` stores
    /// the period; `__mptcp_push_pending` then arms the timer if it is not pending and data is
    /// unacknowledged.
    #[inline(always)]
    pub(super) fn arm_rtx_timer(&mut self, now_ns: u64, push: bool) {
        if self.stale.is_some() {
            self.arm_upstream_rtx_timer(now_ns, push);
        }
    }

    /// [`DataSender::arm_rtx_timer`] on the upstream kernel's machinery (out of line: only
    /// there is the MPTCP-level timer).
    #[inline(never)]
    fn arm_upstream_rtx_timer(&mut self, now_ns: u64, push: bool) {
        if push {
            let ival = self.subflow_timeout_ns(now_ns);
            if let Some(st) = self.stale.as_mut() {
                st.ival_ns = ival;
                st.push_pending = false;
            }
        }
        if self.stale.as_ref().is_some_and(|st| st.timer_ns.is_none())
            && self.data_acked < self.next_dsn
        {
            self.reset_rtx_timer(now_ns);
        }
    }
}
