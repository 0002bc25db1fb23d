//! Generic properties every registered scheduler (and every composition with the extensions)
//! must have, checked on random views (s2n-quic style: one property suite over all
//! implementations of the trait).
//!
//! For any view, a scheduler: never panics; never targets an unknown or unusable subflow;
//! never asks `SendNew` when nothing is unsent, or for 0 bytes; never asks to re-send bytes
//! that are already DATA_ACKed or not sent yet; never penalises itself into the unknown; and
//! answers the same sequence of views with the same actions (deterministic). Driven through a
//! small model of the connection's call loop (apply each action, rebuild the view, call again),
//! it also stops: a call loop that never yields "no applied action" would hang the simulator.

use proptest::prelude::*;

use super::registry::{all_compositions, build};
use super::{Action, ConnView, SubflowView, UnackedChunk};

const MSS: u64 = 1448;

fn arb_subflow(id: usize) -> impl Strategy<Value = SubflowView> {
    (
        (
            any::<bool>(),
            prop::bool::weighted(0.2),
            prop::bool::weighted(0.1),
            prop::bool::weighted(0.1),
        ),
        (prop::bool::weighted(0.1), prop::bool::weighted(0.9)),
        (0u64..400, 0u64..50, 1u64..200),
        (0u64..120, 0u64..120, 0u64..60),
        (prop::option::of(1u64..100), 0u64..200_000_000),
    )
        .prop_map(
            move |(
                (est, backup, pf, loss),
                (fast_rec, sampled),
                (srtt_ms, var_ms, cwnd),
                (infl, queued, ssth),
                (ss, rate),
            )| {
                let srtt_ns = if sampled {
                    srtt_ms * 1_000_000 + 100_000
                } else {
                    0
                };
                SubflowView {
                    id,
                    path_index: id,
                    established: est || id == 0,
                    backup,
                    potentially_failed: pf,
                    // Upstream's stale marking follows a silent subflow like `pf` (later).
                    stale: pf && loss,
                    stale_count: if pf { 5 } else { 0 },
                    in_loss_recovery: loss,
                    in_fast_recovery: fast_rec,
                    has_rtt_sample: sampled,
                    srtt_ns,
                    rttvar_ns: var_ms * 1_000_000,
                    min_rtt_ns: srtt_ns / 2,
                    last_rtt_ns: srtt_ns,
                    rto_ns: 200_000_000 + srtt_ns,
                    mss_bytes: MSS,
                    cwnd_bytes: cwnd * MSS,
                    ssthresh_bytes: ss.map_or(u64::MAX, |s| s * MSS).max(ssth * MSS),
                    in_flight_bytes: infl.min(cwnd + 5) * MSS,
                    outstanding_bytes: infl.min(cwnd + 5) * MSS,
                    short_segs_out: 0,
                    queued_bytes: queued * MSS,
                    segs_in_use: 0,
                    pacing_rate_bps: if sampled { rate } else { 0 },
                    bytes_acked: 0,
                    bytes_sent: 0,
                    bytes_retransmitted: 0,
                    rto_count: 0,
                }
            },
        )
}

/// A random connection: subflows, unacked chunks below `next_dsn`, maybe reinjections.
#[derive(Debug, Clone)]
struct World {
    subflows: Vec<SubflowView>,
    unacked: Vec<UnackedChunk>,
    reinject: Vec<UnackedChunk>,
    unsent_bytes: u64,
    app_done: bool,
    data_acked: u64,
    next_dsn: u64,
    rwnd: u64,
    now_ns: u64,
}

