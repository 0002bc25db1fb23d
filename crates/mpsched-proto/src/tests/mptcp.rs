//! Connection scenarios: plain TCP through the connection, MPTCP join timing, reinjection
//! after a path goes down, and the conservation property over random networks.

use super::util::*;
use crate::mptcp::{ConnConfig, DataReceiver, DataSender, JoinTiming, Mode};
use crate::sched::{registry, Rejection};
use crate::tcp::{LossRecovery, Segment};
use proptest::prelude::*;

impl Endpoint for DataSender {
    fn handle_segment(&mut self, now_ns: u64, sf: usize, seg: &Segment) {
        DataSender::handle_segment(self, now_ns, sf, seg)
    }
    fn poll_transmit(&mut self, now_ns: u64) -> Option<(usize, Segment)> {
        DataSender::poll_transmit(self, now_ns)
    }
    fn poll_timeout(&self) -> Option<u64> {
        DataSender::poll_timeout(self)
    }
    fn handle_timeout(&mut self, now_ns: u64) {
        DataSender::handle_timeout(self, now_ns)
    }
}

impl Endpoint for DataReceiver {
    fn handle_segment(&mut self, now_ns: u64, sf: usize, seg: &Segment) {
        DataReceiver::handle_segment(self, now_ns, sf, seg)
    }
    fn poll_transmit(&mut self, now_ns: u64) -> Option<(usize, Segment)> {
        DataReceiver::poll_transmit(self, now_ns)
    }
    fn poll_timeout(&self) -> Option<u64> {
        DataReceiver::poll_timeout(self)
    }
    fn handle_timeout(&mut self, now_ns: u64) {
        DataReceiver::handle_timeout(self, now_ns)
    }
}

/// (rate bit/s, one-way delay ns) per path.
pub(super) type PathSpec = (u64, u64);

pub(super) struct Setup {
    /// Upload (the client sends) instead of download.
    pub(super) upload: bool,
    /// Loss detection on the data sender.
    pub(super) loss_recovery: LossRecovery,
    /// Linux receive-buffer autotuning on the data receiver.
    pub(super) autotune: bool,
    pub(super) mode: Mode,
    pub(super) backup: Vec<bool>,
    pub(super) paths: Vec<PathSpec>,
    pub(super) sched: &'static str,
    pub(super) cc: &'static str,
    pub(super) rcv_buf_bytes: u64,
    pub(super) total_bytes: u64,
}

/// Download: `a` = client data receiver, `b` = server data sender with all data written.
pub(super) fn download(s: &Setup) -> Pair<DataReceiver, DataSender> {
    download_with(s, |_| {})
}

/// [`download`] with the data sender's configuration changed by `tune` first.
pub(super) fn download_with(
    s: &Setup,
    tune: impl FnOnce(&mut ConnConfig),
) -> Pair<DataReceiver, DataSender> {
    let n = s.paths.len();
    let mut rc = ConnConfig::new(s.mode, !s.upload, n);
    rc.rcv_buf_bytes = s.rcv_buf_bytes;
    rc.rcv_buf_autotuning = s.autotune;
    rc.backup = s.backup.clone();
    let mut sc = ConnConfig::new(s.mode, s.upload, n);
    sc.cc = s.cc.to_string();
    sc.tcp.loss_recovery = s.loss_recovery;
    sc.backup = s.backup.clone();
    tune(&mut sc);
    let mut rx = DataReceiver::new(rc);
    rx.connect(0);
    let sched = registry::build(s.sched, &serde_json::json!({})).unwrap();
    let mut tx = DataSender::new(sc, Some(sched)).unwrap();
    tx.connect(0);
    tx.write(s.total_bytes, 0);
    tx.close();
    let ab = s.paths.iter().map(|&(r, d)| Link::new(r, d)).collect();
    let ba = s.paths.iter().map(|&(r, d)| Link::new(r, d)).collect();
    Pair::new(rx, tx, ab, ba)
}

pub(super) fn complete(p: &mut Pair<DataReceiver, DataSender>, total: u64) {
    let ok = p.drive(3_600_000 * MS, |a, b| {
        a.delivered_bytes() == total && b.is_done()
    });
    assert!(
        ok,
        "incomplete: delivered {} of {total}, data_acked {}",
        p.a.delivered_bytes(),
        p.b.data_acked()
    );
    assert_eq!(p.a.delivered_bytes(), total);
}

