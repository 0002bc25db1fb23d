//! Freeze: minRTT that stops using ("freezes") a path much slower than the fastest.
//!
//! Source: no published kernel implementation; the idea ("the scheduler freezes the slow path
//! if the RTT difference is above a certain threshold, e.g., 100 ms") is cited by Heo & Yoo,
//! KSII TIIS 2019, §2; definition per `reference/schedulers.md` §2.14 **[PROJECT DECISION]**.
//!
//! A subflow is frozen while its sRTT exceeds the lowest sRTT among usable active subflows by
//! more than `threshold_ns`; once frozen it thaws only when the difference falls below
//! `threshold_ns − hysteresis_ns`. New data follows minRTT over the subflows that are not
//! frozen (a frozen subflow counts as busy, so the scheduler waits rather than spilling onto a
//! backup). Frozen subflows keep their congestion state and their data in flight, carry
//! reinjections when no unfrozen subflow can (`frozen_carry_reinject`), and, with
//! `keep_probe`, get one segment every `probe_interval_ns` so their RTT estimate stays fresh.
//!
//! Defaults: threshold 100 ms, hysteresis 10 ms, probe on, probe interval 1 s.

use serde::{Deserialize, Serialize};

use super::common::{
    min_rtt_select, new_data_fits_window, oot_select, reinject_head, send_burst, CheckConfig,
};
use super::{Action, ConnView, ResendKind, Scheduler, SubflowView};

/// Freeze parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Freeze a subflow whose sRTT exceeds the fastest by more than this, ns. Default 100 ms.
    pub threshold_ns: u64,
    /// Thaw only below `threshold_ns − hysteresis_ns`, ns. Default 10 ms.
    pub hysteresis_ns: u64,
    /// Let frozen subflows carry reinjections no unfrozen subflow can take. Default true.
    pub frozen_carry_reinject: bool,
    /// Send one probe segment per `probe_interval_ns` on a frozen subflow. Default true.
    pub keep_probe: bool,
    /// Interval between probes on a frozen subflow, ns. Default 1 s.
    pub probe_interval_ns: u64,
}

impl CheckConfig for Config {
    fn check(&self) -> Result<(), String> {
        if self.hysteresis_ns > self.threshold_ns || self.probe_interval_ns == 0 {
            return Err("need hysteresis_ns <= threshold_ns and probe_interval_ns > 0".into());
        }
        Ok(())
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            threshold_ns: 100_000_000,
            hysteresis_ns: 10_000_000,
            frozen_carry_reinject: true,
            keep_probe: true,
            probe_interval_ns: 1_000_000_000,
        }
    }
}

/// Freeze state.
#[derive(Debug, Clone, Default)]
pub struct Freeze {
    cfg: Config,
    /// Per subflow: frozen since (ns), or `None`.
    frozen_since_ns: Vec<Option<u64>>,
    /// Per subflow: time of the last probe, ns.
    last_probe_ns: Vec<u64>,
}

impl Freeze {
    /// Builds the scheduler.
    pub fn new(cfg: Config) -> Self {
        Self {
            cfg,
            ..Self::default()
        }
    }

    /// True while subflow `id` is frozen.
    pub fn is_frozen(&self, id: usize) -> bool {
        self.frozen_since_ns.get(id).is_some_and(Option::is_some)
    }

    fn update(&mut self, view: &ConnView<'_>) {
        let n = view.subflows.len();
        if self.frozen_since_ns.len() < n {
            self.frozen_since_ns.resize(n, None);
            self.last_probe_ns.resize(n, 0);
        }
        let sampled = |s: &&SubflowView| s.usable() && s.has_rtt_sample && s.srtt_ns > 0;
        let Some(min_ns) = view
            .subflows
            .iter()
            .filter(|s| !s.backup)
            .filter(sampled)
            .map(|s| s.srtt_ns)
            .min()
        else {
            return;
        };
        let thaw_below = self.cfg.threshold_ns.saturating_sub(self.cfg.hysteresis_ns);
        for sf in view.subflows.iter().filter(sampled) {
            let diff = sf.srtt_ns - min_ns.min(sf.srtt_ns);
            let slot = &mut self.frozen_since_ns[sf.id];
            match *slot {
                Some(_) if diff < thaw_below => *slot = None,
                None if diff > self.cfg.threshold_ns => {
                    *slot = Some(view.now_ns);
                    self.last_probe_ns[sf.id] = view.now_ns;
                }
                _ => {}
            }
        }
    }
}