impl World {
    fn view(&self) -> ConnView<'_> {
        ConnView {
            now_ns: self.now_ns,
            subflows: &self.subflows,
            unsent_bytes: self.unsent_bytes,
            app_done: self.app_done,
            next_dsn: self.next_dsn,
            data_acked: self.data_acked,
            unacked: &self.unacked,
            reinject_queue: &self.reinject,
            peer_rwnd_bytes: self.rwnd,
        }
    }

    /// Checks an action against the contract and applies it like a connection would.
    /// Returns whether it was applied.
    /// `upstream`: the scheduler runs on the upstream kernel's machinery, where a subflow
    /// that can take new data is established and not stale (`mptcp_subflow_active`; one RTO,
    /// `potentially_failed`, does not exclude it) and a retransmission may go on any
    /// established one (`__mptcp_subflow_active`).
    fn check_and_apply(&mut self, a: Action, name: &str, upstream: bool) -> bool {
        let n = self.subflows.len();
        let can_send = |sf: &SubflowView| {
            if upstream {
                sf.established && !sf.stale
            } else {
                sf.usable()
            }
        };
        let can_resend = |sf: &SubflowView| {
            if upstream {
                sf.established
            } else {
                sf.usable()
            }
        };
        let target = match a {
            Action::SendNew { subflow, .. }
            | Action::Resend { subflow, .. }
            | Action::Penalize { subflow } => subflow,
        };
        assert!(target < n, "{name}: unknown subflow in {a:?}");
        // Only OTIAS, DAPS, STTF (and the upstream default, up to its send buffer) queue
        // beyond the congestion window on purpose; everybody else stays inside it.
        let base = name.split('+').next().unwrap_or(name);
        let queues_beyond_cwnd = matches!(base, "otias" | "daps" | "sttf" | "linux");
        if let Action::SendNew {
            subflow,
            max_bytes: len,
        }
        | Action::Resend { subflow, len, .. } = a
        {
            if !queues_beyond_cwnd {
                let free = self.subflows[subflow].free_cwnd_bytes();
                assert!(len <= free, "{name}: {a:?} exceeds the free window {free}");
            }
        }
        match a {
            Action::SendNew { subflow, max_bytes } => {
                assert!(
                    can_send(&self.subflows[subflow]),
                    "{name}: SendNew on unusable subflow {a:?}"
                );
                assert!(self.unsent_bytes > 0, "{name}: SendNew with nothing unsent");
                assert!(max_bytes > 0, "{name}: SendNew of 0 bytes");
                assert!(
                    max_bytes <= self.unsent_bytes,
                    "{name}: {a:?} beyond unsent {}",
                    self.unsent_bytes
                );
                let room = (self.data_acked + self.rwnd).saturating_sub(self.next_dsn);
                assert!(
                    max_bytes <= room,
                    "{name}: {a:?} beyond the receive window room {room}"
                );
                let room = (self.data_acked + self.rwnd).saturating_sub(self.next_dsn);
                let bytes = max_bytes.min(self.unsent_bytes).min(room);
                if bytes == 0 {
                    return false;
                }
                let sf = &mut self.subflows[subflow];
                if sf.queued_bytes + sf.in_flight_bytes > 64 * sf.cwnd_bytes.max(MSS) {
                    return false; // SubflowQueueFull
                }
                sf.queued_bytes += bytes;
                self.unacked.push(UnackedChunk {
                    dsn: self.next_dsn,
                    len: bytes,
                    sent_on_mask: 1 << subflow,
                });
                self.next_dsn += bytes;
                self.unsent_bytes -= bytes;
                true
            }
            Action::Resend {
                subflow, dsn, len, ..
            } => {
                assert!(
                    can_resend(&self.subflows[subflow]),
                    "{name}: Resend on unusable subflow {a:?}"
                );
                assert!(len > 0, "{name}: Resend of 0 bytes");
                assert!(
                    dsn + len <= self.next_dsn,
                    "{name}: Resend of unsent data {a:?}"
                );
                assert!(
                    dsn + len > self.data_acked,
                    "{name}: Resend of acknowledged data {a:?}"
                );
                let sf = &mut self.subflows[subflow];
                if sf.queued_bytes + sf.in_flight_bytes > 64 * sf.cwnd_bytes.max(MSS) {
                    return false; // SubflowQueueFull
                }
                sf.queued_bytes += len;
                for c in self.unacked.iter_mut().chain(self.reinject.iter_mut()) {
                    if c.dsn < dsn + len && dsn < c.dsn + c.len {
                        c.sent_on_mask |= 1 << subflow;
                    }
                }
                // A reinjection leaves the queue as far as it was re-sent (a partial re-send
                // leaves the rest at the head, as the OOT send loop does after splitting).
                let acked = self.data_acked;
                for c in self.reinject.iter_mut() {
                    let start = c.dsn.max(acked);
                    let end = c.dsn + c.len;
                    if dsn <= start && dsn + len > start {
                        let new_start = (dsn + len).min(end);
                        c.len = end - new_start;
                        c.dsn = new_start;
                    }
                }
                self.reinject.retain(|c| c.len > 0);
                true
            }
            Action::Penalize { subflow } => {
                assert!(
                    self.subflows[subflow].usable(),
                    "{name}: penalising an unusable subflow"
                );
                let sf = &mut self.subflows[subflow];
                if sf.cwnd_bytes <= MSS {
                    return false;
                }
                sf.cwnd_bytes = (sf.cwnd_bytes / 2).max(MSS);
                true
            }
        }
    }
}

