//! Links that shape as Linux tbf does (token bucket, Ethernet framing) and take their
//! impairments before the queue (the kernel engine's delayer), through the whole simulator.

mod common;
use common::*;
use mpsched_sim::config::*;
use mpsched_sim::run::run;

/// One path, 10 Mbit/s each way, 10 ms one-way; a queue of about one BDP (25 kB) in bytes.
fn slow_path(burst_bytes: Option<u64>, overhead_bytes: u64, size_bytes: u64) -> SimConfig {
    let mk = |name: &str| {
        let mut l = link(name, 10_000_000, 10 * MS, 1);
        l.queue_packets = None;
        l.queue_bytes = Some(25_000 + 17 * overhead_bytes);
        l.burst_bytes = burst_bytes;
        l.overhead_bytes = overhead_bytes;
        l
    };
    let (links, paths) = paths_of(vec![(mk("d"), mk("u"))]);
    let mut cfg = scenario(links, paths, 60 * S);
    cfg.transports.push(transport(Protocol::Tcp, "minrtt", "cubic", vec![0]));
    cfg.flows.push(sized(0, 0, 0, size_bytes));
    cfg
}

fn fct_ns(cfg: &SimConfig) -> u64 {
    let rec = run(cfg).unwrap();
    opt_u64s(&rec, "flows", "fct_ns")[0].expect("the flow completes")
}

#[test]
fn configs_without_the_new_fields_keep_their_meaning() {
    let json = r#"{"name": "d", "rate_bps": 10000000, "delay_ns": 5000000, "queue_bytes": 30000}"#;
    let l: LinkConfig = serde_json::from_str(json).unwrap();
    assert_eq!((l.burst_bytes, l.overhead_bytes, l.impairments), (None, 0, Impairments::AfterQueue));
    let json = r#"{"name": "d", "rate_bps": 10000000, "delay_ns": 5000000, "burst_bytes": 32768,
                   "overhead_bytes": 14, "impairments": "before_queue"}"#;
    let l: LinkConfig = serde_json::from_str(json).unwrap();
    assert_eq!((l.burst_bytes, l.overhead_bytes, l.impairments), (Some(32_768), 14, Impairments::BeforeQueue));
    assert!(serde_json::from_str::<LinkConfig>(&json.replace("before_queue", "in_the_middle")).is_err());
}

#[test]
fn bad_shaping_settings_name_their_field() {
    type Breakage = Box<dyn Fn(&mut SimConfig)>;
    let cases: Vec<(Breakage, &str)> = vec![
        (Box::new(|c| c.links[0].burst_bytes = Some(1500)), "links[0].burst_bytes"),
        (Box::new(|c| c.links[1].overhead_bytes = 10_000), "links[1].overhead_bytes"),
        (
            Box::new(|c| {
                c.links[0].capacity =
                    CapacityConfig::Trace { opportunities_ms: vec![1], packet_bytes: 1500, period_ms: None }
            }),
            "links[0].burst_bytes",
        ),
        // A 4 KB bucket cannot hold a full segment of a 9000-byte-MTU transport.
        (
            Box::new(|c| {
                c.links[1].burst_bytes = Some(4096);
                c.transports[0].mss_bytes = 8948;
                c.transports[0].rcv_buf_bytes = 1 << 20;
            }),
            "links[1].burst_bytes",
        ),
    ];
    for (break_it, field) in cases {
        let mut cfg = slow_path(Some(32_768), 14, 100_000);
        break_it(&mut cfg);
        assert_eq!(run(&cfg).unwrap_err().field, field);
    }
}

#[test]
fn a_token_bucket_makes_a_short_flow_on_a_slow_path_faster_than_serialisation() {
    // 64 KiB over 10 Mbit/s: the initial window and each later flight leave the full bucket
    // at once instead of one frame time (1.2 ms) apart.
    let today = fct_ns(&slow_path(None, 0, 65_536));
    let serial = fct_ns(&slow_path(None, 14, 65_536));
    let bucket = fct_ns(&slow_path(Some(32_768), 14, 65_536));
    eprintln!("64 KiB over 10 Mbit/s, 20 ms RTT: FCT serialising {today} ns, serialising + 14 B {serial} ns, tbf 32 KB + 14 B {bucket} ns");
    assert!(bucket < serial, "bucket {bucket} ns vs serialising {serial} ns");
    // Never faster than the bucket allows: 64 KiB + headers at the rate, less one bucket,
    // plus the handshake and one round trip.
    let frames = 65_536u64.div_ceil(1448);
    let floor = (frames * 1514 - 32_768) * 8 * S / 10_000_000 + 2 * 20 * MS;
    assert!(bucket >= floor, "{bucket} < {floor}");
}

