//! Random loss models: independent (Bernoulli) and bursty (Gilbert-Elliott).

use crate::rng::Rng;
use serde::{Deserialize, Serialize};

/// Random loss model of a link (applied to each packet as it leaves the link).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(tag = "model", rename_all = "snake_case", deny_unknown_fields)]
pub enum LossConfig {
    /// No random loss.
    #[default]
    None,
    /// Each packet is lost independently with probability `p`.
    Bernoulli {
        /// Loss probability in [0, 1].
        p: f64,
    },
    /// Two-state Markov chain (Gilbert-Elliott): per packet, move Good->Bad with `p_good_bad`,
    /// Bad->Good with `p_bad_good`; then lose with `loss_good` / `loss_bad` in the new state.
    GilbertElliott {
        /// Probability of moving from Good to Bad, per packet.
        p_good_bad: f64,
        /// Probability of moving from Bad to Good, per packet.
        p_bad_good: f64,
        /// Loss probability in the Good state.
        loss_good: f64,
        /// Loss probability in the Bad state.
        loss_bad: f64,
    },
}

impl LossConfig {
    /// Checks that every probability lies in [0, 1]; returns the offending field.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        let check = |name: &'static str, p: f64| {
            if (0.0..=1.0).contains(&p) {
                Ok(())
            } else {
                Err((name, format!("must be a probability in [0, 1], got {p}")))
            }
        };
        match *self {
            LossConfig::None => Ok(()),
            LossConfig::Bernoulli { p } => check("p", p),
            LossConfig::GilbertElliott { p_good_bad, p_bad_good, loss_good, loss_bad } => {
                check("p_good_bad", p_good_bad)?;
                check("p_bad_good", p_bad_good)?;
                check("loss_good", loss_good)?;
                check("loss_bad", loss_bad)
            }
        }
    }

    /// Long-run loss rate of the model.
    pub fn mean_loss_rate(&self) -> f64 {
        match *self {
            LossConfig::None => 0.0,
            LossConfig::Bernoulli { p } => p,
            LossConfig::GilbertElliott { p_good_bad, p_bad_good, loss_good, loss_bad } => {
                let total = p_good_bad + p_bad_good;
                if total == 0.0 {
                    return loss_good;
                }
                let pi_bad = p_good_bad / total;
                (1.0 - pi_bad) * loss_good + pi_bad * loss_bad
            }
        }
    }
}

/// A loss model with its state.
#[derive(Debug, Clone)]
pub(crate) struct LossState {
    config: LossConfig,
    in_bad_state: bool,
}

impl LossState {
    /// No loss model (`lose` is always false and draws nothing).
    #[inline]
    pub(crate) fn is_none(&self) -> bool {
        matches!(self.config, LossConfig::None)
    }

    pub(crate) fn new(config: LossConfig) -> Self {
        Self { config, in_bad_state: false }
    }

    /// Decides whether the next packet is lost.
    #[inline]
    pub(crate) fn lose(&mut self, rng: &mut Rng) -> bool {
        match self.config {
            LossConfig::None => false,
            LossConfig::Bernoulli { p } => rng.bernoulli(p),
            LossConfig::GilbertElliott { p_good_bad, p_bad_good, loss_good, loss_bad } => {
                let flip = if self.in_bad_state { p_bad_good } else { p_good_bad };
                if rng.bernoulli(flip) {
                    self.in_bad_state = !self.in_bad_state;
                }
                rng.bernoulli(if self.in_bad_state { loss_bad } else { loss_good })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured_rate(cfg: LossConfig, n: usize) -> f64 {
        let mut s = LossState::new(cfg);
        let mut rng = Rng::stream(3, 9);
        (0..n).filter(|_| s.lose(&mut rng)).count() as f64 / n as f64
    }

    #[test]
    fn bernoulli_loses_the_configured_fraction() {
        let r = measured_rate(LossConfig::Bernoulli { p: 0.02 }, 500_000);
        // sd = sqrt(p(1-p)/n) ~ 2e-4; 5 sigma.
        assert!((r - 0.02).abs() < 1e-3, "{r}");
    }

    #[test]
    fn gilbert_elliott_matches_its_stationary_loss_rate() {
        let cfg = LossConfig::GilbertElliott { p_good_bad: 0.01, p_bad_good: 0.2, loss_good: 0.0, loss_bad: 0.5 };
        let expected = cfg.mean_loss_rate(); // 0.01/0.21*0.5 = 0.0238
        let r = measured_rate(cfg, 2_000_000);
        assert!((r - expected).abs() < 2e-3, "{r} vs {expected}");
    }

    #[test]
    fn out_of_range_probability_names_the_field() {
        let e = LossConfig::Bernoulli { p: 1.5 }.validate().unwrap_err();
        assert_eq!(e.0, "p");
    }
}
