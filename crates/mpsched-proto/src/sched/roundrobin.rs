//! Round-robin: the OOT `roundrobin` scheduler.
//!
//! Source: OOT `net/mptcp/mptcp_rr.c` (C. Paasch, module 0.89); `reference/schedulers.md` §2.4.
//!
//! Each subflow gets a quota of `num_segments` consecutive segments per round. A subflow with a
//! round in progress continues it; otherwise the next subflow not yet used this round is taken;
//! when every considered subflow has used its quota a new round starts. With `cwnd_limited`
//! (default) subflows without cwnd room are skipped, so every window is filled; without it the
//! turn order is strict and the sender waits for the subflow whose turn it is. Backups are not
//! treated specially; RTTs are not used. No opportunistic retransmission.
//!
//! Iteration is newest-first, as in the OOT subflow list: among subflows not yet used in the
//! round the kernel keeps the last one visited, i.e. the oldest.

use serde::{Deserialize, Serialize};

use super::common::{new_data_fits_window, reinject_head, used, CheckConfig};
use super::{Action, ConnView, Rejection, ResendKind, Scheduler, SubflowView};

/// Round-robin parameters (OOT module parameters).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Consecutive segments per subflow turn. Default 1 (`num_segments`).
    pub num_segments: u64,
    /// Skip subflows without cwnd room (fill every window). Default true (`cwnd_limited`).
    pub cwnd_limited: bool,
}

impl CheckConfig for Config {
    fn check(&self) -> Result<(), String> {
        if self.num_segments == 0 {
            return Err("num_segments must be at least 1".into());
        }
        Ok(())
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            num_segments: 1,
            cwnd_limited: true,
        }
    }
}

/// Round-robin state: the per-subflow quota used in the current round.
#[derive(Debug, Clone, Default)]
pub struct RoundRobin {
    cfg: Config,
    /// Segments sent by each subflow in the current round.
    quota: Vec<u64>,
}

impl RoundRobin {
    /// Builds the scheduler.
    pub fn new(cfg: Config) -> Self {
        Self {
            cfg: Config {
                num_segments: cfg.num_segments.max(1),
                ..cfg
            },
            quota: Vec::new(),
        }
    }

    /// OOT `mptcp_rr_is_available` (cwnd part only when asked).
    fn rr_available(sf: &SubflowView, cwnd_test: bool) -> bool {
        sf.usable() && !sf.in_loss_recovery && (!cwnd_test || sf.free_cwnd_bytes() > 0)
    }

    /// OOT `rr_get_available_subflow` for reinjections: the last unused available subflow in
    /// list order (newest-first), else a used one.
    fn reinject_subflow(view: &ConnView<'_>, mask: u64) -> Option<usize> {
        let mut best = None;
        let mut fallback = None;
        for sf in view
            .subflows
            .iter()
            .rev()
            .filter(|s| Self::rr_available(s, true))
        {
            if used(sf, mask) {
                fallback = Some(sf.id);
            } else {
                best = Some(sf.id);
            }
        }
        best.or(fallback)
    }
}

