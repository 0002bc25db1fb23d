//! Flows built in kept endpoints (`endpoint/pool.rs`) run exactly as flows built afresh; a flow
//! slot's copies of its configuration say what the configuration does.

use super::Simulation;
use crate::config::SimConfig;
use crate::records::Records;

const MS: u64 = 1_000_000;

/// `flows` (JSON) over one path (TCP, `cc`) or two (MPTCP with `scheduler`): 20 Mbit/s, 10 /
/// 25 ms one way, 60-packet queues, Bernoulli loss `loss` on the down links, sampled every
/// 50 ms.
fn cfg(protocol: &str, scheduler: &str, cc: &str, loss: f64, flows: Vec<serde_json::Value>) -> SimConfig {
    let n = if protocol == "tcp" { 1 } else { 2 };
    let mut links = Vec::new();
    let mut paths = Vec::new();
    for i in 0..n {
        let delay_ns = (10 + 15 * i as u64) * MS;
        for (dir, p) in [("d", loss), ("u", 0.0)] {
            let loss = if p > 0.0 {
                serde_json::json!({"model": "bernoulli", "p": p})
            } else {
                serde_json::json!({"model": "none"})
            };
            links.push(serde_json::json!({"name": format!("{dir}{i}"), "rate_bps": 20_000_000u64,
                                          "delay_ns": delay_ns, "queue_packets": 60, "loss": loss}));
        }
        paths.push(serde_json::json!({"name": format!("p{i}"), "down": [2 * i], "up": [2 * i + 1]}));
    }
    let v = serde_json::json!({
        "seed": 5, "duration_ns": 30_000 * MS, "links": links, "paths": paths,
        "transports": [{"protocol": protocol, "scheduler": scheduler, "cc": cc,
                        "rcv_buf_bytes": 6u64 << 20, "snd_buf_bytes": 4u64 << 20,
                        "paths": (0..n).collect::<Vec<_>>()}],
        "flows": flows,
        "record": {"sample_interval_ns": 50 * MS},
    });
    serde_json::from_value(v).expect("a valid configuration")
}

/// `count` flows of `app`, one every `gap_ms` (every third an upload, unless the app is an RPC:
/// download only).
fn flows(count: u64, gap_ms: u64, app: serde_json::Value) -> Vec<serde_json::Value> {
    (0..count)
        .map(|i| {
            let direction = if i % 3 == 2 && app["kind"] != "rpc" { "upload" } else { "download" };
            serde_json::json!({"id": i, "transport": 0, "start_ns": i * gap_ms * MS,
                               "direction": direction, "app": app})
        })
        .collect()
}

/// The records of `cfg`, with or without the pool, and endpoints built in kept ones.
fn run(cfg: &SimConfig, pool: bool) -> (Records, u64) {
    cfg.validate().unwrap();
    let mut sim = Simulation::new(cfg, None);
    sim.conn_configs.pool.off = !pool;
    sim.run_to_end(None);
    let reused = sim.conn_configs.pool.reused;
    (sim.into_records(), reused)
}

#[test]
fn flows_built_in_kept_endpoints_record_what_fresh_ones_do() {
    let sized = |bytes: u64| serde_json::json!({"kind": "sized", "size_bytes": bytes});
    let rpc = serde_json::json!({"kind": "rpc", "requests": 8, "request_bytes": 2_000,
                                 "response_bytes": 20_000, "concurrency": 2});
    let cases = [
        ("short TCP flows", cfg("tcp", "", "cubic", 0.0, flows(60, 40, sized(64_000)))),
        // Losses: recovery, retransmission queues, SACK ranges in the kept endpoints.
        ("lossy TCP flows", cfg("tcp", "", "reno", 0.02, flows(60, 40, sized(64_000)))),
        // Windows past a kept queue's bound: rooms too large are not kept.
        ("longer TCP flows", cfg("tcp", "", "cubic", 0.005, flows(20, 150, sized(1_500_000)))),
        ("MPTCP flows, coupled CC", cfg("mptcp", "minrtt", "lia", 0.01, flows(40, 60, sized(200_000)))),
        ("MPTCP flows, upstream scheduler", cfg("mptcp", "linux", "cubic", 0.01, flows(40, 60, sized(100_000)))),
        ("RPC flows (request halves)", cfg("mptcp", "minrtt", "cubic", 0.01, flows(20, 200, rpc))),
    ];
    for (what, cfg) in cases {
        let (fresh, none) = run(&cfg, false);
        let (pooled, reused) = run(&cfg, true);
        assert_eq!(none, 0, "{what}: nothing reused without the pool");
        assert!(reused > 0, "{what}: the pool was used");
        assert!(pooled == fresh, "{what}: records differ with the pool");
    }
}

#[test]
fn a_run_keeps_no_more_endpoints_than_flows_left_to_start_or_ever_concurrent() {
    let app = serde_json::json!({"kind": "sized", "size_bytes": 64_000});
    // All flows start together: none is left to start when any finishes, so none is kept.
    let together = cfg("tcp", "", "cubic", 0.0, flows(30, 0, app.clone()));
    assert_eq!(run(&together, true).1, 0);
    // One at a time (each done before the next starts): one sender and one receiver kept.
    let apart = cfg("tcp", "", "cubic", 0.0, flows(10, 2_000, app));
    apart.validate().unwrap();
    let mut sim = Simulation::new(&apart, None);
    sim.run_to_end(None);
    assert_eq!(sim.peak_active_flows, 1);
    assert_eq!(sim.conn_configs.pool.reused, 2 * 9, "every flow but the first built in the kept pair");
    assert_eq!(sim.conn_configs.pool.kept(), (0, 0), "the last flow's endpoints were not kept");
}

/// The flow slot's own copies of its configuration (`Flow::paths`, and the sender's side read
/// from the endpoint's variant, `Flow::sender_is_client`) say what `cfg.flows[fi]` does, for
/// downloads and uploads, on the transport's paths and on paths of the flow's own.
#[test]
fn a_flow_slot_knows_its_paths_and_direction_as_the_config_does() {
    let bulk = serde_json::json!({"kind": "bulk", "stop_ns": 10_000 * MS});
    let mut flows = flows(6, 10, bulk);
    flows[1]["paths"] = serde_json::json!([1]);
    flows[2]["paths"] = serde_json::json!([1, 0]);
    flows[4]["paths"] = serde_json::json!([0]);
    let mut cfg = cfg("mptcp", "minrtt", "cubic", 0.0, flows);
    // Ends while every flow still runs, so their slots are there to look at.
    cfg.duration_ns = 500 * MS;
    cfg.validate().unwrap();
    let mut sim = Simulation::new(&cfg, None);
    sim.run_to_end(None);
    let mut seen = [0; 2];
    for (fi, f) in sim.flows.iter().enumerate() {
        let f = f.as_ref().expect("still running");
        let fc = &cfg.flows[fi];
        assert!(std::ptr::eq(f.paths, cfg.flow_paths(fi)), "flow {fi}: paths");
        let upload = fc.direction == crate::config::Direction::Upload;
        assert_eq!(f.sender_is_client(), upload, "flow {fi}: direction");
        seen[upload as usize] += 1;
    }
    assert_eq!(seen, [4, 2], "downloads and uploads both looked at");
}
