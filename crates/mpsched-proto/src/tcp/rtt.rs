//! RTT estimator and retransmission timeout (RFC 6298 with Linux's bounds).
//!
//! Linux `tcp_rtt_estimator()` / `tcp_set_rto()` (net/ipv4/tcp_input.c) floor the variance term
//! at `TCP_RTO_MIN`, so RTO = SRTT + max(4 * RTTVAR, 200 ms); RFC 6298 (2.4) instead floors the
//! whole RTO at 1 s. We follow Linux, since the testbed runs Linux.

/// RFC 6298 (2.1): RTO before any sample, also Linux `TCP_TIMEOUT_INIT` (1 s).
pub const INITIAL_RTO_NS: u64 = 1_000_000_000;
/// Linux `TCP_RTO_MIN` (HZ / 5 = 200 ms), applied to the variance term.
pub const MIN_RTO_NS: u64 = 200_000_000;
/// Linux `TCP_RTO_MAX` (120 s), RFC 6298 (2.5) allows a cap of at least 60 s.
pub const MAX_RTO_NS: u64 = 120_000_000_000;

/// SRTT / RTTVAR / min RTT state of one subflow.
#[derive(Debug, Clone, Default)]
pub struct RttEstimator {
    /// Smoothed RTT, ns (0 before the first sample).
    pub srtt_ns: u64,
    /// RTT variation, ns.
    pub rttvar_ns: u64,
    /// Minimum sample seen, ns (0 before the first sample).
    pub min_rtt_ns: u64,
    /// Latest raw sample, ns.
    pub last_rtt_ns: u64,
    /// True once a sample has been taken.
    pub has_sample: bool,
}

impl RttEstimator {
    /// Feeds one RTT sample (RFC 6298 (2.2) first sample, (2.3) later ones: alpha 1/8,
    /// beta 1/4).
    pub fn on_sample(&mut self, rtt_ns: u64) {
        let rtt_ns = rtt_ns.max(1);
        self.last_rtt_ns = rtt_ns;
        if !self.has_sample {
            self.has_sample = true;
            self.srtt_ns = rtt_ns;
            self.rttvar_ns = rtt_ns / 2;
            self.min_rtt_ns = rtt_ns;
            return;
        }
        self.min_rtt_ns = self.min_rtt_ns.min(rtt_ns);
        let err = self.srtt_ns.abs_diff(rtt_ns);
        self.rttvar_ns = (3 * self.rttvar_ns + err) / 4;
        self.srtt_ns = (7 * self.srtt_ns + rtt_ns) / 8;
    }

    /// Base RTO (no backoff), ns.
    pub fn rto_ns(&self) -> u64 {
        if !self.has_sample {
            return INITIAL_RTO_NS;
        }
        (self.srtt_ns + (4 * self.rttvar_ns).max(MIN_RTO_NS)).min(MAX_RTO_NS)
    }

    /// RTO after `backoff` doublings (RFC 6298 (5.5)), capped at [`MAX_RTO_NS`].
    pub fn backed_off_rto_ns(&self, backoff: u32) -> u64 {
        let base = self.rto_ns();
        if backoff >= 20 {
            return MAX_RTO_NS;
        }
        (base << backoff).min(MAX_RTO_NS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sample_then_smoothing() {
        let mut r = RttEstimator::default();
        assert_eq!(r.rto_ns(), INITIAL_RTO_NS);
        r.on_sample(100_000_000);
        assert_eq!(r.srtt_ns, 100_000_000);
        assert_eq!(r.rttvar_ns, 50_000_000);
        // RTO = 100 ms + max(200 ms, 200 ms)
        assert_eq!(r.rto_ns(), 300_000_000);
        r.on_sample(20_000_000);
        assert_eq!(r.srtt_ns, 90_000_000);
        assert_eq!(r.rttvar_ns, (3 * 50_000_000 + 80_000_000) / 4);
        assert_eq!(r.min_rtt_ns, 20_000_000);
        // A short, stable RTT still gives at least 200 ms of margin (Linux TCP_RTO_MIN).
        let mut s = RttEstimator::default();
        for _ in 0..50 {
            s.on_sample(10_000_000);
        }
        assert!(s.rto_ns() >= 210_000_000 - 1 && s.rto_ns() < 215_000_000);
        assert_eq!(s.backed_off_rto_ns(1), 2 * s.rto_ns());
        assert_eq!(s.backed_off_rto_ns(30), MAX_RTO_NS);
    }
}
