//! minRTT: the out-of-tree Linux MPTCP default scheduler, lowest-RTT-first.
//!
//! Source: OOT `net/mptcp/mptcp_sched.c` (`get_available_subflow`, `mptcp_next_segment`);
//! Paasch et al., "Experimental evaluation of multipath TCP schedulers", CSWS 2014;
//! `reference/schedulers.md` §2.1.
//!
//! Reinjections first, on the lowest-`srtt` available subflow that has not carried them yet.
//! New data goes to the lowest-`srtt` available active subflow, one burst of its free
//! congestion window per call (the kernel's per-TSO-chunk `limit`). When every active subflow
//! is only cwnd-busy the scheduler waits; backups carry data only when no active subflow is
//! usable at all. Exact `srtt` ties go to the newest subflow (OOT list order).
//!
//! Decisions: the kernel default also runs opportunistic retransmission and penalisation when
//! the receive window blocks; here that is the composable `+rp` extension, so the kernel's
//! behaviour is `"minrtt+rp"`. New data that does not fit the receive window (the next
//! segment would end past `wnd_end`) is not offered.

use serde::{Deserialize, Serialize};

use super::common::{min_rtt_select, send_burst, serve_reinject, CheckConfig};
use super::{Action, ConnView, Scheduler};

/// minRTT has no tunable parameters; the struct exists so unknown keys are rejected.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {}

/// Lowest-RTT-first scheduler (stateless).
#[derive(Debug, Clone, Default)]
pub struct MinRtt {
    _cfg: Config,
}

impl CheckConfig for Config {}

impl MinRtt {
    /// Builds the scheduler.
    pub fn new(cfg: Config) -> Self {
        Self { _cfg: cfg }
    }
}

impl Scheduler for MinRtt {
    fn name(&self) -> &'static str {
        "minrtt"
    }

    fn schedule(&mut self, view: &ConnView<'_>, out: &mut Vec<Action>) {
        if serve_reinject(view, out, |mask| min_rtt_select(view.subflows, mask)).is_some() {
            return;
        }
        if view.unsent_bytes == 0 {
            return;
        }
        let Some(id) = min_rtt_select(view.subflows, 0) else {
            return;
        };
        send_burst(view, id, out);
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::testing::*;
    use super::super::ResendKind;
    use super::*;

    fn run(view: &ConnView<'_>) -> Vec<Action> {
        let mut out = Vec::new();
        MinRtt::default().schedule(view, &mut out);
        out
    }

    #[test]
    fn picks_the_lowest_srtt_and_fills_its_free_window() {
        let mut s = [sf(0, 40, 10), sf(1, 10, 10)];
        s[1].in_flight_bytes = 4 * MSS;
        let out = run(&conn(&s, 1_000_000));
        assert_eq!(
            out,
            vec![Action::SendNew {
                subflow: 1,
                max_bytes: 6 * MSS
            }]
        );
    }

    #[test]
    fn never_picks_an_unestablished_subflow() {
        let mut s = [sf(0, 40, 10), sf(1, 0, 10)];
        s[1].established = false;
        s[1].has_rtt_sample = false;
        let out = run(&conn(&s, 5000));
        assert_eq!(
            out,
            vec![Action::SendNew {
                subflow: 0,
                max_bytes: 5000
            }]
        );
    }

    #[test]
    fn backup_only_when_no_active_subflow_is_usable() {
        let mut s = [sf(0, 40, 10), sf(1, 5, 10)];
        s[1].backup = true;
        assert!(matches!(
            run(&conn(&s, 5000))[..],
            [Action::SendNew { subflow: 0, .. }]
        ));
        s[0].potentially_failed = true;
        assert!(matches!(
            run(&conn(&s, 5000))[..],
            [Action::SendNew { subflow: 1, .. }]
        ));
    }

    #[test]
    fn serves_the_reinjection_queue_before_new_data() {
        let s = [sf(0, 10, 10), sf(1, 40, 10)];
        let rq = [chunk(0, 2000, &[0])];
        let mut v = conn(&s, 5000);
        v.reinject_queue = &rq;
        v.next_dsn = 2000;
        let out = run(&v);
        assert_eq!(
            out,
            vec![Action::Resend {
                subflow: 1,
                dsn: 0,
                len: 2000,
                kind: ResendKind::Reinject
            }]
        );
    }

    #[test]
    fn stops_when_the_receive_window_is_full() {
        let s = [sf(0, 10, 10)];
        let mut v = conn(&s, 5000);
        v.peer_rwnd_bytes = 500;
        assert!(run(&v).is_empty());
    }
}
