//! Scheduler behaviour through the real MPTCP connection (`crate::mptcp`, real TCP subflows
//! and congestion control), wired by the in-memory links of `crate::tests::util`.
//!
//! The scenario is the heterogeneous pair the HoL-aware schedulers were designed for: a
//! 20 Mbit/s path with 10 ms RTT and a 20 Mbit/s path with 100 ms RTT. The connection is opened
//! and left idle for 2 s so both subflows are established, then the server writes a response:
//! the flow completion time counts from that write to the last in-order byte at the client.

use crate::mptcp::{ConnConfig, DataReceiver, DataSender, Mode};
use crate::sched::registry;
use crate::tests::util::{Link, Pair, MBPS, MS};

/// (rate Mbit/s, one-way delay ms) per path: 10 ms and 100 ms RTT.
const HET: [(u64, u64); 2] = [(20, 5), (20, 50)];

struct Run {
    fct_ns: u64,
    sent_bytes: [u64; 2],
    redundant_bytes: u64,
}

/// Opens the connection, waits until both subflows are up, writes `total` bytes, runs to the
/// end.
fn warm_response(sched: &str, params: serde_json::Value, total: u64) -> Run {
    let n = HET.len();
    let mut rc = ConnConfig::new(Mode::Mptcp, true, n);
    rc.rcv_buf_bytes = 4 << 20;
    let mut sc = ConnConfig::new(Mode::Mptcp, false, n);
    sc.cc = "cubic".into();
    let mut rx = DataReceiver::new(rc);
    rx.connect(0);
    let s = registry::build(sched, &params).expect("registered scheduler");
    let tx = DataSender::new(sc, Some(s)).expect("sender");
    let links = || {
        HET.iter()
            .map(|&(r, d)| Link::new(r * MBPS, d * MS))
            .collect()
    };
    let mut p = Pair::new(rx, tx, links(), links());
    p.drive(2_000 * MS, |_, _| false);
    assert!(
        p.b.subflows().iter().all(|s| s.is_established()),
        "{sched}: subflows not up"
    );
    let t0 = p.now_ns;
    p.b.write(total, t0);
    p.b.close();
    let done = p.drive(t0 + 600_000 * MS, |a, b| {
        a.delivered_bytes() == total && b.is_done()
    });
    assert!(
        done,
        "{sched}: incomplete, {} of {total}",
        p.a.delivered_bytes()
    );
    let sent = |i| p.b.subflow_stats(i).map_or(0, |s| s.bytes_sent);
    Run {
        fct_ns: p.a.last_delivery_ns().expect("delivered") - t0,
        sent_bytes: [sent(0), sent(1)],
        redundant_bytes: p.b.resent().redundant_bytes,
    }
}

#[test]
fn hol_aware_schedulers_finish_a_short_response_before_minrtt() {
    // 64 KB: minRTT fills the fast window and puts the next segments on the 100 ms path, so
    // the response waits for them (> 50 ms one way).
    let base = warm_response("minrtt", serde_json::json!({}), 64 * 1024);
    assert!(
        base.sent_bytes[1] > 0 && base.fct_ns > 50 * MS,
        "minrtt {}",
        base.fct_ns
    );
    // Each of these keeps the tail on the fast path (BLEST, DAPS, OTIAS, STTF) or copies it
    // there (CFS, redundant): done in a few fast RTTs, well before the slow path delivers.
    for name in ["cfs", "blest", "daps", "otias", "sttf", "redundant"] {
        let r = warm_response(name, serde_json::json!({}), 64 * 1024);
        assert!(
            r.fct_ns < 45 * MS,
            "{name}: {} ms vs minrtt {} ms",
            r.fct_ns / MS,
            base.fct_ns / MS
        );
    }
    // ECF with the kernel's delta floor (100 ms) judges the slow path fast enough for the last
    // window and is no better than minRTT here; see `ecf.rs`.
    let ecf = warm_response(
        "ecf",
        serde_json::json!({"delta_floor_ns": 100_000_000u64}),
        64 * 1024,
    );
    assert!(
        ecf.fct_ns > 45 * MS,
        "ecf with the kernel floor {}",
        ecf.fct_ns / MS
    );
}

