//! ECF: Earliest Completion First.
//!
//! Sources: Lim, Nahum, Towsley, Gibbens, "ECF: an MPTCP path scheduler to manage
//! heterogeneous paths", CoNEXT 2017; OOT `net/mptcp/mptcp_ecf.c` (module 0.95, Lim/Weber);
//! `reference/schedulers.md` §2.6.
//!
//! minRTT picks a subflow `s`. If it is not the fastest usable subflow `f` (because `f`'s
//! window is full), ECF asks whether the remaining `k` unassigned bytes would finish sooner by
//! waiting for `f` than by using `s` (kernel byte form, `δ = max(rttvar_f, rttvar_s)`):
//! ```text
//! x_f = max(k, cwnd_f);  if r_beta·rtt_f·(x_f + cwnd_f) < (r_beta + waiting)·cwnd_f·(rtt_s + δ):
//!     x_s = max(k, cwnd_s); if rtt_s·x_s >= cwnd_s·(2·rtt_f + δ): waiting = 1, send nothing
//!     else use s
//! else: waiting = 0, use s
//! ```
//! `waiting` is the hysteresis (`switching_margin`): once waiting, switching back to the slow
//! path needs a margin of `1/r_beta` = 25 %.
//!
//! Decisions: the kernel reads `rttvar_us >> 1`, which is 2 × RFC 6298 RTTVAR
//! (`rttvar_us` ≈ 4 × mean deviation); `rttvar_factor` = 2 reproduces it. Linux also floors
//! `rttvar_us` at `tcp_rto_min` (200 ms, `tcp_rtt_estimator`), so the kernel's δ is never below
//! 100 ms; `delta_floor_ns` = 100 ms reproduces that, the default 0 keeps δ the RTT deviation
//! the paper intends. A large δ (e.g. RFC 6298's initial RTTVAR = R/2 while the slow path has
//! only its handshake sample) makes ECF hand the last window of a flow to the slow path. `k` = the view's
//! `unsent_bytes` (the kernel's meta `wmem_queued` minus what subflows hold). A slow subflow gets
//! one segment per call so the decision is re-evaluated as `k` shrinks, as the kernel does per
//! skb; the fastest subflow gets its whole free window. The selector also serves reinjections
//! (the intended behaviour; see the reference's note on kernel versions). RP is available as
//! `"ecf+rp"`.

use serde::{Deserialize, Serialize};

use super::common::{
    fastest_usable, min_rtt_select, new_data_burst, new_data_fits_window, serve_reinject,
    CheckConfig,
};
use super::{Action, ConnView, Scheduler, SubflowId};

/// ECF parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Inverse of the hysteresis β. Default 4 (β = 0.25; OOT `mptcp_ecf_r_beta`).
    pub r_beta: u64,
    /// δ = `rttvar_factor` × max(RTTVAR_f, RTTVAR_s). Default 2 (kernel `rttvar_us >> 1`).
    pub rttvar_factor: u64,
    /// Lower bound of δ, ns. Default 0; 100 ms reproduces Linux (`rttvar_us` >= rto_min).
    pub delta_floor_ns: u64,
}

impl CheckConfig for Config {}

impl Default for Config {
    fn default() -> Self {
        Self {
            r_beta: 4,
            rttvar_factor: 2,
            delta_floor_ns: 0,
        }
    }
}

/// ECF state: the waiting flag.
#[derive(Debug, Clone, Default)]
pub struct Ecf {
    cfg: Config,
    waiting: bool,
}

impl Ecf {
    /// Builds the scheduler.
    pub fn new(cfg: Config) -> Self {
        Self {
            cfg,
            waiting: false,
        }
    }

    /// True while ECF holds data back for the fast subflow.
    pub fn is_waiting(&self) -> bool {
        self.waiting
    }

    /// ECF's `get_subflow`: the minRTT choice, or `None` to wait for the fastest subflow.
    fn select(&mut self, view: &ConnView<'_>, mask: u64) -> Option<SubflowId> {
        let s_id = min_rtt_select(view.subflows, mask)?;
        let Some(f_id) = fastest_usable(view.subflows) else {
            return Some(s_id);
        };
        if f_id == s_id {
            return Some(s_id);
        }
        let (f, s) = (&view.subflows[f_id], &view.subflows[s_id]);
        let k = view.unsent_bytes as u128;
        let (cwnd_f, cwnd_s) = (f.cwnd_bytes as u128, s.cwnd_bytes as u128);
        let (rtt_f, rtt_s) = (f.srtt_ns as u128, s.srtt_ns as u128);
        // Saturating: the factors are user parameters (u64), the rest RTTs and windows.
        let delta = (self.cfg.rttvar_factor as u128)
            .saturating_mul(f.rttvar_ns.max(s.rttvar_ns) as u128)
            .max(self.cfg.delta_floor_ns as u128);
        let r_beta = self.cfg.r_beta as u128;
        let x_f = k.max(cwnd_f);
        let lhs = rtt_f * (x_f + cwnd_f);
        let rhs = cwnd_f.saturating_mul(rtt_s.saturating_add(delta));
        let waiting_rhs = if self.waiting { rhs } else { 0 };
        if r_beta.saturating_mul(lhs) < r_beta.saturating_mul(rhs).saturating_add(waiting_rhs) {
            let x_s = k.max(cwnd_s);
            if rtt_s * x_s >= cwnd_s.saturating_mul((2 * rtt_f).saturating_add(delta)) {
                self.waiting = true;
                return None;
            }
        } else {
            self.waiting = false;
        }
        Some(s_id)
    }
}

