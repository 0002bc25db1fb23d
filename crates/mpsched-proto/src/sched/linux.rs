//! The upstream Linux MPTCP default scheduler: least linger time, bursts of 64 KB.
//!
//! Source: Linux `net/mptcp/protocol.c` (`mptcp_subflow_get_send`,
//! `mptcp_subflow_get_retrans`, `__mptcp_push_pending`, `__subflow_push_pending`), BPF twin
//! `mptcp_bpf_burst.c`; `reference/schedulers.md` §2.11.
//!
//! New data: among active subflows (established, not failed) pick the one whose queued bytes
//! would drain soonest at its average pacing rate (`linger = wmem_queued / avg_pacing_rate`,
//! strict `<`, oldest subflow wins ties); backups only when no active subflow exists. If the
//! chosen subflow's send buffer is full (`!sk_stream_memory_free`: `wmem_queued >= sk_sndbuf`)
//! the scheduler waits; otherwise the subflow gets one burst of at most
//! `MPTCP_SEND_BURST_SIZE` = 65428 bytes (65536 − 20 TCP − 40 options − 40 IPv6 − 8 fragment
//! header), bounded by the receive window. The burst is pushed a data frag (at most a 32 KiB
//! page frag) at a time and stops after the frag that fills the send buffer
//! (`__subflow_push_pending` checks `sk_stream_memory_free` between frags), so it may
//! overshoot the buffer by up to a frag. The average pacing rate is updated with each burst:
//! `avg = (avg × wmem + pacing × burst) / (burst + wmem)`.
//!
//! Reinjections (`get_retrans`): the first idle (nothing in flight or queued) established
//! non-backup subflow; an idle backup only when every busy subflow has gone more than one
//! MPTCP retransmission period without an ACK (`min_stale_count > 1`).
//!
//! Failure handling is upstream's, not the out-of-tree kernel's: a subflow is not avoided after
//! one RTO (`potentially_failed` is ignored) but once the connection marks it stale
//! (`mptcp::stale`: more than `stale_loss_cnt` = 4 MPTCP retransmission-timer periods without
//! an ACK while another subflow is active); its pending data is then re-injected and pushed
//! through `get_send` on the others, and it is used again as soon as it receives an ACK.
//!
//! The subflow send buffer is what Linux `tcp_sndbuf_expand` makes it:
//! `sndbuf_factor × max(10, cwnd) × per_mss` (factor 2, `TCP_INIT_CWND` = 10), where `per_mss`
//! is the skb truesize the kernel budgets per segment (2304 bytes on the testbed's kernel, see
//! [`crate::mptcp::SNDBUF_PER_MSS_BYTES`]) and cwnd the largest so far (the kernel grows
//! `sk_sndbuf` with cwnd and never shrinks it). With GSO the queued skbs carry several
//! segments each, so this buffer holds about 3 congestion windows of payload, not 2.
//! A connection with a fixed send buffer (`SO_SNDBUF`, [`Scheduler::on_send_buffer_fixed`])
//! has no such buffer per subflow: Linux copies the MPTCP socket's `sk_sndbuf` with its lock
//! to every subflow (`mptcp_setsockopt_sol_socket` -> `sync_socket_options`), so each may
//! queue up to the connection's whole buffer and the linger times, not the buffers, split the
//! data (the testbed, `ss -tm`, 4 MiB: `tb` 4 199 464 on both subflows of the VoIP bench's
//! download, 1.0 MB queued on LTE and 2.0 MB on WLAN; docs/testbed.md "Session 10").
//!
//! `wmem_queued` (linger time and send-buffer check) is in truesize, as the kernel counts it:
//! payload in flight and queued plus a fixed overhead per skb, sent data sitting in skbs of
//! `tcp_tso_autosize` segments (1 ms at the pacing rate, at least 2) and unsent data in skbs
//! of up to 64 KB. Measured on the testbed with `ss -tm`: about 5 % over the payload on a
//! 50 Mbit/s subflow, 30 % on a 15 Mbit/s one. A segment shorter than the MSS ends an skb of
//! its own (the subflow sent all it had), so at least one skb per such segment outstanding: a
//! VoIP call's 160-byte frames, sent one by one, are one skb each (`ss -tm` on the testbed:
//! `w` = 992 bytes per unacknowledged frame, docs/testbed.md "Session 9").
//!
//! Decisions: the skbs are counted from byte totals (the kernel's depend on how ACKs clocked
//! the transmissions). A subflow whose pacing rate is still 0 (no RTT
//! sample) counts as infinitely fast, as Linux starts `sk_pacing_rate` at `~0UL`
//! (`sock_init_data`).

