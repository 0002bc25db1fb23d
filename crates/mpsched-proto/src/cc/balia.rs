//! BALIA, Balanced Linked Adaptation (Peng, Walid, Hwang, Low, IEEE/ACM ToN 2016; OOT
//! `mptcp_balia.c`; `reference/schedulers.md` §4.3).
//!
//! With x_r = w_r / rtt_r and alpha_r = max_k x_k / x_r, per acknowledged MSS on r:
//! w_r += (x_r / (rtt_r (sum_k x_k)^2)) * ((1 + alpha_r) / 2) * ((4 + alpha_r) / 5);
//! on loss w_r -= (w_r / 2) * min(alpha_r, 1.5). Slow start is Reno's; fewer than two active
//! subflows: Reno.

use super::{
    acked_for_avoidance, reno_avoidance, reno_ssthresh, AckSample, CcState, CongestionControl,
    CoupledView, MIN_SSTHRESH_SEGMENTS,
};

/// BALIA state.
#[derive(Debug, Clone, Default)]
pub struct Balia {
    acc_bytes: u64,
    frac_bytes: f64,
}

/// (x_r, sum x, alpha_r) for subflow `view.me`, rates in MSS per ns.
fn rates(view: &CoupledView<'_>) -> (f64, f64, f64) {
    let x = |s: &super::CoupledSubflow| {
        s.cwnd_bytes as f64 / s.mss_bytes.max(1) as f64 / s.srtt_ns.max(1) as f64
    };
    let act = || view.subflows.iter().filter(|s| s.active);
    let sum: f64 = act().map(x).sum();
    let max = act().map(x).fold(0.0f64, f64::max);
    let xr = x(&view.subflows[view.me]);
    (xr, sum, if xr > 0.0 { max / xr } else { 1.0 })
}

impl CongestionControl for Balia {
    fn name(&self) -> &'static str {
        "balia"
    }

    fn on_ack(&mut self, tcb: &mut CcState, ack: &AckSample, view: &CoupledView<'_>) {
        let Some(acked) = acked_for_avoidance(tcb, ack) else {
            return;
        };
        if view.active_count() < 2 || view.me >= view.subflows.len() {
            return reno_avoidance(tcb, &mut self.acc_bytes, acked);
        }
        let (xr, sum, alpha) = rates(view);
        let rtt = view.subflows[view.me].srtt_ns.max(1) as f64;
        let per_mss = xr / (rtt * sum * sum) * ((1.0 + alpha) / 2.0) * ((4.0 + alpha) / 5.0);
        self.frac_bytes += per_mss * acked as f64;
        let whole = self.frac_bytes.floor();
        self.frac_bytes -= whole;
        tcb.cwnd_bytes += whole as u64;
    }

    fn ssthresh_on_loss(&mut self, tcb: &CcState, _now_ns: u64, view: &CoupledView<'_>) -> u64 {
        self.acc_bytes = 0;
        self.frac_bytes = 0.0;
        if view.active_count() < 2 || view.me >= view.subflows.len() {
            return reno_ssthresh(tcb);
        }
        let (_, _, alpha) = rates(view);
        let md = (tcb.cwnd_bytes as f64 / 2.0 * alpha.min(1.5)) as u64;
        tcb.cwnd_bytes
            .saturating_sub(md)
            .max(MIN_SSTHRESH_SEGMENTS * tcb.mss_bytes)
    }
}
