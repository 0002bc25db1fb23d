//! LIA, Linked Increases (RFC 6356; OOT `mptcp_coupled.c`).
//!
//! Congestion avoidance on subflow i: cwnd_i += min(alpha * acked * MSS_i / cwnd_total,
//! acked * MSS_i / cwnd_i) with alpha = cwnd_total * max_i(cwnd_i / rtt_i^2) /
//! (sum_i cwnd_i / rtt_i)^2 (RFC 6356 §3, byte form). Slow start and loss are Reno's; with
//! fewer than two active subflows the whole algorithm is Reno. Fractions of a byte are carried
//! over (the kernel's `snd_cwnd_cnt`); f64 here uses only + - * /, which IEEE 754 makes exact
//! and reproducible.

use super::{
    acked_for_avoidance, reno_avoidance, reno_ssthresh, AckSample, CcState, CongestionControl,
    CoupledView,
};

/// LIA state.
#[derive(Debug, Clone, Default)]
pub struct Lia {
    acc_bytes: u64,
    frac_bytes: f64,
}

/// RFC 6356 alpha over the active subflows (windows in bytes, RTTs in ns).
pub fn lia_alpha(view: &CoupledView<'_>) -> f64 {
    let mut total = 0.0;
    let mut best = 0.0f64;
    let mut sum = 0.0;
    for s in view.subflows.iter().filter(|s| s.active) {
        let w = s.cwnd_bytes as f64;
        let rtt = s.srtt_ns.max(1) as f64;
        total += w;
        best = best.max(w / (rtt * rtt));
        sum += w / rtt;
    }
    if sum == 0.0 {
        return 1.0;
    }
    total * best / (sum * sum)
}

impl CongestionControl for Lia {
    fn name(&self) -> &'static str {
        "lia"
    }

    fn on_ack(&mut self, tcb: &mut CcState, ack: &AckSample, view: &CoupledView<'_>) {
        let Some(acked) = acked_for_avoidance(tcb, ack) else {
            return;
        };
        if view.active_count() < 2 {
            return reno_avoidance(tcb, &mut self.acc_bytes, acked);
        }
        let total: u64 = view
            .subflows
            .iter()
            .filter(|s| s.active)
            .map(|s| s.cwnd_bytes)
            .sum();
        let alpha = lia_alpha(view);
        let a = acked as f64 * tcb.mss_bytes as f64;
        let inc = (alpha * a / total.max(1) as f64).min(a / tcb.cwnd_bytes.max(1) as f64);
        self.frac_bytes += inc;
        let whole = self.frac_bytes.floor();
        self.frac_bytes -= whole;
        tcb.cwnd_bytes += whole as u64;
    }

    fn ssthresh_on_loss(&mut self, tcb: &CcState, _now_ns: u64, _view: &CoupledView<'_>) -> u64 {
        self.acc_bytes = 0;
        self.frac_bytes = 0.0;
        reno_ssthresh(tcb)
    }
}