use serde::{Deserialize, Serialize};

use super::common::{reinject_head, rwnd_blocked, CheckConfig};
use super::{Action, ConnView, ResendKind, Scheduler};
use crate::mptcp::{PAGE_FRAG_BYTES, SNDBUF_PER_MSS_BYTES};

/// `MPTCP_SEND_BURST_SIZE` (net/mptcp/protocol.c): 65536 − 20 − 40 − 40 − 8 bytes.
pub const SEND_BURST_BYTES: u64 = 65_428;
/// `TCP_INIT_CWND` (include/net/tcp.h), used as the floor of the send-buffer size, segments.
const TCP_INIT_CWND_SEGMENTS: u64 = 10;
/// Default of [`Config::skb_overhead_bytes`].
const SKB_OVERHEAD_BYTES: u64 = 768;
/// An unsent skb on a subflow's write queue grows to the size goal, at most a GSO packet
/// (`tcp_xmit_size_goal`, `GSO_LEGACY_MAX_SIZE` = 65536 bytes).
const WRITE_QUEUE_SKB_BYTES: u64 = crate::tcp::GSO_MAX_BYTES;

/// Upstream default parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Maximum bytes per burst. Default 65428 (`MPTCP_SEND_BURST_SIZE`).
    pub burst_bytes: u64,
    /// Send buffer of a subflow in units of `max(10, cwnd) × sndbuf_per_mss_bytes`. Default 2
    /// (`tcp_sndbuf_expand`: `sndmem = 2 × nr_segs × per_mss`).
    pub sndbuf_factor: u64,
    /// `per_mss` of `tcp_sndbuf_expand`, bytes of skb truesize budgeted per segment. Default
    /// 2304 (the testbed's 6.18 kernel; 4352 on a distribution kernel with
    /// `MAX_TCP_HEADER` = 320).
    pub sndbuf_per_mss_bytes: u64,
    /// Truesize of an skb beyond its payload, bytes, counted in `wmem_queued` per skb:
    /// `SKB_TRUESIZE` of the head of a frag-only skb (`SKB_DATA_ALIGN(MAX_TCP_HEADER) +
    /// SKB_DATA_ALIGN(sizeof(skb_shared_info)) + SKB_DATA_ALIGN(sizeof(sk_buff))`). Default
    /// 768 = 192 + 320 + 256 (the testbed's kernel, consistent with its `per_mss` of 2304 and
    /// with `ss -tm` wmem; 896 with `MAX_TCP_HEADER` = 320). 0 counts payload only.
    pub skb_overhead_bytes: u64,
}

impl CheckConfig for Config {
    fn check(&self) -> Result<(), String> {
        if self.burst_bytes == 0 || self.sndbuf_factor == 0 || self.sndbuf_per_mss_bytes == 0 {
            return Err(
                "burst_bytes, sndbuf_factor and sndbuf_per_mss_bytes must be at least 1".into(),
            );
        }
        Ok(())
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            burst_bytes: SEND_BURST_BYTES,
            sndbuf_factor: 2,
            sndbuf_per_mss_bytes: SNDBUF_PER_MSS_BYTES,
            skb_overhead_bytes: SKB_OVERHEAD_BYTES,
        }
    }
}

