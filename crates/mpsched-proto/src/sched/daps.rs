//! DAPS: Delay-Aware Packet Scheduling.
//!
//! Sources: Kuhn, Lochin, Mifdaoui, Sarwar, Mehani, Boreli, "DAPS: Intelligent delay-aware
//! packet scheduling for multipath transport", ICC 2014 (concept); Linux implementation by
//! S. Ferlin, KAU `net/mptcp/mptcp_daps.c` (module 0.89); `reference/schedulers.md` §2.8.
//!
//! Sequence numbers are handed out in the order they are expected to arrive. A plan covers one
//! hyper-period `T` = LCM of the paths' one-way delays `D_f` (sRTT/2, rounded to multiples of
//! `round_delay_ms`). Walking time slots `t = 1..T`, a subflow whose delay divides `t` is granted
//! one window `C_f` (its smoothed cwnd, in segments) at that slot; the fast path is thus granted
//! `D_slow / D_fast` windows for every window of the slow path. Granted segments are queued on
//! the subflow even beyond its cwnd. When the plan is exhausted a new one is built from current
//! values. When the send head does not fit the receive window (`allow_optim`), the first
//! unacknowledged chunk some cwnd-available subflow has not carried is re-sent on it, trying
//! subflows by ascending sRTT (no penalisation).
//!
//! Decisions **[PROJECT DECISION]**: delays in milliseconds (the KAU code uses µs while
//! commenting ms); the hyper-period is capped at `max_plan_slots`; the smoothed cwnd
//! (`7/8·scwnd + 1/8·cwnd`) is updated once per RTT, detected as `bytes_acked` passing the
//! `bytes_sent` recorded at the previous update; queueing beyond cwnd is bounded by the
//! connection's send buffer, as by the socket buffer in the kernel; `queue_limit_cwnds`
//! (default 0 = off) makes a subflow whose queue holds that many windows wait. Reinjections
//! go to the minRTT choice (the KAU module hands them to the planned subflow like new data).

use serde::{Deserialize, Serialize};

use super::common::{
    clip_unacked, min_rtt_select, new_data_burst, new_data_fits_window, queue_full, serve_reinject,
    CheckConfig,
};
use super::{Action, ConnView, ResendKind, Scheduler, SubflowId, SubflowView};

/// DAPS parameters (KAU module parameters plus the project's bounds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// One-way delays are rounded to multiples of this, ms (0/1 = no rounding, as the paper).
    /// Default 4 (KAU `round_delay`).
    pub round_delay_ms: u64,
    /// Use the cwnd captured when the plan is built (true) or read it when the slot starts.
    /// Default true (KAU `use_planned_cwnd`).
    pub use_planned_cwnd: bool,
    /// Plan with the smoothed cwnd (EWMA 1/8 once per RTT). Default true (KAU `smooth_cwnd`).
    pub smooth_cwnd: bool,
    /// Also plan subflows in slow start after a loss. Default true (KAU `daps_in_ss`).
    pub in_slow_start: bool,
    /// Re-send an unacknowledged chunk when the receive window blocks. Default true
    /// (KAU `allow_optim`).
    pub allow_optim: bool,
    /// Cap on the hyper-period, slots. Default 10000 ([PROJECT DECISION]).
    pub max_plan_slots: u64,
    /// A subflow takes no more granted data while its unsent queue holds this many cwnds.
    /// Default 0 = no bound beyond the connection's send buffer ([PROJECT DECISION]).
    pub queue_limit_cwnds: u64,
}

impl CheckConfig for Config {
    fn check(&self) -> Result<(), String> {
        if self.max_plan_slots == 0 {
            return Err("max_plan_slots must be at least 1".into());
        }
        Ok(())
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            round_delay_ms: 4,
            use_planned_cwnd: true,
            smooth_cwnd: true,
            in_slow_start: true,
            allow_optim: true,
            max_plan_slots: 10_000,
            queue_limit_cwnds: 0,
        }
    }
}

/// One subflow's place in the plan.
#[derive(Debug, Clone, Copy)]
struct Planned {
    id: SubflowId,
    delay_slots: u64,
    cwnd_segments: u64,
}

