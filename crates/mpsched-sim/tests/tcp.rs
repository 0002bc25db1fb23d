//! Plain TCP through the real engine: analytic results a user would check.

mod common;
use common::*;
use mpsched_sim::config::*;
use mpsched_sim::run::run;

fn one_path(rate_bps: u64, one_way_ns: u64, queue_packets: u64) -> SimConfig {
    let (links, paths) = paths_of(vec![(
        link("down", rate_bps, one_way_ns, queue_packets),
        link("up", rate_bps, one_way_ns, queue_packets),
    )]);
    let mut cfg = scenario(links, paths, 120 * S);
    cfg.transports.push(transport(Protocol::Tcp, "", "cubic", vec![0]));
    cfg
}

#[test]
fn a_64kb_flow_completes_in_the_rtts_slow_start_predicts() {
    let mut cfg = one_path(1_000_000_000, 10 * MS, 1000);
    cfg.flows.push(sized(0, 0, 0, 64_000));
    let rec = run(&cfg).unwrap();
    let fct = opt_u64s(&rec, "flows", "fct_ns")[0].expect("completes");
    // RTT 20 ms, serialisation negligible at 1 Gbit/s. 64 000 B = 45 segments of 1448 B.
    // Handshake: SYN + SYN-ACK = 1 RTT; the server may send once the client's ACK arrives,
    // i.e. 1.5 RTT after connect(). Slow start with IW 10 and quickacks (every segment ACKed,
    // cwnd += acked): rounds of 10, 20, then 15 remaining segments; the last round's data
    // reaches the client half an RTT after it leaves. So data leaves the server at 1.5, 2.5,
    // 3.5 RTT and the last byte lands at 4.0 RTT = 80 ms (+ serialisation).
    assert!((80 * MS..82 * MS).contains(&fct), "fct {} ms", fct as f64 / 1e6);
}

#[test]
fn a_bulk_flow_fills_the_bottleneck() {
    // 100 Mbit/s, 20 ms one-way, a queue of one BDP (100e6 * 0.04 / 8 / 1500 = 333 packets).
    let mut cfg = one_path(100_000_000, 20 * MS, 333);
    cfg.flows.push(FlowConfig { app: AppConfig::Bulk { stop_ns: 30 * S }, ..sized(0, 0, 0, 1) });
    cfg.record.sample_interval_ns = 100 * MS;
    let rec = run(&cfg).unwrap();
    let times = u64s(&rec, "subflow_series", "time_ns");
    let acked = u64s(&rec, "subflow_series", "bytes_acked");
    let at = |t: u64| acked[times.iter().position(|&x| x == t).unwrap()];
    // Goodput after the start-up (slow start, the first loss episode) from 5 s to 30 s.
    let goodput_bps = (at(30 * S) - at(5 * S)) as f64 * 8.0 / 25.0;
    // The payload share of a full frame is 1448/1500 = 96.5 %, the most any TCP can reach.
    assert!(goodput_bps >= 0.93 * 100e6, "goodput {:.2} Mbit/s", goodput_bps / 1e6);
    assert!(goodput_bps <= 0.966 * 100e6, "goodput {:.2} Mbit/s beats the wire", goodput_bps / 1e6);
    assert_eq!(bools(&rec, "flows", "completed"), vec![true]);
}