#[test]
fn tcp_mode_connection_matches_slow_start_timing() {
    // Same arithmetic as tests::tcp::slow_start_64kb_takes_four_rtts: 4 RTT = 80 ms.
    let s = Setup {
        backup: vec![],
        upload: false,
        loss_recovery: LossRecovery::default(),
        autotune: false,
        mode: Mode::Tcp,
        paths: vec![(1_000 * MBPS, 10 * MS)],
        sched: "minrtt",
        cc: "cubic",
        rcv_buf_bytes: 1 << 22,
        total_bytes: 65_536,
    };
    let mut p = download(&s);
    complete(&mut p, s.total_bytes);
    let fct = p.a.last_delivery_ns().unwrap();
    assert!((80 * MS..81 * MS).contains(&fct), "fct {fct}");
    // Plain TCP: no MPTCP option bytes, 52 bytes of headers per full segment.
    assert_eq!(p.b.scheduler_name(), "tcp");
}

#[test]
fn joins_start_when_the_connection_is_fully_established_or_at_the_syn_ack() {
    // Two 20 ms RTT paths, download. Upstream timing: the client learns it is fully
    // established from the server's first data (2 RTT), so subflow 1 is usable at the server
    // after its third ACK, 1.5 RTT later: 70 ms. Out-of-tree timing: from the SYN-ACK, 50 ms.
    for (timing, expect_ms) in [
        (JoinTiming::FullyEstablished, 70),
        (JoinTiming::AfterSynAck, 50),
    ] {
        let n = 2;
        let mut rc = ConnConfig::new(Mode::Mptcp, true, n);
        rc.join_timing = timing;
        let sc = ConnConfig::new(Mode::Mptcp, false, n);
        let mut rx = DataReceiver::new(rc);
        rx.connect(0);
        let sched = registry::build("minrtt", &serde_json::json!({})).unwrap();
        let mut tx = DataSender::new(sc, Some(sched)).unwrap();
        tx.write(1 << 20, 0);
        let links = || (0..n).map(|_| Link::new(1_000 * MBPS, 10 * MS)).collect();
        let mut p = Pair::new(rx, tx, links(), links());
        assert!(p.drive(1_000 * MS, |_, b| b.subflows()[1].is_established()));
        let t = p.now_ns;
        assert!(
            (expect_ms * MS..(expect_ms + 1) * MS).contains(&t),
            "{timing:?}: {t}"
        );
    }
}

#[test]
fn upload_starts_data_with_the_third_ack() {
    // The client sends: data leaves with the third ACK at 1 RTT, so 64 KB (flights 10, 20,
    // 16) completes at 1 + 0.5 + 2 = 3.5 RTT = 70 ms.
    let s = Setup {
        backup: vec![],
        upload: true,
        loss_recovery: LossRecovery::default(),
        autotune: false,
        mode: Mode::Tcp,
        paths: vec![(1_000 * MBPS, 10 * MS)],
        sched: "minrtt",
        cc: "reno",
        rcv_buf_bytes: 1 << 22,
        total_bytes: 65_536,
    };
    let mut p = download(&s);
    complete(&mut p, s.total_bytes);
    let fct = p.a.last_delivery_ns().unwrap();
    assert!((70 * MS..71 * MS).contains(&fct), "fct {fct}");
}

#[test]
fn tcp_throughput_is_limited_by_the_receive_window() {
    // 32 KB of window holds 22 whole segments (the sender does not split a segment to fit
    // the window). 1 MB = 725 segments: slow start sends 10 then 20 in the first two RTTs,
    // then 22 per RTT for the remaining 695 (32 RTTs). The first flight arrives at 40 ms
    // (after the handshake), the last 33 RTTs later: 40 + 33 * 20 = 700 ms (+ ~1 ms of
    // serialisation at 1 Gb/s).
    let s = Setup {
        backup: vec![],
        upload: false,
        loss_recovery: LossRecovery::default(),
        autotune: false,
        mode: Mode::Tcp,
        paths: vec![(1_000 * MBPS, 10 * MS)],
        sched: "minrtt",
        cc: "cubic",
        rcv_buf_bytes: 32 * 1024,
        total_bytes: 1 << 20,
    };
    let mut p = download(&s);
    complete(&mut p, s.total_bytes);
    let fct = p.a.last_delivery_ns().unwrap();
    assert!((700 * MS..702 * MS).contains(&fct), "fct {fct}");
}

