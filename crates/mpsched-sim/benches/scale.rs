//! How the cost per packet grows with the size of a study (issue 17): one row per scale, run one
//! after another in one invocation so the ratios between rows are measured side by side.
//!
//! - Dumbbell with N = 100 / 1 000 / 10 000 / 100 000 concurrent long-lived TCP (cubic)
//!   downloads. The per-flow situation is the same at every N, so that only the number of
//!   flows changes what the simulator holds: the bottleneck runs at N x 1 Mbit/s with a
//!   drop-tail queue of N x 4 packets (1.2 bandwidth-delay products of one flow's share at
//!   the 40 ms RTT, both directions 20 ms one-way), flows start evenly spread over the first
//!   simulated second and send until the end, 3 s. 1 Mbit/s per flow (a window of a few
//!   packets, as on a heavily shared bottleneck) keeps 100 000 flows within ~a minute of CPU
//!   and a few GB; 3 s leaves 2 s (50 RTTs) with every flow running. `SCALE_FLOW_MBPS=M` gives
//!   each flow M Mbit/s and 4 x M packets of queue instead (M times the packets per row).
//! - FatTree k = 4 / 8 / 12 / 16, MPTCP permutation as in `e2e.rs` ((5), (7): 8 subflows, LIA,
//!   100 Mbit/s links) but for 1 s of simulated time (thousands of RTTs; k = 16 has 1024 hosts).
//!
//! Each row runs in its own child process (this binary re-invoked with `--row=NAME`), so its
//! peak RSS (`VmHWM`) is that row's alone; a small row is repeated until it has used ~2 s of
//! CPU (`SCALE_MIN_SECS`) and the median repetition is reported. Time per packet is CPU time of
//! the simulating thread (the machine is shared: compare the ratio to the row above, measured
//! minutes apart, not the absolute figures). Where `valgrind` is installed, instructions per
//! packet come from `valgrind --tool=callgrind` of one repetition of the row minus a run that
//! only builds the row's configuration (`--build-only`); a row whose estimated callgrind time is
//! above ~5 min prints "–" (`SCALE_CALLGRIND=0` skips callgrind altogether).
//!
//! Run: `cargo bench -p mpsched-sim --bench scale` (part of `make bench`); a name filter such
//! as `-- dumbbell` keeps matching rows; `SCALE_SKIP_100K=1` skips the 100 000-flow row.
//! `-- --dump-configs=DIR` writes the configurations of `e2e.rs` and the smallest rows here
//! as JSON (the input of `benches/records_digest.sh`) and exits.

mod common;

// mimalloc (v2) rather than the system allocator: fewer bytes a flow at 100 000 flows and less CPU
// a packet (benches/RESULTS.md, Session 13 perf17x). Set here, in the program, not in the
// library crates, so their users keep their own choice.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use common::{base, e2e_dumbbells, e2e_fattrees, fattree_permutation, fattree_permutation_for, thread_cpu_secs};
use mpsched_engine::time::NS_PER_MS;
use mpsched_sim::config::*;
use std::process::Command;
use std::time::Instant;

/// One row of the table: a name, the concurrent flows it keeps, and its configuration.
struct Row {
    name: String,
    flows: usize,
    fattree: bool,
    build: Box<dyn Fn() -> SimConfig>,
}

/// Each flow's share of the dumbbell, Mbit/s: 1, or `SCALE_FLOW_MBPS` (a heavier share keeps
/// more packets in flight per flow: memory per flow grows with it).
fn flow_share_mbps() -> u64 {
    std::env::var("SCALE_FLOW_MBPS").ok().and_then(|v| v.parse().ok()).filter(|m| *m > 0).unwrap_or(1)
}

/// The dumbbell of N concurrent long-lived downloads described at the top.
fn dumbbell_long_flows(n: usize) -> SimConfig {
    let mbps = flow_share_mbps();
    let duration_ns = 3_000 * NS_PER_MS;
    let flows = (0..n)
        .map(|i| FlowConfig {
            id: i as u64,
            transport: 0,
            start_ns: (i as u64 * 1_000 * NS_PER_MS) / n as u64,
            direction: Direction::Download,
            paths: None,
            app: AppConfig::Bulk { stop_ns: duration_ns },
            nodelay: None,
        })
        .collect();
    let mut cfg = base(flows, duration_ns);
    for link in &mut cfg.links {
        link.rate_bps = n as u64 * mbps * 1_000_000;
        link.queue_packets = Some(n as u64 * 4 * mbps);
    }
    cfg
}