/// Upstream default scheduler state.
#[derive(Debug, Clone, Default)]
pub struct Linux {
    cfg: Config,
    /// Per subflow: average pacing rate, bit/s (0 = not initialised).
    avg_pacing_rate_bps: Vec<u64>,
    /// Per subflow: the largest congestion window seen, segments (`sk_sndbuf` never shrinks).
    max_cwnd_segments: Vec<u64>,
    /// The connection's fixed send buffer, bytes, which every subflow shares as its own
    /// `sk_sndbuf` (0: autotuned, `tcp_sndbuf_expand`).
    fixed_sndbuf_bytes: u64,
}

impl Linux {
    /// Builds the scheduler.
    pub fn new(cfg: Config) -> Self {
        Self {
            cfg,
            avg_pacing_rate_bps: Vec::new(),
            max_cwnd_segments: Vec::new(),
            fixed_sndbuf_bytes: 0,
        }
    }

    fn sndbuf_bytes(&self, sf: &super::SubflowView) -> u64 {
        if self.fixed_sndbuf_bytes > 0 {
            return self.fixed_sndbuf_bytes;
        }
        let segs = self.max_cwnd_segments[sf.id].max(TCP_INIT_CWND_SEGMENTS);
        self.cfg
            .sndbuf_factor
            .saturating_mul(segs)
            .saturating_mul(self.cfg.sndbuf_per_mss_bytes)
    }

    /// `sk_wmem_queued`: the payload unacknowledged (lost included) and queued plus each skb's
    /// truesize overhead.
    /// Sent data sits in skbs of `tcp_tso_autosize` segments (1 ms at the pacing rate, at
    /// least 2), unsent data in skbs of up to 64 KB, so a slow subflow's bytes weigh more.
    fn wmem_bytes(&self, sf: &super::SubflowView) -> u64 {
        // The retransmission queue holds every unacknowledged byte, lost ones included.
        let sent = sf.outstanding_bytes.max(sf.in_flight_bytes);
        let payload = sent + sf.queued_bytes;
        if self.cfg.skb_overhead_bytes == 0 {
            return payload;
        }
        let mss = sf.mss_bytes.max(1);
        let sent_skb_bytes = crate::tcp::tso_autosize_segments(sf.pacing_rate_bps, mss) * mss;
        // Each short segment ended an skb (a frame written alone is one skb: 992 bytes of
        // wmem per unacknowledged 160-byte frame on the testbed), so small writes sent one by
        // one count an skb each, not one per `tcp_tso_autosize` segments' worth of bytes.
        let sent_skbs = sent.div_ceil(sent_skb_bytes).max(sf.short_segs_out);
        let skbs = sent_skbs + sf.queued_bytes.div_ceil(WRITE_QUEUE_SKB_BYTES);
        payload.saturating_add(skbs.saturating_mul(self.cfg.skb_overhead_bytes))
    }

    /// `mptcp_subflow_get_retrans`: the first idle (nothing unacked or queued) subflow that
    /// can send (`__mptcp_subflow_active`: stale ones included), non-backup first; an idle
    /// backup only when every busy subflow has gone more than one retransmission period
    /// without an ACK (`min_stale_count > 1`).
    fn get_retrans(&self, view: &ConnView<'_>, out: &mut Vec<Action>) {
        let Some(head) = reinject_head(view) else {
            return;
        };
        let mut pick = None;
        let mut backup = None;
        let mut min_stale_count = u64::MAX;
        for sf in view.subflows.iter().filter(|s| s.established) {
            if sf.outstanding_bytes > 0 || sf.in_flight_bytes > 0 || sf.queued_bytes > 0 {
                min_stale_count = min_stale_count.min(sf.stale_count);
                continue;
            }
            if sf.backup {
                backup = backup.or(Some(sf.id));
            } else {
                pick = pick.or(Some(sf.id));
            }
        }
        let chosen = pick.or(if min_stale_count > 1 { backup } else { None });
        if let Some(id) = chosen {
            out.push(Action::Resend {
                subflow: id,
                dsn: head.dsn,
                len: head.len,
                kind: ResendKind::Reinject,
            });
        }
    }

