//! How the window is used: whether it lets a segment out (Linux `tcp_cwnd_test`), restarting
//! it after idleness (RFC 5681 §4.1) and remembering whether it was the limit in a round (Linux
//! `tcp_cwnd_validate`).

use super::{CaState, Sender};

impl Sender {
    /// Linux `tcp_cwnd_test`: a segment goes out while fewer segments are in flight than the
    /// window holds, whatever their sizes (a window of one segment carries one 300-byte
    /// request at a time, not four). Inline, as is `can_send_new`: with the multiply LLVM
    /// made `can_send_new` a call (+25 instructions a poll; benches/RESULTS.md, Session 17).
    #[inline(always)]
    pub(super) fn can_send(&self, _len: u64) -> bool {
        self.cwnd_has_room(self.board.pipe_segs())
    }

    /// `in_flight_segs < cwnd_segs()`, without its division (the test runs at every poll):
    /// with m = MSS >= 1 and c = max(cwnd, m), floor(c / m) = max(floor(cwnd / m), 1), and
    /// floor(c / m) > k exactly when c >= (k + 1) * m.
    #[inline(always)]
    pub(super) fn cwnd_has_room(&self, in_flight_segs: u64) -> bool {
        let room = room_for_one_more(in_flight_segs, self.tcb.cwnd_bytes, self.tcb.mss_bytes);
        #[cfg(any(test, debug_assertions))]
        assert_eq!(room, in_flight_segs < self.cwnd_segs(), "window test");
        room
    }

    /// The window in segments (Linux `snd_cwnd`): whole MSS in the window, at least one.
    pub(super) fn cwnd_segs(&self) -> u64 {
        (self.tcb.cwnd_bytes / self.tcb.mss_bytes.max(1)).max(1)
    }

    #[inline(always)]
    pub(super) fn can_send_new(&self, len: u64) -> bool {
        // New data outside the window would never be taken: keep the u32 segment length.
        len > 0 && self.can_send(len)
    }

    /// Sending resumes with nothing in flight (Linux `CA_EVENT_TX_START`), and after more than
    /// an RTO of silence the window restarts (RFC 5681 §4.1, Linux `tcp_cwnd_restart` with
    /// `tcp_slow_start_after_idle` = 1): ssthresh keeps 3/4 of cwnd, cwnd is halved per RTO of
    /// idleness, not below min(initial window, cwnd).
    pub(super) fn on_tx_start(&mut self, now_ns: u64) {
        let Some(last) = self.last_send_ns.get() else {
            return;
        };
        let idle_ns = now_ns.saturating_sub(last);
        self.cc.inner_mut().on_tx_start(now_ns, idle_ns);
        let rto = self.rtt.backed_off_rto_ns(self.backoff);
        if !self.cfg.slow_start_after_idle || idle_ns <= rto {
            return;
        }
        let cwnd = self.tcb.cwnd_bytes;
        if self.state == CaState::Open {
            self.tcb.ssthresh_bytes = self.tcb.ssthresh_bytes.max(cwnd / 4 * 3);
        }
        let restart = (self.cfg.init_cwnd_segments * self.tcb.mss_bytes).min(cwnd);
        let mut w = cwnd;
        let mut left = idle_ns;
        while left > rto && w > restart {
            left -= rto;
            w >>= 1;
        }
        self.tcb.cwnd_bytes = w.max(restart).max(self.tcb.mss_bytes);
    }

    /// Linux `tcp_cwnd_validate`: remember whether the window was the limit in this round.
    pub(super) fn cwnd_validate(&mut self, limited: bool) {
        let out = self.board.segs_out() as u64;
        if self.snd_una >= self.cwnd_usage_seq
            || limited
            || (!self.is_cwnd_limited && out > self.max_out_segs)
        {
            self.is_cwnd_limited = limited;
            self.max_out_segs = out;
            self.cwnd_usage_seq = self.snd_nxt;
        }
    }
}

/// See [`Sender::cwnd_has_room`]: `in_flight_segs < max(cwnd_bytes / mss, 1)` (MSS 0 read as 1).
/// With c >= m, c >= (k + 1) * m is k * m <= c - m; a product past 64 bits is past c. (In 128
/// bits it cost 5 instructions a packet more: benches/RESULTS.md, Session 17, perf17n5.)
#[inline(always)]
fn room_for_one_more(in_flight_segs: u64, cwnd_bytes: u64, mss_bytes: u64) -> bool {
    let mss = mss_bytes.max(1);
    let cwnd = cwnd_bytes.max(mss);
    in_flight_segs
        .checked_mul(mss)
        .is_some_and(|bytes| bytes <= cwnd - mss)
}

#[cfg(test)]
mod tests {
    use super::room_for_one_more;
    use proptest::prelude::*;

    fn divided(k: u64, cwnd: u64, mss: u64) -> bool {
        k < (cwnd / mss.max(1)).max(1)
    }

    /// Values near the edges: 0, 1, around a multiple of the MSS, near `u64::MAX`.
    fn edgy() -> impl Strategy<Value = u64> {
        prop_oneof![
            0u64..4,
            1u64..100_000,
            any::<u64>(),
            (0u64..4).prop_map(|d| u64::MAX - d),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]
        #[test]
        fn window_test_without_division_is_the_division(k in edgy(), cwnd in edgy(), mss in edgy()) {
            prop_assert_eq!(room_for_one_more(k, cwnd, mss), divided(k, cwnd, mss));
        }

        #[test]
        fn window_test_at_a_multiple_of_the_mss(k in 0u64..1 << 20, segs in 0u64..1 << 20, mss in 1u64..70_000, d in 0u64..3) {
            // cwnd one byte below, at and above a whole number of segments.
            let cwnd = (segs * mss + d).saturating_sub(1);
            prop_assert_eq!(room_for_one_more(k, cwnd, mss), divided(k, cwnd, mss));
        }
    }
}
