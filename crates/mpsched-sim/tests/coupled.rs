//! Coupled congestion control on a shared bottleneck (RFC 6356 §1 goal 2: "do no harm" — a
//! multipath flow should take no more capacity on a shared bottleneck than one TCP flow).

mod common;
use common::*;
use mpsched_sim::config::*;
use mpsched_sim::run::run;

/// Seeds the goodput ratio is averaged over.
const SEEDS: u64 = 6;

/// Goodput ratio of an MPTCP connection (two subflows through one 20 Mbit/s drop-tail
/// bottleneck) to a plain TCP flow sharing it, measured from 10 s to 60 s, mean over
/// [`SEEDS`] seeds.
///
/// Each path returns its ACKs over its own link with a smooth ±1 ms delay variation (FIFO, no
/// reordering). Without it the simulation is fully deterministic and drop-tail locks the
/// flows' packets into fixed phases (Floyd and Jacobson, "On traffic phase effects in
/// packet-switched gateways", 1992): one flow then loses at every overflow and the ratio
/// depends on segment timing, not on congestion control (measured 0.42 to 3.5 for the same
/// algorithms after a change of segment sizes).
fn mptcp_to_tcp_ratio(mptcp_cc: &str, tcp_cc: &str) -> f64 {
    let mut sum = 0.0;
    for seed in 1..=SEEDS {
        let ack_link = |name: &str| {
            let mut l = link(name, 100_000_000, 10 * MS, 1000);
            l.jitter = JitterConfig::Smooth { jitter_ns: MS, period_ns: 20 * MS };
            l
        };
        let links =
            vec![link("bottleneck", 20_000_000, 10 * MS, 50), ack_link("up_a"), ack_link("up_b"), ack_link("up_c")];
        let paths = vec![
            PathConfig { name: "a".into(), down: vec![0], up: vec![1], gso: false },
            PathConfig { name: "b".into(), down: vec![0], up: vec![2], gso: false },
            PathConfig { name: "c".into(), down: vec![0], up: vec![3], gso: false },
        ];
        let mut cfg = scenario(links, paths, 70 * S);
        cfg.seed = seed;
        cfg.transports.push(transport(Protocol::Mptcp, "minrtt", mptcp_cc, vec![0, 1]));
        cfg.transports.push(transport(Protocol::Tcp, "", tcp_cc, vec![2]));
        cfg.flows.push(FlowConfig { app: AppConfig::Bulk { stop_ns: 60 * S }, ..sized(0, 0, 0, 1) });
        cfg.flows.push(FlowConfig { app: AppConfig::Bulk { stop_ns: 60 * S }, ..sized(1, 1, 0, 1) });
        cfg.record.sample_interval_ns = S;
        let rec = run(&cfg).unwrap();
        let t = u64s(&rec, "subflow_series", "time_ns");
        let f = u64s(&rec, "subflow_series", "flow_id");
        let acked = u64s(&rec, "subflow_series", "bytes_acked");
        let total = |flow: u64, at: u64| -> u64 {
            (0..t.len()).filter(|&i| f[i] == flow && t[i] == at).map(|i| acked[i]).sum()
        };
        let mptcp = total(0, 60 * S) - total(0, 10 * S);
        let tcp = total(1, 60 * S) - total(1, 10 * S);
        // Together they fill the bottleneck (sanity: the measurement means something).
        let sum_bps = (mptcp + tcp) as f64 * 8.0 / 50.0;
        assert!(sum_bps > 0.9 * 20e6, "bottleneck underused: {sum_bps}");
        sum += mptcp as f64 / tcp as f64;
    }
    sum / SEEDS as f64
}

#[test]
fn coupled_mptcp_takes_no_more_than_a_tcp_flow_on_a_shared_bottleneck() {
    // Tolerance: 15 % above an equal share. Over 50 s the flows' sawtooth phases do not
    // average out exactly, and RFC 6356 only asks for "no more than a single TCP flow" in the
    // long run. Two uncoupled reno subflows are two TCP flows: about twice the TCP flow's
    // share (measured 1.91 as the mean of six seeds; LIA 1.00, OLIA 0.95, BALIA 0.91).
    let uncoupled = mptcp_to_tcp_ratio("reno", "reno");
    eprintln!("uncoupled reno: {uncoupled:.2}");
    assert!(uncoupled > 1.6, "two uncoupled reno subflows take {uncoupled:.2}x a TCP flow, not about 2x");
    for cc in ["lia", "olia", "balia"] {
        let ratio = mptcp_to_tcp_ratio(cc, "reno");
        eprintln!("{cc}: {ratio:.2}");
        assert!(ratio <= 1.15, "{cc}: MPTCP/TCP goodput ratio {ratio:.2}");
        assert!(uncoupled > ratio + 0.6, "{cc} ({ratio:.2}) is not more careful than uncoupled reno ({uncoupled:.2})");
    }
}