    /// `mptcp_subflow_get_send`: the active (established, not stale) subflow with the least
    /// linger time, backups only when no active subflow exists; `None` when the chosen one has
    /// no send-buffer room. Returns (subflow, burst) for up to `avail_bytes` and updates the
    /// chosen subflow's average pacing rate.
    fn get_send(&mut self, view: &ConnView<'_>, avail_bytes: u64) -> Option<(usize, u64)> {
        // (subflow, linger numerator wmem << 32, rate) for the best active / backup.
        let mut best: [Option<(usize, u128)>; 2] = [None, None];
        let mut n_active = 0;
        for sf in view.subflows.iter().filter(|s| s.established && !s.stale) {
            n_active += usize::from(!sf.backup);
            let wmem = self.wmem_bytes(sf) as u128;
            let avg = &mut self.avg_pacing_rate_bps[sf.id];
            if *avg == 0 {
                *avg = sf.pacing_rate_bps;
            }
            // linger = wmem / rate, in 2^-32 units; an unknown rate is infinitely fast.
            let linger = if *avg == 0 {
                0
            } else {
                (wmem << 32) / (*avg as u128)
            };
            let cls = usize::from(sf.backup);
            if best[cls].is_none_or(|(_, l)| linger < l) {
                best[cls] = Some((sf.id, linger));
            }
        }
        let chosen = if n_active == 0 { best[1] } else { best[0] };
        let (id, _) = chosen?;
        let sf = &view.subflows[id];
        let wmem = self.wmem_bytes(sf);
        let sndbuf = self.sndbuf_bytes(sf);
        if wmem >= sndbuf {
            return None; // the chosen subflow has no send-buffer room: wait
        }
        // Pushed a frag at a time until the frag that fills the send buffer.
        let sndbuf_room = (sndbuf - wmem)
            .div_ceil(PAGE_FRAG_BYTES)
            .saturating_mul(PAGE_FRAG_BYTES);
        let burst = self
            .cfg
            .burst_bytes
            .min(view.rwnd_room_bytes())
            .min(sndbuf_room)
            .min(avail_bytes);
        if burst == 0 {
            return None;
        }
        let avg = &mut self.avg_pacing_rate_bps[id];
        if *avg != 0 && sf.pacing_rate_bps != 0 {
            let num =
                (*avg as u128) * (wmem as u128) + (sf.pacing_rate_bps as u128) * (burst as u128);
            *avg = (num / (burst as u128 + wmem as u128)).min(u64::MAX as u128) as u64;
        }
        Some((id, burst))
    }
}

