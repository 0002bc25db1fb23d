//! Read-only views of a [`Sender`]: the scheduler's `SubflowView`, the coupled-CC summary,
//! the congestion control's ACK sample, Linux's pacing rate, counters and getters.

use super::{CaState, Sender, SenderStats};
use crate::cc::{AckSample, AnyCc, CcState, CoupledSubflow};
use crate::sched::SubflowView;
use crate::tcp::handshake::HsOption;
use crate::tcp::rtt::RttEstimator;

/// ceil(`len` / `mss`) (an MSS of 0 counted as 1, as the view does), as the 32-bit count the
/// sender keeps. More than 2^32 - 1 segments queued on one subflow (over 150 GB at the smallest
/// MSS) is refused with a panic naming it: a wrapped count would silently change the window.
#[inline]
pub(super) fn segs_of(len: u64, mss: u64) -> u32 {
    u32::try_from(len.div_ceil(mss.max(1)))
        .expect("a subflow's send queue holds fewer than 2^32 segments")
}

/// `a + b` segments queued, refused like [`segs_of`] beyond 32 bits.
#[inline]
pub(super) fn add_segs(a: u32, b: u32) -> u32 {
    a.checked_add(b)
        .expect("a subflow's send queue holds fewer than 2^32 segments")
}

impl Sender {
    /// Fills the scheduler's view of this subflow (`id` and `path_index` are the caller's).
    pub fn fill_view(&self, v: &mut SubflowView) {
        v.established = self.hs.is_established() && self.path_up;
        v.backup = matches!(self.hs.option(), HsOption::Join { backup: true });
        v.potentially_failed = self.potentially_failed;
        v.in_loss_recovery = self.state == CaState::Loss;
        v.in_fast_recovery = self.state == CaState::Recovery;
        v.has_rtt_sample = self.rtt.has_sample;
        v.srtt_ns = self.rtt.srtt_ns;
        v.rttvar_ns = self.rtt.rttvar_ns();
        v.min_rtt_ns = self.rtt.min_rtt_ns;
        v.last_rtt_ns = self.rtt.last_rtt_ns;
        v.rto_ns = self.rtt.backed_off_rto_ns(self.backoff);
        v.mss_bytes = self.tcb.mss_bytes;
        v.cwnd_bytes = self.tcb.cwnd_bytes;
        v.ssthresh_bytes = self.tcb.ssthresh_bytes;
        v.in_flight_bytes = self.board.pipe_bytes();
        v.outstanding_bytes = self.board.outstanding_bytes();
        v.short_segs_out = self.board.short_segs();
        v.queued_bytes = self.queued_bytes;
        debug_assert_eq!(u64::from(self.queued_segs), self.queued_segs_by_walk());
        v.segs_in_use = self.board.pipe_segs() + u64::from(self.queued_segs);
        v.pacing_rate_bps = self.pacing_rate_bps();
        v.bytes_acked = self.stats.bytes_acked;
        v.bytes_sent = self.stats.bytes_sent;
        if let Some(r) = self.rare.as_deref() {
            v.bytes_retransmitted = r.bytes_retransmitted;
            v.rto_count = r.rto_count;
        } else {
            v.bytes_retransmitted = 0;
            v.rto_count = 0;
        }
    }

    /// The queue's segments counted by walking it: what `queued_segs` keeps incrementally.
    pub(super) fn queued_segs_by_walk(&self) -> u64 {
        let mss = self.tcb.mss_bytes.max(1);
        self.queue.iter().map(|m| m.len.div_ceil(mss)).sum()
    }

    /// What the congestion control is told of an ACK that delivered `delivered_segs`.
    pub(super) fn ack_sample(
        &self,
        now_ns: u64,
        delivered_segs: u64,
        rtt: Option<u64>,
    ) -> AckSample {
        AckSample {
            now_ns,
            acked_bytes: delivered_segs * self.tcb.mss_bytes,
            rtt_sample_ns: rtt,
            min_rtt_ns: self.rtt.min_rtt_ns,
            srtt_ns: self.rtt.srtt_ns,
            snd_una: self.snd_una,
            snd_nxt: self.snd_nxt,
            cwnd_limited: self.cwnd_limited(),
            // Only HyStart reads it, in slow start (see `AckSample::pacing_rate_bps`).
            pacing_rate_bps: if self.tcb.in_slow_start() {
                self.pacing_rate_bps()
            } else {
                0
            },
        }
    }

