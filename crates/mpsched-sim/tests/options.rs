//! The transport options that make the simulator behave like the testbed's upstream kernel:
//! receive-buffer autotuning, the join timing and RACK-TLP loss detection, each shown by the
//! behaviour it documents.

mod common;
use common::*;
use mpsched_sim::config::*;
use mpsched_sim::records::Records;
use mpsched_sim::run::run;

/// Samples of (time, in-flight bytes, bytes acked) of `subflow`, in time order.
fn series(rec: &Records, subflow: u64) -> Vec<(u64, u64, u64)> {
    let t = u64s(rec, "subflow_series", "time_ns");
    let sf = u64s(rec, "subflow_series", "subflow");
    let fl = u64s(rec, "subflow_series", "in_flight_bytes");
    let ack = u64s(rec, "subflow_series", "bytes_acked");
    (0..t.len()).filter(|&i| sf[i] == subflow).map(|i| (t[i], fl[i], ack[i])).collect()
}

/// A 1 MB MPTCP download over one 100 Mbit/s, 40 ms RTT path whose sender starts with a
/// 100-segment window (145 KB), so the first flight is limited by the receive window alone.
fn one_path_download(autotuning: bool) -> Records {
    let (links, paths) = paths_of(vec![(link("d", 100_000_000, 20 * MS, 1000), link("u", 100_000_000, 20 * MS, 1000))]);
    let mut cfg = scenario(links, paths, 10 * S);
    cfg.record.sample_interval_ns = MS;
    cfg.transports.push(TransportConfig {
        init_cwnd_segments: 100,
        rcv_buf_autotuning: autotuning,
        ..transport(Protocol::Mptcp, "minrtt", "cubic", vec![0])
    });
    cfg.flows.push(sized(0, 0, 0, 1_000_000));
    run(&cfg).unwrap()
}

#[test]
fn autotuning_starts_the_window_at_half_of_tcp_rmem1_and_grows_it() {
    // Data leaves at 1 RTT (40 ms) and the first ACK is back at 2 RTT: the samples in
    // between show the first flight whole.
    let first_flight =
        |rec: &Records| series(rec, 0).iter().filter(|s| (45 * MS..75 * MS).contains(&s.0)).map(|s| s.1).max().unwrap();
    let fixed = one_path_download(false);
    let tuned = one_path_download(true);
    // Without autotuning the 6 MiB buffer lets the whole initial window out: 100 segments of
    // 1420 payload bytes.
    assert_eq!(first_flight(&fixed), 100 * 1420);
    // With it the window is tcp_rmem[1] / 2 = 64 KiB, so 46 segments (65320 bytes).
    let tuned_first = first_flight(&tuned);
    assert!((60_000..=65_536).contains(&tuned_first), "first flight {tuned_first}");
    // ... and it grows: later flights are well beyond 64 KiB.
    let tuned_max = series(&tuned, 0).iter().map(|s| s.1).max().unwrap();
    assert!(tuned_max > 3 * 65_536, "largest flight {tuned_max}");
    // Both deliver everything; the small start costs time.
    assert_eq!(bools(&fixed, "flows", "completed"), vec![true]);
    assert_eq!(bools(&tuned, "flows", "completed"), vec![true]);
    let fct = |r: &Records| opt_u64s(r, "flows", "fct_ns")[0].unwrap();
    assert!(fct(&tuned) > fct(&fixed), "fct tuned {} fixed {}", fct(&tuned), fct(&fixed));
}

#[test]
fn autotuning_never_grows_beyond_the_configured_buffer() {
    // A 1 MB buffer and a path whose BDP (5 MB) is far larger: the window grows up to the
    // buffer and stops there.
    let (links, paths) =
        paths_of(vec![(link("d", 400_000_000, 50 * MS, 10_000), link("u", 400_000_000, 50 * MS, 10_000))]);
    let mut cfg = scenario(links, paths, 10 * S);
    cfg.record.sample_interval_ns = MS;
    cfg.transports.push(TransportConfig {
        rcv_buf_bytes: 1 << 20,
        rcv_buf_autotuning: true,
        ..transport(Protocol::Mptcp, "minrtt", "cubic", vec![0])
    });
    cfg.flows.push(sized(0, 0, 0, 8_000_000));
    let rec = run(&cfg).unwrap();
    let max_flight = series(&rec, 0).iter().map(|s| s.1).max().unwrap();
    assert!((800_000..=1 << 20).contains(&max_flight), "largest flight {max_flight}");
}

