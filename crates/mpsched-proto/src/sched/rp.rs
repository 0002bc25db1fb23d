//! RP: opportunistic retransmission + penalisation, as a wrapper around any scheduler.
//!
//! Sources: Raiciu et al., "How hard can it be? Designing and implementing a deployable
//! multipath TCP", NSDI 2012 (mechanisms); OOT `net/mptcp/mptcp_sched.c`
//! `mptcp_rcv_buf_optimization` (exact rules); `reference/schedulers.md` §2.2.
//!
//! The inner scheduler decides as usual. When new data is waiting but the connection-level
//! receive window does not let the next segment out (head-of-line blocking at the sender), RP:
//! 1. picks the lowest-`srtt` available subflow `sf` (the OOT selector for the send head);
//! 2. penalises (halves the cwnd of) each subflow that carries the blocking head segment (the
//!    lowest unacknowledged DSN), is slower than `sf` and is not in recovery, at most once per
//!    `srtt` of `sf` (OOT `last_rbuf_opti`, kept on the retransmitting subflow;
//!    `rp_penalty_interval = "retransmitter_srtt"`, the default). The alternative
//!    `"penalized_srtt"` allows one penalty per `srtt` of the penalised subflow (002_'s "once per
//!    RTT" reading of LowRTT). Under bufferbloat they differ by orders of magnitude: a slow path
//!    whose queue holds seconds is halved four times a second by the kernel's rule and once in
//!    several seconds by the other, while LIA grows it meanwhile (004_ slide 18: 23.3 vs 9.0
//!    Mbit/s, experiments/README.md);
//! 3. re-sends the head on `sf` (kind `Opportunistic`) if `sf` has not carried it and a
//!    carrier is much slower (`srtt > 4 × sf.srtt`) or probably stuck (`cwnd <= 4` segments).
//!
//! Decisions: the retransmitting subflow is always the minRTT choice, whatever the inner
//! scheduler is (RP was defined on top of minRTT; asking the inner scheduler a hypothetical
//! question would disturb its state). The kernel's second trigger (no unsent data and the
//! application blocked on a full send buffer) is not modelled: the view carries no send-buffer
//! state. The copy is limited to `sf`'s free congestion window.

use serde::{Deserialize, Serialize};

use super::common::{
    clip_unacked, forward_events_to_inner, min_rtt_select, rwnd_blocked, CheckConfig,
};
use super::{Action, ConnView, LossKind, Rejection, ResendKind, Scheduler, SubflowId};

/// Whose sRTT spaces two penalties.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PenaltyInterval {
    /// The retransmitting (fast) subflow's, as the OOT kernel.
    RetransmitterSrtt,
    /// The penalised (slow) subflow's.
    PenalizedSrtt,
}

/// RP parameters (keys are prefixed `rp_` so they never collide with the base's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Penalise slower carriers of the blocking segment. Default true (OOT: always on the
    /// receive-window path).
    pub rp_penalize: bool,
    /// Penalise every slower carrier (v0.94+) rather than only the first found (v0.89).
    /// Default true.
    pub rp_penalize_all_carriers: bool,
    /// How often a slow carrier may be halved: once per sRTT of the retransmitting subflow
    /// (`"retransmitter_srtt"`, default, OOT `last_rbuf_opti`) or of the penalised subflow
    /// (`"penalized_srtt"`).
    pub rp_penalty_interval: PenaltyInterval,
    /// Retransmit when a carrier's `srtt` exceeds this many times the retransmitting subflow's.
    /// Default 4 (OOT `4 * tp->srtt_us >= tp_it->srtt_us` test).
    pub rp_srtt_ratio: u64,
    /// Retransmit anyway when a carrier's cwnd is at most this many segments (it is probably
    /// stuck in recovery). Default 4 (OOT `tp_it->snd_cwnd <= 4`).
    pub rp_stuck_cwnd_segments: u64,
}

impl CheckConfig for Config {}

impl Default for Config {
    fn default() -> Self {
        Self {
            rp_penalize: true,
            rp_penalize_all_carriers: true,
            rp_penalty_interval: PenaltyInterval::RetransmitterSrtt,
            rp_srtt_ratio: 4,
            rp_stuck_cwnd_segments: 4,
        }
    }
}

