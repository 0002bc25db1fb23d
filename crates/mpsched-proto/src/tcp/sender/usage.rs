//! How the window is used: whether it lets a segment out (Linux `tcp_cwnd_test`), restarting
//! it after idleness (RFC 5681 §4.1) and remembering whether it was the limit in a round (Linux
//! `tcp_cwnd_validate`).

use super::{CaState, Sender};

impl Sender {
    /// Linux `tcp_cwnd_test`: a segment goes out while fewer segments are in flight than the
    /// window holds, whatever their sizes (a window of one segment carries one 300-byte
    /// request at a time, not four).
    pub(super) fn can_send(&self, _len: u64) -> bool {
        self.board.pipe_segs() < self.cwnd_segs()
    }

    /// The window in segments (Linux `snd_cwnd`): whole MSS in the window, at least one.
    pub(super) fn cwnd_segs(&self) -> u64 {
        (self.tcb.cwnd_bytes / self.tcb.mss_bytes.max(1)).max(1)
    }

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