/// A 1 MB MPTCP download over path 0 (20 ms RTT) and path 1 (60 ms RTT); the time the second
/// subflow first has data in flight.
fn second_subflow_first_data_ns(timing: JoinTimingConfig) -> u64 {
    let (links, paths) = paths_of(vec![
        (link("a.d", 100_000_000, 10 * MS, 1000), link("a.u", 100_000_000, 10 * MS, 1000)),
        (link("b.d", 100_000_000, 30 * MS, 1000), link("b.u", 100_000_000, 30 * MS, 1000)),
    ]);
    let mut cfg = scenario(links, paths, 10 * S);
    cfg.record.sample_interval_ns = MS;
    cfg.transports
        .push(TransportConfig { join_timing: timing, ..transport(Protocol::Mptcp, "roundrobin", "cubic", vec![0, 1]) });
    cfg.flows.push(sized(0, 0, 0, 1_000_000));
    let rec = run(&cfg).unwrap();
    assert_eq!(bools(&rec, "flows", "completed"), vec![true]);
    series(&rec, 1).iter().find(|s| s.1 > 0).expect("subflow 1 carried data").0
}

#[test]
fn fully_established_joins_start_one_rtt_of_the_first_path_later() {
    // Out-of-tree timing: the join SYN leaves with the SYN-ACK at 20 ms and its handshake
    // takes one RTT of path 1, so the server can send on it from 20 + 60 + 30 = 110 ms (its
    // third ACK). Upstream timing: the client is fully established by the server's first
    // data at 2 x 20 ms, one RTT of path 0 (not of path 1) later.
    let oot = second_subflow_first_data_ns(JoinTimingConfig::Oot);
    let upstream = second_subflow_first_data_ns(JoinTimingConfig::FullyEstablished);
    let delta = upstream - oot;
    assert!((18 * MS..=22 * MS).contains(&delta), "oot {oot} upstream {upstream}");
}

#[test]
fn options_default_to_todays_behaviour_and_parse_from_json() {
    let t: TransportConfig = serde_json::from_value(serde_json::json!({
        "protocol": "mptcp", "scheduler": "minrtt", "cc": "cubic", "paths": [0],
        "rcv_buf_bytes": 1 << 20, "snd_buf_bytes": 1 << 20,
    }))
    .unwrap();
    assert!(!t.rcv_buf_autotuning);
    assert_eq!(t.join_timing, JoinTimingConfig::Oot);
    let t: TransportConfig = serde_json::from_value(serde_json::json!({
        "protocol": "mptcp", "scheduler": "minrtt", "cc": "cubic", "paths": [0],
        "rcv_buf_bytes": 1 << 20, "snd_buf_bytes": 1 << 20,
        "rcv_buf_autotuning": true, "join_timing": "fully_established",
    }))
    .unwrap();
    assert!(t.rcv_buf_autotuning);
    assert_eq!(t.join_timing, JoinTimingConfig::FullyEstablished);
    let bad = serde_json::from_value::<TransportConfig>(serde_json::json!({
        "protocol": "mptcp", "scheduler": "minrtt", "cc": "cubic", "paths": [0],
        "rcv_buf_bytes": 1 << 20, "snd_buf_bytes": 1 << 20, "join_timing": "later",
    }));
    assert!(bad.is_err());
}

