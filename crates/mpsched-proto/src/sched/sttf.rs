//! STTF: Shortest Transfer Time First.
//!
//! Sources: Hurtig, Grinnemo, Brunstrom, Ferlin, Alay, Kuhn, "Low-latency scheduling in MPTCP",
//! IEEE/ACM ToN 27(1), 2019; KAU `net/mptcp/mptcp_sttf.c` (module 0.90);
//! `reference/schedulers.md` §2.10 (taken from the code, **[UNVERIFIED]** against the paper).
//!
//! For each subflow, estimate when a new segment would be delivered given the segments already
//! queued on it and its window growth per RTT (doubling in slow start, +1 in congestion
//! avoidance), using the latest RTT sample:
//! ```text
//! q = queued + 1; free = max(cwnd − in_flight, 0); r = last RTT
//! if q <= free: r/2
//! else: q −= free; t = r; w = grow(cwnd); while q > w: q −= w; t += r; w = grow(w)
//!       t + r/2
//! ```
//! and send on the minimum, with the minRTT selector's structure (unused subflows first,
//! active before backup). The cwnd test is not applied (segments queue beyond the window).
//!
//! Decisions: the latest raw RTT sample is the view's `last_rtt_ns` (`srtt_ns` when no sample
//! is recorded yet). One segment per call. Queueing beyond cwnd is bounded by the
//! connection's send buffer; `queue_limit_cwnds` (default 0 = off) can add a per-subflow
//! bound, a subflow at the bound counting as busy **[PROJECT DECISION]**. The optional KAU
//! `pre_schedule` re-assignment of already-queued data is not implemented (data handed to a
//! subflow stays there). The KAU default RP (`optim=1`) is available as `"sttf+rp"`.

use serde::{Deserialize, Serialize};

use super::common::{oot_select, queue_full, send_one_segment, serve_reinject, CheckConfig};
use super::{Action, ConnView, Scheduler, SubflowView};

/// STTF parameters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// A subflow counts as busy while its unsent queue holds this many cwnds. Default 0 = no
    /// bound beyond the connection's send buffer ([PROJECT DECISION]).
    pub queue_limit_cwnds: u64,
}

impl CheckConfig for Config {}

/// STTF scheduler (stateless).
#[derive(Debug, Clone, Default)]
pub struct Sttf {
    cfg: Config,
}

/// Bound on the RTT rounds the estimate walks through (it only grows the estimate).
const MAX_ROUNDS: u32 = 10_000;

impl Sttf {
    /// Builds the scheduler.
    pub fn new(cfg: Config) -> Self {
        Self { cfg }
    }

    /// Estimated time until one more segment queued on `sf` is delivered, ns.
    pub fn transfer_time_ns(sf: &SubflowView) -> u64 {
        let mss = sf.mss_bytes.max(1);
        let r = if sf.last_rtt_ns > 0 {
            sf.last_rtt_ns
        } else {
            sf.srtt_ns
        };
        let cwnd = sf.cwnd_bytes / mss;
        let ssthresh = sf.ssthresh_bytes / mss;
        let grow = |w: u64| {
            if w <= ssthresh {
                w.saturating_mul(2).max(1)
            } else {
                w + 1
            }
        };
        let mut q = sf.queued_bytes.div_ceil(mss) + 1;
        let free = cwnd.saturating_sub(sf.in_flight_bytes.div_ceil(mss));
        if q <= free {
            return r / 2;
        }
        q -= free;
        let mut t = r;
        let mut w = grow(cwnd);
        let mut rounds = 0;
        while q > w && rounds < MAX_ROUNDS {
            q -= w;
            t = t.saturating_add(r);
            w = grow(w);
            rounds += 1;
        }
        t.saturating_add(r / 2)
    }

    fn avail(&self, sf: &SubflowView) -> bool {
        !sf.in_loss_recovery && !queue_full(sf, self.cfg.queue_limit_cwnds)
    }
}

impl Scheduler for Sttf {
    fn name(&self) -> &'static str {
        "sttf"
    }

    fn schedule(&mut self, view: &ConnView<'_>, out: &mut Vec<Action>) {
        let select = |mask| {
            oot_select(view.subflows, mask, Self::transfer_time_ns, |s| {
                self.avail(s)
            })
        };
        if serve_reinject(view, out, select).is_some() {
            return;
        }
        if view.unsent_bytes == 0 {
            return;
        }
        if let Some(id) = select(0) {
            send_one_segment(view, id, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::testing::*;
    use super::*;

    #[test]
    fn transfer_time_counts_the_queue_and_window_growth() {
        let mut fast = sf(0, 10, 10);
        fast.in_flight_bytes = fast.cwnd_bytes;
        // Empty queue, full window: next round (10 ms) + half an RTT.
        assert_eq!(Sttf::transfer_time_ns(&fast), 15 * MS);
        // 100 queued: 101 segments over windows 20, 40 (slow start): 3 rounds.
        fast.queued_bytes = 100 * MSS;
        assert_eq!(Sttf::transfer_time_ns(&fast), 35 * MS);
        // In congestion avoidance the window grows by one: 11 + 12 + ... + 17 = 98 < 101.
        fast.ssthresh_bytes = 5 * MSS;
        assert_eq!(Sttf::transfer_time_ns(&fast), 85 * MS);
    }

    #[test]
    fn picks_the_shortest_transfer_time_not_the_lowest_rtt() {
        let mut s = [sf(0, 10, 10), sf(1, 50, 10)];
        s[0].in_flight_bytes = s[0].cwnd_bytes;
        let cfg = Config {
            queue_limit_cwnds: 100,
        };
        let mut out = Vec::new();
        Sttf::new(cfg.clone()).schedule(&conn(&s, 100_000), &mut out);
        assert_eq!(
            out,
            vec![Action::SendNew {
                subflow: 0,
                max_bytes: MSS
            }]
        );
        s[0].queued_bytes = 100 * MSS; // 35 ms against 25 ms on the idle slow path
        let mut out = Vec::new();
        Sttf::new(cfg).schedule(&conn(&s, 100_000), &mut out);
        assert_eq!(
            out,
            vec![Action::SendNew {
                subflow: 1,
                max_bytes: MSS
            }]
        );
    }
}
