//! The event loop on the network alone: cross traffic, queues, sampling, validation.

mod common;
use common::*;
use mpsched_sim::config::*;
use mpsched_sim::run::run;

#[test]
fn cbr_below_capacity_passes_whole_and_builds_no_queue() {
    let (links, paths) = paths_of(vec![(link("d", 100_000_000, 10 * MS, 100), link("u", 100_000_000, 10 * MS, 100))]);
    let mut cfg = scenario(links, paths, 2 * S);
    cfg.cross_traffic.push(CrossTrafficConfig {
        links: vec![0],
        rate_bps: 80_000_000,
        packet_bytes: 1500,
        start_ns: 0,
        stop_ns: S,
    });
    cfg.record.sample_interval_ns = 10 * MS;
    let rec = run(&cfg).unwrap();
    // 80 Mbit/s for 1 s in 1500-byte packets = 6667 packets (the last one at t = 0.99985 s).
    let fwd = u64s(&rec, "links", "packets_forwarded");
    assert_eq!(fwd[0], 6667);
    assert_eq!(u64s(&rec, "links", "packets_dropped")[0], 0);
    assert!(u64s(&rec, "link_series", "queue_packets").iter().all(|&q| q == 0));
}

#[test]
fn cbr_above_capacity_is_cut_to_the_link_rate_by_drop_tail() {
    let (links, paths) = paths_of(vec![(link("d", 100_000_000, 10 * MS, 100), link("u", 100_000_000, 10 * MS, 100))]);
    let mut cfg = scenario(links, paths, 3 * S);
    cfg.cross_traffic.push(CrossTrafficConfig {
        links: vec![0],
        rate_bps: 150_000_000,
        packet_bytes: 1500,
        start_ns: 0,
        stop_ns: 2 * S,
    });
    cfg.record.sample_interval_ns = 100 * MS;
    let rec = run(&cfg).unwrap();
    let fwd = u64s(&rec, "links", "bytes_forwarded")[0] as f64;
    // 2 s at 100 Mbit/s = 25 MB leave, plus the 100 queued packets draining afterwards.
    let expected = 2.0 * 100e6 / 8.0 + 100.0 * 1500.0;
    assert!((fwd - expected).abs() <= 2.0 * 1500.0, "{fwd} vs {expected}");
    // A third of the offered 37.5 MB is dropped.
    let dropped = u64s(&rec, "links", "packets_dropped")[0] as f64 * 1500.0;
    assert!((dropped - 37.5e6 / 3.0).abs() < 0.01 * 37.5e6, "{dropped}");
    // The queue sits at its limit while overloaded.
    let names = strs(&rec, "link_series", "link");
    let q: Vec<u64> = u64s(&rec, "link_series", "queue_packets")
        .into_iter()
        .zip(names)
        .filter(|(_, n)| n == "d")
        .map(|(q, _)| q)
        .collect();
    assert!(q[5..19].iter().all(|&p| p >= 99), "{q:?}");
}

#[test]
fn a_bad_config_names_the_field() {
    let (links, paths) = paths_of(vec![(link("d", 100_000_000, 10 * MS, 100), link("u", 100_000_000, 10 * MS, 100))]);
    let mut cfg = scenario(links, paths, S);
    cfg.paths[0].down = vec![7];
    let e = run(&cfg).unwrap_err();
    assert_eq!(e.field, "paths[0].down");
    cfg.paths[0].down = vec![0];
    cfg.links[1].loss = LossConfig::Bernoulli { p: 2.0 };
    assert_eq!(run(&cfg).unwrap_err().field, "links[1].loss.p");
}
