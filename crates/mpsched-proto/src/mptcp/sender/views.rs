//! What the scheduler and a coupled congestion control read about the subflows, kept up to
//! date incrementally; and the sender's read-only accessors.
//!
//! A [`SubflowView`] (and a [`crate::cc::CoupledSubflow`]) is a function of its subflow's state
//! alone, plus the path state and the stale tracker the connection holds. Rebuilding all of them
//! for every scheduler call cost ~1 600 instructions a decision on 8 subflows; instead every
//! input that can change a subflow marks it (`touch`), and only marked subflows are rebuilt.
//! Marked: the subflow an ACK or timer was handled on, one whose queue was trimmed by a
//! DATA_ACK, one given data by an action, one whose path went down or up, one that sent a
//! segment, all of them when the stale tracker runs. A subflow's `poll_transmit` that sends
//! nothing changes no state a view shows (it only records whether the window was the limit),
//! so it leaves the subflow unmarked; unit-test builds check after every refresh that each
//! view kept equals a rebuilt one, so a change to the subflow that breaks this is caught.

use super::DataSender;
use crate::sched::{Action, Rejection, ResendCounters, SubflowView};
use crate::tcp::{Sender, SenderStats};

/// Bit of subflow `sf` in a subflow mask (subflows are at most 64).
#[inline]
pub(super) fn bit(sf: usize) -> u64 {
    1u64 << sf.min(63)
}

impl DataSender {
    /// Subflow `sf`'s state may have changed: its views are rebuilt before they are read next.
    #[inline]
    pub(super) fn touch(&mut self, sf: usize) {
        self.views_dirty |= bit(sf);
        self.coupled_dirty |= bit(sf);
    }

    /// Every subflow's views are rebuilt before they are read next.
    pub(super) fn touch_all(&mut self) {
        self.views_dirty = u64::MAX;
        self.coupled_dirty = u64::MAX;
    }

    /// The scheduler's view of subflow `i`.
    fn view_of(&self, i: usize) -> SubflowView {
        let mut v = SubflowView {
            id: i,
            path_index: i,
            ..Default::default()
        };
        self.fill_view(i, &mut v);
        v
    }

    /// Writes subflow `i`'s state into `v`, whose `id` and `path_index` are already `i` (every
    /// other field is written; `stale` and `stale_count` stay at their defaults without the
    /// stale tracker).
    fn fill_view(&self, i: usize, v: &mut SubflowView) {
        self.subflows[i].fill_view(v);
        v.established &= self.is_path_up(i);
        if let Some(st) = self.stale.as_ref() {
            v.stale = st.is_stale(i);
            v.stale_count = st.count(i) as u64;
        }
    }

    /// Fills `out` with one view per subflow (what the scheduler sees), built afresh.
    pub fn subflow_views(&self, out: &mut Vec<SubflowView>) {
        out.clear();
        out.extend((0..self.subflows.len()).map(|i| self.view_of(i)));
    }

    /// Brings `self.views` up to date: only the subflows touched since the last refresh.
    pub(super) fn refresh_views(&mut self) {
        let n = self.subflows.len();
        if self.views.len() != n {
            let mut views = std::mem::take(&mut self.views);
            self.subflow_views(&mut views);
            self.views = views;
        } else {
            let mut views = std::mem::take(&mut self.views);
            let mut dirty = self.views_dirty;
            while dirty != 0 {
                let i = dirty.trailing_zeros() as usize;
                dirty &= dirty - 1;
                if let Some(v) = views.get_mut(i) {
                    self.fill_view(i, v);
                }
            }
            self.views = views;
        }
        self.views_dirty = 0;
        #[cfg(test)]
        for (i, v) in self.views.iter().enumerate() {
            assert_eq!(*v, self.view_of(i), "stale view of subflow {i}");
        }
    }

    /// Brings `self.coupled` up to date for a coupled congestion control (the others never
    /// read it).
    pub(super) fn refresh_coupled(&mut self) {
        if !self.coupled_cc {
            return;
        }
        let mut dirty = self.coupled_dirty;
        while dirty != 0 {
            let i = dirty.trailing_zeros() as usize;
            dirty &= dirty - 1;
            if let (Some(c), Some(s)) = (self.coupled.get_mut(i), self.subflows.get(i)) {
                *c = s.coupled_info();
            }
        }
        self.coupled_dirty = 0;
        #[cfg(test)]
        for (c, s) in self.coupled.iter().zip(&self.subflows) {
            assert_eq!(*c, s.coupled_info(), "stale coupled-CC summary");
        }
    }

    /// Per-subflow counters.
    pub fn subflow_stats(&self, subflow: usize) -> Option<SenderStats> {
        self.subflows.get(subflow).map(|s| s.stats())
    }

    /// The subflow state machines (read-only).
    pub fn subflows(&self) -> &[Sender] {
        &self.subflows
    }

    /// Rejected actions so far for reason `why`.
    pub fn rejections(&self, why: Rejection) -> u64 {
        self.rejections
            .iter()
            .flat_map(|k| k.iter())
            .map(|r| r[why.index()])
            .sum()
    }

    /// Refused actions so far, `(action kind, reason, count)` for every non-zero count, in
    /// kind then reason order ([`Action::KINDS`], [`Rejection::ALL`]).
    pub fn rejected_actions(&self) -> impl Iterator<Item = (&'static str, Rejection, u64)> + '_ {
        Action::KINDS
            .iter()
            .zip(self.rejections.iter().flat_map(|k| k.iter()))
            .flat_map(|(kind, row)| {
                Rejection::ALL
                    .iter()
                    .zip(row)
                    .filter(|(_, &n)| n > 0)
                    .map(|(&why, &n)| (*kind, why, n))
            })
    }

    /// Bytes sent again at the connection level (transmitted, summed over the subflows).
    pub fn resent(&self) -> ResendCounters {
        let mut r = ResendCounters::default();
        for s in &self.subflows {
            r.merge(&s.stats().resent);
        }
        r
    }

    /// Cumulative DATA_ACK.
    pub fn data_acked(&self) -> u64 {
        self.data_acked
    }
    /// DSN of the next new byte.
    pub fn next_dsn(&self) -> u64 {
        self.next_dsn
    }
    /// Bytes written by the application.
    pub fn app_written(&self) -> u64 {
        self.app_written
    }
    /// Bytes waiting in the reinjection queue.
    pub fn reinject_queue_bytes(&self) -> u64 {
        self.chunks.reinject_bytes()
    }
    /// Calls to the scheduler so far.
    pub fn schedule_calls(&self) -> u64 {
        self.schedule_calls
    }
    /// Name of the scheduler (`"tcp"` in TCP mode).
    pub fn scheduler_name(&self) -> &'static str {
        self.sched.as_ref().map_or("tcp", |s| s.name())
    }
}