    /// Linux `tcp_is_cwnd_limited`.
    pub(super) fn cwnd_limited(&self) -> bool {
        self.is_cwnd_limited
            || (self.tcb.in_slow_start()
                && self.tcb.cwnd_bytes < 2 * self.max_out_segs * self.tcb.mss_bytes)
    }

    /// Linux `tcp_update_pacing_rate`: ratio * max(cwnd, outstanding) / srtt, ratio 200 % in
    /// slow start below ssthresh / 2 (`tcp_pacing_ss_ratio`), else 120 % (`tcp_pacing_ca_ratio`).
    pub fn pacing_rate_bps(&self) -> u64 {
        if !self.rtt.has_sample {
            return 0;
        }
        let pct = if self.tcb.cwnd_bytes < self.tcb.ssthresh_bytes / 2 {
            200
        } else {
            120
        };
        let bytes = self.tcb.cwnd_bytes.max(self.board.outstanding_bytes());
        pacing_rate(pct, bytes, self.rtt.srtt_ns)
    }

    /// Segments per transmitted skb now (Linux `tcp_tso_autosize` at [`Self::pacing_rate_bps`];
    /// no RTT sample yet: the minimum, as the kernel's first flight after the handshake).
    pub fn tso_segments(&self) -> u64 {
        crate::tcp::tso_autosize_segments(self.pacing_rate_bps(), self.tcb.mss_bytes)
    }

    /// What a coupled congestion control needs to know about this subflow.
    pub fn coupled_info(&self) -> CoupledSubflow {
        CoupledSubflow {
            active: self.hs.is_established() && self.path_up && self.rtt.has_sample,
            cwnd_bytes: if self.state == CaState::Recovery {
                self.tcb.ssthresh_bytes
            } else {
                self.tcb.cwnd_bytes
            },
            srtt_ns: self.rtt.srtt_ns,
            mss_bytes: self.tcb.mss_bytes,
            loss_interval_bytes: self.l1_bytes.max(self.l2_bytes),
        }
    }

    /// Handshake complete and path up.
    pub fn is_established(&self) -> bool {
        self.hs.is_established()
    }
    /// Path up.
    pub fn is_path_up(&self) -> bool {
        self.path_up
    }
    /// Bytes queued, not yet transmitted.
    pub fn queued_bytes(&self) -> u64 {
        self.queued_bytes
    }
    /// RFC 6675 pipe, bytes.
    pub fn in_flight_bytes(&self) -> u64 {
        self.board.pipe_bytes()
    }
    /// Bytes sent and not cumulatively acknowledged.
    pub fn outstanding_bytes(&self) -> u64 {
        self.board.outstanding_bytes()
    }
    /// Congestion window state.
    pub fn cc_state(&self) -> CcState {
        self.tcb
    }
    /// The congestion control.
    pub fn cc(&self) -> &AnyCc {
        &self.cc
    }
    /// Congestion state.
    pub fn ca_state(&self) -> CaState {
        self.state
    }
    /// RTT estimator.
    pub fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }
    /// Counters.
    pub fn stats(&self) -> SenderStats {
        SenderStats {
            bytes_sent: self.stats.bytes_sent,
            bytes_acked: self.stats.bytes_acked,
            segments_sent: self.stats.segments_sent,
            ..self.rare.as_deref().copied().unwrap_or_default()
        }
    }

    /// The rarely changed counters, allocated on first use.
    #[inline]
    pub(super) fn rare_stats(&mut self) -> &mut SenderStats {
        self.rare.get_or_insert_with(Default::default)
    }
    /// SYN retransmissions.
    pub fn syn_retransmits(&self) -> u64 {
        self.hs.retransmits
    }
    /// Nothing queued and nothing outstanding.
    pub fn is_idle(&self) -> bool {
        self.queue.is_empty() && self.board.is_empty()
    }
}

