//! CFS: Choose Fastest Subflow — minRTT, plus the tail of the flow sent redundantly on the
//! fast path.
//!
//! Source: Heo & Yoo, "Reducing the flow completion time for multipath TCP", KSII Transactions
//! on Internet and Information Systems 13(8), 2019, §3.1 (the paper wins over
//! `reference/schedulers.md` §2.12 where they differ).
//!
//! New data follows minRTT (no RTT or arrival prediction). When the connection-level send
//! buffer holds no more unassigned data and a fast subflow has cwnd room, CFS duplicates onto it
//! data earlier given to slower subflows and not yet acknowledged, oldest first, so the last
//! part of the flow travels on both paths and completes at the pace of the fast one
//! (paper §3.1: "if a fast subflow is available and there is no more data in the current
//! connection-level send buffer, the CFS scheduler will duplicate the data previously given to
//! the slower subflow, and send it to the fast subflow"). Only data held exclusively by slower
//! subflows is copied; duplicates do not advance `next_dsn`; the slow subflow is not penalised.
//!
//! Decisions **[PROJECT DECISION]**: by default duplication happens whenever the send buffer
//! is momentarily empty, as the paper states (`only_when_app_done = false`; set it to wait for
//! the application's last byte). The duplicating subflow is the fastest *available* active
//! subflow; only that one duplicates (`fastest_only = true`), otherwise each available subflow
//! in sRTT order may duplicate what slower ones hold. The paper does not combine CFS with RP;
//! `"cfs+rp"` adds it.

use serde::{Deserialize, Serialize};

use super::common::{clip_unacked, min_rtt_select, send_burst, serve_reinject, CheckConfig};
use super::{Action, ConnView, ResendKind, Scheduler, SubflowView};

/// CFS parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Duplicate only once the application has written its last byte. Default false
    /// (paper: whenever the connection send buffer has no unassigned data).
    pub only_when_app_done: bool,
    /// Only the fastest available subflow duplicates. Default true.
    pub fastest_only: bool,
}

impl CheckConfig for Config {}

impl Default for Config {
    fn default() -> Self {
        Self {
            only_when_app_done: false,
            fastest_only: true,
        }
    }
}

/// CFS scheduler (stateless).
#[derive(Debug, Clone, Default)]
pub struct Cfs {
    cfg: Config,
}

impl Cfs {
    /// Builds the scheduler.
    pub fn new(cfg: Config) -> Self {
        Self { cfg }
    }

    /// Tail duplication: copy onto `f` the oldest chunk held only by subflows slower than `f`.
    fn duplicate(view: &ConnView<'_>, f: &SubflowView, out: &mut Vec<Action>) -> bool {
        for c in view
            .unacked
            .iter()
            .filter_map(|c| clip_unacked(c, view.data_acked))
        {
            if c.sent_on(f.id) || c.sent_on_mask == 0 {
                continue;
            }
            let held_by_slower = view
                .subflows
                .iter()
                .filter(|o| c.sent_on(o.id))
                .all(|o| o.srtt_ns > f.srtt_ns);
            // A carrier index outside the view cannot be compared: skip the chunk.
            let known =
                (c.sent_on_mask >> view.subflows.len().min(63)) == 0 || view.subflows.len() >= 64;
            if held_by_slower && known {
                let len = c.len.min(f.free_cwnd_bytes());
                out.push(Action::Resend {
                    subflow: f.id,
                    dsn: c.dsn,
                    len,
                    kind: ResendKind::Redundant,
                });
                return true;
            }
        }
        false
    }
}

impl Scheduler for Cfs {
    fn name(&self) -> &'static str {
        "cfs"
    }

    fn schedule(&mut self, view: &ConnView<'_>, out: &mut Vec<Action>) {
        if serve_reinject(view, out, |mask| min_rtt_select(view.subflows, mask)).is_some() {
            return;
        }
        if view.unsent_bytes > 0 {
            let Some(id) = min_rtt_select(view.subflows, 0) else {
                return;
            };
            send_burst(view, id, out);
            return;
        }
        if self.cfg.only_when_app_done && !view.app_done {
            return;
        }
        let mut order: Vec<&SubflowView> = view
            .subflows
            .iter()
            .filter(|s| !s.backup && s.usable())
            .collect();
        order.sort_by_key(|s| (s.srtt_ns, std::cmp::Reverse(s.id)));
        for f in order {
            if !f.available() {
                continue;
            }
            if Self::duplicate(view, f, out) || self.cfg.fastest_only {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::testing::*;
    use super::*;

    #[test]
    fn duplicates_only_the_tail_and_only_what_slower_subflows_hold() {
        let mut s = [sf(0, 10, 10), sf(1, 100, 10), sf(2, 50, 10)];
        s[0].in_flight_bytes = 5 * MSS;
        let un = [
            chunk(0, 3000, &[0]),
            chunk(3000, 4000, &[1]),
            chunk(7000, 2000, &[2]),
        ];
        let mut v = conn(&s, 10_000);
        v.unacked = &un;
        v.next_dsn = 9000;
        let mut cfs = Cfs::default();
        // Unassigned data remains: plain minRTT, no copy.
        let mut out = Vec::new();
        cfs.schedule(&v, &mut out);
        assert_eq!(
            out,
            vec![Action::SendNew {
                subflow: 0,
                max_bytes: 5 * MSS
            }]
        );
        // Send buffer empty: the oldest chunk held only by slower subflows goes on the fast one.
        v.unsent_bytes = 0;
        let mut out = Vec::new();
        cfs.schedule(&v, &mut out);
        assert_eq!(
            out,
            vec![Action::Resend {
                subflow: 0,
                dsn: 3000,
                len: 4000,
                kind: ResendKind::Redundant
            }]
        );
        // The chunk on the 50 ms subflow is copied to the fast one only, never to the 100 ms.
        let un2 = [
            chunk(0, 3000, &[0]),
            chunk(3000, 4000, &[0, 1]),
            chunk(7000, 2000, &[2]),
        ];
        v.unacked = &un2;
        let mut out = Vec::new();
        cfs.schedule(&v, &mut out);
        assert_eq!(
            out,
            vec![Action::Resend {
                subflow: 0,
                dsn: 7000,
                len: 2000,
                kind: ResendKind::Redundant
            }]
        );
    }

    #[test]
    fn can_wait_for_the_end_of_the_application_data() {
        let s = [sf(0, 10, 10), sf(1, 100, 10)];
        let un = [chunk(0, 3000, &[1])];
        let mut v = conn(&s, 0);
        v.unacked = &un;
        v.next_dsn = 3000;
        let mut cfs = Cfs::new(Config {
            only_when_app_done: true,
            ..Config::default()
        });
        let mut out = Vec::new();
        cfs.schedule(&v, &mut out);
        assert!(out.is_empty());
        v.app_done = true;
        cfs.schedule(&v, &mut out);
        assert_eq!(out.len(), 1);
    }
}
