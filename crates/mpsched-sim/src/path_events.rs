//! Path events: a path going down and coming back (the interface disappears: hosts see it),
//! and impairments the hosts do not see (the link stays up): a blackhole, a loss ramp, an RTT
//! spike, a rate collapse. Each impairment starts at `at_ns` and, with `duration_ns`, is lifted
//! at `at_ns + duration_ns` (recovery); events compose in time, several on one path at once.
//!
//! Two JSON shapes are accepted in `path_events`: the original `{"at_ns", "path", "up"}` (a
//! path going down or up), and `{"kind", "at_ns", "path", ...}` with the kind's parameters.

use mpsched_engine::net::{Impairment, LossRamp};
use serde::{Deserialize, Serialize};

/// One entry of `path_events`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(untagged)]
pub enum PathEvent {
    /// The original shape: the path goes down (`up` false) or comes back (`up` true).
    UpDown(PathUpDown),
    /// An event with a `kind`.
    Kind(PathImpairment),
}

/// A path going down (its links lose everything they hold and the hosts see the interface
/// go) or coming back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathUpDown {
    /// Time of the event, ns.
    pub at_ns: u64,
    /// Path index.
    pub path: usize,
    /// False: the path goes down; true: it comes back.
    pub up: bool,
}

/// Which of a path's link chains an impairment applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum LinkDirection {
    /// Both the downlink (server to client) and the uplink chain.
    #[default]
    Both,
    /// The downlink chain only.
    Down,
    /// The uplink chain only.
    Up,
}

/// An event with a `kind`. Every kind has `at_ns` (start, ns), `path` (index) and an optional
/// `duration_ns` (the event is undone then; without it, it lasts to the end of the run).
/// Impairments (all but `down`) have an optional `direction` ("both", "down", "up").
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum PathImpairment {
    /// The path goes down as in the original shape (hosts see it), and comes back after
    /// `duration_ns`.
    Down {
        /// Start, ns.
        at_ns: u64,
        /// Path index.
        path: usize,
        /// Time until the path comes back, ns.
        #[serde(default)]
        duration_ns: Option<u64>,
    },
    /// Every packet on the path is silently lost; the hosts see no change (a dead Wi-Fi
    /// association, a middlebox dropping the flow).
    Blackhole {
        /// Start, ns.
        at_ns: u64,
        /// Path index.
        path: usize,
        /// Time until it is lifted, ns.
        #[serde(default)]
        duration_ns: Option<u64>,
        /// Link chains affected.
        #[serde(default)]
        direction: LinkDirection,
    },
    /// Extra random loss rising linearly from `from_p` at `at_ns` to `to_p` at `at_ns +
    /// ramp_ns`, then holding `to_p` (until `duration_ns` after `at_ns`, if given).
    LossRamp {
        /// Start, ns.
        at_ns: u64,
        /// Path index.
        path: usize,
        /// Time until it is lifted, ns (at least `ramp_ns`).
        #[serde(default)]
        duration_ns: Option<u64>,
        /// Link chains affected.
        #[serde(default)]
        direction: LinkDirection,
        /// Length of the ramp, ns.
        ramp_ns: u64,
        /// Loss probability at the start, in [0, 1].
        from_p: f64,
        /// Loss probability at the end of the ramp and after, in [0, 1].
        to_p: f64,
    },
    /// `extra_delay_ns` more propagation delay on each link of the chain (bufferbloat onset).
    RttSpike {
        /// Start, ns.
        at_ns: u64,
        /// Path index.
        path: usize,
        /// Time until it is lifted, ns.
        #[serde(default)]
        duration_ns: Option<u64>,
        /// Link chains affected.
        #[serde(default)]
        direction: LinkDirection,
        /// Delay added per link, ns.
        extra_delay_ns: u64,
    },
    /// The links of the chain serialise at `rate_bps` (replacing their rate or capacity model).
    RateCollapse {
        /// Start, ns.
        at_ns: u64,
        /// Path index.
        path: usize,
        /// Time until it is lifted, ns.
        #[serde(default)]
        duration_ns: Option<u64>,
        /// Link chains affected.
        #[serde(default)]
        direction: LinkDirection,
        /// Rate while it lasts, bit/s (positive).
        rate_bps: u64,
    },
}

impl<'de> Deserialize<'de> for PathEvent {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let v = serde_json::Value::deserialize(d)?;
        if v.get("kind").is_some() {
            PathImpairment::deserialize(v).map(PathEvent::Kind).map_err(D::Error::custom)
        } else {
            PathUpDown::deserialize(v).map(PathEvent::UpDown).map_err(D::Error::custom)
        }
    }
}