#[test]
fn bulk_goodput_through_tbf_is_the_rate_times_payload_over_frame() {
    let mut cfg = slow_path(Some(32_768), 14, 1);
    cfg.flows[0].app = AppConfig::Bulk { stop_ns: 20 * S };
    cfg.duration_ns = 20 * S;
    cfg.links[0].queue_bytes = Some(100_000);
    let rec = run(&cfg).unwrap();
    let delivered = u64s(&rec, "flows", "bytes_delivered")[0] as f64;
    let goodput = delivered * 8.0 / 20.0;
    let ceiling = 10e6 * 1448.0 / 1514.0;
    assert!(goodput <= ceiling && goodput > 0.95 * ceiling, "{goodput} vs {ceiling}");
}

#[test]
fn loss_before_the_queue_frees_the_bottleneck() {
    // A 12 Mbit/s CBR stream through a 10 Mbit/s link that loses 20 % of it: lost before the
    // queue, the 9.6 Mbit/s that remain fit; lost after it, the whole stream overloads the
    // queue and drop-tail takes its share on top.
    let mut dropped = Vec::new();
    for impairments in [Impairments::BeforeQueue, Impairments::AfterQueue] {
        let mut d = link("d", 10_000_000, 10 * MS, 50);
        d.loss = LossConfig::Bernoulli { p: 0.2 };
        d.impairments = impairments;
        let (links, paths) = paths_of(vec![(d, link("u", 10_000_000, 10 * MS, 50))]);
        let mut cfg = scenario(links, paths, 3 * S);
        cfg.cross_traffic.push(CrossTrafficConfig {
            links: vec![0],
            rate_bps: 12_000_000,
            packet_bytes: 1500,
            start_ns: 0,
            stop_ns: 2 * S,
        });
        let rec = run(&cfg).unwrap();
        dropped.push(u64s(&rec, "links", "packets_dropped")[0]);
    }
    assert!(dropped[0] < 20, "before the queue: {} queue drops", dropped[0]);
    assert!(dropped[1] > 100, "after the queue: {} queue drops", dropped[1]);
}

#[test]
fn shaped_runs_are_deterministic() {
    let mut cfg = slow_path(Some(32_768), 14, 2_000_000);
    cfg.links[0].impairments = Impairments::BeforeQueue;
    cfg.links[0].jitter = JitterConfig::Smooth { jitter_ns: 5 * MS, period_ns: 20 * MS };
    cfg.links[0].loss = LossConfig::Bernoulli { p: 0.01 };
    cfg.record.sample_interval_ns = 10 * MS;
    let a = run(&cfg).unwrap();
    assert_eq!(a, run(&cfg).unwrap());
    cfg.seed = 2;
    assert_ne!(a.tables, run(&cfg).unwrap().tables);
}

use proptest::prelude::*;

fn arb_shaped_link(name: &'static str) -> impl Strategy<Value = LinkConfig> {
    (1u64..=50, 1u64..=50, prop::option::of(1514u64..=65_536), 0u64..=40, any::<bool>(), 0u8..3, 0u32..=20).prop_map(
        move |(mbps, delay_ms, burst, overhead, before, jitter_kind, loss_permille)| {
            let mut l = link(name, mbps * 1_000_000, delay_ms * MS, 1);
            l.queue_packets = None;
            l.queue_bytes = Some(mbps * delay_ms * 250 + 3000);
            l.burst_bytes = burst.map(|b| b.max(1500 + overhead));
            l.overhead_bytes = overhead;
            l.loss = LossConfig::Bernoulli { p: loss_permille as f64 / 1000.0 };
            let jitter_ns = delay_ms * MS / 2;
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

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Whatever the shaping, the same seed gives the same records, every byte arrives, and no
    /// link forwards more than its bucket and rate allow.
    #[test]
    fn shaped_networks_are_deterministic_and_conserve_bytes(
        pairs in proptest::collection::vec((arb_shaped_link("d"), arb_shaped_link("u")), 1..=2),
        size_kb in 1u64..=800,
        seed in 0u64..1000,
    ) {
        let n = pairs.len();
        let (links, paths) = paths_of(pairs);
        let mut cfg = scenario(links, paths, 600 * S);
        cfg.seed = seed;
        cfg.record.sample_interval_ns = 50 * MS;
        cfg.transports.push(transport(Protocol::Mptcp, "minrtt", "cubic", (0..n).collect()));
        cfg.flows.push(sized(0, 0, 0, size_kb * 1000));
        let a = run(&cfg).unwrap();
        prop_assert_eq!(&a, &run(&cfg).unwrap());
        prop_assert_eq!(u64s(&a, "flows", "bytes_delivered")[0], size_kb * 1000);
        let end_s = a.stats.end_ns as f64 / 1e9;
        let fwd = u64s(&a, "links", "bytes_forwarded");
        let pkts = u64s(&a, "links", "packets_forwarded");
        for (i, l) in cfg.links.iter().enumerate() {
            // Framed bytes out <= bucket + rate * time.
            let framed = (fwd[i] + pkts[i] * l.overhead_bytes) as f64;
            let allowance = l.burst_bytes.unwrap_or(0) as f64 + l.rate_bps as f64 / 8.0 * end_s;
            prop_assert!(framed <= allowance + 1.0, "link {}: {} > {}", i, framed, allowance);
        }
    }
}