/// DAPS state: the current plan and its cursor, and the smoothed windows.
#[derive(Debug, Clone, Default)]
pub struct Daps {
    cfg: Config,
    plan: Vec<Planned>,
    period_slots: u64,
    slot: u64,
    idx: usize,
    /// Per subflow: segments left in its current grant (`None` = no grant open).
    left: Vec<Option<u64>>,
    /// Per subflow: smoothed cwnd × 8, segments (0 = not initialised).
    scwnd_x8: Vec<u64>,
    /// Per subflow: `bytes_sent` at the last smoothing step.
    sample_point: Vec<u64>,
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

impl Daps {
    /// Builds the scheduler.
    pub fn new(cfg: Config) -> Self {
        Self {
            cfg,
            ..Self::default()
        }
    }

    fn segs(sf: &SubflowView) -> u64 {
        (sf.cwnd_bytes / sf.mss_bytes.max(1)).max(1)
    }

    fn planned_cwnd(&self, sf: &SubflowView) -> u64 {
        if self.cfg.smooth_cwnd && self.scwnd_x8[sf.id] > 0 {
            (self.scwnd_x8[sf.id] / 8).max(1)
        } else {
            Self::segs(sf)
        }
    }

    /// KAU `mptcp_daps_is_available(.., cwnd_test = false)`: usable and not in RTO recovery.
    fn state_usable(sf: &SubflowView) -> bool {
        sf.usable() && !sf.in_loss_recovery
    }

    fn plannable(&self, sf: &SubflowView) -> bool {
        // KAU `is_flow_in_slowstart_after_loss`: cwnd <= ssthresh with a finite ssthresh.
        let ss_after_loss = sf.cwnd_bytes <= sf.ssthresh_bytes && sf.ssthresh_bytes < u64::MAX / 2;
        Self::state_usable(sf)
            && sf.has_rtt_sample
            && sf.srtt_ns > 0
            && (self.cfg.in_slow_start || !ss_after_loss)
    }

    /// `begin_schedule`: a new plan from the current subflows.
    fn begin_plan(&mut self, subflows: &[SubflowView]) {
        let rd = self.cfg.round_delay_ms.max(1);
        let mut plan: Vec<Planned> = subflows
            .iter()
            .filter(|s| self.plannable(s))
            .map(|s| {
                let owd_ms = s.srtt_ns / 2 / 1_000_000;
                // KAU `mptcp_daps_round_to_multiple_of`: nearest multiple, halves up; a
                // delay that rounds to 0 counts as 1 slot.
                let rounded = if rd > 1 {
                    owd_ms.saturating_add(rd / 2) / rd * rd
                } else {
                    owd_ms
                };
                Planned {
                    id: s.id,
                    delay_slots: rounded.max(1),
                    cwnd_segments: self.planned_cwnd(s),
                }
            })
            .collect();
        plan.sort_by_key(|p| (subflows[p.id].srtt_ns, p.id));
        let cap = self.cfg.max_plan_slots.max(1);
        let mut period = 1u64;
        for p in &plan {
            period = (period / gcd(period, p.delay_slots))
                .saturating_mul(p.delay_slots)
                .min(cap);
        }
        self.plan = plan;
        self.period_slots = period;
        self.slot = 1;
        self.idx = 0;
        for l in &mut self.left {
            *l = None;
        }
    }

    /// `algo1`: the subflow whose grant is being used, advancing the plan cursor.
    fn next_in_plan(&mut self, subflows: &[SubflowView]) -> Option<SubflowId> {
        while self.slot <= self.period_slots {
            while self.idx < self.plan.len() {
                let p = self.plan[self.idx];
                self.idx += 1;
                if !self.slot.is_multiple_of(p.delay_slots) {
                    continue;
                }
                let Some(sf) = subflows.get(p.id).filter(|s| Self::state_usable(s)) else {
                    self.left[p.id] = None;
                    continue;
                };
                let left = self.left[p.id].get_or_insert(if self.cfg.use_planned_cwnd {
                    p.cwnd_segments
                } else {
                    Self::segs(sf)
                });
                if *left == 0 {
                    self.left[p.id] = None;
                    continue;
                }
                self.idx -= 1; // stay on this subflow until its grant is used
                return Some(p.id);
            }
            self.idx = 0;
            self.slot += 1;
        }
        None
    }

    fn smooth(&mut self, subflows: &[SubflowView]) {
        for sf in subflows {
            let cwnd = Self::segs(sf);
            if self.scwnd_x8[sf.id] == 0 {
                self.scwnd_x8[sf.id] = cwnd * 8;
                self.sample_point[sf.id] = sf.bytes_sent;
            } else if sf.bytes_acked >= self.sample_point[sf.id]
                && sf.bytes_sent > self.sample_point[sf.id]
            {
                self.scwnd_x8[sf.id] = self.scwnd_x8[sf.id] - self.scwnd_x8[sf.id] / 8 + cwnd;
                self.sample_point[sf.id] = sf.bytes_sent;
            }
        }
    }