#[test]
fn lost_fourth_ack_is_recovered_by_repeating_the_third() {
    // Upload over two paths; the server's first MP_JOIN fourth ACK is lost, so the client's
    // subflow 1 stays pre-established until its third ACK is repeated (1 s later).
    let s = Setup {
        backup: vec![],
        upload: true,
        loss_recovery: LossRecovery::default(),
        autotune: false,
        mode: Mode::Mptcp,
        paths: vec![(10 * MBPS, 10 * MS), (10 * MBPS, 10 * MS)],
        sched: "minrtt",
        cc: "cubic",
        rcv_buf_bytes: 1 << 22,
        total_bytes: 4 << 20,
    };
    let mut p = download(&s);
    let mut dropped = false;
    p.ab[1].drop = Some(Box::new(move |seg: &Segment| {
        // a = data receiver (server) -> b: the first pure ACK on path 1 is the fourth ACK.
        let is_ack4 = seg.flags & crate::tcp::flags::SYN == 0 && seg.len == 0 && !dropped;
        dropped |= is_ack4;
        is_ack4
    }));
    p.drive(900 * MS, |_, _| false);
    assert!(
        !p.b.subflows()[1].is_established(),
        "pre-established without the fourth ACK"
    );
    assert_eq!(p.b.subflow_stats(1).unwrap().bytes_sent, 0);
    complete(&mut p, s.total_bytes);
    assert!(p.b.subflows()[1].is_established());
    assert!(p.b.subflow_stats(1).unwrap().bytes_sent > 0);
}

#[test]
fn join_on_a_200ms_path_is_too_late_for_a_1mb_flow() {
    // Path 0: 20 ms RTT, path 1: 200 ms RTT, both 100 Mb/s. Subflow 1's MP_JOIN starts when
    // subflow 0 is established at the client (20 ms); the server can use it after the third
    // ACK, at 20 + 200 + 100 = 320 ms (340 ms with upstream's join timing). 1 MB over path 0
    // in slow start: 724 segments in flights of 10, 20, 40, 80, 160, 320, ... = 7 RTTs
    // (140 ms) + 30 ms of handshake and about 80 ms of serialisation: done well before that.
    let s = Setup {
        backup: vec![],
        upload: false,
        loss_recovery: LossRecovery::default(),
        autotune: false,
        mode: Mode::Mptcp,
        paths: vec![(100 * MBPS, 10 * MS), (100 * MBPS, 100 * MS)],
        sched: "minrtt",
        cc: "cubic",
        rcv_buf_bytes: 1 << 22,
        total_bytes: 1 << 20,
    };
    let mut p = download(&s);
    complete(&mut p, s.total_bytes);
    let fct = p.a.last_delivery_ns().unwrap();
    assert!(fct < 320 * MS, "fct {fct}");
    assert_eq!(p.b.subflow_stats(1).unwrap().bytes_sent, 0);
    // The same flow, 10 MB: the second subflow joins and carries data.
    let s = Setup {
        total_bytes: 10 << 20,
        ..s
    };
    let mut p = download(&s);
    complete(&mut p, s.total_bytes);
    assert!(p.b.subflow_stats(1).unwrap().bytes_sent > 0);
    assert!(p.b.subflows()[1].is_established());
}

#[test]
fn two_subflows_share_a_transfer() {
    let s = Setup {
        backup: vec![],
        upload: false,
        loss_recovery: LossRecovery::default(),
        autotune: false,
        mode: Mode::Mptcp,
        paths: vec![(10 * MBPS, 10 * MS), (10 * MBPS, 15 * MS)],
        sched: "minrtt",
        cc: "lia",
        rcv_buf_bytes: 1 << 21,
        total_bytes: 4 << 20,
    };
    let mut p = download(&s);
    complete(&mut p, s.total_bytes);
    let b0 = p.b.subflow_stats(0).unwrap().bytes_sent;
    let b1 = p.b.subflow_stats(1).unwrap().bytes_sent;
    assert!(
        b0 > 1 << 20 && b1 > 1 << 20,
        "both paths carry data: {b0} {b1}"
    );
    // 4 MB over 20 Mb/s of aggregate capacity takes at least 1.68 s; two paths beat one.
    let fct = p.a.last_delivery_ns().unwrap();
    assert!(fct > 1_680 * MS && fct < 3_000 * MS, "fct {fct}");
    assert_eq!(p.b.rejections(Rejection::UnknownSubflow), 0);
}

