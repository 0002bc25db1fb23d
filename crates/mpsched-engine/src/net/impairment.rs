//! Impairments a link can be put under for a while, on top of its configured behaviour: a
//! blackhole (the link stays up and every packet is silently lost, as when a Wi-Fi association
//! dies), a loss probability ramping linearly over time, extra propagation delay (bufferbloat
//! onset, a handover), and a serialisation rate limit (rate collapse).
//!
//! The event loop sets and clears them at the times its scenario says
//! ([`super::Network::set_impairment`]). They apply to packets as the link accepts them: a
//! packet already accepted keeps the schedule it was given (its serialisation end and arrival
//! are computed at acceptance, see `link`), so a change takes effect for the packets that
//! arrive at the link from the change on. The one exception is the rate: a rate limit set or
//! lifted re-times the packets still waiting in the queue (a qdisc prices each packet at
//! dequeue with the rate in force then).

use crate::rng::Rng;

/// A loss probability rising (or falling) linearly from `from_p` at `start_ns` to `to_p` at
/// `end_ns`, and `to_p` after that.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LossRamp {
    /// Start of the ramp, ns.
    pub start_ns: u64,
    /// End of the ramp, ns (`to_p` holds from then on).
    pub end_ns: u64,
    /// Loss probability at `start_ns`, in [0, 1].
    pub from_p: f64,
    /// Loss probability at and after `end_ns`, in [0, 1].
    pub to_p: f64,
}

impl LossRamp {
    /// Loss probability at `now_ns` (`from_p` before the start).
    pub fn p_at(&self, now_ns: u64) -> f64 {
        if now_ns <= self.start_ns {
            return self.from_p;
        }
        if now_ns >= self.end_ns {
            return self.to_p;
        }
        let f = (now_ns - self.start_ns) as f64 / (self.end_ns - self.start_ns) as f64;
        self.from_p + (self.to_p - self.from_p) * f
    }
}

/// The impairments currently in force on a link (the default: none).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Impairment {
    /// Every packet is lost after serialisation (the queue and transmitter still work).
    pub blackhole: bool,
    /// Extra random loss, drawn after the configured loss model.
    pub loss_ramp: Option<LossRamp>,
    /// Added to the propagation delay of each packet, ns.
    pub extra_delay_ns: u64,
    /// Serialisation rate while in force, bit/s (replaces the configured rate or capacity
    /// model; must be positive: a link that stops is a blackhole or a path going down).
    pub rate_limit_bps: Option<u64>,
}

impl Impairment {
    /// True when nothing is in force.
    #[inline]
    pub fn is_none(&self) -> bool {
        *self == Impairment::default()
    }

    /// Whether a packet leaving the link at `now_ns` is lost to the impairment (draws from
    /// `rng` only while a loss ramp is in force).
    #[inline]
    pub(crate) fn loses(&self, now_ns: u64, rng: &mut Rng) -> bool {
        if self.blackhole {
            return true;
        }
        match self.loss_ramp {
            Some(r) => rng.bernoulli(r.p_at(now_ns).clamp(0.0, 1.0)),
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ramp_interpolates_linearly_and_holds_its_end_value() {
        let r = LossRamp { start_ns: 1_000, end_ns: 3_000, from_p: 0.0, to_p: 0.5 };
        assert_eq!(r.p_at(0), 0.0);
        assert_eq!(r.p_at(2_000), 0.25);
        assert_eq!(r.p_at(3_000), 0.5);
        assert_eq!(r.p_at(10_000), 0.5);
    }
}