fn arb_world() -> impl Strategy<Value = World> {
    (1usize..=5)
        .prop_flat_map(|n| {
            let subflows: Vec<_> = (0..n).map(arb_subflow).collect();
            (
                subflows,
                prop::collection::vec((1u64..20_000, 1u64..(1 << n)), 0..8),
                (
                    0u64..4,
                    any::<bool>(),
                    0u64..3_000_000,
                    prop::bool::weighted(0.3),
                ),
                (0u64..200_000, 0u64..5_000_000_000),
            )
        })
        .prop_map(
            |(
                subflows,
                chunks,
                (n_reinject, app_done, unsent, small_wnd),
                (rwnd_small, now_ns),
            )| {
                let mut dsn = 0;
                let mut unacked = Vec::new();
                for (len, mask) in chunks {
                    unacked.push(UnackedChunk {
                        dsn,
                        len,
                        sent_on_mask: mask,
                    });
                    dsn += len;
                }
                let data_acked = unacked.first().map_or(0, |c| c.dsn + c.len / 3);
                let reinject = unacked.iter().take(n_reinject as usize).copied().collect();
                World {
                    subflows,
                    unacked,
                    reinject,
                    unsent_bytes: unsent,
                    app_done,
                    data_acked,
                    next_dsn: dsn,
                    rwnd: if small_wnd { rwnd_small } else { 1 << 30 },
                    now_ns,
                }
            },
        )
}

/// Runs the connection's call loop (at most `max_calls` calls) and returns every action.
fn drive(name: &str, world: &mut World, max_calls: usize) -> (Vec<Action>, bool) {
    let mut s = build(name, &serde_json::json!({})).expect("builds");
    let mut all = Vec::new();
    for _ in 0..max_calls {
        let mut out = Vec::new();
        s.schedule(&world.view(), &mut out);
        let mut applied = false;
        for a in out {
            all.push(a);
            if world.check_and_apply(a, name, s.upstream_stale_detection()) {
                applied = true;
            } else {
                s.on_rejected(a, super::Rejection::NothingToSend, world.now_ns);
            }
        }
        if !applied {
            return (all, true);
        }
    }
    (all, false)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn every_scheduler_keeps_the_contract_and_is_deterministic(world in arb_world()) {
        for name in all_compositions() {
            let mut w1 = world.clone();
            let (a1, stopped) = drive(&name, &mut w1, 20_000);
            prop_assert!(stopped, "{}: the call loop did not stop", name);
            let mut w2 = world.clone();
            let (a2, _) = drive(&name, &mut w2, 20_000);
            prop_assert_eq!(a1, a2, "{}: not deterministic", name);
        }
    }
}
