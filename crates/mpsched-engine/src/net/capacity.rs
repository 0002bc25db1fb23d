//! Time-varying link capacity: a piecewise-constant rate schedule, or a Mahimahi trace.
//!
//! Mahimahi semantics (`data/traces/README.md`): each trace line is one delivery opportunity
//! for `packet_bytes` (1500) bytes at that millisecond; one opportunity can carry several small
//! packets whose sizes add up to at most that; an opportunity is wasted if nothing is queued at
//! that instant; the trace loops with its last timestamp as the period.

use crate::time::{serialization_ns, NS_PER_MS};
use serde::{Deserialize, Serialize};

/// Time-varying capacity of a link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum CapacityConfig {
    /// The link's `rate_bps` throughout.
    #[default]
    Constant,
    /// Piecewise constant: from each step's time on, the rate is that step's rate (before the
    /// first step, the link's `rate_bps`). A rate of 0 stops the link; packets wait.
    Schedule {
        /// Steps in increasing time order.
        steps: Vec<RateStep>,
    },
    /// A Mahimahi packet-delivery trace (the link's `rate_bps` is ignored).
    Trace {
        /// Delivery opportunity times, ms, non-decreasing.
        opportunities_ms: Vec<u64>,
        /// Bytes one opportunity can carry (Mahimahi: 1500).
        #[serde(default = "default_trace_packet_bytes")]
        packet_bytes: u64,
        /// Trace period, ms; defaults to the last opportunity time.
        #[serde(default)]
        period_ms: Option<u64>,
    },
}

fn default_trace_packet_bytes() -> u64 {
    1500
}

/// One step of a capacity schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateStep {
    /// Time the step starts, ns.
    pub at_ns: u64,
    /// Rate from then on, bit/s.
    pub rate_bps: u64,
}

