//! Failover, failback and real-time traffic: path impairments as events (blackhole, loss ramp,
//! RTT spike, rate collapse, each with its recovery), the upstream kernel's stale-subflow
//! detection under the `linux` scheduler, and message workloads with deadlines.

mod common;
use common::*;
use mpsched_sim::config::*;
use mpsched_sim::run::run;

#[test]
fn both_path_event_shapes_parse_and_a_bad_one_names_its_field() {
    let legacy: PathEvent = serde_json::from_str(r#"{"at_ns": 5, "path": 1, "up": false}"#).unwrap();
    assert_eq!(legacy, PathEvent::up_down(5, 1, false));
    let ramp: PathEvent = serde_json::from_str(
        r#"{"kind": "loss_ramp", "at_ns": 1, "path": 0, "ramp_ns": 10, "from_p": 0.0, "to_p": 0.5}"#,
    )
    .unwrap();
    assert_eq!(ramp.end_ns(), None);
    let black: PathEvent =
        serde_json::from_str(r#"{"kind": "blackhole", "at_ns": 1, "path": 0, "duration_ns": 9, "direction": "down"}"#)
            .unwrap();
    assert_eq!(black.end_ns(), Some(10));
    // Round trip through the serialised form.
    assert_eq!(serde_json::from_str::<PathEvent>(&serde_json::to_string(&black).unwrap()).unwrap(), black);
    let e = serde_json::from_str::<PathEvent>(r#"{"kind": "rtt_spike", "at_ns": 1, "path": 0}"#).unwrap_err();
    assert!(e.to_string().contains("extra_delay_ns"), "{e}");
    let e =
        serde_json::from_str::<PathEvent>(r#"{"kind": "blackhole", "at_ns": 1, "path": 0, "up": true}"#).unwrap_err();
    assert!(e.to_string().contains("up"), "{e}");

    let (links, paths) = paths_of(vec![(link("d", 10_000_000, MS, 100), link("u", 10_000_000, MS, 100))]);
    let mut cfg = scenario(links, paths, S);
    cfg.transports.push(transport(Protocol::Mptcp, "minrtt", "reno", vec![0]));
    cfg.flows.push(sized(0, 0, 0, 1000));
    cfg.path_events.push(impairment(2, 0, 0, MS, 0));
    if let PathEvent::Kind(PathImpairment::LossRamp { ref mut to_p, .. }) = cfg.path_events[0] {
        *to_p = 1.5;
    }
    assert_eq!(run(&cfg).unwrap_err().field, "path_events[0].to_p");
}

/// Two paths: path 0 at 10 ms one way, path 1 at 40 ms, both 10 Mbit/s with 100-packet queues.
fn two_paths(duration_ns: u64) -> SimConfig {
    let (links, paths) = paths_of(vec![
        (link("a.d", 10_000_000, 10 * MS, 100), link("a.u", 10_000_000, 10 * MS, 100)),
        (link("b.d", 10_000_000, 40 * MS, 100), link("b.u", 10_000_000, 40 * MS, 100)),
    ]);
    let mut cfg = scenario(links, paths, duration_ns);
    cfg.record.sample_interval_ns = 10 * MS;
    cfg
}

/// A game-state stream: 300-byte messages at 50 Hz for `stop_ns`, deadline 150 ms.
fn game(scheduler: &str, stop_ns: u64, events: Vec<PathEvent>) -> mpsched_sim::records::Records {
    let mut cfg = two_paths(stop_ns + 10 * S);
    cfg.transports.push(transport(Protocol::Mptcp, scheduler, "cubic", vec![0, 1]));
    let mut f = sized(0, 0, 0, 0);
    f.app = AppConfig::Messages { size_bytes: 300, interval_ns: 20 * MS, deadline_ns: Some(150 * MS), stop_ns };
    cfg.flows.push(f);
    cfg.path_events = events;
    run(&cfg).unwrap()
}

/// (sent_ns, delay_ns) of every message, and the deadline flags.
fn messages(rec: &mpsched_sim::records::Records) -> (Vec<(u64, Option<u64>)>, Vec<bool>) {
    let sent = u64s(rec, "blocks", "sent_ns");
    let delay = opt_u64s(rec, "blocks", "delay_ns");
    (sent.into_iter().zip(delay).collect(), bools(rec, "blocks", "deadline_missed"))
}

#[test]
#[ignore = "prints numbers for the report"]
fn print_failover_numbers() {
    for sched in ["minrtt", "linux", "redundant", "blest", "ecf"] {
        for (name, ev) in
            [("blackhole", impairment(1, 0, 2 * S, 3 * S, 0)), ("down", impairment(0, 0, 2 * S, 3 * S, 0))]
        {
            let rec = game(sched, 8 * S, vec![ev]);
            let (m, missed) = messages(&rec);
            let after: Vec<_> = m.iter().zip(&missed).filter(|((s, _), _)| *s >= 1_500 * MS).collect();
            let n_missed = after.iter().filter(|(_, x)| **x).count();
            let worst = after.iter().filter_map(|((_, d), _)| *d).max().unwrap_or(0);
            // First message sent after the event delivered within the deadline again.
            let recovered = m.iter().zip(&missed).find(|((s, _), x)| *s >= 2 * S && !**x).map(|((s, _), _)| *s);
            // First message after the recovery (5 s) that went on path 0 again: delay < 40 ms.
            let back = m.iter().find(|(s, d)| *s >= 5 * S && d.is_some_and(|d| d < 40 * MS)).map(|(s, _)| *s);
            let sacked = u64s(&rec, "subflows", "bytes_acked");
            println!(
                "{sched:9} {name:9} missed {n_missed:3}/{} worst {:6.1} ms, first on-time sent at {:?} ms, back on path 0 at {:?} ms, acked per subflow {sacked:?}",
                after.len(),
                worst as f64 / 1e6,
                recovered.map(|s| s / MS),
                back.map(|s| s / MS)
            );
        }
    }
}
