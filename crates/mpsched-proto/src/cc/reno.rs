//! Reno / NewReno window policy (RFC 5681, with RFC 3465 byte counting).
//!
//! Slow start grows cwnd by min(acked, 2 * SMSS) per ACK; congestion avoidance by one SMSS per
//! cwnd of acknowledged bytes; a loss halves the window. Loss recovery itself (SACK, RFC 6675)
//! lives in the subflow.

use super::{
    acked_for_avoidance, reno_avoidance, reno_ssthresh, AckSample, CcState, CongestionControl,
    CoupledView,
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
        let Some(acked) = acked_for_avoidance(tcb, ack) else {
            return;
        };
        reno_avoidance(tcb, &mut self.acc_bytes, acked);
    }

    fn ssthresh_on_loss(&mut self, tcb: &CcState, _now_ns: u64, _view: &CoupledView<'_>) -> u64 {
        self.acc_bytes = 0;
        reno_ssthresh(tcb)
    }
}
