//! OTIAS: Out-of-order Transmission for In-order Arrival Scheduling.
//!
//! Sources: Yang, Wang, Amer, "Out-of-order transmission for in-order arrival scheduling for
//! multipath TCP", AINA workshops 2014; KAU `net/mptcp/mptcp_otias.c`;
//! `reference/schedulers.md` §2.9.
//!
//! Each segment goes to the subflow where it is expected to *arrive* first, counting the
//! segments already queued on it, even when that subflow's window is full (the segment then
//! waits in the subflow's queue). KAU MPTCP form, in segments:
//! ```text
//! queued   = ceil(queued_bytes / mss);  sendable = max(cwnd − in_flight, 0)
//! wait     = 0 if queued < sendable else ceil((queued − sendable + 1) / cwnd) × srtt
//! arrival  = wait + srtt / 2                      → argmin, strict <
//! ```
//! A reinjected segment prefers subflows that have not carried it; one that already did is a
//! fallback, and only if it has cwnd room. Backups are not treated specially.
//!
//! Decisions: one segment per call, since every segment changes the estimate. Queueing beyond
//! cwnd is bounded by the connection's send buffer, as by the socket buffer in the kernel;
//! `queue_limit_cwnds` (default 0 = off) can add a per-subflow bound **[PROJECT DECISION]**.
//! (A bound of one window would send the tail of a short flow to the slow path even when it
//! would arrive later there, defeating the algorithm.)
//! The KAU `optim` switch (RP) defaults to off; compose `"otias+rp"` to turn it on.

use serde::{Deserialize, Serialize};

use super::common::{queue_full, reinject_head, send_one_segment, used, CheckConfig};
use super::{Action, ConnView, ResendKind, Scheduler, SubflowId, SubflowView};

/// OTIAS parameters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// A subflow is skipped while its unsent queue holds this many cwnds. Default 0 = no
    /// bound beyond the connection's send buffer ([PROJECT DECISION]).
    pub queue_limit_cwnds: u64,
}

impl CheckConfig for Config {}

/// OTIAS scheduler (stateless).
#[derive(Debug, Clone, Default)]
pub struct Otias {
    cfg: Config,
}

impl Otias {
    /// Builds the scheduler.
    pub fn new(cfg: Config) -> Self {
        Self { cfg }
    }

    /// Expected arrival time of one more segment queued on `sf`, ns.
    pub fn arrival_ns(sf: &SubflowView) -> u64 {
        let mss = sf.mss_bytes.max(1);
        let queued = sf.queued_bytes.div_ceil(mss);
        let cwnd = (sf.cwnd_bytes / mss).max(1);
        let sendable = cwnd.saturating_sub(sf.in_flight_bytes.div_ceil(mss));
        let wait = if queued < sendable {
            0
        } else {
            (queued - sendable + 1)
                .div_ceil(cwnd)
                .saturating_mul(sf.srtt_ns)
        };
        wait.saturating_add(sf.srtt_ns / 2)
    }

    fn select(&self, subflows: &[SubflowView], mask: u64) -> Option<SubflowId> {
        let sent_before = mask != 0;
        let mut best: Option<(SubflowId, u64)> = None;
        let mut fallback: Option<(SubflowId, u64)> = None;
        for sf in subflows.iter().rev() {
            // Usable and not in RTO recovery; the cwnd test is not applied.
            if !sf.usable() || sf.in_loss_recovery {
                continue;
            }
            if queue_full(sf, self.cfg.queue_limit_cwnds) {
                continue;
            }
            let room = sf.free_cwnd_bytes() > 0;
            let m = Self::arrival_ns(sf);
            if used(sf, mask) {
                if room && fallback.is_none_or(|(_, b)| m < b) {
                    fallback = Some((sf.id, m));
                }
            } else if (!sent_before || room) && best.is_none_or(|(_, b)| m < b) {
                best = Some((sf.id, m));
            }
        }
        best.or(fallback).map(|(id, _)| id)
    }
}

impl Scheduler for Otias {
    fn name(&self) -> &'static str {
        "otias"
    }

    fn schedule(&mut self, view: &ConnView<'_>, out: &mut Vec<Action>) {
        if let Some(head) = reinject_head(view) {
            if let Some(id) = self.select(view.subflows, head.sent_on_mask) {
                let sf = &view.subflows[id];
                let len = head.len.min(sf.free_cwnd_bytes().max(sf.mss_bytes));
                out.push(Action::Resend {
                    subflow: id,
                    dsn: head.dsn,
                    len,
                    kind: ResendKind::Reinject,
                });
            }
            return;
        }
        if view.unsent_bytes == 0 {
            return;
        }
        if let Some(id) = self.select(view.subflows, 0) {
            send_one_segment(view, id, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::testing::*;
    use super::*;

    #[test]
    fn queues_on_the_fast_subflow_beyond_its_window_when_it_still_arrives_first() {
        let mut s = [sf(0, 10, 10), sf(1, 100, 10)];
        s[0].in_flight_bytes = s[0].cwnd_bytes;
        // Fast: wait one RTT (10 ms) + 5 ms = 15 ms; slow: 50 ms.
        assert_eq!(Otias::arrival_ns(&s[0]), 15 * MS);
        let mut out = Vec::new();
        Otias::default().schedule(&conn(&s, 100_000), &mut out);
        assert_eq!(
            out,
            vec![Action::SendNew {
                subflow: 0,
                max_bytes: MSS
            }]
        );
    }

    #[test]
    fn switches_to_the_slow_subflow_once_the_fast_queue_makes_it_later() {
        let mut s = [sf(0, 10, 10), sf(1, 100, 10)];
        s[0].in_flight_bytes = s[0].cwnd_bytes;
        s[0].queued_bytes = 9 * MSS; // 1 more: wait ceil(10/10)=1 RTT -> 15 ms
        assert_eq!(Otias::arrival_ns(&s[0]), 15 * MS);
        let cfg = Config {
            queue_limit_cwnds: 100,
        };
        s[0].queued_bytes = 50 * MSS; // wait ceil(51/10)=6 RTTs -> 65 ms > 50 ms
        let mut out = Vec::new();
        Otias::new(cfg).schedule(&conn(&s, 100_000), &mut out);
        assert_eq!(
            out,
            vec![Action::SendNew {
                subflow: 1,
                max_bytes: MSS
            }]
        );
    }
}
