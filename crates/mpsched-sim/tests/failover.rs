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
    let e = serde_json::from_str::<PathEvent>(r#"{"kind": "blackhole", "at_ns": 1, "path": 0, "up": true}"#)
        .unwrap_err();
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
