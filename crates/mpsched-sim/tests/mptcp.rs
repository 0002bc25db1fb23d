//! MPTCP through the real engine: which paths each scheduler uses, the join delay, and
//! conservation of bytes under random networks for every scheduler and congestion control.

mod common;
use common::*;
use mpsched_proto::sched::registry;
use mpsched_sim::config::*;
use mpsched_sim::run::run;
use proptest::prelude::*;

/// Testbed table A (`reference/testbed.md` §5): path 1 50 Mbit/s, 20 ms RTT; path 2
/// 15 Mbit/s, 200 ms RTT; queues of about one BDP.
fn table_a(scheduler: &str, size_bytes: u64) -> SimConfig {
    let (links, paths) = paths_of(vec![
        (link("fast.d", 50_000_000, 10 * MS, 100), link("fast.u", 50_000_000, 10 * MS, 100)),
        (link("slow.d", 15_000_000, 100 * MS, 250), link("slow.u", 15_000_000, 100 * MS, 250)),
    ]);
    let mut cfg = scenario(links, paths, 60 * S);
    cfg.transports.push(transport(Protocol::Mptcp, scheduler, "cubic", vec![0, 1]));
    cfg.flows.push(sized(0, 0, 0, size_bytes));
    cfg
}

fn base_schedulers() -> Vec<&'static str> {
    registry::all().iter().filter(|i| !i.is_extension).map(|i| i.name).collect()
}

/// Share of payload bytes each subflow carried.
fn path_shares(rec: &mpsched_sim::records::Records) -> Vec<f64> {
    let sent = u64s(rec, "subflows", "bytes_sent");
    let total: u64 = sent.iter().sum();
    sent.iter().map(|&b| b as f64 / total as f64).collect()
}

#[test]
fn path_usage_table_on_fast_and_slow_paths() {
    // (scheduler, uses the fast path, uses the slow path) for a 16 MB download; "uses" means
    // carries more than 1 % of the payload bytes. Freeze is the one that leaves the slow
    // path out: its RTT exceeds the fastest by far more than the threshold.
    let expected: Vec<(&str, bool, bool)> = vec![
        ("minrtt", true, true),
        ("linux", true, true),
        ("roundrobin", true, true),
        ("redundant", true, true),
        ("ecf", true, true),
        ("blest", true, true),
        ("daps", true, true),
        ("otias", true, true),
        ("sttf", true, true),
        ("cfs", true, true),
        ("bwm", true, true),
        ("freeze", true, false),
    ];
    let mut names: Vec<&str> = expected.iter().map(|e| e.0).collect();
    names.sort();
    let mut registered = base_schedulers();
    registered.sort();
    assert_eq!(names, registered, "every registered scheduler has a row");
    let mut table = String::new();
    for (name, fast, slow) in expected {
        let rec = run(&table_a(name, 16_000_000)).unwrap();
        assert_eq!(bools(&rec, "flows", "completed"), vec![true], "{name} completes");
        let share = path_shares(&rec);
        table.push_str(&format!("{name:>10} fast {:.3} slow {:.3}\n", share[0], share[1]));
        assert_eq!((share[0] > 0.01, share[1] > 0.01), (fast, slow), "{name}: shares {share:?}\n{table}");
    }
}

#[test]
fn a_1mb_flow_never_uses_the_200ms_path() {
    // The MP_JOIN on the slow path costs its 200 ms round trip; the 1 MB flow is done over the
    // fast path by then (testbed table A: 0.251-0.254 s on the real kernel, p2 share 0).
    for name in base_schedulers() {
        let rec = run(&table_a(name, 1_000_000)).unwrap();
        let share = path_shares(&rec);
        assert_eq!(share[1], 0.0, "{name}");
        let fct = opt_u64s(&rec, "flows", "fct_ns")[0].unwrap();
        assert!(fct > 240 * MS && fct < 270 * MS, "{name}: {fct}");
    }
}

#[test]
fn the_same_seed_gives_identical_records_and_another_seed_does_not() {
    let mut cfg = table_a("minrtt", 4_000_000);
    cfg.links[0].jitter = JitterConfig::Reorder { jitter_ns: 5 * MS, distribution: JitterDistribution::Normal };
    cfg.links[2].loss = LossConfig::Bernoulli { p: 0.01 };
    cfg.record.sample_interval_ns = 10 * MS;
    let a = run(&cfg).unwrap();
    let b = run(&cfg).unwrap();
    assert_eq!(a, b);
    cfg.seed = 2;
    let c = run(&cfg).unwrap();
    assert_ne!(a.tables, c.tables);
}

