//! End-to-end simulator speed on the scenarios our peers (ns-3, htsim) were measured on:
//! 100 Mbit/s, 20 ms one-way, 333-packet drop-tail queue;
//!   (1) one 100 MB bulk TCP transfer,
//!   (2) 1000 flows of 64 KB with Poisson arrivals, mean gap 50 ms,
//!   (3) 10 000 such flows;
//! and the FatTree permutation of Raiciu et al. (SIGCOMM 2011, §4.1; htsim reached 85 %
//! utilisation with MPTCP vs 54 % with TCP on k = 8): every host sends to another, 100 Mbit/s
//! links, 8 subflows with LIA (one per core path) against single-path TCP on ECMP, reported
//! as packet-hops per wall-clock second and core utilisation (goodput in the last simulated
//! second over the hosts' total rate).
//! Prints one Markdown table row per scenario: simulated packets per wall-clock second and
//! the cost per packet, so (2) and (3) can be compared for growth with the number of flows.
//!
//! Run: `cargo bench -p mpsched-sim --bench e2e` (or `make bench`, which appends to
//! benches/RESULTS.md).

mod common;

// mimalloc (v2) rather than the system allocator: fewer bytes a flow at 100 000 flows and less CPU
// a packet (benches/RESULTS.md, Session 13 perf17x). Set here, in the program, not in the
// library crates, so their users keep their own choice.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use common::{e2e_dumbbells, e2e_fattrees, fattree_permutation, thread_cpu_secs};
use mpsched_engine::time::NS_PER_MS;
use mpsched_sim::config::*;
use std::time::Instant;

/// Runs `cfg` `reps` times; reports the median and the best CPU time of the run (the machine is
/// shared and noisy: the best of several runs is the least disturbed one, and ratios between
/// rows of one run are what to compare), and the median wall time beside them.
fn measure(name: &str, cfg: &SimConfig, reps: usize) {
    let mut cpus = Vec::with_capacity(reps);
    let mut walls = Vec::with_capacity(reps);
    let mut last = None;
    for _ in 0..reps {
        let started = Instant::now();
        let cpu0 = thread_cpu_secs();
        let rec = mpsched_sim::run::run(cfg).expect("benchmark config is valid");
        cpus.push(thread_cpu_secs() - cpu0);
        walls.push(started.elapsed().as_secs_f64());
        last = Some(rec);
    }
    cpus.sort_by(f64::total_cmp);
    walls.sort_by(f64::total_cmp);
    let wall = cpus[cpus.len() / 2];
    let best = cpus[0];
    let wall_clock = walls[walls.len() / 2];
    let rec = last.expect("at least one repetition");
    let s = rec.stats;
    let flows = rec.table("flows").unwrap();
    let completed = match flows.column("completed") {
        Some(mpsched_sim::records::Column::Bool(v)) => v.iter().filter(|b| **b).count(),
        _ => 0,
    };
    println!(
        "| {name} | {:.3} | {:.3} | {:.3} | {} | {:.2} | {:.2} | {:.0} | {:.2} | {completed}/{} |",
        wall,
        best,
        wall_clock,
        s.packets_sent,
        s.packets_sent as f64 / wall / 1e6,
        s.packets_sent as f64 / best / 1e6,
        wall * 1e9 / s.packets_sent.max(1) as f64,
        s.events as f64 / wall / 1e6,
        flows.rows(),
    );
}

/// Runs a FatTree permutation `reps` times: median wall time, packet-hops per second and the
/// utilisation of the hosts' links in the last second of sending (2 s to 3 s).
fn measure_fattree(name: &str, cfg: &SimConfig, hosts: usize, reps: usize) {
    let mut walls = Vec::with_capacity(reps);
    let mut last = None;
    for _ in 0..reps {
        let started = Instant::now();
        let rec = mpsched_sim::run::run(cfg).expect("benchmark config is valid");
        walls.push(started.elapsed().as_secs_f64());
        last = Some(rec);
    }
    walls.sort_by(f64::total_cmp);
    let wall = walls[walls.len() / 2];
    let rec = last.expect("at least one repetition");
    let series = rec.table("conn_series").expect("conn_series");
    let (Some(mpsched_sim::records::Column::U64(t)), Some(mpsched_sim::records::Column::U64(b))) =
        (series.column("time_ns"), series.column("delivered_bytes"))
    else {
        panic!("conn_series columns")
    };
    let at = |x: u64| -> u64 { t.iter().zip(b).filter(|(t, _)| **t == x).map(|(_, b)| *b).sum() };
    let bits = (at(3_000 * NS_PER_MS) - at(2_000 * NS_PER_MS)) as f64 * 8.0;
    let utilisation = bits / (hosts as f64 * 100e6);
    let hops = rec.stats.packet_hops;
    println!(
        "| {name} | {wall:.3} (best {:.3}) | {hops} | {:.2} | {:.0} % |",
        walls[0],
        hops as f64 / wall / 1e6,
        utilisation * 100.0
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let only: Option<&String> = args.iter().find(|a| !a.starts_with('-'));
    let reps = args
        .iter()
        .find_map(|a| a.strip_prefix("--reps="))
        .map_or(5, |r| r.parse().expect("--reps=N takes a whole number"));
    println!("| scenario | CPU s, median of {reps} | CPU s, best | wall s, median | packets | M packets/s (median CPU) | M packets/s (best CPU) | ns/packet (median CPU) | M events/s (median CPU) | flows done |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let scenarios = e2e_dumbbells();
    for (name, cfg) in &scenarios {
        if only.is_some_and(|o| !name.contains(o.as_str())) {
            continue;
        }
        measure(name, cfg, reps);
    }
    let fattrees: Vec<_> =
        e2e_fattrees().into_iter().filter(|(name, ..)| only.is_none_or(|o| name.contains(o.as_str()))).collect();
    if fattrees.is_empty() {
        return;
    }
    println!();
    println!("| FatTree permutation, 3 s simulated | wall s, median of {reps} | packet-hops | M packet-hops/s | utilisation |");
    println!("|---|---|---|---|---|");
    for (name, k, protocol, subflows) in fattrees {
        let cfg = fattree_permutation(k, protocol, subflows);
        // k = 8 takes 10-30 s a run on this machine: at most 3 repetitions.
        measure_fattree(name, &cfg, k * k * k / 4, if k > 4 { reps.min(3) } else { reps });
    }
}