/// What the event loop does at one time for one event.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum PathAction {
    /// Take the path down or bring it back (links and hosts).
    SetUp(bool),
    /// Start (`true`) or lift (`false`) an impairment on the chosen link chains.
    Impair { direction: LinkDirection, on: bool },
}

impl PathEvent {
    /// A path going down (`up` false) or coming back, in the original shape.
    pub fn up_down(at_ns: u64, path: usize, up: bool) -> Self {
        PathEvent::UpDown(PathUpDown { at_ns, path, up })
    }

    /// Path index.
    pub fn path(&self) -> usize {
        match *self {
            PathEvent::UpDown(e) => e.path,
            PathEvent::Kind(k) => match k {
                PathImpairment::Down { path, .. }
                | PathImpairment::Blackhole { path, .. }
                | PathImpairment::LossRamp { path, .. }
                | PathImpairment::RttSpike { path, .. }
                | PathImpairment::RateCollapse { path, .. } => path,
            },
        }
    }

    /// Start time, ns.
    pub fn at_ns(&self) -> u64 {
        match *self {
            PathEvent::UpDown(e) => e.at_ns,
            PathEvent::Kind(k) => match k {
                PathImpairment::Down { at_ns, .. }
                | PathImpairment::Blackhole { at_ns, .. }
                | PathImpairment::LossRamp { at_ns, .. }
                | PathImpairment::RttSpike { at_ns, .. }
                | PathImpairment::RateCollapse { at_ns, .. } => at_ns,
            },
        }
    }

    /// Time the event is undone, ns, if it is.
    pub fn end_ns(&self) -> Option<u64> {
        let d = match *self {
            PathEvent::UpDown(_) => None,
            PathEvent::Kind(k) => match k {
                PathImpairment::Down { duration_ns, .. }
                | PathImpairment::Blackhole { duration_ns, .. }
                | PathImpairment::LossRamp { duration_ns, .. }
                | PathImpairment::RttSpike { duration_ns, .. }
                | PathImpairment::RateCollapse { duration_ns, .. } => duration_ns,
            },
        };
        d.map(|d| self.at_ns().saturating_add(d))
    }

    /// What happens at the start (`start` true) or at the end.
    pub(crate) fn action(&self, start: bool) -> PathAction {
        match *self {
            PathEvent::UpDown(e) => PathAction::SetUp(e.up),
            PathEvent::Kind(PathImpairment::Down { .. }) => PathAction::SetUp(!start),
            PathEvent::Kind(
                PathImpairment::Blackhole { direction, .. }
                | PathImpairment::LossRamp { direction, .. }
                | PathImpairment::RttSpike { direction, .. }
                | PathImpairment::RateCollapse { direction, .. },
            ) => PathAction::Impair { direction, on: start },
        }
    }

    /// Puts this event's impairment into `imp` (`on`) or lifts it (the field it set returns to
    /// its default; the latest event of a kind on a link wins).
    pub(crate) fn apply(&self, imp: &mut Impairment, on: bool) {
        let PathEvent::Kind(k) = *self else { return };
        match k {
            PathImpairment::Down { .. } => {}
            PathImpairment::Blackhole { .. } => imp.blackhole = on,
            PathImpairment::LossRamp { at_ns, ramp_ns, from_p, to_p, .. } => {
                imp.loss_ramp =
                    on.then_some(LossRamp { start_ns: at_ns, end_ns: at_ns.saturating_add(ramp_ns), from_p, to_p });
            }
            PathImpairment::RttSpike { extra_delay_ns, .. } => imp.extra_delay_ns = if on { extra_delay_ns } else { 0 },
            PathImpairment::RateCollapse { rate_bps, .. } => imp.rate_limit_bps = on.then_some(rate_bps),
        }
    }

    /// Checks the parameters; returns (field, message).
    pub(crate) fn check(&self) -> Result<(), (&'static str, String)> {
        let PathEvent::Kind(k) = *self else { return Ok(()) };
        let prob = |name: &'static str, p: f64| {
            if (0.0..=1.0).contains(&p) {
                Ok(())
            } else {
                Err((name, format!("must be a probability in [0, 1], got {p}")))
            }
        };
        match k {
            PathImpairment::LossRamp { from_p, to_p, ramp_ns, duration_ns, .. } => {
                prob("from_p", from_p)?;
                prob("to_p", to_p)?;
                if duration_ns.is_some_and(|d| d < ramp_ns) {
                    return Err(("duration_ns", "must be at least ramp_ns".into()));
                }
            }
            PathImpairment::RateCollapse { rate_bps: 0, .. } => {
                return Err(("rate_bps", "must be positive (a path that stops is a blackhole or down)".into()));
            }
            _ => {}
        }
        Ok(())
    }
}
