//! Scenario builders shared by the end-to-end (`e2e.rs`) and scaling (`scale.rs`) benchmarks,
//! so both measure the same dumbbell and FatTree; `scale.rs` also dumps them as JSON for
//! `benches/records_digest.sh` (the byte-identity check of issue 17).
#![allow(dead_code)] // each bench uses its own subset

use mpsched_engine::rng::Rng;
use mpsched_engine::time::NS_PER_MS;
use mpsched_sim::config::*;
use mpsched_sim::topology::{permutation, FatTree, FatTreeConfig, PathChoice, PathTable};

/// The e2e dumbbell's link: 100 Mbit/s, 20 ms one-way, 333-packet drop-tail.
pub fn link(name: &str) -> LinkConfig {
    LinkConfig { name: name.into(), queue_packets: Some(333), ..LinkConfig::plain(100_000_000, 20 * NS_PER_MS) }
}

/// A dumbbell (one path: `down` then `up`) with TCP cubic and the given flows.
pub fn base(flows: Vec<FlowConfig>, duration_ns: u64) -> SimConfig {
    SimConfig {
        seed: 1,
        duration_ns,
        links: vec![link("down"), link("up")],
        paths: vec![PathConfig { name: "p".into(), down: vec![0], up: vec![1], gso: false }],
        transports: vec![TransportConfig::with_defaults(Protocol::Tcp, "minrtt", "cubic", vec![0], 6 << 20, 4 << 20)],
        flows,
        cross_traffic: vec![],
        path_events: vec![],
        record: RecordConfig { sample_interval_ns: 0 },
        host_delay: None,
    }
}

/// `n` downloads of `size_bytes` each, Poisson arrivals with mean gap `mean_gap_ns`.
pub fn poisson_flows(n: usize, mean_gap_ns: f64, size_bytes: u64) -> Vec<FlowConfig> {
    let mut rng = Rng::stream(42, 0);
    let mut t = 0.0;
    (0..n)
        .map(|i| {
            t += rng.exponential(mean_gap_ns);
            FlowConfig {
                id: i as u64,
                transport: 0,
                start_ns: t as u64,
                direction: Direction::Download,
                paths: None,
                app: AppConfig::Sized { size_bytes },
                nodelay: None,
            }
        })
        .collect()
}

/// The dumbbell scenarios (1)-(3) of `e2e.rs`, by name.
pub fn e2e_dumbbells() -> Vec<(&'static str, SimConfig)> {
    vec![
        (
            "(1) bulk 100 MB",
            base(
                vec![FlowConfig {
                    id: 0,
                    transport: 0,
                    start_ns: 0,
                    direction: Direction::Download,
                    paths: None,
                    app: AppConfig::Sized { size_bytes: 100_000_000 },
                    nodelay: None,
                }],
                60_000 * NS_PER_MS,
            ),
        ),
        ("(2) 1000 x 64 KB Poisson 50 ms", base(poisson_flows(1000, 50e6, 64_000), 200_000 * NS_PER_MS)),
        ("(3) 10000 x 64 KB Poisson 50 ms", base(poisson_flows(10_000, 50e6, 64_000), 2_000_000 * NS_PER_MS)),
    ]
}

/// The FatTree scenarios (4)-(7) of `e2e.rs`: (name, k, protocol, subflows).
pub fn e2e_fattrees() -> Vec<(&'static str, usize, Protocol, usize)> {
    vec![
        ("(4) k=4 TCP (ECMP)", 4, Protocol::Tcp, 1),
        ("(5) k=4 MPTCP LIA 8 subflows", 4, Protocol::Mptcp, 8),
        ("(6) k=8 TCP (ECMP)", 8, Protocol::Tcp, 1),
        ("(7) k=8 MPTCP LIA 8 subflows", 8, Protocol::Mptcp, 8),
    ]
}

/// FatTree k-ary permutation run for 3 s of simulated time, all flows bulk from 0 to 3 s.
pub fn fattree_permutation(k: usize, protocol: Protocol, subflows: usize) -> SimConfig {
    fattree_permutation_for(k, protocol, subflows, 3_000 * NS_PER_MS, 4_000 * NS_PER_MS)
}

/// FatTree k-ary permutation (Raiciu et al., SIGCOMM 2011, §4.1): every host sends to another
/// from time 0 to `stop_ns`, 100 Mbit/s links, `subflows` > 1 = MPTCP LIA one per core path,
/// else TCP Reno on ECMP; a `conn_series` sample every simulated second.
pub fn fattree_permutation_for(
    k: usize,
    protocol: Protocol,
    subflows: usize,
    stop_ns: u64,
    duration_ns: u64,
) -> SimConfig {
    let tree = FatTree::new(FatTreeConfig {
        k,
        host_rate_bps: 100_000_000,
        edge_agg_rate_bps: 100_000_000,
        agg_core_rate_bps: 100_000_000,
        link_delay_ns: 20_000,
        queue_packets: 100,
        host_interfaces: 1,
    });
    let how = if subflows > 1 { PathChoice::Explicit } else { PathChoice::Ecmp };
    let mut table = PathTable::default();
    let flows = permutation(tree.hosts(), 1)
        .into_iter()
        .enumerate()
        .map(|(src, dst)| {
            let choices = tree.choices(src, dst, src as u64, subflows, how);
            FlowConfig {
                id: src as u64,
                transport: 0,
                start_ns: 0,
                direction: Direction::Download,
                paths: Some(table.flow_paths(&tree, src, dst, &choices)),
                app: AppConfig::Bulk { stop_ns },
                nodelay: None,
            }
        })
        .collect();
    let mut cfg = base(flows, duration_ns);
    cfg.links = tree.links().to_vec();
    cfg.paths = table.paths;
    cfg.transports[0].protocol = protocol;
    cfg.transports[0].cc = if protocol == Protocol::Mptcp { "lia".into() } else { "reno".into() };
    cfg.transports[0].rcv_buf_bytes = 1 << 20;
    cfg.record.sample_interval_ns = 1_000 * NS_PER_MS;
    cfg
}

/// CPU time of the calling thread, seconds: unlike wall time, it does not count the time other
/// processes on a shared machine hold the core.
pub fn thread_cpu_secs() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec we own; CLOCK_THREAD_CPUTIME_ID exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}
