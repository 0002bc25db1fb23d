//! The core never panics on a configuration that passed validation: random configurations,
//! including extreme ones (zero-rate schedule steps, 100 % loss, one-packet queues, traces,
//! paths going down and up, cross traffic, every scheduler and CC), either fail validation with a
//! field path or run to the end.

mod common;
use common::*;
use mpsched_proto::sched::registry;
use mpsched_sim::config::*;
use mpsched_sim::run::run;
use proptest::prelude::*;

fn arb_capacity() -> impl Strategy<Value = CapacityConfig> {
    prop_oneof![
        3 => Just(CapacityConfig::Constant),
        1 => proptest::collection::vec((0u64..3_000, 0u64..50_000_000), 0..4).prop_map(|mut steps| {
            steps.sort();
            CapacityConfig::Schedule {
                steps: steps.into_iter().map(|(ms, rate_bps)| RateStep { at_ns: ms * MS, rate_bps }).collect(),
            }
        }),
        1 => (proptest::collection::vec(0u64..200, 1..50), prop::option::of(1u64..400)).prop_map(|(mut ms, period)| {
            ms.sort();
            let last = *ms.last().unwrap();
            CapacityConfig::Trace { opportunities_ms: ms, packet_bytes: 1500, period_ms: period.map(|p| p.max(last)) }
        }),
    ]
}

fn arb_link() -> impl Strategy<Value = LinkConfig> {
    (
        (1u64..=200_000_000, 0u64..300, prop::option::of(1u64..2000), 0u8..4, 0u8..3, arb_capacity(), 0u64..100),
        (prop::option::of(1u64..100_000), 0u64..64, any::<bool>(), prop::option::of(1u64..200_000)),
    )
        .prop_map(
            |(
                (rate_bps, delay_ms, queue, loss_kind, jitter_kind, capacity, jitter_ms),
                (burst, overhead, before, queue_bytes),
            )| {
                let mut l = link("l", rate_bps, delay_ms * MS, 1);
                // Buckets of any depth (too small ones are refused with their field named), only
                // on constant-rate links.
                if capacity == CapacityConfig::Constant {
                    l.burst_bytes = burst;
                }
                l.overhead_bytes = overhead;
                l.queue_bytes = queue_bytes;
                if before {
                    l.impairments = Impairments::BeforeQueue;
                }
                l.queue_packets = queue;
                l.loss = match loss_kind {
                    0 | 1 => LossConfig::None,
                    2 => LossConfig::Bernoulli { p: (jitter_ms as f64 / 100.0).min(1.0) },
                    _ => {
                        LossConfig::GilbertElliott { p_good_bad: 0.05, p_bad_good: 0.3, loss_good: 0.0, loss_bad: 1.0 }
                    }
                };
                l.jitter = match jitter_kind {
                    0 => JitterConfig::None,
                    1 => JitterConfig::Smooth { jitter_ns: jitter_ms * MS, period_ns: (jitter_ms + 1) * 3 * MS },
                    _ => JitterConfig::Reorder { jitter_ns: jitter_ms * MS, distribution: JitterDistribution::Normal },
                };
                l.capacity = capacity;
                l
            },
        )
}

fn arb_config() -> impl Strategy<Value = SimConfig> {
    let names: Vec<String> = registry::all_compositions();
    (
        proptest::collection::vec((arb_link(), arb_link()), 1..=3),
        prop::sample::select(names),
        prop::sample::select(vec!["reno", "cubic", "lia", "olia", "balia"]),
        proptest::collection::vec((0u64..2_000, 1u64..300_000, any::<bool>(), any::<bool>()), 1..5),
        proptest::collection::vec((0u8..6, 0usize..3, 0u64..3_000, 0u64..3_000, 0u64..1000), 0..4),
        any::<bool>(),
        1u64..64,
        any::<bool>(),
        arb_host_delay(),
    )
        .prop_map(|(pairs, scheduler, cc, flows, events, tcp, rcv_kb, rfc6675, host_delay)| {
            let n = pairs.len();
            let (links, paths) = paths_of(pairs);
            let mut cfg = scenario(links, paths, 4 * S);
            cfg.record.sample_interval_ns = 50 * MS;
            cfg.host_delay = host_delay;
            let protocol = if tcp { Protocol::Tcp } else { Protocol::Mptcp };
            let mut t = transport(protocol, &scheduler, cc, if tcp { vec![0] } else { (0..n).collect() });
            t.rcv_buf_bytes = rcv_kb * 3000;
            t.backup_paths = if !tcp && n > 1 { vec![n - 1] } else { vec![] };
            if rfc6675 {
                t.loss_recovery = LossRecoveryConfig::Rfc6675;
            }
            cfg.transports.push(t);
            for (i, (start_ms, size, bulk, upload)) in flows.into_iter().enumerate() {
                let mut f = sized(i as u64, 0, start_ms * MS, size);
                if bulk {
                    f.app = AppConfig::Bulk { stop_ns: (start_ms + 500) * MS };
                }
                if upload {
                    f.direction = Direction::Upload;
                }
                cfg.flows.push(f);
            }
            for (kind, path, at_ms, dur_ms, x) in events {
                cfg.path_events.push(impairment(kind, path % n, at_ms * MS, dur_ms * MS, x));
            }
            cfg.cross_traffic.push(CrossTrafficConfig {
                links: vec![0],
                rate_bps: 1_000_000,
                packet_bytes: 1200,
                start_ns: 0,
                stop_ns: S,
            });
            cfg
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn a_valid_configuration_runs_to_the_end_without_panicking(cfg in arb_config()) {
        match run(&cfg) {
            Ok(rec) => {
                // Every flow has a row, and nothing was delivered beyond a sized flow's size.
                let delivered = u64s(&rec, "flows", "bytes_delivered");
                prop_assert_eq!(delivered.len(), cfg.flows.len());
                for (f, d) in cfg.flows.iter().zip(&delivered) {
                    if let AppConfig::Sized { size_bytes } = f.app {
                        prop_assert!(*d <= size_bytes);
                    }
                }
                prop_assert!(rec.stats.end_ns <= cfg.duration_ns);
            }
            Err(e) => {
                if std::env::var("ROBUST_DEBUG").is_ok() { eprintln!("refused: {e}"); }
                prop_assert!(!e.field.is_empty(), "an error names its field: {e}")
            }
        }
    }
}