fn set_path(p: &mut Pair<DataReceiver, DataSender>, path: usize, up: bool) {
    p.ab[path].up = up;
    p.ba[path].up = up;
    let now = p.now_ns;
    p.b.set_path_up(path, up, now);
    p.a.set_path_up(path, up);
}

#[test]
fn a_scheduler_that_ignores_reinjection_still_completes_after_an_outage() {
    // Round-robin never serves the reinjection queue: the data queued on the failed subflow
    // must stay there and go out when the path returns.
    let s = Setup {
        backup: vec![],
        upload: false,
        loss_recovery: LossRecovery::default(),
        autotune: false,
        mode: Mode::Mptcp,
        paths: vec![(20 * MBPS, 10 * MS), (20 * MBPS, 10 * MS)],
        sched: "roundrobin",
        cc: "reno",
        rcv_buf_bytes: 1 << 22,
        total_bytes: 4 << 20,
    };
    let mut p = download(&s);
    p.drive(300 * MS, |_, _| false);
    set_path(&mut p, 1, false);
    p.drive(1_300 * MS, |_, _| false);
    set_path(&mut p, 1, true);
    complete(&mut p, s.total_bytes);
}

#[test]
fn reinjection_after_a_path_goes_down_and_the_subflow_returns() {
    let s = Setup {
        backup: vec![],
        upload: false,
        loss_recovery: LossRecovery::default(),
        autotune: false,
        mode: Mode::Mptcp,
        paths: vec![(20 * MBPS, 10 * MS), (20 * MBPS, 10 * MS)],
        sched: "minrtt",
        cc: "cubic",
        rcv_buf_bytes: 1 << 22,
        total_bytes: 8 << 20,
    };
    let mut p = download(&s);
    p.drive(500 * MS, |_, _| false);
    let sent1 = p.b.subflow_stats(1).unwrap().bytes_sent;
    assert!(sent1 > 0, "subflow 1 in use before the failure");
    // Path 1 fails silently: both links drop everything, the endpoints are told.
    p.ab[1].up = false;
    p.ba[1].up = false;
    p.b.set_path_up(1, false, p.now_ns);
    p.a.set_path_up(1, false);
    p.drive(2_000 * MS, |_, _| false);
    assert!(
        p.b.resent().reinject_bytes > 0,
        "outstanding data of subflow 1 reinjected"
    );
    let during = p.b.subflow_stats(1).unwrap().bytes_sent;
    // Path 1 returns.
    p.ab[1].up = true;
    p.ba[1].up = true;
    p.b.set_path_up(1, true, p.now_ns);
    p.a.set_path_up(1, true);
    complete(&mut p, s.total_bytes);
    assert!(
        p.b.subflow_stats(1).unwrap().bytes_sent > during,
        "subflow 1 used again"
    );
    assert!(
        p.a.duplicate_bytes() > 0,
        "reinjected copies arrived twice and were dropped"
    );
}

#[test]
fn small_receive_buffer_blocks_and_still_completes() {
    let s = Setup {
        backup: vec![],
        upload: false,
        loss_recovery: LossRecovery::default(),
        autotune: false,
        mode: Mode::Mptcp,
        paths: vec![(50 * MBPS, 5 * MS), (5 * MBPS, 60 * MS)],
        // Round-robin ignores RTTs, so data on the slow path holds back the fast path's.
        sched: "roundrobin",
        cc: "cubic",
        rcv_buf_bytes: 64 * 1024,
        total_bytes: 2 << 20,
    };
    let mut p = download(&s);
    let mut max_occupancy = 0;
    let total = s.total_bytes;
    let done = p.drive(600_000 * MS, |a, b| {
        max_occupancy = max_occupancy.max(a.buffer_in_use_bytes());
        a.delivered_bytes() == total && b.is_done()
    });
    assert!(done);
    assert!(
        max_occupancy <= 64 * 1024,
        "the sender respects the window: {max_occupancy}"
    );
    assert!(
        max_occupancy > 32 * 1024,
        "head-of-line blocking fills the buffer: {max_occupancy}"
    );
    assert!(p.b.subflow_stats(1).unwrap().bytes_sent > 0);
    // The window, not the 55 Mb/s of capacity, limits the transfer: 2 MB needs > 0.3 s.
    assert!(
        p.a.last_delivery_ns().unwrap() > 1_000 * MS,
        "fct {:?}",
        p.a.last_delivery_ns()
    );
}

