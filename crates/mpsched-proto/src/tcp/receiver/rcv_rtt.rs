//! The receiver's RTT estimate that times receive autotuning (Linux `tcp_rcv_rtt_measure_ts`,
//! `tcp_rcv_rtt_update`), kept apart from `receiver.rs` (a child module: it reads the
//! receiver's private state).

use super::Receiver;

impl Receiver {
    /// Linux `tcp_rcv_rtt_measure_ts` (6.18): a full-sized segment echoing one of our
    /// timestamps gives a receiver RTT sample, once per distinct echoed value
    /// (`rcv_rtt_last_tsecr`), on the timestamp clock's 1 ms ticks (`TCP_TS_HZ` = 1000 without
    /// the usec option; a zero difference counts as 1 ms, `tcp_rtt_tsopt_us`).
    #[inline(always)]
    pub(super) fn rcv_rtt_measure_ts(&mut self, now_ns: u64, ts_ecr_ns: u64, len: u64) {
        const NS_PER_MS: u64 = 1_000_000;
        if ts_ecr_ns == 0 {
            return;
        }
        let tsecr_ms = ts_ecr_ns / NS_PER_MS;
        if self.rcv_rtt_last_tsecr_ms == Some(tsecr_ms as u32) {
            return;
        }
        self.rcv_rtt_last_tsecr_ms = Some(tsecr_ms as u32);
        if len >= self.cfg.mss_bytes {
            let delta_ms = (now_ns / NS_PER_MS).saturating_sub(tsecr_ms).max(1);
            self.rcv_rtt_update(delta_ms * NS_PER_MS);
        }
    }

    /// Linux `tcp_rcv_rtt_update` with timestamps (win_dep = 0) since 6.16 ("tcp: always seek
    /// for minimal rtt in tcp_rcv_rtt_update()"): a sample below the estimate replaces it at
    /// once, a larger one is smoothed in by 1/8, so queueing in one round does not stretch the
    /// autotuning's measurement period (`tcp_rcv_space_adjust`, `mptcp_rcv_space_adjust`).
    /// (Linux also skips a larger sample while unread data waits; here the application reads
    /// at once.)
    pub(super) fn rcv_rtt_update(&mut self, sample_ns: u64) {
        let old = self.rcv_rtt_ns;
        self.rcv_rtt_ns = if old == 0 || sample_ns < old {
            sample_ns
        } else {
            old - old / 8 + sample_ns / 8
        };
    }
}
