//! What the records say at the end of a flow (the sender's counters are final, refused actions
//! are counted), and the progress a run reports while it goes.

mod common;
use common::*;
use mpsched_proto::sched::{Action, ConnView, Rejection, Scheduler};
use mpsched_sim::config::*;
use mpsched_sim::run::{run, run_with, run_with_progress, CustomSchedulers, Progress, PROGRESS_EVENTS};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

#[test]
fn a_completed_flow_records_every_byte_as_acknowledged() {
    // The flow completes when its last byte reaches the receiving application, but the sender
    // learns it one (half) round trip later, from the last ACK. The subflow rows must show
    // that final state: every byte acknowledged (it once showed 43 440 of 65 536 bytes).
    for (protocol, paths) in [(Protocol::Tcp, vec![0]), (Protocol::Mptcp, vec![0, 1])] {
        let links = vec![
            link("a.down", 50_000_000, 10 * MS, 100),
            link("a.up", 50_000_000, 10 * MS, 100),
            link("b.down", 20_000_000, 30 * MS, 100),
            link("b.up", 20_000_000, 30 * MS, 100),
        ];
        let paths_cfg = vec![
            PathConfig { name: "a".into(), down: vec![0], up: vec![1], gso: false },
            PathConfig { name: "b".into(), down: vec![2], up: vec![3], gso: false },
        ];
        let mut cfg = scenario(links, paths_cfg, 10 * S);
        cfg.transports.push(transport(protocol, "minrtt", "cubic", paths));
        for (i, size) in [65_536u64, 1 << 20].into_iter().enumerate() {
            cfg.flows.push(sized(i as u64, 0, i as u64 * 2 * S, size));
        }
        let rec = run(&cfg).unwrap();
        assert_eq!(bools(&rec, "flows", "completed"), vec![true, true]);
        let flow = u64s(&rec, "subflows", "flow_id");
        let acked = u64s(&rec, "subflows", "bytes_acked");
        for (id, size) in [(0u64, 65_536u64), (1, 1 << 20)] {
            let sum: u64 = (0..flow.len()).filter(|&i| flow[i] == id).map(|i| acked[i]).sum();
            assert_eq!(sum, size, "{protocol:?} flow {id}: bytes_acked over its subflows");
        }
        // The flow's completion time is still the receiver's last delivery (64 KiB over the
        // 20 ms path: handshake plus four round trips of slow start).
        let fct = opt_u64s(&rec, "flows", "fct_ns")[0].unwrap();
        assert!(fct < 100 * MS, "{protocol:?}: fct {fct}");
    }
}

/// Two paths and one sized download of `size_bytes` over both, with `scheduler`.
fn two_paths(scheduler: &str, size_bytes: u64, duration_ns: u64) -> SimConfig {
    let (links, paths) = paths_of(vec![
        (link("a.down", 100_000_000, 5 * MS, 200), link("a.up", 100_000_000, 5 * MS, 200)),
        (link("b.down", 20_000_000, 20 * MS, 100), link("b.up", 20_000_000, 20 * MS, 100)),
    ]);
    let mut cfg = scenario(links, paths, duration_ns);
    cfg.transports.push(transport(Protocol::Mptcp, scheduler, "lia", vec![0, 1]));
    cfg.flows.push(sized(0, 0, 0, size_bytes));
    cfg
}

#[derive(Default)]
struct Seen(Mutex<Vec<(u64, u64)>>);

impl Progress for Seen {
    fn simulated(&self, now_ns: u64, duration_ns: u64) {
        self.0.lock().unwrap().push((now_ns, duration_ns));
    }
}

#[test]
fn progress_reports_rising_simulated_times_ending_at_the_run_end_and_changes_no_record() {
    let mut cfg = two_paths("minrtt", 200 << 20, 20 * S);
    cfg.record.sample_interval_ns = 100 * MS;
    let seen = Seen::default();
    let rec = run_with_progress(&cfg, None, Some(&seen)).unwrap();
    let seen = seen.0.into_inner().unwrap();
    let times: Vec<u64> = seen.iter().map(|&(t, _)| t).collect();
    assert!(seen.iter().all(|&(_, d)| d == cfg.duration_ns));
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "times went back: {times:?}");
    assert_eq!(times.last(), Some(&rec.stats.end_ns));
    assert!(times.iter().any(|&t| t > 0 && t < rec.stats.end_ns), "no intermediate time: {times:?}");
    assert_eq!(times.len() as u64, rec.stats.events / PROGRESS_EVENTS + 1);
    assert_eq!(rec, run(&cfg).unwrap(), "reporting progress changed the records");
}

/// A scheduler that asks for a subflow the connection does not have, then for the real one,
/// and counts what it is told was refused.
#[derive(Debug)]
struct AsksForAMissingSubflow(Arc<AtomicU64>);

impl Scheduler for AsksForAMissingSubflow {
    fn name(&self) -> &'static str {
        "asks_missing"
    }
    fn schedule(&mut self, view: &ConnView<'_>, out: &mut Vec<Action>) {
        if view.unsent_bytes > 0 {
            out.push(Action::SendNew { subflow: 7, max_bytes: 1448 });
            if let Some(sf) = view.subflows.iter().find(|s| s.available()) {
                out.push(Action::SendNew { subflow: sf.id, max_bytes: 1448 });
            }
        }
    }
    fn on_rejected(&mut self, _action: Action, _why: Rejection, _now_ns: u64) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

struct Custom(Arc<AtomicU64>);

impl CustomSchedulers for Custom {
    fn build(&self, name: &str) -> Option<Box<dyn Scheduler>> {
        (name == "asks_missing").then(|| Box::new(AsksForAMissingSubflow(self.0.clone())) as Box<dyn Scheduler>)
    }
}

#[test]
fn refused_actions_reach_the_actions_table_with_the_counts_the_scheduler_was_told() {
    let refused = Arc::new(AtomicU64::new(0));
    let rec = run_with(&two_paths("asks_missing", 1 << 20, 10 * S), Some(&Custom(refused.clone()))).unwrap();
    assert_eq!(bools(&rec, "flows", "completed"), vec![true]);
    let counts = u64s(&rec, "actions", "rejected_count");
    assert_eq!(strs(&rec, "actions", "reason")[0], "unknown_subflow");
    assert_eq!(strs(&rec, "actions", "action")[0], "new");
    assert_eq!(strs(&rec, "actions", "scheduler")[0], "asks_missing");
    assert!(counts[0] > 0);
    assert_eq!(counts.iter().sum::<u64>(), refused.load(Ordering::Relaxed));
}

#[test]
fn a_run_without_refusals_has_an_empty_actions_table() {
    // minRTT only asks for what the window allows on an available subflow.
    let rec = run(&two_paths("minrtt", 1 << 20, 10 * S)).unwrap();
    assert_eq!(bools(&rec, "flows", "completed"), vec![true]);
    assert_eq!(rec.table("actions").map(|t| t.rows()), Some(0));
}