fn rows() -> Vec<Row> {
    let mut rows = Vec::new();
    for n in [100usize, 1_000, 10_000, 100_000] {
        rows.push(Row {
            name: format!("dumbbell {n} flows"),
            flows: n,
            fattree: false,
            build: Box::new(move || dumbbell_long_flows(n)),
        });
    }
    for k in [4usize, 8, 12, 16] {
        rows.push(Row {
            name: format!("FatTree k={k} MPTCP"),
            flows: k * k * k / 4,
            fattree: true,
            build: Box::new(move || {
                fattree_permutation_for(k, Protocol::Mptcp, 8, 1_000 * NS_PER_MS, 1_000 * NS_PER_MS)
            }),
        });
    }
    rows
}

/// Peak resident set of this process so far, bytes (`VmHWM` of /proc/self/status).
fn peak_rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Child mode: runs one row, repeated until `min_secs` of CPU (or once with `reps` = 1), and
/// prints `packets cpu_s_median wall_s_median reps peak_rss_bytes` on one line.
fn run_row(row: &Row, build_only: bool, reps: Option<usize>, min_secs: f64) {
    let cfg = (row.build)();
    if build_only {
        println!("built {}", cfg.flows.len());
        return;
    }
    let (mut cpus, mut walls) = (Vec::new(), Vec::new());
    let mut packets;
    loop {
        let (cpu0, wall0) = (thread_cpu_secs(), Instant::now());
        let rec = mpsched_sim::run::run(&cfg).expect("benchmark config is valid");
        cpus.push(thread_cpu_secs() - cpu0);
        walls.push(wall0.elapsed().as_secs_f64());
        packets = if row.fattree { rec.stats.packet_hops } else { rec.stats.packets_sent };
        drop(rec);
        let done = match reps {
            Some(r) => cpus.len() >= r,
            None => cpus.iter().sum::<f64>() >= min_secs || cpus.len() >= 50,
        };
        if done {
            break;
        }
    }
    cpus.sort_by(f64::total_cmp);
    walls.sort_by(f64::total_cmp);
    println!("{packets} {} {} {} {}", cpus[cpus.len() / 2], walls[walls.len() / 2], cpus.len(), peak_rss_bytes());
}

/// Instructions (`Collected :` of callgrind) of this binary run with `args`.
fn callgrind_instructions(args: &[&str]) -> Option<u64> {
    let exe = std::env::current_exe().ok()?;
    let out = Command::new("valgrind")
        .args(["--tool=callgrind", "--callgrind-out-file=/dev/null"])
        .arg(exe)
        .args(args)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stderr);
    text.lines().find_map(|l| l.split("Collected :").nth(1)).and_then(|n| n.trim().parse().ok())
}

fn has_valgrind() -> bool {
    Command::new("valgrind").arg("--version").output().is_ok_and(|o| o.status.success())
}

