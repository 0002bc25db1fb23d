//! The endpoint timing model (`SimConfig::host_delay`): a segment that reaches an endpoint is
//! handled a random time later, as a Linux host handles a packet after its softirq / NAPI poll
//! and wake-ups, not the instant it leaves the wire. docs/testbed.md ("Host timing") has the
//! measurement the parameters come from.
//!
//! Kept out of the loop's hot path: without `host_delay` no endpoint has a `HostRx` and the loop
//! hands segments over at once, as before (records byte-identical).

#[cfg(test)]
use crate::config::HostStallConfig;
use crate::config::{HostDelayConfig, SimConfig};
use mpsched_engine::rng::Rng;

/// Component-id base of the endpoints' random streams (links use `1 << 32`): endpoint `side`
/// (0 server, 1 client) of flow `f` draws from `RNG_HOST_BASE + 2 f + side`, so adding a flow
/// never shifts another flow's draws.
const RNG_HOST_BASE: u64 = 2 << 32;

/// z of the 99th percentile of the standard normal.
const Z99: f64 = 2.326_347_874_040_841;

/// Ceiling of one draw (the validated p99 ceiling): keeps time arithmetic far from overflow
/// whatever the distribution's tail.
const MAX_DRAW_NS: f64 = 1e9;

/// One endpoint's receive side: its random stream and when it is busy until.
#[derive(Debug)]
pub(crate) struct HostRx {
    rng: Rng,
    /// The floor every draw starts from, ns; ln(median - floor), and the log-normal's sigma.
    floor_ns: f64,
    mu: f64,
    sigma: f64,
    /// Stalls (`HostStallConfig`): the chain's entry and exit probabilities per packet, whether
    /// this host is in a spell, the stall log-normal's ln(median) and sigma. Entry 0 draws
    /// nothing for them, so stall-less runs keep their bytes.
    stall_enter: f64,
    stall_leave: f64,
    stalled: bool,
    stall_mu: f64,
    stall_sigma: f64,
    /// The last segment handed to this endpoint is handled at this time; a later one is never
    /// handled before it (the host processes one connection's packets in order).
    busy_until_ns: u64,
}

impl HostRx {
    /// The model of endpoint `client` of flow `flow`, or `None` when the run has no host delay.
    #[cold]
    pub(crate) fn new(cfg: &SimConfig, flow: usize, client: bool) -> Option<Box<Self>> {
        cfg.host_delay.as_ref().map(|h| Self::with(h, cfg.seed, flow, client))
    }

    fn with(h: &HostDelayConfig, seed: u64, flow: usize, client: bool) -> Box<Self> {
        // The log-normal above the floor; with floor 0 this is exactly the pure log-normal's
        // arithmetic (x - 0.0 and 0.0 + x are x), so floor-less runs keep their bytes.
        let floor = h.floor_ns as f64;
        let median = h.median_ns as f64 - floor;
        Box::new(Self {
            rng: Rng::stream(seed, RNG_HOST_BASE + 2 * flow as u64 + client as u64),
            floor_ns: floor,
            mu: median.ln(),
            sigma: ((h.p99_ns as f64 - floor) / median).ln() / Z99,
            // Stationary share p = enter / (enter + leave) with leave = 1 / run.
            stall_enter: h.stall.map_or(0.0, |st| {
                let p = st.per_million as f64 / 1e6;
                p / (1.0 - p) / st.run_packets as f64
            }),
            stall_leave: h.stall.map_or(0.0, |st| 1.0 / st.run_packets as f64),
            stalled: false,
            stall_mu: h.stall.map_or(0.0, |st| (st.median_ns as f64).ln()),
            stall_sigma: h.stall.map_or(0.0, |st| (st.p99_ns as f64 / st.median_ns as f64).ln() / Z99),
            busy_until_ns: 0,
        })
    }