impl Scheduler for RoundRobin {
    fn name(&self) -> &'static str {
        "roundrobin"
    }

    fn schedule(&mut self, view: &ConnView<'_>, out: &mut Vec<Action>) {
        if self.quota.len() < view.subflows.len() {
            self.quota.resize(view.subflows.len(), 0);
        }
        if let Some(head) = reinject_head(view) {
            if let Some(id) = Self::reinject_subflow(view, head.sent_on_mask) {
                let len = head.len.min(view.subflows[id].free_cwnd_bytes());
                out.push(Action::Resend {
                    subflow: id,
                    dsn: head.dsn,
                    len,
                    kind: ResendKind::Reinject,
                });
            }
            return;
        }
        if view.unsent_bytes == 0
            || !new_data_fits_window(view, view.subflows.first().map_or(1, |s| s.mss_bytes))
        {
            return;
        }
        let n = self.cfg.num_segments;
        let mut chosen = None;
        for _round in 0..2 {
            let (mut considered, mut full) = (0, 0);
            chosen = None;
            for sf in view.subflows.iter().rev() {
                if !Self::rr_available(sf, self.cfg.cwnd_limited) {
                    continue;
                }
                considered += 1;
                let q = self.quota[sf.id];
                if q > 0 && q < n {
                    chosen = Some((sf.id, n - q));
                    break;
                }
                if q == 0 {
                    chosen = Some((sf.id, n));
                }
                if q >= n {
                    full += 1;
                }
            }
            if chosen.is_none() && considered > 0 && considered == full {
                for sf in view
                    .subflows
                    .iter()
                    .filter(|s| Self::rr_available(s, self.cfg.cwnd_limited))
                {
                    self.quota[sf.id] = 0;
                }
                continue; // new round
            }
            break;
        }
        let Some((id, split)) = chosen else { return };
        let sf = &view.subflows[id];
        if !Self::rr_available(sf, true) {
            return; // strict turn: wait for this subflow's window
        }
        let bytes = split
            .saturating_mul(sf.mss_bytes)
            .min(sf.free_cwnd_bytes())
            .min(view.unsent_bytes)
            .min(view.rwnd_room_bytes());
        if bytes == 0 {
            return;
        }
        self.quota[id] = self.quota[id].saturating_add(bytes.div_ceil(sf.mss_bytes.max(1)).max(1));
        out.push(Action::SendNew {
            subflow: id,
            max_bytes: bytes,
        });
    }

    fn on_rejected(&mut self, action: Action, _why: Rejection, _now_ns: u64) {
        // A turn that did not happen is given back.
        if let Action::SendNew { subflow, .. } = action {
            if let Some(q) = self.quota.get_mut(subflow) {
                *q = q.saturating_sub(self.cfg.num_segments);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::testing::*;
    use super::*;

    fn targets(rr: &mut RoundRobin, s: &[SubflowView], calls: usize) -> Vec<usize> {
        (0..calls)
            .filter_map(|_| {
                let mut out = Vec::new();
                rr.schedule(&conn(s, 1_000_000), &mut out);
                match out[..] {
                    [Action::SendNew { subflow, max_bytes }] => {
                        assert_eq!(max_bytes, MSS);
                        Some(subflow)
                    }
                    _ => None,
                }
            })
            .collect()
    }

    #[test]
    fn alternates_between_subflows_regardless_of_rtt() {
        let s = [sf(0, 10, 10), sf(1, 200, 10), sf(2, 50, 10)];
        let mut rr = RoundRobin::default();
        assert_eq!(targets(&mut rr, &s, 6), vec![0, 1, 2, 0, 1, 2]);
    }

    #[test]
    fn cwnd_limited_skips_a_full_subflow_strict_mode_waits_for_it() {
        let mut s = [sf(0, 10, 10), sf(1, 10, 10)];
        s[1].in_flight_bytes = s[1].cwnd_bytes;
        assert_eq!(targets(&mut RoundRobin::default(), &s, 3), vec![0, 0, 0]);
        let mut strict = RoundRobin::new(Config {
            num_segments: 1,
            cwnd_limited: false,
        });
        assert_eq!(targets(&mut strict, &s, 3), vec![0]);
    }

    #[test]
    fn num_segments_gives_bursts_per_turn() {
        let s = [sf(0, 10, 10), sf(1, 10, 10)];
        let mut rr = RoundRobin::new(Config {
            num_segments: 3,
            cwnd_limited: true,
        });
        let mut out = Vec::new();
        rr.schedule(&conn(&s, 1_000_000), &mut out);
        rr.schedule(&conn(&s, 1_000_000), &mut out);
        assert_eq!(
            out,
            vec![
                Action::SendNew {
                    subflow: 0,
                    max_bytes: 3 * MSS
                },
                Action::SendNew {
                    subflow: 1,
                    max_bytes: 3 * MSS
                }
            ]
        );
    }
}