/// Writes the configurations the byte-identity check runs (`benches/records_digest.sh`).
fn dump_configs(dir: &str) {
    std::fs::create_dir_all(dir).expect("create the dump directory");
    let mut all: Vec<(String, SimConfig)> = e2e_dumbbells().into_iter().map(|(n, c)| (n.to_string(), c)).collect();
    for (name, k, protocol, subflows) in e2e_fattrees() {
        if k == 4 {
            all.push((name.to_string(), fattree_permutation(k, protocol, subflows)));
        }
    }
    for row in rows() {
        if row.name == "dumbbell 100 flows" || row.name == "FatTree k=4 MPTCP" {
            all.push((format!("scale {}", row.name), (row.build)()));
        }
    }
    for (name, cfg) in all {
        let file: String = name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
        let text = serde_json::to_string(&cfg).expect("configs serialise");
        std::fs::write(format!("{dir}/e2e_{file}.json"), text).expect("write a config");
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(dir) = args.iter().find_map(|a| a.strip_prefix("--dump-configs=")) {
        return dump_configs(dir);
    }
    let env_secs = std::env::var("SCALE_MIN_SECS").ok().and_then(|s| s.parse().ok());
    let min_secs: f64 = env_secs.unwrap_or(2.0);
    if let Some(name) = args.iter().find_map(|a| a.strip_prefix("--row=")) {
        let Some(row) = rows().into_iter().find(|r| r.name == name) else {
            let names: Vec<String> = rows().into_iter().map(|r| r.name).collect();
            eprintln!("scale: no row named {name:?}; --row= takes one of: {}", names.join(", "));
            std::process::exit(2);
        };
        let reps = args.iter().find_map(|a| a.strip_prefix("--reps=")).map(|r| r.parse().expect("--reps=N"));
        return run_row(&row, args.iter().any(|a| a == "--build-only"), reps, min_secs);
    }
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let skip_100k = std::env::var("SCALE_SKIP_100K").is_ok_and(|v| !v.is_empty() && v != "0");
    let callgrind = std::env::var("SCALE_CALLGRIND").map_or(true, |v| v != "0") && has_valgrind();
    let exe = std::env::current_exe().expect("own path");
    println!("| row | concurrent flows | packets (FatTree: packet-hops) | reps | CPU ns per packet | vs row above | wall ns per packet | vs row above | instructions per packet | peak RSS MB | peak RSS per flow KB |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let mut above: Option<(bool, f64, f64)> = None;
    for row in rows() {
        if !filters.is_empty() && !filters.iter().any(|f| row.name.contains(f.as_str())) {
            continue;
        }
        if skip_100k && row.flows == 100_000 {
            eprintln!("[scale] {}: skipped (SCALE_SKIP_100K)", row.name);
            continue;
        }
        eprintln!("[scale {}] {} ...", chrono_now(), row.name);
        let out = Command::new(&exe).arg(format!("--row={}", row.name)).output().expect("run the row's child");
        let text = String::from_utf8_lossy(&out.stdout);
        let f: Vec<&str> = text.split_whitespace().collect();
        assert!(
            out.status.success() && f.len() == 5,
            "row {} failed: {}",
            row.name,
            String::from_utf8_lossy(&out.stderr)
        );
        let packets: u64 = f[0].parse().unwrap();
        let (cpu, wall): (f64, f64) = (f[1].parse().unwrap(), f[2].parse().unwrap());
        let reps: usize = f[3].parse().unwrap();
        let rss: u64 = f[4].parse().unwrap();
        let cpu_ns = cpu * 1e9 / packets.max(1) as f64;
        let wall_ns = wall * 1e9 / packets.max(1) as f64;
        let ratio = |now: f64, i: usize| match above {
            Some((kind, c, w)) if kind == row.fattree => format!("{:.2}x", now / if i == 0 { c } else { w }),
            _ => "–".to_string(),
        };
        // Callgrind runs this kind of code ~50-80x slower than native: skip a row above ~5 min.
        let instructions = if callgrind && cpu * 80.0 < 300.0 {
            eprintln!("[scale {}] {} under callgrind (~{:.0} s) ...", chrono_now(), row.name, cpu * 80.0);
            let row_arg = format!("--row={}", row.name);
            match (callgrind_instructions(&[&row_arg, "--reps=1"]), callgrind_instructions(&[&row_arg, "--build-only"]))
            {
                (Some(all), Some(base)) => format!("{:.0}", all.saturating_sub(base) as f64 / packets.max(1) as f64),
                _ => "–".to_string(),
            }
        } else {
            "–".to_string()
        };
        println!(
            "| {} | {} | {packets} | {reps} | {cpu_ns:.0} | {} | {wall_ns:.0} | {} | {instructions} | {:.1} | {:.1} |",
            row.name,
            row.flows,
            ratio(cpu_ns, 0),
            ratio(wall_ns, 1),
            rss as f64 / 1e6,
            rss as f64 / 1e3 / row.flows as f64,
        );
        above = Some((row.fattree, cpu_ns, wall_ns));
    }
}

/// UTC time of day for the progress lines.
fn chrono_now() -> String {
    let s = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    format!("{:02}:{:02}:{:02}", s / 3600 % 24, s / 60 % 60, s % 60)
}