impl Scheduler for Freeze {
    fn name(&self) -> &'static str {
        "freeze"
    }

    fn schedule(&mut self, view: &ConnView<'_>, out: &mut Vec<Action>) {
        self.update(view);
        let frozen = &self.frozen_since_ns;
        let thawed_avail = |s: &SubflowView| s.available() && frozen[s.id].is_none();
        if let Some(head) = reinject_head(view) {
            let mut pick = oot_select(
                view.subflows,
                head.sent_on_mask,
                |s| s.srtt_ns,
                thawed_avail,
            );
            if pick.is_none() && self.cfg.frozen_carry_reinject {
                pick = min_rtt_select(view.subflows, head.sent_on_mask);
            }
            if let Some(id) = pick {
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
        if view.unsent_bytes == 0 {
            return;
        }
        if self.cfg.keep_probe {
            for sf in view
                .subflows
                .iter()
                .filter(|s| frozen[s.id].is_some() && s.available())
            {
                if view.now_ns.saturating_sub(self.last_probe_ns[sf.id])
                    >= self.cfg.probe_interval_ns
                    && new_data_fits_window(view, sf.mss_bytes)
                {
                    let bytes = sf
                        .mss_bytes
                        .min(view.unsent_bytes)
                        .min(view.rwnd_room_bytes());
                    self.last_probe_ns[sf.id] = view.now_ns;
                    out.push(Action::SendNew {
                        subflow: sf.id,
                        max_bytes: bytes,
                    });
                    return;
                }
            }
        }
        let Some(id) = oot_select(view.subflows, 0, |s| s.srtt_ns, thawed_avail) else {
            return;
        };
        send_burst(view, id, out);
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::testing::*;
    use super::*;

    fn run(f: &mut Freeze, s: &[SubflowView], now_ns: u64) -> Vec<Action> {
        let mut v = conn(s, 1_000_000);
        v.now_ns = now_ns;
        let mut out = Vec::new();
        f.schedule(&v, &mut out);
        out
    }

    #[test]
    fn stops_a_path_whose_rtt_exceeds_the_fastest_by_more_than_the_threshold() {
        let mut s = [sf(0, 10, 10), sf(1, 150, 10)];
        s[0].in_flight_bytes = s[0].cwnd_bytes;
        let mut f = Freeze::default();
        // 140 ms above the fastest: frozen, so wait for the fast path.
        assert!(run(&mut f, &s, 0).is_empty());
        assert!(f.is_frozen(1));
        // 90 ms above: inside the hysteresis band, still frozen.
        s[1].srtt_ns = 100 * MS;
        assert!(run(&mut f, &s, 10 * MS).is_empty());
        // 80 ms above: thawed, minRTT uses it.
        s[1].srtt_ns = 90 * MS;
        assert!(matches!(
            run(&mut f, &s, 20 * MS)[..],
            [Action::SendNew { subflow: 1, .. }]
        ));
        // A path 95 ms slower is never frozen in the first place.
        let mut g = Freeze::default();
        s[1].srtt_ns = 105 * MS;
        assert!(matches!(
            run(&mut g, &s, 0)[..],
            [Action::SendNew { subflow: 1, .. }]
        ));
    }

    #[test]
    fn probes_a_frozen_path_once_per_interval() {
        let mut s = [sf(0, 10, 10), sf(1, 300, 10)];
        s[0].in_flight_bytes = s[0].cwnd_bytes;
        let mut f = Freeze::default();
        assert!(run(&mut f, &s, 0).is_empty());
        assert_eq!(
            run(&mut f, &s, 1_000 * MS),
            vec![Action::SendNew {
                subflow: 1,
                max_bytes: MSS
            }]
        );
        assert!(run(&mut f, &s, 1_001 * MS).is_empty());
    }
}