#[test]
fn cfs_copies_only_the_tail_while_redundant_copies_everything() {
    let total = 4 << 20;
    let cfs = warm_response("cfs", serde_json::json!({}), total);
    let minrtt = warm_response("minrtt", serde_json::json!({}), total);
    let red = warm_response("redundant", serde_json::json!({}), total);
    // CFS: copies only once nothing is left to assign, i.e. what the slow path still holds.
    assert!(cfs.redundant_bytes > 0, "cfs made no copies");
    assert!(
        cfs.redundant_bytes < total / 8,
        "cfs copied {} bytes",
        cfs.redundant_bytes
    );
    assert!(
        cfs.fct_ns <= minrtt.fct_ns,
        "cfs {} vs minrtt {}",
        cfs.fct_ns,
        minrtt.fct_ns
    );
    // Redundant: the slow path re-sends a large share of the flow.
    assert!(
        red.redundant_bytes > total / 8,
        "redundant copied {} bytes",
        red.redundant_bytes
    );
    assert_eq!(minrtt.redundant_bytes, 0);
}

/// A 16 MB transfer over a 20 Mbit/s, 10 ms RTT path and a 4 Mbit/s, 40 ms RTT path, both with
/// unbounded queues and no loss: every window Cubic opens becomes queueing delay (bufferbloat).
/// Returns (flow completion time, highest sRTT of each subflow), ns.
fn bloated_bulk(sched: &str, params: serde_json::Value) -> (u64, [u64; 2]) {
    let paths = [(20u64, 5u64), (4, 20)];
    let mut rc = ConnConfig::new(Mode::Mptcp, true, 2);
    rc.rcv_buf_bytes = 16 << 20;
    let mut sc = ConnConfig::new(Mode::Mptcp, false, 2);
    sc.cc = "cubic".into();
    let mut rx = DataReceiver::new(rc);
    rx.connect(0);
    let s = registry::build(sched, &params).expect("registered scheduler");
    let mut tx = DataSender::new(sc, Some(s)).expect("sender");
    let total = 16u64 << 20;
    tx.write(total, 0);
    tx.close();
    let links = || {
        paths
            .iter()
            .map(|&(r, d)| Link::new(r * MBPS, d * MS))
            .collect()
    };
    let mut p = Pair::new(rx, tx, links(), links());
    let mut max_srtt_ns = [0u64; 2];
    let mut views = Vec::new();
    let done = p.drive(600_000 * MS, |a, b| {
        b.subflow_views(&mut views);
        for v in views.iter().filter(|v| v.id < 2) {
            max_srtt_ns[v.id] = max_srtt_ns[v.id].max(v.srtt_ns);
        }
        a.delivered_bytes() == total && b.is_done()
    });
    assert!(done, "{sched}: incomplete");
    (p.a.last_delivery_ns().expect("delivered"), max_srtt_ns)
}

#[test]
fn bm_and_bwm_keep_the_slow_path_from_bloating_without_slowing_the_transfer() {
    let (fct, srtt) = bloated_bulk("minrtt", serde_json::json!({}));
    // minRTT fills every window: the slow path's queue grows to several hundred ms.
    assert!(
        srtt[1] > 300 * MS,
        "minrtt slow-path srtt {} ms",
        srtt[1] / MS
    );
    // BM caps the in-flight data of a subflow whose sRTT exceeds 3x its minimum.
    let (bm_fct, bm_srtt) = bloated_bulk("minrtt+bm", serde_json::json!({}));
    assert!(
        bm_srtt[1] < srtt[1] * 2 / 3,
        "bm {} ms vs minrtt {} ms",
        bm_srtt[1] / MS,
        srtt[1] / MS
    );
    assert!(
        bm_fct < fct * 105 / 100,
        "bm fct {} vs {}",
        bm_fct / MS,
        fct / MS
    );
    // BWM with bandwidth-proportional quotas gives the slow path its measured bandwidth's
    // share, not whatever its window takes. (With Fig. 4's per-subflow sRTT, the default, the
    // bloated path's quota grows with its own queue: see `bwm.rs`.) Weights summing to 1:
    // with Fig. 4's printed 0.825 the slow path's sRTT reached 296 ms against minRTT's 414 ms.
    let (bwm_fct, bwm_srtt) = bloated_bulk(
        "bwm",
        serde_json::json!({"quota_rtt": "common_min_srtt", "ewma_keep": 0.875}),
    );
    assert!(
        bwm_srtt[1] < srtt[1] * 2 / 3,
        "bwm {} ms vs minrtt {} ms",
        bwm_srtt[1] / MS,
        srtt[1] / MS
    );
    assert!(
        bwm_fct < fct * 105 / 100,
        "bwm fct {} vs {}",
        bwm_fct / MS,
        fct / MS
    );
}