    /// When a segment that arrived at `now_ns` is handled.
    #[inline(never)]
    pub(crate) fn handle_at(&mut self, now_ns: u64) -> u64 {
        // The chain's step first, only when stalls are on (same stream otherwise).
        if self.stall_enter > 0.0 {
            let u = self.rng.unit();
            self.stalled = if self.stalled { u >= self.stall_leave } else { u < self.stall_enter };
        }
        let z = self.rng.standard_normal();
        let draw = if self.stalled {
            (self.stall_mu + self.stall_sigma * z).exp()
        } else {
            self.floor_ns + (self.mu + self.sigma * z).exp()
        };
        let draw_ns = draw.min(MAX_DRAW_NS).round() as u64;
        self.busy_until_ns = self.busy_until_ns.max(now_ns + draw_ns);
        self.busy_until_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(median_ns: u64, p99_ns: u64, seed: u64) -> Box<HostRx> {
        floored(0, median_ns, p99_ns, seed)
    }

    fn floored(floor_ns: u64, median_ns: u64, p99_ns: u64, seed: u64) -> Box<HostRx> {
        HostRx::with(&HostDelayConfig { median_ns, p99_ns, floor_ns, stall: None }, seed, 0, true)
    }

    /// Delays of `n` arrivals 10 ms apart (the in-order rule never binds: each is one draw).
    fn delays(h: &mut HostRx, n: u64) -> Vec<u64> {
        (0..n).map(|i| h.handle_at(i * 10_000_000) - i * 10_000_000).collect()
    }

    #[test]
    fn a_floor_adds_exactly_itself_to_every_draw_of_the_same_log_normal() {
        // floor f with median m + f, p99 p + f: the log-normal above the floor is the one of
        // (m, p), same stream, so every delay is that one's plus f (up to rounding of one ns).
        let plain = delays(&mut model(30_000, 300_000, 4), 10_000);
        let with_floor = delays(&mut floored(50_000, 80_000, 350_000, 4), 10_000);
        for (a, b) in plain.iter().zip(&with_floor) {
            assert!(b.abs_diff(a + 50_000) <= 1, "{a} + floor != {b}");
        }
        assert!(with_floor.iter().all(|&d| d >= 50_000));
    }

    #[test]
    fn with_a_floor_the_median_and_p99_are_still_the_whole_delays() {
        let mut d = delays(&mut floored(20_000, 60_000, 400_000, 9), 100_000);
        d.sort_unstable();
        let (med, p99) = (d[d.len() / 2] as f64, d[d.len() * 99 / 100] as f64);
        assert!((med / 60_000.0 - 1.0).abs() < 0.02, "median {med}");
        assert!((p99 / 400_000.0 - 1.0).abs() < 0.05, "p99 {p99}");
        assert!(d[0] >= 20_000);
    }

    #[test]
    fn draws_have_the_configured_median_and_p99() {
        let mut h = model(30_000, 120_000, 7);
        // Arrivals far apart, so the in-order rule never binds: each delay is one draw.
        let mut d: Vec<u64> = (0..100_000u64).map(|i| h.handle_at(i * 10_000_000) - i * 10_000_000).collect();
        d.sort_unstable();
        let (med, p99) = (d[d.len() / 2] as f64, d[d.len() * 99 / 100] as f64);
        assert!((med / 30_000.0 - 1.0).abs() < 0.02, "median {med}");
        assert!((p99 / 120_000.0 - 1.0).abs() < 0.05, "p99 {p99}");
    }

    #[test]
    fn stalls_come_at_their_rate_with_their_median_and_the_rest_keep_the_body() {
        // 2 % stalls of median 1 ms, p99 2 ms over a body of median 30 us, p99 120 us: the
        // delays over 500 us are the stalls (the body's exceeds it with probability ~1e-8).
        let stall =
            Some(HostStallConfig { per_million: 20_000, run_packets: 1, median_ns: 1_000_000, p99_ns: 2_000_000 });
        let cfg = HostDelayConfig { median_ns: 30_000, p99_ns: 120_000, floor_ns: 0, stall };
        let mut d = delays(&mut HostRx::with(&cfg, 5, 0, false), 200_000);
        let (mut stalls, mut body): (Vec<u64>, Vec<u64>) = d.drain(..).partition(|&x| x > 500_000);
        let rate = stalls.len() as f64 / 200_000.0;
        assert!((rate / 0.02 - 1.0).abs() < 0.05, "stall rate {rate}");
        stalls.sort_unstable();
        body.sort_unstable();
        let stall_med = stalls[stalls.len() / 2] as f64;
        assert!((stall_med / 1e6 - 1.0).abs() < 0.05, "stall median {stall_med}");
        let body_med = body[body.len() / 2] as f64;
        assert!((body_med / 30_000.0 - 1.0).abs() < 0.02, "body median {body_med}");
    }

    #[test]
    fn a_stall_holds_the_packets_behind_it_until_it_ends() {
        // Every packet stalls 1 ms (constant), arrivals 100 us apart: the host handles the first
        // at 1 ms and no later one before, in order, each at least its own stall after arrival.
        let stall = Some(HostStallConfig {
            per_million: 999_999,
            run_packets: 1_000_000,
            median_ns: 1_000_000,
            p99_ns: 1_000_000,
        });
        let cfg = HostDelayConfig { median_ns: 10_000, p99_ns: 10_000, floor_ns: 0, stall };
        let mut h = HostRx::with(&cfg, 1, 0, true);
        h.stalled = true; // in a spell from the start (it leaves with probability 1e-6)
        let at: Vec<u64> = (0..5u64).map(|i| h.handle_at(i * 100_000)).collect();
        assert_eq!(at, vec![1_000_000, 1_100_000, 1_200_000, 1_300_000, 1_400_000]);
    }

    #[test]
    fn spells_last_their_mean_length_and_keep_their_share() {
        // 5 % of packets in spells of 4 on average: stalled delays (> 500 us) come in runs
        // averaging ~4 and make up ~5 % (the independent mixture's runs would average 1.05).
        let stall =
            Some(HostStallConfig { per_million: 50_000, run_packets: 4, median_ns: 1_000_000, p99_ns: 1_500_000 });
        let cfg = HostDelayConfig { median_ns: 30_000, p99_ns: 60_000, floor_ns: 0, stall };
        let d = delays(&mut HostRx::with(&cfg, 3, 0, false), 400_000);
        let stalled: Vec<bool> = d.iter().map(|&x| x > 500_000).collect();
        let share = stalled.iter().filter(|&&s| s).count() as f64 / d.len() as f64;
        let runs = stalled.windows(2).filter(|w| w[1] && !w[0]).count() as f64;
        let mean_run = share * d.len() as f64 / runs;
        assert!((share / 0.05 - 1.0).abs() < 0.05, "share {share}");
        assert!((mean_run / 4.0 - 1.0).abs() < 0.05, "mean run {mean_run}");
    }

    #[test]
    fn a_later_arrival_is_never_handled_first() {
        let mut h = model(30_000, 500_000, 3);
        let mut last = 0;
        for i in 0..10_000u64 {
            let at = h.handle_at(i * 1_000); // arrivals 1 us apart, delays up to ~1 ms
            assert!(at >= last && at >= i * 1_000);
            last = at;
        }
    }

    #[test]
    fn equal_percentiles_give_a_constant_delay() {
        let mut h = model(25_000, 25_000, 1);
        assert!((0..100u64).all(|i| h.handle_at(i * 1_000_000) == i * 1_000_000 + 25_000));
    }
}