/// RP wrapper around the scheduler `S`.
#[derive(Debug)]
pub struct Rp<S> {
    inner: S,
    cfg: Config,
    /// Per subflow: time of the last penalty it gave (`retransmitter_srtt`) or took
    /// (`penalized_srtt`), ns.
    last_penalty_ns: Vec<Option<u64>>,
}

impl<S: Scheduler> Rp<S> {
    /// Wraps `inner`.
    pub fn new(inner: S, cfg: Config) -> Self {
        Self {
            inner,
            cfg,
            last_penalty_ns: Vec::new(),
        }
    }

    fn opportunistic(&mut self, view: &ConnView<'_>, out: &mut Vec<Action>) {
        let Some(id) = min_rtt_select(view.subflows, 0) else {
            return;
        };
        let sf = &view.subflows[id];
        let Some(head) = view
            .unacked
            .iter()
            .find_map(|c| clip_unacked(c, view.data_acked))
        else {
            return;
        };
        if self.last_penalty_ns.len() < view.subflows.len() {
            self.last_penalty_ns.resize(view.subflows.len(), None);
        }
        let now = view.now_ns;
        let due =
            |last: Option<u64>, srtt_ns: u64| last.is_none_or(|t| now.saturating_sub(t) >= srtt_ns);
        let by_retransmitter = self.cfg.rp_penalty_interval == PenaltyInterval::RetransmitterSrtt;
        let may_penalize = self.cfg.rp_penalize
            && (!by_retransmitter || due(self.last_penalty_ns[id], sf.srtt_ns));
        if may_penalize {
            for other in view.subflows {
                if other.id == id || !head.sent_on(other.id) {
                    continue;
                }
                if !by_retransmitter && !due(self.last_penalty_ns[other.id], other.srtt_ns) {
                    continue;
                }
                // OOT: only a carrier in TCP_CA_Open is penalised.
                let open = !other.in_fast_recovery && !other.in_loss_recovery;
                if sf.srtt_ns < other.srtt_ns && open && other.usable() {
                    out.push(Action::Penalize { subflow: other.id });
                    let who = if by_retransmitter { id } else { other.id };
                    self.last_penalty_ns[who] = Some(now);
                    if !self.cfg.rp_penalize_all_carriers {
                        break;
                    }
                }
            }
        }
        if head.sent_on(id) {
            return;
        }
        let mut retrans = false;
        for other in view.subflows {
            if other.id == id || !head.sent_on(other.id) {
                continue;
            }
            if other.cwnd_bytes
                <= self
                    .cfg
                    .rp_stuck_cwnd_segments
                    .saturating_mul(other.mss_bytes)
            {
                retrans = true;
                break;
            }
            if (self.cfg.rp_srtt_ratio as u128) * (sf.srtt_ns as u128) >= other.srtt_ns as u128 {
                retrans = false;
                break;
            }
            retrans = true;
        }
        if retrans {
            let len = head.len.min(sf.free_cwnd_bytes());
            if len > 0 {
                out.push(Action::Resend {
                    subflow: id,
                    dsn: head.dsn,
                    len,
                    kind: ResendKind::Opportunistic,
                });
            }
        }
    }
}

impl<S: Scheduler> Scheduler for Rp<S> {
    /// The inner scheduler's name; the registry reports the composed name (`"minrtt+rp"`).
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn schedule(&mut self, view: &ConnView<'_>, out: &mut Vec<Action>) {
        let before = out.len();
        self.inner.schedule(view, out);
        if out.len() == before && view.reinject_queue.is_empty() && rwnd_blocked(view) {
            self.opportunistic(view, out);
        }
    }

    forward_events_to_inner!();
    fn on_rejected(&mut self, action: Action, why: Rejection, now_ns: u64) {
        // Our own actions are not the inner scheduler's business.
        match action {
            Action::Penalize { .. }
            | Action::Resend {
                kind: ResendKind::Opportunistic,
                ..
            } => {}
            _ => self.inner.on_rejected(action, why, now_ns),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::testing::*;
    use super::super::minrtt::MinRtt;
    use super::*;

    /// Fast subflow 0 (10 ms) idle, slow subflow 1 (100 ms) holds the head; window full.
    fn blocked_view<'a>(
        s: &'a [crate::sched::SubflowView],
        un: &'a [crate::sched::UnackedChunk],
    ) -> ConnView<'a> {
        let mut v = conn(s, 50_000);
        v.unacked = un;
        v.next_dsn = 20_000;
        v.data_acked = 0;
        v.peer_rwnd_bytes = 20_000;
        v
    }

