//! Reno / NewReno window policy (RFC 5681, with RFC 3465 byte counting).
//!
//! Slow start grows cwnd by min(acked, 2 * SMSS) per ACK; congestion avoidance by one SMSS per
//! cwnd of acknowledged bytes; a loss halves the window. Loss recovery itself (SACK, RFC 6675)
//! lives in the subflow.

use super::{
    reno_avoidance, reno_ssthresh, slow_start, AckSample, CcState, CongestionControl, CoupledView,
};

/// Reno state: the congestion-avoidance byte counter.
#[derive(Debug, Clone, Default)]
pub struct Reno {
    acc_bytes: u64,
}

impl CongestionControl for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }

    fn on_ack(&mut self, tcb: &mut CcState, ack: &AckSample, _view: &CoupledView<'_>) {
        if !ack.cwnd_limited {
            return;
        }
        let mut acked = ack.acked_bytes;
        if tcb.in_slow_start() {
            acked = slow_start(tcb, acked);
            if acked == 0 {
                return;
            }
        }
        reno_avoidance(tcb, &mut self.acc_bytes, acked);
    }

    fn ssthresh_on_loss(&mut self, tcb: &CcState, _now_ns: u64, _view: &CoupledView<'_>) -> u64 {
        self.acc_bytes = 0;
        reno_ssthresh(tcb)
    }
}
