//! Deterministic random streams.
//!
//! Every component that needs randomness (a link's loss model, its jitter, a traffic source)
//! owns its own stream, derived from the run seed and a stable component id. Adding a component
//! therefore never shifts the random numbers another component sees, and a run is reproducible
//! from its seed alone. There is no global or thread-local generator anywhere in the core.

use rand::{Rng as _, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// A deterministic random stream owned by one component.
#[derive(Debug, Clone)]
pub struct Rng(Xoshiro256PlusPlus);

/// SplitMix64 finaliser: spreads (seed, id) pairs that differ in one bit over the whole space.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Rng {
    /// The stream of component `component_id` in the run seeded with `run_seed`.
    pub fn stream(run_seed: u64, component_id: u64) -> Self {
        let seed = mix64(run_seed ^ mix64(component_id.wrapping_add(0x9e37_79b9_7f4a_7c15)));
        Rng(Xoshiro256PlusPlus::seed_from_u64(seed))
    }

    /// Uniform in [0, 1).
    #[inline]
    pub fn unit(&mut self) -> f64 {
        self.0.gen::<f64>()
    }

    /// True with probability `p` (clamped to [0, 1]).
    #[inline]
    pub fn bernoulli(&mut self, p: f64) -> bool {
        p > 0.0 && self.unit() < p
    }

    /// Uniform in [lo, hi).
    #[inline]
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }

    /// Exponentially distributed with the given mean.
    #[inline]
    pub fn exponential(&mut self, mean: f64) -> f64 {
        // 1 - unit() lies in (0, 1], so the logarithm is finite.
        -mean * (1.0 - self.unit()).ln()
    }

    /// Standard normal variate (Box-Muller; one of the pair is discarded to keep the stream simple).
    #[inline]
    pub fn standard_normal(&mut self) -> f64 {
        let u1 = 1.0 - self.unit(); // (0, 1]
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Uniform integer in [0, n); `n` must be positive.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        self.0.gen_range(0..n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_and_component_give_the_same_stream() {
        let mut a = Rng::stream(7, 3);
        let mut b = Rng::stream(7, 3);
        for _ in 0..100 {
            assert_eq!(a.unit().to_bits(), b.unit().to_bits());
        }
    }

    #[test]
    fn neighbouring_components_get_different_streams() {
        let mut a = Rng::stream(7, 3);
        let mut b = Rng::stream(7, 4);
        let same = (0..64).filter(|_| a.unit() == b.unit()).count();
        assert_eq!(same, 0);
    }

    #[test]
    fn exponential_has_the_requested_mean() {
        let mut r = Rng::stream(1, 1);
        let n = 200_000;
        let mean = (0..n).map(|_| r.exponential(50.0)).sum::<f64>() / n as f64;
        // Standard error of the mean is 50/sqrt(n) ~ 0.11; allow 5 sigma.
        assert!((mean - 50.0).abs() < 0.56, "mean {mean}");
    }
}