impl Scheduler for Ecf {
    fn name(&self) -> &'static str {
        "ecf"
    }

    fn schedule(&mut self, view: &ConnView<'_>, out: &mut Vec<Action>) {
        if serve_reinject(view, out, |mask| self.select(view, mask)).is_some() {
            return;
        }
        if view.unsent_bytes == 0 {
            return;
        }
        let Some(id) = self.select(view, 0) else {
            return;
        };
        let sf = &view.subflows[id];
        if !new_data_fits_window(view, sf.mss_bytes) {
            return;
        }
        let mut bytes = new_data_burst(view, sf);
        if fastest_usable(view.subflows) != Some(id) {
            bytes = bytes.min(sf.mss_bytes.max(1));
        }
        if bytes > 0 {
            out.push(Action::SendNew {
                subflow: id,
                max_bytes: bytes,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::testing::*;
    use super::*;

    /// Fast subflow 0 (10 ms, cwnd full), slow subflow 1 (100 ms, idle).
    fn paths() -> [crate::sched::SubflowView; 2] {
        let mut s = [sf(0, 10, 10), sf(1, 100, 10)];
        s[0].in_flight_bytes = s[0].cwnd_bytes;
        s
    }

    #[test]
    fn waits_for_the_fast_path_when_the_slow_one_would_finish_later() {
        let s = paths();
        let mut ecf = Ecf::default();
        let mut out = Vec::new();
        // 20 segments left: two fast RTTs (20 ms) beat one slow RTT (100 ms).
        ecf.schedule(&conn(&s, 20 * MSS), &mut out);
        assert!(out.is_empty(), "{out:?}");
        assert!(ecf.is_waiting());
        // minRTT alone would have used the slow path.
        let mut out = Vec::new();
        crate::sched::minrtt::MinRtt::default().schedule(&conn(&s, 20 * MSS), &mut out);
        assert!(matches!(out[..], [Action::SendNew { subflow: 1, .. }]));
    }

    #[test]
    fn uses_the_slow_path_when_it_would_not_finish_later() {
        let s = paths();
        let mut ecf = Ecf::default();
        let mut out = Vec::new();
        // 2000 segments left: the fast path alone needs 200 RTTs; use both.
        ecf.schedule(&conn(&s, 2000 * MSS), &mut out);
        assert_eq!(
            out,
            vec![Action::SendNew {
                subflow: 1,
                max_bytes: MSS
            }]
        );
        assert!(!ecf.is_waiting());
    }

    #[test]
    fn a_large_delta_hands_the_last_window_to_the_slow_path() {
        let s = paths();
        // 10 segments left: waiting costs two fast RTTs + δ = 20 + 25 ms against the slow
        // path's 100 ms: wait. With the kernel's δ floor of 100 ms, 120 ms > 100 ms: use it.
        let mut out = Vec::new();
        Ecf::default().schedule(&conn(&s, 10 * MSS), &mut out);
        assert!(out.is_empty());
        let cfg = Config {
            delta_floor_ns: 100 * MS,
            ..Config::default()
        };
        Ecf::new(cfg).schedule(&conn(&s, 10 * MSS), &mut out);
        assert_eq!(
            out,
            vec![Action::SendNew {
                subflow: 1,
                max_bytes: MSS
            }]
        );
    }

    #[test]
    fn hysteresis_keeps_waiting_near_the_boundary() {
        let s = paths();
        // lhs = 10 ms x (k + 10 segs) against rhs = 10 segs x (100 ms + 2 x 12.5 ms) = 1250:
        // k = 120 segs gives lhs 1300 > rhs (use slow when not waiting), but 4 x 1300 <
        // 5 x 1250 (keep waiting once waiting).
        let mut fresh = Ecf::default();
        let mut out = Vec::new();
        fresh.schedule(&conn(&s, 120 * MSS), &mut out);
        assert!(matches!(out[..], [Action::SendNew { subflow: 1, .. }]));
        let mut waiting = Ecf {
            waiting: true,
            ..Ecf::default()
        };
        let mut out = Vec::new();
        waiting.schedule(&conn(&s, 120 * MSS), &mut out);
        assert!(out.is_empty());
    }
}
