//! BM: bufferbloat mitigation (MPT-BM) as a wrapper around any scheduler.
//!
//! Source: Ferlin, Dreibholz, Alay, "Tackling the challenge of bufferbloat in multi-path
//! transport over heterogeneous wireless networks", IWQoS 2014; evaluated as "BM" in Paasch et
//! al. CSWS 2014; `reference/schedulers.md` §2.3. No kernel code was found; the formula is
//! **[UNVERIFIED]** (recalled from the paper, per the reference).
//!
//! A subflow whose smoothed RTT has grown far above a reference RTT may keep at most
//! `cwnd_limit = bm_lambda × (srtt_ref / srtt) × cwnd` bytes in flight (and queued), so a
//! bloated path stops absorbing data; the cap binds only when `srtt > bm_lambda × srtt_ref`.
//! The wrapper shows the inner scheduler each subflow with its cwnd lowered to the cap (so a
//! cwnd-respecting scheduler sees it as full) and drops, reporting them back to the inner
//! scheduler as `SubflowQueueFull`, actions that would still put data on a capped subflow
//! (schedulers that queue beyond cwnd).
//!
//! Decisions **[PROJECT DECISION]**: `bm_lambda` default 3 (placeholder from the reference);
//! `bm_reference` = `subflow_min` (each subflow's own minimum sRTT over the connection, pure
//! bufferbloat control, default) or `connection_min` (lowest current sRTT over all usable
//! subflows, heterogeneity control).

use serde::{Deserialize, Serialize};

use super::common::{forward_events_to_inner, CheckConfig};
use super::{Action, ConnView, LossKind, Rejection, Scheduler, SubflowId, SubflowView};

/// Which RTT the bloat of a subflow is measured against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reference {
    /// The subflow's own minimum sRTT seen so far.
    SubflowMin,
    /// The lowest current sRTT among usable subflows.
    ConnectionMin,
}

/// BM parameters (prefixed `bm_`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Tolerance factor λ (> 1): the cap binds once `srtt > λ × srtt_ref`. Default 3.0
    /// ([UNVERIFIED] placeholder, `reference/schedulers.md` §2.3).
    pub bm_lambda: f64,
    /// Reference RTT: `"subflow_min"` (default) or `"connection_min"`.
    pub bm_reference: Reference,
}

impl CheckConfig for Config {
    fn check(&self) -> Result<(), String> {
        if self.bm_lambda.is_nan() || self.bm_lambda < 1.0 {
            return Err(format!(
                "bm_lambda must be at least 1 (got {})",
                self.bm_lambda
            ));
        }
        Ok(())
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            bm_lambda: 3.0,
            bm_reference: Reference::SubflowMin,
        }
    }
}

/// BM wrapper around the scheduler `S`.
#[derive(Debug)]
pub struct Bm<S> {
    inner: S,
    cfg: Config,
    /// Per subflow: minimum sRTT seen, ns (0 = none yet).
    min_srtt_ns: Vec<u64>,
    /// Scratch copy of the subflows with capped windows (reused between calls).
    capped: Vec<SubflowView>,
}

impl<S: Scheduler> Bm<S> {
    /// Wraps `inner`.
    pub fn new(inner: S, cfg: Config) -> Self {
        Self {
            inner,
            cfg,
            min_srtt_ns: Vec::new(),
            capped: Vec::new(),
        }
    }

    /// The in-flight cap of `sf`, bytes (its cwnd when not bloated).
    fn cap_bytes(&self, sf: &SubflowView, conn_min_ns: u64) -> u64 {
        if !sf.has_rtt_sample || sf.srtt_ns == 0 {
            return sf.cwnd_bytes;
        }
        let reference = match self.cfg.bm_reference {
            Reference::SubflowMin => self.min_srtt_ns.get(sf.id).copied().unwrap_or(0),
            Reference::ConnectionMin => conn_min_ns,
        };
        if reference == 0 {
            return sf.cwnd_bytes;
        }
        let lambda = if self.cfg.bm_lambda.is_finite() {
            self.cfg.bm_lambda.max(0.0)
        } else {
            1.0
        };
        let limit = lambda * (reference as f64 / sf.srtt_ns as f64) * sf.cwnd_bytes as f64;
        if limit >= sf.cwnd_bytes as f64 {
            sf.cwnd_bytes
        } else {
            // Never below one segment: a subflow capped to nothing sends nothing, takes no new
            // RTT sample and stays "bloated" forever (a single-path connection then stalls).
            (limit as u64).max(sf.mss_bytes.max(1)).min(sf.cwnd_bytes)
        }
    }
}

