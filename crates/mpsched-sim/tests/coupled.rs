//! Coupled congestion control on a shared bottleneck (RFC 6356 §1 goal 2: "do no harm" — a
//! multipath flow should take no more capacity on a shared bottleneck than one TCP flow).

mod common;
use common::*;
use mpsched_sim::config::*;
use mpsched_sim::run::run;

/// Goodput ratio of an MPTCP connection (two subflows through one 20 Mbit/s bottleneck) to a
/// plain TCP flow sharing it, measured from 10 s to 60 s.
fn mptcp_to_tcp_ratio(mptcp_cc: &str, tcp_cc: &str) -> f64 {
    let links = vec![link("bottleneck", 20_000_000, 10 * MS, 50), link("up", 100_000_000, 10 * MS, 1000)];
    let paths = vec![
        PathConfig { name: "a".into(), down: vec![0], up: vec![1] },
        PathConfig { name: "b".into(), down: vec![0], up: vec![1] },
    ];
    let mut cfg = scenario(links, paths, 70 * S);
    cfg.transports.push(transport(Protocol::Mptcp, "minrtt", mptcp_cc, vec![0, 1]));
    cfg.transports.push(transport(Protocol::Tcp, "", tcp_cc, vec![0]));
    cfg.flows.push(FlowConfig { app: AppConfig::Bulk { stop_ns: 60 * S }, ..sized(0, 0, 0, 1) });
    cfg.flows.push(FlowConfig { app: AppConfig::Bulk { stop_ns: 60 * S }, ..sized(1, 1, 0, 1) });
    cfg.record.sample_interval_ns = S;
    let rec = run(&cfg).unwrap();
    let t = u64s(&rec, "subflow_series", "time_ns");
    let f = u64s(&rec, "subflow_series", "flow_id");
    let acked = u64s(&rec, "subflow_series", "bytes_acked");
    let total = |flow: u64, at: u64| -> u64 { (0..t.len()).filter(|&i| f[i] == flow && t[i] == at).map(|i| acked[i]).sum() };
    let mptcp = total(0, 60 * S) - total(0, 10 * S);
    let tcp = total(1, 60 * S) - total(1, 10 * S);
    // Together they fill the bottleneck (sanity: the measurement means something).
    let sum_bps = (mptcp + tcp) as f64 * 8.0 / 50.0;
    assert!(sum_bps > 0.9 * 20e6, "bottleneck underused: {sum_bps}");
    mptcp as f64 / tcp as f64
}

#[test]
fn coupled_mptcp_takes_no_more_than_a_tcp_flow_on_a_shared_bottleneck() {
    // Tolerance: 15 % above an equal share. Over 50 s the two flows' sawtooth phases do not
    // average out exactly, and RFC 6356 only asks for "no more than a single TCP flow" in the
    // long run; 15 % separates that from an uncoupled connection, which is meant to take about
    // twice the TCP flow's share and here takes clearly more than any coupled one.
    let uncoupled = mptcp_to_tcp_ratio("reno", "reno");
    for cc in ["lia", "olia", "balia"] {
        let ratio = mptcp_to_tcp_ratio(cc, "reno");
        assert!(ratio <= 1.15, "{cc}: MPTCP/TCP goodput ratio {ratio:.2}");
        assert!(uncoupled > ratio + 0.2, "{cc} ({ratio:.2}) is not more careful than uncoupled reno ({uncoupled:.2})");
    }
}