impl Scheduler for Linux {
    fn name(&self) -> &'static str {
        "linux"
    }

    fn schedule(&mut self, view: &ConnView<'_>, out: &mut Vec<Action>) {
        if self.avg_pacing_rate_bps.len() < view.subflows.len() {
            self.avg_pacing_rate_bps.resize(view.subflows.len(), 0);
            self.max_cwnd_segments.resize(view.subflows.len(), 0);
        }
        // `tcp_sndbuf_expand` follows cwnd up (`tcp_new_space` on ACKs) and never shrinks.
        for sf in view.subflows {
            let segs = sf.cwnd_bytes / sf.mss_bytes.max(1);
            let max = &mut self.max_cwnd_segments[sf.id];
            *max = (*max).max(segs);
        }
        // A subflow just marked stale had the whole MPTCP-level retransmission queue re-injected
        // (`__mptcp_retransmit_pending_data`), which the kernel pushes again as pending data:
        // through `get_send`, not the idle-subflow retransmission picker.
        let recovering = view.subflows.iter().any(|s| s.stale);
        if recovering {
            if let Some(head) = reinject_head(view) {
                let room = view.subflows.iter().any(|s| s.established && !s.stale);
                if let Some((id, burst)) = room.then(|| self.get_send(view, head.len)).flatten() {
                    out.push(Action::Resend {
                        subflow: id,
                        dsn: head.dsn,
                        len: burst,
                        kind: ResendKind::Reinject,
                    });
                }
                return;
            }
        } else {
            self.get_retrans(view, out);
        }
        if !out.is_empty() || view.unsent_bytes == 0 || rwnd_blocked(view) {
            return;
        }
        if let Some((id, burst)) = self.get_send(view, view.unsent_bytes) {
            out.push(Action::SendNew {
                subflow: id,
                max_bytes: burst,
            });
        }
    }

    fn upstream_stale_detection(&self) -> bool {
        true
    }

    fn on_send_buffer_fixed(&mut self, snd_buf_bytes: u64) {
        self.fixed_sndbuf_bytes = snd_buf_bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::testing::*;
    use super::super::SubflowView;
    use super::*;

    fn run(s: &mut impl Scheduler, view: &ConnView<'_>) -> Vec<Action> {
        let mut out = Vec::new();
        s.schedule(view, &mut out);
        out
    }

    #[test]
    fn picks_the_least_linger_time_not_the_lowest_rtt() {
        // Subflow 0: fast RTT but 40 KB queued at 10 Mbit/s (32 ms to drain).
        // Subflow 1: slower RTT, 10 KB queued at 20 Mbit/s (4 ms to drain).
        let mut s = [sf(0, 10, 40), sf(1, 50, 40)];
        s[0].queued_bytes = 40_000;
        s[0].pacing_rate_bps = 10_000_000;
        s[1].queued_bytes = 10_000;
        s[1].pacing_rate_bps = 20_000_000;
        let out = run(&mut Linux::default(), &conn(&s, 1_000_000));
        assert_eq!(
            out,
            vec![Action::SendNew {
                subflow: 1,
                max_bytes: SEND_BURST_BYTES
            }]
        );
    }

    #[test]
    fn burst_is_bounded_by_window_and_send_buffer_and_waits_when_full() {
        let mut s = [sf(0, 10, 10)];
        let mut v = conn(&s, 1_000_000);
        v.peer_rwnd_bytes = 12_000;
        assert_eq!(
            run(&mut Linux::default(), &v),
            vec![Action::SendNew {
                subflow: 0,
                max_bytes: 12_000
            }]
        );
        // sndbuf = 2 x 10 x 2304 = 46080 bytes; 40 KB of payload in 6 skbs (5 sent of 2
        // segments, 1 queued) is charged 40000 + 6 x 768 = 44608, which leaves 1472, and the
        // burst goes on to the end of the 32 KiB frag that crosses the limit.
        s[0].in_flight_bytes = 10_000;
        s[0].queued_bytes = 30_000;
        let v = conn(&s, 1_000_000);
        assert_eq!(
            run(&mut Linux::default(), &v),
            vec![Action::SendNew {
                subflow: 0,
                max_bytes: PAGE_FRAG_BYTES
            }]
        );
        s[0].queued_bytes = 36_080;
        assert!(run(&mut Linux::default(), &conn(&s, 1_000_000)).is_empty());
    }

    #[test]
    fn skb_overhead_counts_against_the_send_buffer_and_in_the_linger_time() {
        // 40 KB in flight in skbs of 2 segments (20 skbs): 40000 + 20 x 768 = 55360 bytes of
        // truesize fill the 46080-byte buffer that the payload alone would not.
        let mut s = [sf(0, 10, 10)];
        s[0].in_flight_bytes = 40_000;
        assert!(run(&mut Linux::default(), &conn(&s, 1_000_000)).is_empty());
        let payload_only = Config {
            skb_overhead_bytes: 0,
            ..Config::default()
        };
        assert!(!run(&mut Linux::new(payload_only.clone()), &conn(&s, 1_000_000)).is_empty());
        // Subflow 1 drains its payload sooner (8.8 ms against 9 ms) but sends 1 ms skbs of 2
        // segments at 8 Mbit/s (5 skbs) where subflow 0 sends 9 at 80 Mbit/s (10 skbs):
        // with the overhead subflow 0 lingers less (9.8 ms against 12.6 ms).
        let mut s = [sf(0, 10, 100), sf(1, 10, 100)];
        s[0].pacing_rate_bps = 80_000_000;
        s[0].in_flight_bytes = 90_000;
        s[1].pacing_rate_bps = 8_000_000;
        s[1].in_flight_bytes = 8_800;
        let pick = |cfg: Config| match run(&mut Linux::new(cfg), &conn(&s, 1_000_000))[..] {
            [Action::SendNew { subflow, .. }] => subflow,
            ref other => panic!("{other:?}"),
        };
        assert_eq!(pick(Config::default()), 0);
        assert_eq!(pick(payload_only), 1);
    }

    #[test]
    fn small_frames_sent_one_by_one_count_an_skb_each_in_the_linger_time() {
        // A call's 160-byte frames: subflow 0 (20 ms) holds three unacknowledged, subflow 1
        // (50 ms, 2.5x slower pacing) one. Linux holds each frame in an skb of its own, so
        // subflow 0 lingers 3 x 928 / r against subflow 1's 928 / (r / 2.5): 1.2x longer, and
        // the next frame goes to subflow 1. Counted as one skb of 480 bytes (the payload in
        // skbs of `tcp_tso_autosize` segments), subflow 0 would look 1.9x quicker to drain.
        let mut s = [sf(0, 20, 10), sf(1, 50, 10)];
        s[0].outstanding_bytes = 480;
        s[0].in_flight_bytes = 480;
        s[0].short_segs_out = 3;
        s[1].outstanding_bytes = 160;
        s[1].in_flight_bytes = 160;
        s[1].short_segs_out = 1;
        let pick = |s: &[SubflowView]| match run(&mut Linux::default(), &conn(s, 160))[..] {
            [Action::SendNew { subflow, .. }] => subflow,
            ref other => panic!("{other:?}"),
        };
        assert_eq!(pick(&s), 1);
        // With two frames outstanding subflow 0 lingers less (2 x 928 against 2.5 x 928).
        s[0].outstanding_bytes = 320;
        s[0].in_flight_bytes = 320;
        s[0].short_segs_out = 2;
        assert_eq!(pick(&s), 0);
    }

    #[test]
    fn send_buffer_follows_the_largest_cwnd_and_never_shrinks() {
        let mut sched = Linux::default();
        // cwnd 40 segments: sndbuf = 2 x 40 x 2304 = 184320 bytes.
        let mut s = [sf(0, 10, 40)];
        s[0].in_flight_bytes = 40_000;
        s[0].queued_bytes = 100_000;
        assert_eq!(
            run(&mut sched, &conn(&s, 1_000_000)),
            vec![Action::SendNew {
                subflow: 0,
                max_bytes: SEND_BURST_BYTES
            }]
        );
        // A loss halves cwnd to 20 segments; the buffer keeps its size (2 x 20 x 2304 =
        // 92160 would be full with 140 KB charged).
        s[0].cwnd_bytes = 20 * 1000;
        assert!(!run(&mut sched, &conn(&s, 1_000_000)).is_empty());
        // A fresh scheduler that never saw cwnd 40 waits.
        assert!(run(&mut Linux::default(), &conn(&s, 1_000_000)).is_empty());
    }

    #[test]
    fn a_fixed_send_buffer_is_every_subflows_send_buffer() {
        // 40 KB in flight fill the autotuned buffer (2 x 10 x 2304 = 46080 bytes of truesize,
        // see above) and the scheduler waits; with the connection's buffer fixed at 4 MiB
        // (SO_SNDBUF, copied with its lock to every subflow) the same subflow takes a burst.
        // Through the registry's composition too: the wrapper passes the size on.
        let mut s = [sf(0, 10, 10)];
        s[0].in_flight_bytes = 40_000;
        assert!(run(&mut Linux::default(), &conn(&s, 1_000_000)).is_empty());
        let burst = vec![Action::SendNew {
            subflow: 0,
            max_bytes: SEND_BURST_BYTES,
        }];
        for name in ["linux", "linux+rp"] {
            let mut sched = crate::sched::registry::build(name, &serde_json::json!({})).unwrap();
            assert!(run(&mut sched, &conn(&s, 1_000_000)).is_empty());
            sched.on_send_buffer_fixed(4 << 20);
            assert_eq!(run(&mut sched, &conn(&s, 1_000_000)), burst, "{name}");
            // Full only at the fixed size: 4 MiB of truesize charged.
            s[0].queued_bytes = (4 << 20) - 40_000;
            assert!(run(&mut sched, &conn(&s, 1_000_000)).is_empty(), "{name}");
            s[0].queued_bytes = 0;
        }
    }

    #[test]
    fn backup_only_without_active_and_retransmits_on_an_idle_subflow() {
        let mut s = [sf(0, 10, 10), sf(1, 10, 10)];
        s[1].backup = true;
        assert!(matches!(
            run(&mut Linux::default(), &conn(&s, 5000))[..],
            [Action::SendNew { subflow: 0, .. }]
        ));
        s[0].established = false;
        assert!(matches!(
            run(&mut Linux::default(), &conn(&s, 5000))[..],
            [Action::SendNew { subflow: 1, .. }]
        ));
        let mut s = [sf(0, 10, 10), sf(1, 50, 10)];
        s[0].in_flight_bytes = 3000;
        let rq = [chunk(0, 1000, &[0])];
        let mut v = conn(&s, 0);
        v.reinject_queue = &rq;
        v.next_dsn = 1000;
        assert_eq!(
            run(&mut Linux::default(), &v),
            vec![Action::Resend {
                subflow: 1,
                dsn: 0,
                len: 1000,
                kind: ResendKind::Reinject
            }]
        );
    }

    #[test]
    fn a_stale_subflow_is_skipped_and_its_reinjected_data_goes_through_get_send() {
        // Subflow 0 drains sooner, but it is stale: new data goes to subflow 1.
        let mut s = [sf(0, 10, 40), sf(1, 50, 40)];
        s[0].stale = true;
        assert!(matches!(
            run(&mut Linux::default(), &conn(&s, 5000))[..],
            [Action::SendNew { subflow: 1, .. }]
        ));
        // Recovery data is pushed on the busy active subflow (the idle-subflow picker would
        // find none), before new data.
        s[1].in_flight_bytes = 20_000;
        s[0].outstanding_bytes = 3000;
        let rq = [chunk(0, 3000, &[0])];
        let mut v = conn(&s, 5000);
        v.reinject_queue = &rq;
        v.next_dsn = 3000;
        assert_eq!(
            run(&mut Linux::default(), &v),
            vec![Action::Resend {
                subflow: 1,
                dsn: 0,
                len: 3000,
                kind: ResendKind::Reinject
            }]
        );
    }

    #[test]
    fn one_rto_does_not_make_upstream_avoid_a_subflow() {
        // `potentially_failed` is the out-of-tree kernel's; upstream keeps using the subflow
        // until it is stale.
        let mut s = [sf(0, 10, 40), sf(1, 50, 40)];
        s[0].potentially_failed = true;
        assert!(matches!(
            run(&mut Linux::default(), &conn(&s, 5000))[..],
            [Action::SendNew { subflow: 0, .. }]
        ));
    }
}