    /// `allow_optim`: re-send the first unacknowledged chunk some subflow has not carried.
    fn window_blocked_resend(view: &ConnView<'_>, out: &mut Vec<Action>) {
        let mut order: Vec<&SubflowView> = view.subflows.iter().filter(|s| s.available()).collect();
        order.sort_by_key(|s| (s.srtt_ns, s.id));
        for c in view
            .unacked
            .iter()
            .filter_map(|c| clip_unacked(c, view.data_acked))
        {
            if let Some(sf) = order.iter().find(|s| !c.sent_on(s.id)) {
                let len = c.len.min(sf.free_cwnd_bytes());
                out.push(Action::Resend {
                    subflow: sf.id,
                    dsn: c.dsn,
                    len,
                    kind: ResendKind::Opportunistic,
                });
                return;
            }
        }
    }
}

impl Scheduler for Daps {
    fn name(&self) -> &'static str {
        "daps"
    }

    fn schedule(&mut self, view: &ConnView<'_>, out: &mut Vec<Action>) {
        let n = view.subflows.len();
        if self.left.len() < n {
            self.left.resize(n, None);
            self.scwnd_x8.resize(n, 0);
            self.sample_point.resize(n, 0);
        }
        self.smooth(view.subflows);
        if serve_reinject(view, out, |mask| min_rtt_select(view.subflows, mask)).is_some() {
            return;
        }
        if view.unsent_bytes == 0 {
            return;
        }
        let mss = super::common::conn_mss(view);
        if !new_data_fits_window(view, mss) {
            if self.cfg.allow_optim {
                Self::window_blocked_resend(view, out);
            }
            return;
        }
        let mut chosen = self.next_in_plan(view.subflows);
        if chosen.is_none() {
            self.begin_plan(view.subflows);
            chosen = self.next_in_plan(view.subflows);
        }
        let Some(id) = chosen else {
            // Nothing plannable (no RTT samples yet): minRTT-like fallback.
            if let Some(id) = min_rtt_select(view.subflows, 0) {
                let b = new_data_burst(view, &view.subflows[id]);
                if b > 0 {
                    out.push(Action::SendNew {
                        subflow: id,
                        max_bytes: b,
                    });
                }
            }
            return;
        };
        let sf = &view.subflows[id];
        if queue_full(sf, self.cfg.queue_limit_cwnds) {
            return; // its queue is long enough: wait for it to drain (the plan keeps its place)
        }
        let left = self.left[id].unwrap_or(0);
        let mss = sf.mss_bytes.max(1);
        let bytes = (left.saturating_mul(mss))
            .min(view.unsent_bytes)
            .min(view.rwnd_room_bytes());
        if bytes == 0 {
            return;
        }
        self.left[id] = Some(left - bytes.div_ceil(mss).min(left));
        out.push(Action::SendNew {
            subflow: id,
            max_bytes: bytes,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::testing::*;
    use super::*;

    #[test]
    fn grants_windows_in_proportion_to_the_delay_ratio() {
        // One-way delays 5 ms -> 4 slots and 40 ms -> 40 slots (rounded to 4): T = 40, the
        // fast subflow gets 10 windows for the slow one's 1.
        let s = [sf(0, 10, 2), sf(1, 80, 3)];
        let cfg = Config {
            queue_limit_cwnds: 1000,
            ..Config::default()
        };
        let mut d = Daps::new(cfg);
        let mut sent = [0u64; 2];
        for _ in 0..11 {
            let mut out = Vec::new();
            d.schedule(&conn(&s, 1 << 30), &mut out);
            for a in out {
                if let Action::SendNew { subflow, max_bytes } = a {
                    sent[subflow] += max_bytes;
                }
            }
        }
        assert_eq!(sent, [10 * 2 * MSS, 3 * MSS]);
    }

    #[test]
    fn queues_beyond_cwnd_on_the_fast_path() {
        let mut s = [sf(0, 10, 2), sf(1, 80, 3)];
        s[0].in_flight_bytes = s[0].cwnd_bytes; // full window, still granted
        let mut out = Vec::new();
        Daps::default().schedule(&conn(&s, 1 << 30), &mut out);
        assert_eq!(
            out,
            vec![Action::SendNew {
                subflow: 0,
                max_bytes: 2 * MSS
            }]
        );
    }
}