impl CapacityConfig {
    /// Checks the schedule or trace; returns (field, message) on error.
    pub fn validate(&self, rate_bps: u64) -> Result<(), (&'static str, String)> {
        match self {
            CapacityConfig::Constant => {
                if rate_bps == 0 {
                    return Err(("rate_bps", "must be positive".into()));
                }
            }
            CapacityConfig::Schedule { steps } => {
                if steps.windows(2).any(|w| w[1].at_ns < w[0].at_ns) {
                    return Err(("steps", "step times must not decrease".into()));
                }
            }
            CapacityConfig::Trace { opportunities_ms, packet_bytes, period_ms } => {
                if opportunities_ms.is_empty() {
                    return Err(("opportunities_ms", "a trace needs at least one delivery opportunity".into()));
                }
                if opportunities_ms.windows(2).any(|w| w[1] < w[0]) {
                    return Err(("opportunities_ms", "timestamps must not decrease".into()));
                }
                if *packet_bytes == 0 {
                    return Err(("packet_bytes", "must be positive".into()));
                }
                let last = *opportunities_ms.last().unwrap_or(&0);
                let period = period_ms.unwrap_or(last);
                if period == 0 || period < last {
                    return Err((
                        "period_ms",
                        format!("the trace period must be positive and at least the last timestamp ({last} ms)"),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Outcome of asking when a packet would finish serialisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Service {
    /// Serialisation ends at this time.
    DoneAt(u64),
    /// The link has no capacity now; try again at this time.
    WaitUntil(u64),
    /// The link never has capacity again.
    Never,
}

#[derive(Debug, Clone)]
pub(crate) enum Capacity {
    Rate {
        rate_bps: u64,
        steps: Vec<RateStep>,
        next_step: usize,
    },
    Trace {
        opportunities_ns: Vec<u64>,
        period_ns: u64,
        packet_bytes: u64,
        next_opportunity: u64,
        credit_at_ns: u64,
        credit_bytes: u64,
    },
}

impl Capacity {
    pub(crate) fn new(config: &CapacityConfig, rate_bps: u64) -> Self {
        match config {
            CapacityConfig::Constant => Capacity::Rate { rate_bps, steps: Vec::new(), next_step: 0 },
            CapacityConfig::Schedule { steps } => Capacity::Rate { rate_bps, steps: steps.clone(), next_step: 0 },
            CapacityConfig::Trace { opportunities_ms, packet_bytes, period_ms } => {
                let last = *opportunities_ms.last().unwrap_or(&1);
                Capacity::Trace {
                    opportunities_ns: opportunities_ms.iter().map(|ms| ms * NS_PER_MS).collect(),
                    period_ns: period_ms.unwrap_or(last).max(1) * NS_PER_MS,
                    packet_bytes: *packet_bytes,
                    next_opportunity: 0,
                    credit_at_ns: 0,
                    credit_bytes: 0,
                }
            }
        }
    }

    /// Starts serving a packet of `size_bytes` at `now_ns`. Calls must come with
    /// non-decreasing `now_ns`. (Always inlined: it is on every packet's path, and the link
    /// calls it from more than one place.)
    #[inline(always)]
    pub(crate) fn serve(&mut self, now_ns: u64, size_bytes: u64) -> Service {
        match self {
            Capacity::Rate { rate_bps, steps, next_step } => {
                while *next_step < steps.len() && steps[*next_step].at_ns <= now_ns {
                    *rate_bps = steps[*next_step].rate_bps;
                    *next_step += 1;
                }
                if *rate_bps > 0 {
                    Service::DoneAt(now_ns + serialization_ns(size_bytes, *rate_bps))
                } else if let Some(step) = steps.get(*next_step) {
                    Service::WaitUntil(step.at_ns)
                } else {
                    Service::Never
                }
            }
            Capacity::Trace {
                opportunities_ns,
                period_ns,
                packet_bytes,
                next_opportunity,
                credit_at_ns,
                credit_bytes,
            } => {
                let n = opportunities_ns.len() as u64;
                let at = |k: u64| (k / n) * *period_ns + opportunities_ns[(k % n) as usize];
                let mut need = size_bytes;
                if *credit_at_ns == now_ns && *credit_bytes > 0 {
                    let take = need.min(*credit_bytes);
                    *credit_bytes -= take;
                    need -= take;
                    if need == 0 {
                        return Service::DoneAt(now_ns);
                    }
                }
                // Opportunities before now went by with nothing queued: wasted. Jump straight to
                // the first one at or after now.
                if at(*next_opportunity) < now_ns {
                    let lap = now_ns / *period_ns;
                    let offset = now_ns - lap * *period_ns;
                    let idx = opportunities_ns.partition_point(|&t| t < offset) as u64;
                    *next_opportunity = (*next_opportunity).max(lap * n + idx);
                }
                loop {
                    let t = at(*next_opportunity);
                    *next_opportunity += 1;
                    if *packet_bytes >= need {
                        *credit_at_ns = t;
                        *credit_bytes = *packet_bytes - need;
                        return Service::DoneAt(t);
                    }
                    need -= *packet_bytes;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::NS_PER_S;

    #[test]
    fn schedule_changes_the_rate_at_its_steps() {
        let cfg = CapacityConfig::Schedule {
            steps: vec![
                RateStep { at_ns: NS_PER_S, rate_bps: 0 },
                RateStep { at_ns: 2 * NS_PER_S, rate_bps: 12_000_000 },
            ],
        };
        let mut c = Capacity::new(&cfg, 1_200_000);
        assert_eq!(c.serve(0, 1500), Service::DoneAt(10 * NS_PER_MS));
        assert_eq!(c.serve(NS_PER_S, 1500), Service::WaitUntil(2 * NS_PER_S));
        assert_eq!(c.serve(2 * NS_PER_S, 1500), Service::DoneAt(2 * NS_PER_S + NS_PER_MS));
    }

    #[test]
    fn trace_one_opportunity_carries_several_small_packets_and_loops() {
        let cfg = CapacityConfig::Trace { opportunities_ms: vec![5, 10], packet_bytes: 1500, period_ms: None };
        let mut c = Capacity::new(&cfg, 0);
        assert_eq!(c.serve(0, 1000), Service::DoneAt(5 * NS_PER_MS));
        // 500 bytes of credit remain at t=5 ms: a 500-byte packet leaves at once.
        assert_eq!(c.serve(5 * NS_PER_MS, 500), Service::DoneAt(5 * NS_PER_MS));
        // A 3000-byte packet needs two opportunities: 10 ms, then 5 ms of the next lap (15 ms).
        assert_eq!(c.serve(5 * NS_PER_MS, 3000), Service::DoneAt(15 * NS_PER_MS));
        // Idle until 37 ms: opportunities at 20, 25, 30, 35 are wasted; next is 40 ms.
        assert_eq!(c.serve(37 * NS_PER_MS, 1500), Service::DoneAt(40 * NS_PER_MS));
    }

    #[test]
    fn a_trace_of_one_line_at_1ms_is_a_12_mbit_link() {
        let cfg = CapacityConfig::Trace { opportunities_ms: vec![1], packet_bytes: 1500, period_ms: None };
        let mut c = Capacity::new(&cfg, 0);
        let mut t = 0;
        for _ in 0..1000 {
            match c.serve(t, 1500) {
                Service::DoneAt(d) => t = d,
                other => panic!("{other:?}"),
            }
        }
        // 1000 packets of 1500 bytes in 1 s = 12 Mbit/s.
        assert_eq!(t, NS_PER_S);
    }
}
