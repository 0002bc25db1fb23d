//! Path events: a path going down and coming back (the interface disappears: hosts see it),
//! and impairments the hosts do not see (the link stays up): a blackhole, a loss ramp, an RTT
//! spike, a rate collapse. Each impairment starts at `at_ns` and, with `duration_ns`, is lifted
//! at `at_ns + duration_ns` (recovery); events compose in time, several on one path at once.
//!
//! Two JSON shapes are accepted in `path_events`: the original `{"at_ns", "path", "up"}` (a
//! path going down or up), and `{"kind", "at_ns", "path", ...}` with the kind's parameters.
//! The types are in `config.rs` with the rest of the normalized configuration; here is what
//! they mean to the event loop.

use crate::config::{LinkDirection, PathEvent, PathImpairment, PathUpDown};
use mpsched_engine::net::{Impairment, LossRamp};

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