impl<S: Scheduler> Scheduler for Bm<S> {
    /// The inner scheduler's name; the registry reports the composed name (`"minrtt+rp"`).
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn schedule(&mut self, view: &ConnView<'_>, out: &mut Vec<Action>) {
        if self.min_srtt_ns.len() < view.subflows.len() {
            self.min_srtt_ns.resize(view.subflows.len(), 0);
        }
        for sf in view
            .subflows
            .iter()
            .filter(|s| s.has_rtt_sample && s.srtt_ns > 0)
        {
            let m = &mut self.min_srtt_ns[sf.id];
            if *m == 0 || sf.srtt_ns < *m {
                *m = sf.srtt_ns;
            }
        }
        let conn_min_ns = view
            .subflows
            .iter()
            .filter(|s| s.usable() && s.has_rtt_sample && s.srtt_ns > 0)
            .map(|s| s.srtt_ns)
            .min()
            .unwrap_or(0);
        let mut capped = std::mem::take(&mut self.capped);
        capped.clear();
        capped.extend(view.subflows.iter().map(|sf| {
            let mut c = sf.clone();
            c.cwnd_bytes = self.cap_bytes(sf, conn_min_ns);
            c
        }));
        let inner_view = ConnView {
            subflows: &capped,
            ..*view
        };
        let start = out.len();
        self.inner.schedule(&inner_view, out);
        // Drop what would still load a capped subflow (schedulers that queue beyond cwnd).
        let mut i = start;
        while i < out.len() {
            let target = match out[i] {
                Action::SendNew { subflow, .. } | Action::Resend { subflow, .. } => Some(subflow),
                Action::Penalize { .. } => None,
            };
            let over = target.and_then(|id| capped.get(id)).is_some_and(|c| {
                c.cwnd_bytes < view.subflows[c.id].cwnd_bytes
                    && c.in_flight_bytes + c.queued_bytes >= c.cwnd_bytes
            });
            if over {
                let a = out.remove(i);
                self.inner
                    .on_rejected(a, Rejection::SubflowQueueFull, view.now_ns);
            } else {
                i += 1;
            }
        }
        self.capped = capped;
    }

    forward_events_to_inner!();
    fn on_rejected(&mut self, action: Action, why: Rejection, now_ns: u64) {
        self.inner.on_rejected(action, why, now_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::testing::*;
    use super::super::minrtt::MinRtt;
    use super::super::otias::Otias;
    use super::*;

    #[test]
    fn stops_sending_on_a_subflow_whose_rtt_has_bloated() {
        let mut bm = Bm::new(MinRtt::default(), Config::default());
        // First call: subflow 1 at its uncongested 20 ms, the only one with room.
        let mut s = [sf(0, 10, 10), sf(1, 20, 10)];
        s[0].in_flight_bytes = s[0].cwnd_bytes;
        let mut out = Vec::new();
        bm.schedule(&conn(&s, 100_000), &mut out);
        assert_eq!(
            out,
            vec![Action::SendNew {
                subflow: 1,
                max_bytes: 10 * MSS
            }]
        );
        // Its sRTT bloats to 200 ms (10x): cap = 3 x 0.1 x cwnd = 3 segments < 4 in flight.
        s[1].srtt_ns = 200 * MS;
        s[1].in_flight_bytes = 4 * MSS;
        let mut out = Vec::new();
        bm.schedule(&conn(&s, 100_000), &mut out);
        assert!(out.is_empty(), "{out:?}");
        // Without BM minRTT would use the bloated subflow.
        let mut out = Vec::new();
        MinRtt::default().schedule(&conn(&s, 100_000), &mut out);
        assert_eq!(
            out,
            vec![Action::SendNew {
                subflow: 1,
                max_bytes: 6 * MSS
            }]
        );
    }

    #[test]
    fn connection_reference_caps_a_slow_path_and_queueing_schedulers_are_filtered() {
        let cfg = Config {
            bm_lambda: 2.0,
            bm_reference: Reference::ConnectionMin,
        };
        // Subflow 1 is 10x slower than subflow 0: cap 2 x 0.1 x 10 = 2 segments, 3 in flight.
        let mut s = [sf(0, 10, 10), sf(1, 100, 10)];
        s[0].in_flight_bytes = 10 * MSS;
        s[0].queued_bytes = 40 * MSS;
        s[1].in_flight_bytes = 3 * MSS;
        let pick = |sched: &mut dyn Scheduler, s: &[SubflowView]| {
            let mut out = Vec::new();
            sched.schedule(&conn(s, 100_000), &mut out);
            out
        };
        // OTIAS alone: subflow 1 arrives first (50 ms against 55 ms queued behind subflow 0).
        assert!(matches!(
            pick(&mut Otias::default(), &s)[..],
            [Action::SendNew { subflow: 1, .. }]
        ));
        // With BM, subflow 1 shows a full (capped) window: 150 ms, so subflow 0 is chosen.
        let mut bm = Bm::new(Otias::default(), cfg.clone());
        assert!(matches!(
            pick(&mut bm, &s)[..],
            [Action::SendNew { subflow: 0, .. }]
        ));
        // Even when OTIAS would queue on the capped subflow, BM drops the action.
        s[0].queued_bytes = 200 * MSS;
        let mut bm = Bm::new(Otias::default(), cfg);
        assert!(pick(&mut bm, &s).is_empty());
    }
}