/// `pct` % of `bytes` per `srtt_ns`, in bit/s (saturating), as 128-bit arithmetic gives it.
fn pacing_rate(pct: u64, bytes: u64, srtt_ns: u64) -> u64 {
    let srtt_ns = srtt_ns.max(1);
    // The same quotient in 64 bits whenever nothing overflows (windows below ~11 MB, any
    // sRTT below ~5 000 years): a 128-bit division is a library call.
    if pct <= 200 && bytes <= u64::MAX / (200 * 8 * 1_000_000_000) && srtt_ns <= u64::MAX / 100 {
        return pct * bytes * 8 * 1_000_000_000 / (100 * srtt_ns);
    }
    (pct as u128 * bytes as u128 * 8 * 1_000_000_000 / (100 * srtt_ns as u128))
        .min(u64::MAX as u128) as u64
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        /// The 64-bit shortcut gives exactly the 128-bit quotient, at and around its bounds.
        #[test]
        fn pacing_rate_equals_the_128_bit_quotient(
            pct in prop_oneof![Just(120u64), Just(200u64)],
            bytes in prop_oneof![0u64..20_000_000, (u64::MAX / 1_600_000_000_000 - 3)..(u64::MAX / 1_600_000_000_000 + 3), any::<u64>()],
            srtt_ns in prop_oneof![0u64..10_000_000_000, (u64::MAX / 100 - 3)..(u64::MAX / 100 + 3), any::<u64>()],
        ) {
            let want = (pct as u128 * bytes as u128 * 8 * 1_000_000_000
                / (100 * srtt_ns.max(1) as u128))
                .min(u64::MAX as u128) as u64;
            prop_assert_eq!(super::pacing_rate(pct, bytes, srtt_ns), want);
        }

        /// The view's segments in use (in flight plus what the queue will leave as, each
        /// mapping ceil(len / MSS)) stay exact through merged and separate pushes, trims below
        /// a DSN the connection acknowledged elsewhere, and transmissions that split the head.
        #[test]
        fn segs_in_use_counts_the_queue_as_it_changes(
            ops in proptest::collection::vec((0u8..4, 1u64..5_000, 0u8..4, any::<bool>()), 1..80),
        ) {
            use crate::sched::{ResendKind, SubflowView};
            use crate::tcp::sender::Sender;
            use crate::tcp::TcpConfig;
            let mut s = Sender::established(TcpConfig::default(), crate::cc::build("reno").unwrap());
            s.tcb.cwnd_bytes = 1 << 40;
            let mss = s.tcb.mss_bytes;
            let (mut next_dsn, mut trimmed_to) = (0u64, 0u64);
            let mut v = SubflowView::default();
            for (op, len, kind, flag) in ops {
                match op {
                    // A push: contiguous (merges when the kind matches) or after a gap.
                    0 | 1 => {
                        let dsn = if op == 0 { next_dsn } else { next_dsn + len };
                        let resend = [None, Some(ResendKind::Reinject), Some(ResendKind::Redundant), None][kind as usize];
                        match resend {
                            None => s.queue(dsn, len, flag && kind == 3),
                            Some(k) => s.queue_resend(dsn, len, false, k),
                        }
                        next_dsn = dsn + len;
                    }
                    2 => {
                        trimmed_to = trimmed_to.max(next_dsn.saturating_sub(len * u64::from(kind)));
                        s.trim_unsent_below(trimmed_to);
                    }
                    _ => {
                        for _ in 0..=kind {
                            s.poll_transmit(0);
                        }
                    }
                }
                let walked: u64 = s.queue.iter().map(|m| m.len.div_ceil(mss)).sum();
                prop_assert_eq!(u64::from(s.queued_segs), walked);
                s.fill_view(&mut v);
                prop_assert_eq!(v.segs_in_use, s.board.pipe_segs() + walked);
            }
        }
    }
}
