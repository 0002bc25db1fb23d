//! OLIA, Opportunistic Linked Increases (Khalili et al., CoNEXT 2012; OOT `mptcp_olia.c`;
//! `reference/schedulers.md` §4.2).
//!
//! Per acknowledged MSS on path r (windows w in MSS):
//! w_r += (w_r / rtt_r^2) / (sum_p w_p / rtt_p)^2 + alpha_r / w_r, where alpha_r moves
//! window from the largest-window paths M towards the best paths B (argmax l_r / rtt_r^2,
//! l_r = bytes acknowledged between/since losses, kept by the subflow) that are not in M.
//! Slow start and loss are Reno's; fewer than two active subflows: Reno. The increase may be
//! negative: cwnd then shrinks, never below one MSS.

use super::{
    acked_for_avoidance, reno_avoidance, reno_ssthresh, AckSample, CcState, CongestionControl,
    CoupledView,
};

/// OLIA state.
#[derive(Debug, Clone, Default)]
pub struct Olia {
    acc_bytes: u64,
    frac_bytes: f64,
}

/// OLIA alpha_r for subflow `view.me`.
pub fn olia_alpha(view: &CoupledView<'_>) -> f64 {
    let act = || view.subflows.iter().enumerate().filter(|(_, s)| s.active);
    let n = act().count() as f64;
    let max_w = act().map(|(_, s)| s.cwnd_bytes).max().unwrap_or(0);
    // Best paths: largest l_r / rtt_r^2, compared as l_r * rtt_b^2 vs l_b * rtt_r^2.
    let score = |i: usize| {
        let s = &view.subflows[i];
        let r = s.srtt_ns.max(1) as f64;
        s.loss_interval_bytes as f64 / (r * r)
    };
    let best = act().map(|(i, _)| score(i)).fold(0.0f64, f64::max);
    let in_m = |i: usize| view.subflows[i].cwnd_bytes == max_w;
    let in_b = |i: usize| score(i) == best;
    let b_not_m = act().filter(|&(i, _)| in_b(i) && !in_m(i)).count() as f64;
    let m = act().filter(|&(i, _)| in_m(i)).count() as f64;
    let me = view.me;
    if b_not_m == 0.0 {
        0.0
    } else if in_b(me) && !in_m(me) {
        1.0 / (n * b_not_m)
    } else if in_m(me) {
        -1.0 / (n * m)
    } else {
        0.0
    }
}

impl CongestionControl for Olia {
    fn name(&self) -> &'static str {
        "olia"
    }

    fn on_ack(&mut self, tcb: &mut CcState, ack: &AckSample, view: &CoupledView<'_>) {
        let Some(acked) = acked_for_avoidance(tcb, ack) else {
            return;
        };
        if view.active_count() < 2 || view.me >= view.subflows.len() {
            return reno_avoidance(tcb, &mut self.acc_bytes, acked);
        }
        let mss = tcb.mss_bytes as f64;
        let me = &view.subflows[view.me];
        let w_r = tcb.cwnd_bytes as f64 / mss;
        let rtt_r = me.srtt_ns.max(1) as f64;
        let sum: f64 = view
            .subflows
            .iter()
            .filter(|s| s.active)
            .map(|s| s.cwnd_bytes as f64 / s.mss_bytes.max(1) as f64 / s.srtt_ns.max(1) as f64)
            .sum();
        let per_mss = (w_r / (rtt_r * rtt_r)) / (sum * sum) + olia_alpha(view) / w_r;
        // Increase in MSS units per acked MSS, converted to bytes.
        self.frac_bytes += per_mss * acked as f64;
        let whole = self.frac_bytes.trunc();
        self.frac_bytes -= whole;
        if whole >= 0.0 {
            tcb.cwnd_bytes += whole as u64;
        } else {
            tcb.cwnd_bytes = tcb
                .cwnd_bytes
                .saturating_sub((-whole) as u64)
                .max(tcb.mss_bytes);
        }
    }

    fn ssthresh_on_loss(&mut self, tcb: &CcState, _now_ns: u64, _view: &CoupledView<'_>) -> u64 {
        self.acc_bytes = 0;
        self.frac_bytes = 0.0;
        reno_ssthresh(tcb)
    }
}
