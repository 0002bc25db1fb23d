//! Topologies: the FatTree's size and equal-cost paths, routes that are connected chains of
//! links, ECMP spreading subflows over the core, and the permutation experiment of Raiciu et
//! al. (MPTCP with several subflows fills more of the core than single-path TCP).

mod common;
use common::*;
use mpsched_sim::config::*;
use mpsched_sim::run::run;
use mpsched_sim::topology::*;

fn tree(k: usize) -> FatTree {
    tree_with(k, 1)
}

fn tree_with(k: usize, host_interfaces: usize) -> FatTree {
    let cfg = FatTreeConfig {
        k,
        host_rate_bps: 100_000_000,
        edge_agg_rate_bps: 100_000_000,
        agg_core_rate_bps: 100_000_000,
        link_delay_ns: 20_000,
        queue_packets: 100,
        host_interfaces,
    };
    cfg.check().unwrap();
    FatTree::new(cfg)
}

/// "a->b" link names (a parallel copy is "a->b#i"): every route is a chain (each hop starts
/// where the previous one ended).
fn assert_chain(t: &FatTree, route: &[usize], src: usize, dst: usize) {
    let names: Vec<&str> = route.iter().map(|&l| t.links()[l].name.split('#').next().unwrap()).collect();
    assert!(names[0].starts_with(&format!("h{src}->")), "{names:?}");
    assert!(names.last().unwrap().ends_with(&format!("->h{dst}")), "{names:?}");
    for w in names.windows(2) {
        let (_, to) = w[0].split_once("->").unwrap();
        let (from, _) = w[1].split_once("->").unwrap();
        assert_eq!(to, from, "{names:?}");
    }
}

#[test]
fn fattree_k4_has_16_hosts_and_the_expected_equal_cost_paths() {
    let t = tree(4);
    assert_eq!(t.hosts(), 16);
    assert_eq!(t.core_switches(), 4);
    // 16 host links, 16 edge-aggregation and 16 aggregation-core links, each both ways.
    assert_eq!(t.links().len(), 96);
    assert_eq!(t.equal_cost_paths(0, 1), 1, "same edge switch");
    assert_eq!(t.equal_cost_paths(0, 2), 2, "same pod: one path per aggregation switch");
    assert_eq!(t.equal_cost_paths(0, 4), 4, "between pods: one path per core switch");
    let t8 = tree(8);
    assert_eq!(t8.hosts(), 128);
    assert_eq!(t8.equal_cost_paths(0, 127), 16);
    for (t, k) in [(&t, 4), (&t8, 8)] {
        for src in 0..t.hosts() {
            for dst in (0..t.hosts()).filter(|&d| d != src) {
                let n = t.equal_cost_paths(src, dst);
                let routes: std::collections::BTreeSet<Vec<usize>> = (0..n).map(|c| t.route(src, dst, c, 0)).collect();
                assert_eq!(routes.len(), n, "k={k} {src}->{dst}: paths are distinct");
                for r in &routes {
                    assert_chain(t, r, src, dst);
                    assert_eq!(
                        r.len(),
                        if n == 1 {
                            2
                        } else if n == k / 2 {
                            4
                        } else {
                            6
                        }
                    );
                }
            }
        }
    }
}

#[test]
fn inter_pod_paths_each_cross_a_different_core_switch() {
    let t = tree(4);
    let cores: Vec<String> = (0..4)
        .map(|c| {
            let r = t.route(0, 12, c, 0);
            t.links()[r[2]].name.split_once("->").unwrap().1.to_string()
        })
        .collect();
    assert_eq!(cores, vec!["c0", "c1", "c2", "c3"]);
}

#[test]
fn ecmp_spreads_subflows_over_the_cores_and_explicit_assignment_uses_each_once() {
    let t = tree(4);
    let mut per_core = [0usize; 4];
    let mut n = 0;
    for src in 0..16 {
        for dst in (0..16).filter(|&d| t.pod(d) != t.pod(src)) {
            for c in t.choices(src, dst, (src * 16 + dst) as u64, 8, PathChoice::Ecmp) {
                per_core[c] += 1;
                n += 1;
            }
        }
    }
    // 16 x 12 pairs x 8 subflows = 1536 choices: each core within 10 % of a quarter.
    for (c, &k) in per_core.iter().enumerate() {
        let share = k as f64 / n as f64;
        assert!((share - 0.25).abs() < 0.025, "core {c}: {share}");
    }
    // One flow's 8 hashed subflows land on more than one core; explicit: 0,1,2,3,0,1,2,3.
    let hashed = t.choices(0, 12, 7, 8, PathChoice::Ecmp);
    assert!(hashed.iter().collect::<std::collections::BTreeSet<_>>().len() > 1, "{hashed:?}");
    assert_eq!(t.choices(0, 12, 7, 8, PathChoice::Explicit), vec![0, 1, 2, 3, 0, 1, 2, 3]);
    // k = 8: 8 explicit subflows of one flow take every other of the 16 core paths (two under
    // each aggregation switch), and different flows start at different offsets, so together
    // they use every core switch.
    let t8 = tree(8);
    let one = t8.choices(0, 127, 1, 8, PathChoice::Explicit);
    assert!(one.windows(2).all(|w| w[1] == w[0] + 2), "{one:?}");
    let mut used = std::collections::BTreeSet::new();
    for f in 0..16u64 {
        used.extend(t8.choices(0, 127, f, 8, PathChoice::Explicit));
    }
    assert_eq!(used.len(), 16, "all core paths in use across flows");
}

