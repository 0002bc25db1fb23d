//! Delay variation of a link, in the two modes of `reference/testbed.md` §4d.
//!
//! * `reorder`: netem semantics, an independent extra delay per packet; packets overtake.
//! * `smooth`: a jitter value is drawn every period and linearly interpolated in between, so
//!   the delay drifts within delay ± jitter and a packet never overtakes the one before it.
//!   With slope 2J/P < 1 the delay is continuous and nothing is held back. This is what the
//!   CFS paper's "200 ms ± 150 ms" paths mean on a real testbed.

use crate::rng::Rng;
use serde::{Deserialize, Serialize};

/// Delay variation model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(tag = "mode", rename_all = "snake_case", deny_unknown_fields)]
pub enum JitterConfig {
    /// Constant delay.
    #[default]
    None,
    /// Independent extra delay per packet (uniform in [-j, j] or normal with sd j), total delay
    /// clipped at zero; packets reorder.
    Reorder {
        /// Jitter amplitude (uniform half-width or normal standard deviation), ns.
        jitter_ns: u64,
        /// Distribution of the extra delay.
        #[serde(default)]
        distribution: JitterDistribution,
    },
    /// Uniform samples in [-j, j] every `period_ns`, linearly interpolated; FIFO.
    Smooth {
        /// Jitter amplitude, ns.
        jitter_ns: u64,
        /// Time between samples, ns (must be positive).
        period_ns: u64,
    },
}

/// Distribution of per-packet jitter in `reorder` mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum JitterDistribution {
    /// Uniform in [-j, +j].
    #[default]
    Uniform,
    /// Normal with standard deviation j.
    Normal,
}

/// A jitter model with its state.
#[derive(Debug, Clone)]
pub(crate) struct JitterState {
    config: JitterConfig,
    /// Smooth mode: index k of the sample at time k * period, and the samples at k and k + 1.
    sample_index: u64,
    sample_now: f64,
    sample_next: f64,
    started: bool,
}

impl JitterState {
    /// Any variation configured (without one, `delay_ns` returns the base delay and draws
    /// nothing).
    #[inline]
    pub(crate) fn is_on(&self) -> bool {
        !matches!(self.config, JitterConfig::None)
    }

    pub(crate) fn new(config: JitterConfig) -> Self {
        Self { config, sample_index: 0, sample_now: 0.0, sample_next: 0.0, started: false }
    }

    /// True when packets may overtake one another.
    pub(crate) fn reorders(&self) -> bool {
        matches!(self.config, JitterConfig::Reorder { jitter_ns, .. } if jitter_ns > 0)
    }

    /// Propagation delay of a packet that starts propagating at `now_ns`, for a base `delay_ns`.
    /// `now_ns` must not decrease between calls (smooth mode walks its samples forward).
    /// (Always inlined: it is on every packet's path, called from more than one place.)
    #[inline(always)]
    pub(crate) fn delay_ns(&mut self, now_ns: u64, delay_ns: u64, rng: &mut Rng) -> u64 {
        let extra: f64 = match self.config {
            JitterConfig::None => return delay_ns,
            JitterConfig::Reorder { jitter_ns, distribution } => {
                let j = jitter_ns as f64;
                match distribution {
                    JitterDistribution::Uniform => rng.uniform(-j, j),
                    JitterDistribution::Normal => j * rng.standard_normal(),
                }
            }
            JitterConfig::Smooth { jitter_ns, period_ns } => {
                let j = jitter_ns as f64;
                let k = now_ns / period_ns;
                if !self.started {
                    self.started = true;
                    self.sample_index = k;
                    self.sample_now = rng.uniform(-j, j);
                    self.sample_next = rng.uniform(-j, j);
                }
                while self.sample_index < k {
                    self.sample_index += 1;
                    self.sample_now = self.sample_next;
                    self.sample_next = rng.uniform(-j, j);
                }
                let frac = (now_ns - k * period_ns) as f64 / period_ns as f64;
                self.sample_now + (self.sample_next - self.sample_now) * frac
            }
        };
        (delay_ns as f64 + extra).max(0.0).round() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::NS_PER_MS;

    #[test]
    fn smooth_jitter_stays_within_the_band_and_moves_slowly() {
        let cfg = JitterConfig::Smooth { jitter_ns: 150 * NS_PER_MS, period_ns: 200 * NS_PER_MS };
        let mut s = JitterState::new(cfg);
        let mut rng = Rng::stream(1, 2);
        let base = 200 * NS_PER_MS;
        let mut prev: Option<u64> = None;
        let (mut lo, mut hi) = (u64::MAX, 0);
        for t in (0..60_000).map(|i| i * NS_PER_MS) {
            let d = s.delay_ns(t, base, &mut rng);
            assert!((50 * NS_PER_MS..=350 * NS_PER_MS).contains(&d), "{d}");
            if let Some(p) = prev {
                // Slope at most 2J/P = 1.5 ns per ns: at most 1.5 ms change per 1 ms step.
                assert!(d.abs_diff(p) <= 3 * NS_PER_MS / 2 + 1);
            }
            prev = Some(d);
            lo = lo.min(d);
            hi = hi.max(d);
        }
        // Over 300 samples the band is explored nearly end to end.
        assert!(lo < 80 * NS_PER_MS && hi > 320 * NS_PER_MS, "{lo} {hi}");
    }

    #[test]
    fn reorder_normal_jitter_has_the_configured_spread() {
        let cfg = JitterConfig::Reorder { jitter_ns: 10 * NS_PER_MS, distribution: JitterDistribution::Normal };
        let mut s = JitterState::new(cfg);
        let mut rng = Rng::stream(1, 3);
        let n = 100_000;
        let xs: Vec<f64> = (0..n).map(|_| s.delay_ns(0, 100 * NS_PER_MS, &mut rng) as f64).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
        assert!((mean / NS_PER_MS as f64 - 100.0).abs() < 0.2, "{mean}");
        assert!((sd / NS_PER_MS as f64 - 10.0).abs() < 0.2, "{sd}");
    }
}