fn arb_link(name: &'static str) -> impl Strategy<Value = LinkConfig> {
    (1u64..=100, 1u64..=100, 4u64..=400, 0u32..=30, 0u8..3, 1u64..=30, arb_shaping()).prop_map(
        move |(mbps, delay_ms, queue, loss_permille, jitter_kind, jitter_ms, (burst, overhead, before))| {
            let mut l = link(name, mbps * 1_000_000, delay_ms * MS, queue);
            l.burst_bytes = burst.map(|b| b.max(1500 + overhead));
            l.overhead_bytes = overhead;
            l.loss = if loss_permille == 0 {
                LossConfig::None
            } else {
                LossConfig::Bernoulli { p: loss_permille as f64 / 1000.0 }
            };
            let jitter_ns = jitter_ms.min(delay_ms) * MS;
            l.jitter = match jitter_kind {
                0 => JitterConfig::None,
                1 => JitterConfig::Smooth { jitter_ns, period_ns: 4 * jitter_ns.max(MS) },
                _ => JitterConfig::Reorder { jitter_ns, distribution: JitterDistribution::Uniform },
            };
            if before {
                l.impairments = Impairments::BeforeQueue;
            }
            l
        },
    )
}

/// (token bucket depth, framing overhead, impairments before the queue): a serialising link
/// half of the time, tbf-like buckets from one frame to 64 KB otherwise.
fn arb_shaping() -> impl Strategy<Value = (Option<u64>, u64, bool)> {
    (
        prop_oneof![1 => Just(None), 1 => (1500u64..=65_536).prop_map(Some)],
        prop::sample::select(vec![0u64, 14, 38]),
        any::<bool>(),
    )
}

fn arb_scheduler() -> impl Strategy<Value = String> {
    let names = base_schedulers();
    (0..names.len(), 0u8..4).prop_map(move |(i, ext)| {
        let base = names[i];
        match ext {
            0 | 1 => base.to_string(),
            2 => format!("{base}+rp"),
            _ => format!("{base}+bm"),
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Whatever the network and the scheduler, the application receives every byte once, in
    /// order: the receiver's in-order byte count reaches the flow size and never exceeds it;
    /// with either loss detection, with or without the endpoint timing model.
    #[test]
    fn every_byte_arrives_once_for_every_scheduler_and_cc(
        pairs in proptest::collection::vec((arb_link("d"), arb_link("u")), 1..=3),
        scheduler in arb_scheduler(),
        cc in prop::sample::select(vec!["reno", "cubic", "lia", "olia", "balia"]),
        size_kb in 1u64..=1500,
        seed in 0u64..1000,
        tcp in any::<bool>(),
        rfc6675 in any::<bool>(),
        events in proptest::collection::vec((0u8..5, 0usize..3, 0u64..3_000, 1u64..3_000, 0u64..1000), 0..3),
        host_delay in arb_host_delay(),
    ) {
        let n = pairs.len();
        let (links, paths) = paths_of(pairs);
        let mut cfg = scenario(links, paths, 1800 * S);
        cfg.seed = seed;
        cfg.host_delay = host_delay;
        let protocol = if tcp { Protocol::Tcp } else { Protocol::Mptcp };
        let used = if tcp { vec![0] } else { (0..n).collect() };
        let mut t = transport(protocol, &scheduler, cc, used);
        if rfc6675 {
            t.loss_recovery = LossRecoveryConfig::Rfc6675;
        }
        cfg.transports.push(t);
        cfg.flows.push(sized(0, 0, 0, size_kb * 1000));
        // Impairments and outages that all end: the transfer must still complete, exactly.
        for (kind, path, at_ms, dur_ms, x) in events {
            cfg.path_events.push(impairment(kind, path % n, at_ms * MS, dur_ms * MS, x));
        }
        let rec = run(&cfg).unwrap();
        let delivered = u64s(&rec, "flows", "bytes_delivered")[0];
        prop_assert_eq!(delivered, size_kb * 1000, "{} over {} paths", scheduler, n);
        prop_assert_eq!(bools(&rec, "flows", "completed"), vec![true]);
        if !cfg.path_events.is_empty() || cfg.host_delay.is_some() {
            // Deterministic with events and host delays too: the same configuration gives the
            // same records.
            prop_assert_eq!(run(&cfg).unwrap(), rec);
        }
    }
}

/// Found by the conservation property: BM capped a lone subflow whose sRTT had bloated below one
/// segment, so it never sent again, never took a new RTT sample, and the transfer stalled.
#[test]
fn bm_never_caps_a_subflow_below_one_segment() {
    let mut down = link("d", 1_000_000, 2 * MS, 4);
    down.loss = LossConfig::Bernoulli { p: 0.001 };
    down.jitter = JitterConfig::Smooth { jitter_ns: 2 * MS, period_ns: 8 * MS };
    let (links, paths) = paths_of(vec![(down, link("u", 9_000_000, MS, 4))]);
    let mut cfg = scenario(links, paths, 1800 * S);
    cfg.seed = 565;
    cfg.transports.push(transport(Protocol::Mptcp, "minrtt+bm", "reno", vec![0]));
    cfg.flows.push(sized(0, 0, 0, 33_000));
    let rec = run(&cfg).unwrap();
    assert_eq!(u64s(&rec, "flows", "bytes_delivered"), vec![33_000]);
}