#[test]
fn permutation_is_a_derangement() {
    for seed in 0..20 {
        let p = permutation(16, seed);
        let mut seen = p.clone();
        seen.sort();
        assert_eq!(seen, (0..16).collect::<Vec<_>>());
        assert!(p.iter().enumerate().all(|(h, &d)| h != d));
    }
}

/// Permutation on a k = 4 tree: total goodput in the last second of 3, in bit/s.
fn permutation_goodput(protocol: Protocol, cc: &str, subflows: usize, how: PathChoice) -> f64 {
    let t = tree(4);
    let dst = permutation(t.hosts(), 1);
    let mut table = PathTable::default();
    let mut flows = Vec::new();
    for (src, &d) in dst.iter().enumerate() {
        let choices = t.choices(src, d, src as u64, subflows, how);
        let paths = table.flow_paths(&t, src, d, &choices);
        flows.push(FlowConfig {
            paths: Some(paths),
            app: AppConfig::Bulk { stop_ns: 3 * S },
            ..sized(src as u64, 0, 0, 1)
        });
    }
    let mut cfg = scenario(t.links().to_vec(), table.paths, 4 * S);
    cfg.transports.push(TransportConfig { rcv_buf_bytes: 1 << 20, ..transport(protocol, "minrtt", cc, vec![0]) });
    cfg.flows = flows;
    cfg.record.sample_interval_ns = S;
    goodput_bps(&run(&cfg).unwrap(), 2 * S, 3 * S)
}

/// Goodput of all flows together between two sample times, bit/s (from `conn_series`).
fn goodput_bps(rec: &mpsched_sim::records::Records, from_ns: u64, to_ns: u64) -> f64 {
    let time = u64s(rec, "conn_series", "time_ns");
    let got = u64s(rec, "conn_series", "delivered_bytes");
    let at = |x: u64| -> u64 { time.iter().zip(&got).filter(|(t, _)| **t == x).map(|(_, b)| *b).sum() };
    (at(to_ns) - at(from_ns)) as f64 * 8e9 / (to_ns - from_ns) as f64
}

#[test]
fn mptcp_fills_more_of_a_fattree_than_tcp_under_a_permutation() {
    // Raiciu et al. §4.1: on a permutation, single-path TCP with ECMP collides on core links;
    // MPTCP with one subflow per core path (LIA) gets closer to the full 16 x 100 Mbit/s.
    let tcp = permutation_goodput(Protocol::Tcp, "reno", 1, PathChoice::Ecmp);
    let mptcp = permutation_goodput(Protocol::Mptcp, "lia", 8, PathChoice::Explicit);
    let full = 16.0 * 100e6;
    eprintln!("utilisation: tcp {:.2}, mptcp {:.2}", tcp / full, mptcp / full);
    assert!(mptcp > 1.1 * tcp, "mptcp {mptcp:.3e} vs tcp {tcp:.3e}");
    assert!(mptcp < full);
}

#[test]
fn hosts_with_several_interfaces_give_each_subflow_its_own_links_below_the_core() {
    // `003_`'s setting: 4 interfaces per host, 4 subflows, one per interface and core switch.
    let t = tree_with(4, 4);
    // Host-edge and edge-aggregation links are 4 parallel copies each; the core tier is not.
    assert_eq!(t.links().len(), 2 * (16 * 4 + 16 * 4 + 16));
    let (src, dst) = (0, 12);
    let choices = t.choices(src, dst, 7, 4, PathChoice::Explicit);
    let mut table = PathTable::default();
    let paths = table.flow_paths(&t, src, dst, &choices);
    let mut seen = std::collections::BTreeSet::new();
    for &p in &paths {
        let path = &table.paths[p];
        assert_chain(&t, &path.down, src, dst);
        assert_chain(&t, &path.up, dst, src);
        for &l in path.down.iter().chain(&path.up) {
            assert!(seen.insert(l), "link {} is shared by two subflows", t.links()[l].name);
        }
    }
    let no_interface = FatTreeConfig { host_interfaces: 0, ..t.config().clone() };
    assert!(no_interface.check().unwrap_err().contains("host_interfaces"));
}

#[test]
fn four_interfaces_and_four_subflows_carry_four_times_one_interface() {
    // One flow between pods, alone in the tree: with one interface its subflows share the
    // 100 Mbit/s host link; with four, each subflow has a 100 Mbit/s path of its own.
    let goodput = |interfaces: usize| {
        let t = tree_with(4, interfaces);
        let mut table = PathTable::default();
        let choices = t.choices(0, 12, 0, 4, PathChoice::Explicit);
        let paths = table.flow_paths(&t, 0, 12, &choices);
        let mut cfg = scenario(t.links().to_vec(), table.paths, 3 * S);
        cfg.transports
            .push(TransportConfig { rcv_buf_bytes: 8 << 20, ..transport(Protocol::Mptcp, "minrtt", "cubic", vec![0]) });
        cfg.flows =
            vec![FlowConfig { paths: Some(paths), app: AppConfig::Bulk { stop_ns: 3 * S }, ..sized(0, 0, 0, 1) }];
        cfg.record.sample_interval_ns = S;
        goodput_bps(&run(&cfg).unwrap(), S, 2 * S)
    };
    let (one, four) = (goodput(1), goodput(4));
    eprintln!("goodput: 1 interface {one:.3e}, 4 interfaces {four:.3e}");
    assert!(one < 100e6, "{one}");
    assert!(four > 3.3 * one && four < 4.0 * 100e6, "one {one:.3e}, four {four:.3e}");
}