#[test]
fn backup_subflow_carries_data_only_while_the_active_path_is_down() {
    let s = Setup {
        backup: vec![false, true],
        upload: false,
        loss_recovery: LossRecovery::default(),
        autotune: false,
        mode: Mode::Mptcp,
        // Backup RTT 30 ms < 40 ms, but its join completes (85 ms) after subflow 0 (60 ms),
        // so there is never a moment with only the backup established.
        paths: vec![(20 * MBPS, 20 * MS), (20 * MBPS, 15 * MS)],
        sched: "minrtt",
        cc: "cubic",
        rcv_buf_bytes: 1 << 22,
        total_bytes: 6 << 20,
    };
    let mut p = download(&s);
    p.drive(1_000 * MS, |_, _| false);
    assert!(p.b.subflows()[1].is_established());
    assert_eq!(
        p.b.subflow_stats(1).unwrap().bytes_sent,
        0,
        "backup idle although its RTT is lower"
    );
    let mut views = Vec::new();
    p.b.subflow_views(&mut views);
    assert!(views[1].backup && !views[0].backup);
    p.ab[0].up = false;
    p.ba[0].up = false;
    p.b.set_path_up(0, false, p.now_ns);
    p.a.set_path_up(0, false);
    p.drive(1_500 * MS, |_, _| false);
    let on_backup = p.b.subflow_stats(1).unwrap().bytes_sent;
    assert!(on_backup > 0, "the backup takes over");
    p.ab[0].up = true;
    p.ba[0].up = true;
    p.b.set_path_up(0, true, p.now_ns);
    p.a.set_path_up(0, true);
    complete(&mut p, s.total_bytes);
    assert!(p.b.subflow_stats(0).unwrap().bytes_acked > 0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

    /// Every byte reaches the application exactly once and in order (the receiver's DATA_ACK
    /// is contiguous by construction; here: nothing missing, nothing extra, sender done),
    /// for TCP and MPTCP with 2-3 subflows, over random rates, delays, loss and buffers.
    #[test]
    fn conservation(
        mptcp in any::<bool>(),
        upload in any::<bool>(),
        rack_tlp in any::<bool>(),
        n in 2usize..=3,
        rates in proptest::collection::vec(1u64..50, 3),
        delays in proptest::collection::vec(1u64..80, 3),
        loss_ppm in proptest::collection::vec(0u64..40_000, 3),
        rcv_kb in 16u64..2048,
        total in 1u64..2_000_000,
        sched_i in 0usize..5,
        queue_pkts in proptest::option::of(4u64..200),
        outage in proptest::option::of((0usize..3, 0u64..2_000, 1u64..3_000)),
        cc_i in 0usize..5,
        seed in any::<u64>(),
    ) {
        let n = if mptcp { n } else { 1 };
        let sched = ["minrtt", "roundrobin", "redundant", "ecf", "blest"][sched_i];
        let cc = crate::cc::NAMES[cc_i];
        let paths: Vec<PathSpec> = (0..n).map(|i| (rates[i] * MBPS, delays[i] * MS)).collect();
        let s = Setup {
            backup: vec![],
            upload,
            loss_recovery: if rack_tlp { LossRecovery::RackTlp } else { LossRecovery::Rfc6675 },
            autotune: false,
            mode: if mptcp { Mode::Mptcp } else { Mode::Tcp },
            paths,
            sched,
            cc,
            rcv_buf_bytes: rcv_kb * 1024,
            total_bytes: total,
        };
        let mut p = download(&s);
        for i in 0..n {
            p.ab[i] = Link::new(rates[i] * MBPS, delays[i] * MS).lossy(loss_ppm[i] / 2, seed ^ i as u64);
            p.ba[i] = Link::new(rates[i] * MBPS, delays[i] * MS)
                .lossy(loss_ppm[i], seed.rotate_left(7) ^ i as u64)
                .queue_limit(queue_pkts.map(|q| q * 1500));
        }
        if let Some((path, start_ms, len_ms)) = outage {
            // One path fails for a while, then returns (both endpoints are told).
            let path = path % n;
            p.drive(start_ms * MS, |_, _| false);
            set_path(&mut p, path, false);
            p.drive((start_ms + len_ms) * MS, |_, _| false);
            set_path(&mut p, path, true);
        }
        let done = p.drive(3_600_000 * MS, |a, b| a.delivered_bytes() == total && b.is_done());
        prop_assert!(done, "incomplete: {} of {total}", p.a.delivered_bytes());
        prop_assert_eq!(p.a.delivered_bytes(), total);
        prop_assert_eq!(p.a.ofo_bytes(), 0);
    }
}
