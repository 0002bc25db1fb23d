//! The scheduler's rounds and the actions it takes, applied to the subflows (MPTCP with a
//! scheduler; plain TCP never comes here).

use super::{DataSender, MAX_SCHEDULE_ROUNDS};
use crate::sched::{Action, ConnView, Rejection, Scheduler};

impl DataSender {
    /// The scheduler's rounds: it sees the connection and acts until it does nothing more. (Out
    /// of line: inlined in `poll_transmit`, the views it builds took registers from plain
    /// TCP's path, which never comes here.)
    #[inline(never)]
    pub(super) fn run_scheduler_rounds(&mut self, sched: &mut dyn Scheduler, now_ns: u64) {
        for _ in 0..MAX_SCHEDULE_ROUNDS {
            self.refresh_views();
            self.actions.clear();
            let (unacked, reinject) = self.chunks.views();
            let view = ConnView {
                now_ns,
                subflows: &self.views,
                unsent_bytes: self.app_written - self.next_dsn,
                app_done: self.closed,
                next_dsn: self.next_dsn,
                data_acked: self.data_acked,
                unacked,
                reinject_queue: reinject,
                peer_rwnd_bytes: self.wnd_end.saturating_sub(self.data_acked),
            };
            self.schedule_calls += 1;
            sched.schedule(&view, &mut self.actions);
            if self.actions.is_empty() {
                break;
            }
            let mut applied = 0;
            for i in 0..self.actions.len() {
                let a = self.actions[i];
                match self.apply(a) {
                    Ok(()) => applied += 1,
                    Err(why) => {
                        self.rejections.get_or_insert_with(Default::default)[a.kind_index()]
                            [why.index()] += 1;
                        sched.on_rejected(a, why, now_ns);
                    }
                }
            }
            if applied == 0 {
                break;
            }
        }
    }

    /// [`Action::SendNew`]: up to `max_bytes` new bytes to `subflow`'s queue.
    #[inline]
    fn send_new(&mut self, subflow: usize, max_bytes: u64) -> Result<(), Rejection> {
        self.send_new_inline(subflow, max_bytes)
    }
    pub(super) fn apply(&mut self, a: Action) -> Result<(), Rejection> {
        match a {
            Action::SendNew { subflow, max_bytes } => self.send_new(subflow, max_bytes),
            Action::Resend {
                subflow,
                dsn,
                len,
                kind,
            } => {
                self.check_usable(subflow)?;
                let s = dsn.max(self.data_acked);
                let e = dsn.saturating_add(len).min(self.next_dsn);
                if s >= e {
                    return Err(Rejection::NothingToSend);
                }
                let qroom = self.queue_room(subflow);
                if qroom == 0 {
                    return Err(Rejection::SubflowQueueFull);
                }
                let e = e.min(s + qroom);
                let fin = self.closed && e == self.app_written;
                self.touch(subflow);
                self.subflows[subflow].queue_resend(s, e - s, fin, kind);
                self.chunks.mark_sent_on(s, e, subflow);
                self.chunks.remove_reinject(s, e);
                Ok(())
            }
            Action::Penalize { subflow } => {
                if subflow >= self.subflows.len() {
                    return Err(Rejection::UnknownSubflow);
                }
                self.touch(subflow);
                self.subflows[subflow].penalize();
                Ok(())
            }
        }
    }
}