    #[test]
    fn penalizes_the_slow_carrier_and_reinjects_the_head_when_the_window_blocks() {
        let s = [sf(0, 10, 10), sf(1, 100, 10)];
        let un = [chunk(0, 10_000, &[1]), chunk(10_000, 10_000, &[0])];
        let v = blocked_view(&s, &un);
        let mut rp = Rp::new(MinRtt::default(), Config::default());
        let mut out = Vec::new();
        rp.schedule(&v, &mut out);
        assert_eq!(
            out,
            vec![
                Action::Penalize { subflow: 1 },
                Action::Resend {
                    subflow: 0,
                    dsn: 0,
                    len: 10_000,
                    kind: ResendKind::Opportunistic
                },
            ]
        );
        // Within one srtt of the fast subflow: no second penalty.
        let mut out = Vec::new();
        rp.schedule(&v, &mut out);
        assert!(!out.iter().any(|a| matches!(a, Action::Penalize { .. })));
    }

    #[test]
    fn does_nothing_extra_when_the_window_is_open_or_the_carrier_is_not_much_slower() {
        let s = [sf(0, 10, 10), sf(1, 30, 10)];
        let un = [chunk(0, 10_000, &[1])];
        let mut v = blocked_view(&s, &un);
        let mut rp = Rp::new(MinRtt::default(), Config::default());
        let mut out = Vec::new();
        rp.schedule(&v, &mut out);
        // 30 ms < 4 x 10 ms: penalise, but no retransmission.
        assert_eq!(out, vec![Action::Penalize { subflow: 1 }]);
        v.peer_rwnd_bytes = 1 << 30;
        let mut out = Vec::new();
        Rp::new(MinRtt::default(), Config::default()).schedule(&v, &mut out);
        assert!(matches!(out[..], [Action::SendNew { subflow: 0, .. }]));
    }

    /// Penalties requested by `rp` at times `at_ms` (after the first call at the fixture's
    /// time) in the blocked view: fast subflow 10 ms, slow carrier 100 ms.
    fn penalties_at(cfg: Config, at_ms: &[u64]) -> usize {
        let s = [sf(0, 10, 10), sf(1, 100, 10)];
        let un = [chunk(0, 10_000, &[1]), chunk(10_000, 10_000, &[0])];
        let mut rp = Rp::new(MinRtt::default(), cfg);
        let mut n = 0;
        for &ms in [0].iter().chain(at_ms) {
            let mut v = blocked_view(&s, &un);
            v.now_ns += ms * MS;
            let mut out = Vec::new();
            rp.schedule(&v, &mut out);
            n += out
                .iter()
                .filter(|a| matches!(a, Action::Penalize { subflow: 1 }))
                .count();
        }
        n
    }

    #[test]
    fn the_kernel_penalises_once_per_srtt_of_the_retransmitting_subflow() {
        // Every 10 ms (the fast subflow's srtt) for 100 ms: 11 halvings, as OOT's
        // `last_rbuf_opti` allows; 5 ms apart: only every other call.
        let every_10: Vec<u64> = (1..=10).map(|k| k * 10).collect();
        assert_eq!(penalties_at(Config::default(), &every_10), 11);
        let every_5: Vec<u64> = (1..=20).map(|k| k * 5).collect();
        assert_eq!(penalties_at(Config::default(), &every_5), 11);
    }

    #[test]
    fn penalized_srtt_spaces_penalties_by_the_slow_subflows_rtt() {
        let cfg = Config {
            rp_penalty_interval: PenaltyInterval::PenalizedSrtt,
            ..Config::default()
        };
        let every_10: Vec<u64> = (1..=20).map(|k| k * 10).collect();
        // 0 .. 200 ms at 10 ms steps, slow srtt 100 ms: at 0, 100 and 200 ms.
        assert_eq!(penalties_at(cfg, &every_10), 3);
    }
}
