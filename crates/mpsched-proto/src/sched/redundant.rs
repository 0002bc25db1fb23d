//! Redundant: every active subflow sends every unacknowledged byte once (OOT v0.90+).
//!
//! Source: OOT `net/mptcp/mptcp_redundant.c` (module 0.90, Erbshäußer/Frömmgen);
//! `reference/schedulers.md` §2.5b.
//!
//! Each subflow keeps its own pointer into the data sequence space (the end of what it has
//! sent). In round-robin order starting after the subflow served last, the first subflow with
//! cwnd room gets the next bytes past its pointer: data already sent elsewhere is re-sent as a
//! `Redundant` copy, data at `next_dsn` is new. A subflow whose pointer fell below `DATA_ACK`
//! jumps to the oldest unacknowledged byte, so a slow subflow never sends what the receiver
//! already has. Copies go only to active subflows; fresh data goes to a backup only when no
//! active subflow is usable. Reinjections (after a subflow failure) go first, on the minRTT
//! choice.
//!
//! Decision: the per-subflow pointer is a DSN rather than a kernel skb, so a subflow added
//! mid-connection starts at `DATA_ACK` (the kernel's "first segment of the queue"). One burst
//! of the subflow's free window per call.

use serde::{Deserialize, Serialize};

use super::common::{min_rtt_select, serve_reinject, CheckConfig};
use super::{Action, ConnView, Rejection, ResendKind, Scheduler, SubflowView};

/// Redundant has no tunable parameters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {}

/// Redundant scheduler state.
#[derive(Debug, Clone, Default)]
pub struct Redundant {
    /// Per subflow: DSN one past the last byte it sent (`None` = nothing yet).
    sent_to_dsn: Vec<Option<u64>>,
    /// Subflow the round-robin scan starts at.
    next_subflow: usize,
}

impl CheckConfig for Config {}

impl Redundant {
    /// Builds the scheduler.
    pub fn new(_cfg: Config) -> Self {
        Self::default()
    }
}

impl Scheduler for Redundant {
    fn name(&self) -> &'static str {
        "redundant"
    }

    fn schedule(&mut self, view: &ConnView<'_>, out: &mut Vec<Action>) {
        let n = view.subflows.len();
        if n == 0 {
            return;
        }
        if self.sent_to_dsn.len() < n {
            self.sent_to_dsn.resize(n, None);
        }
        if serve_reinject(view, out, |mask| min_rtt_select(view.subflows, mask)).is_some() {
            return;
        }
        let active_valid = view
            .subflows
            .iter()
            .filter(|s| !s.backup && s.usable())
            .count();
        let start = self.next_subflow % n;
        for k in 0..n {
            let id = (start + k) % n;
            let sf: &SubflowView = &view.subflows[id];
            // Where this subflow stands: never below DATA_ACK, never past next_dsn (a SendNew
            // may have been applied only in part).
            let mut ptr = self.sent_to_dsn[id]
                .unwrap_or(view.data_acked)
                .clamp(view.data_acked, view.next_dsn);
            // Skip what already went out on this subflow by other means (reinjection, RP).
            for c in view.unacked {
                if c.dsn <= ptr && c.dsn.saturating_add(c.len) > ptr && c.sent_on(id) {
                    ptr = (c.dsn + c.len).min(view.next_dsn);
                }
            }
            self.sent_to_dsn[id] = Some(ptr);
            if !sf.available() {
                continue;
            }
            let room = sf.free_cwnd_bytes();
            if ptr < view.next_dsn {
                if sf.backup {
                    continue; // copies only on active subflows
                }
                let len = (view.next_dsn - ptr).min(room);
                out.push(Action::Resend {
                    subflow: id,
                    dsn: ptr,
                    len,
                    kind: ResendKind::Redundant,
                });
                self.sent_to_dsn[id] = Some(ptr + len);
            } else {
                if view.unsent_bytes == 0 || (sf.backup && active_valid > 0) {
                    continue;
                }
                let len = room.min(view.unsent_bytes).min(view.rwnd_room_bytes());
                if len == 0 {
                    continue;
                }
                out.push(Action::SendNew {
                    subflow: id,
                    max_bytes: len,
                });
                self.sent_to_dsn[id] = Some(ptr + len);
            }
            self.next_subflow = (id + 1) % n;
            return;
        }
    }

    fn on_rejected(&mut self, action: Action, _why: Rejection, _now_ns: u64) {
        if let Action::Resend {
            subflow,
            dsn,
            kind: ResendKind::Redundant,
            ..
        } = action
        {
            if let Some(p) = self.sent_to_dsn.get_mut(subflow) {
                *p = Some(p.map_or(dsn, |v| v.min(dsn)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::testing::*;
    use super::*;

    #[test]
    fn every_active_subflow_gets_every_byte() {
        let s = [sf(0, 10, 10), sf(1, 100, 10), sf(2, 50, 10)];
        let mut red = Redundant::default();
        let mut out = Vec::new();
        let mut v = conn(&s, 4000);
        red.schedule(&v, &mut out);
        assert_eq!(
            out,
            vec![Action::SendNew {
                subflow: 0,
                max_bytes: 4000
            }]
        );
        // The connection applied it: next_dsn moved on, nothing unsent.
        v.next_dsn = 4000;
        v.unsent_bytes = 0;
        let un = [chunk(0, 4000, &[0])];
        v.unacked = &un;
        out.clear();
        red.schedule(&v, &mut out);
        red.schedule(&v, &mut out);
        red.schedule(&v, &mut out);
        assert_eq!(
            out,
            vec![
                Action::Resend {
                    subflow: 1,
                    dsn: 0,
                    len: 4000,
                    kind: ResendKind::Redundant
                },
                Action::Resend {
                    subflow: 2,
                    dsn: 0,
                    len: 4000,
                    kind: ResendKind::Redundant
                },
            ]
        );
    }

    #[test]
    fn a_lagging_subflow_skips_what_is_already_acknowledged_and_backups_get_no_copies() {
        let mut s = [sf(0, 10, 10), sf(1, 100, 10), sf(2, 10, 10)];
        s[2].backup = true;
        let mut red = Redundant::default();
        let mut v = conn(&s, 0);
        v.next_dsn = 9000;
        v.data_acked = 6000;
        let un = [chunk(6000, 3000, &[0])];
        v.unacked = &un;
        let mut out = Vec::new();
        for _ in 0..3 {
            red.schedule(&v, &mut out);
        }
        assert_eq!(
            out,
            vec![Action::Resend {
                subflow: 1,
                dsn: 6000,
                len: 3000,
                kind: ResendKind::Redundant
            }]
        );
    }
}