/// Issue 11's "RTO plateau" (scenarios/validation/wifi_lte_jitter.toml, one seed): a WiFi-like
/// path (30 Mbit/s, RTT 15 ms) beside an LTE-like one (10 Mbit/s, RTT 60 ms, ±20 ms smooth
/// jitter), 1-BDP queues, ten 256 KiB downloads, as the kernel runs them (autotuning, joins
/// once fully established). Returns (FCT per flow, RTOs of path 0 per flow).
fn wifi_lte(protocol: Protocol, loss_recovery: LossRecoveryConfig, cc: &str) -> (Vec<u64>, Vec<u64>) {
    let wifi =
        |n: &str| LinkConfig { queue_packets: None, queue_bytes: Some(56_250), ..link(n, 30_000_000, 7_500_000, 0) };
    let lte = |n: &str| LinkConfig {
        queue_packets: None,
        queue_bytes: Some(75_000),
        jitter: JitterConfig::Smooth { jitter_ns: 20 * MS, period_ns: 60 * MS },
        ..link(n, 10_000_000, 30 * MS, 0)
    };
    let (links, paths) = paths_of(vec![(wifi("wd"), wifi("wu")), (lte("ld"), lte("lu"))]);
    let mut cfg = scenario(links, paths, 11 * S);
    let used = if protocol == Protocol::Tcp { vec![0] } else { vec![0, 1] };
    cfg.transports.push(TransportConfig {
        rcv_buf_autotuning: true,
        join_timing: JoinTimingConfig::FullyEstablished,
        loss_recovery,
        ..transport(protocol, "minrtt", cc, used)
    });
    for i in 0..10 {
        cfg.flows.push(sized(i, 0, i * S, 256 * 1024));
    }
    let rec = run(&cfg).unwrap();
    assert_eq!(bools(&rec, "flows", "completed"), vec![true; 10]);
    let again = run(&cfg).unwrap();
    assert_eq!(opt_u64s(&again, "flows", "fct_ns"), opt_u64s(&rec, "flows", "fct_ns"), "deterministic");
    let (path, rto) = (u64s(&rec, "subflows", "path"), u64s(&rec, "subflows", "rto_count"));
    let rto0 = (0..path.len()).filter(|&i| path[i] == 0).map(|i| rto[i]).collect();
    (opt_u64s(&rec, "flows", "fct_ns").into_iter().map(Option::unwrap).collect(), rto0)
}

#[test]
fn rack_tlp_removes_the_rto_plateau_of_short_mptcp_flows() {
    // RFC 6675: the WiFi subflow's slow start overshoots its 1-BDP queue; SACK recovery
    // repairs the holes it can see, but the last segment of the subflow's data is lost with
    // nothing sent after it to SACK, so it waits for the RTO (SRTT + 200 ms after the last
    // ACK): 0.36 s instead of ~0.13 s. Plain TCP loses in the body of its flight and recovers
    // by SACK. RACK-TLP (Linux's default, what the kernel testbed runs: no RTO in 60 such
    // flows, median 0.147 s) repairs the tail with a probe 2 SRTT after the last ACK.
    // The MPTCP flows run reno: cubic's HyStart (rounds tracked as Linux 6.18 does) now ends
    // slow start before this queue overflows, so the tail loss under test needs a slow start
    // without HyStart. Plain TCP keeps cubic, as before.
    let median = |mut v: Vec<u64>| {
        v.sort();
        v[v.len() / 2]
    };
    let (fct, rto) = wifi_lte(Protocol::Mptcp, LossRecoveryConfig::Rfc6675, "reno");
    assert!(rto.iter().filter(|&&r| r > 0).count() >= 8, "RTOs {rto:?}");
    assert!(median(fct.clone()) > 300 * MS, "{fct:?}");
    let (fct, rto) = wifi_lte(Protocol::Mptcp, LossRecoveryConfig::RackTlp, "reno");
    assert_eq!(rto, vec![0; 10]);
    assert!(fct.iter().all(|&f| f < 200 * MS), "{fct:?}");
    for lr in [LossRecoveryConfig::Rfc6675, LossRecoveryConfig::RackTlp] {
        let (fct, rto) = wifi_lte(Protocol::Tcp, lr, "cubic");
        assert_eq!(rto, vec![0; 10], "{lr:?}");
        assert!(fct.iter().all(|&f| f < 200 * MS), "{lr:?}: {fct:?}");
    }
}

#[test]
fn loss_recovery_defaults_to_rack_tlp_and_parses_from_json() {
    let base = serde_json::json!({
        "protocol": "mptcp", "scheduler": "minrtt", "cc": "cubic", "paths": [0],
        "rcv_buf_bytes": 1 << 20, "snd_buf_bytes": 1 << 20,
    });
    let t: TransportConfig = serde_json::from_value(base.clone()).unwrap();
    assert_eq!(t.loss_recovery, LossRecoveryConfig::RackTlp);
    for (name, want) in [("rack_tlp", LossRecoveryConfig::RackTlp), ("rfc6675", LossRecoveryConfig::Rfc6675)] {
        let mut v = base.clone();
        v["loss_recovery"] = name.into();
        assert_eq!(serde_json::from_value::<TransportConfig>(v).unwrap().loss_recovery, want);
    }
    let mut v = base;
    v["loss_recovery"] = "fack".into();
    let err = serde_json::from_value::<TransportConfig>(v).unwrap_err().to_string();
    assert!(err.contains("rack_tlp") && err.contains("rfc6675"), "{err}");
}
