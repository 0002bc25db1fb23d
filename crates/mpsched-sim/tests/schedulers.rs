//! Each scheduler's defining behaviour through the whole simulator: real links with queues,
//! real TCP subflows and congestion control, cross traffic. Every test builds the scenario
//! that shows the behaviour, contrasts it with minRTT (or another scheduler) in the same
//! scenario so that it can fail, and asserts on what a user measures: bytes per path,
//! completion times, redundant bytes, congestion windows, receive-buffer occupancy.
//!
//! Most scenarios use the heterogeneous pair of the HoL-aware scheduler papers: a fast path
//! (20 Mbit/s, 10 ms RTT) and a slow one (20 Mbit/s, 100 ms RTT), queues of about one BDP.
//! A "warm" transfer is written 2 s after connect(), once both subflows are established, so
//! the join delay does not decide which paths are used; its time counts from the write.
//! Proto-level checks of the same schedulers (in-memory links) are in
//! `mpsched-proto/src/sched/scenarios.rs`; this file does not repeat them.

mod common;
mod sched_harness;
use common::*;
use mpsched_sim::config::*;
use mpsched_sim::run::run;
use sched_harness::*;
use serde_json::{json, Value};

#[test]
fn minrtt_fills_the_fast_window_before_using_the_slow_path() {
    // One initial window (10 segments) fits the fast path's free window: nothing goes slow.
    let one = het_warm("minrtt", json!({}), IW_BYTES);
    assert_eq!(one.sent, vec![IW_BYTES, 0]);
    // Two windows' worth: the fast window is filled first (all 10 segments), only the
    // remainder goes on the slow path, and the transfer then waits > 50 ms (one slow one-way
    // delay) for it, though the fast path alone would have needed two 10 ms round trips.
    let two = het_warm("minrtt", json!({}), 2 * IW_BYTES);
    assert_eq!(two.sent[0], IW_BYTES, "fast path sent {:?}", two.sent);
    assert_eq!(two.sent[1], IW_BYTES, "slow path sent {:?}", two.sent);
    assert!(two.time_ns > 50 * MS, "{} ms", ms(two.time_ns));
}

#[test]
fn roundrobin_alternates_regardless_of_rtt() {
    // With room in both windows, one segment per turn: the 10 segments split 5 / 5 where
    // minRTT put all of them on the fast path (previous test).
    let rr = het_warm("roundrobin", json!({}), IW_BYTES);
    assert_eq!(rr.sent, vec![IW_BYTES / 2, IW_BYTES / 2]);
    // Strict turns (`cwnd_limited = false`): over a 4 MB transfer both paths carry the same
    // number of data segments although one RTT is 10x the other; minRTT sends most of its
    // segments on the fast path (measured 1657 against 1109 once segments are full-sized:
    // before, a byte-sized free window gave the fast path extra short segments; see
    // `segments_are_full_sized_while_data_is_waiting`).
    let strict = het_warm("roundrobin", json!({"cwnd_limited": false}), 4_000_000);
    let min = het_warm("minrtt", json!({}), 4_000_000);
    let (f, s) = (strict.packets("p0.d"), strict.packets("p1.d"));
    assert!(f.abs_diff(s) * 200 <= f + s, "strict round-robin segments fast {f} slow {s}");
    let (mf, ms_) = (min.packets("p0.d"), min.packets("p1.d"));
    assert!(mf > ms_ * 4 / 3, "minrtt segments fast {mf} slow {ms_}");
}

#[test]
// Once a finding (a 4 MB download over the fast path alone took 3461 data packets, mean
// 1228 B on the wire, against TCP's 2764): schedulers sized bursts by a byte-granular free
// window and the subflow sent them at once. Linux counts cwnd in packets.
fn segments_are_full_sized_while_data_is_waiting() {
    let packets = |protocol, sched: &str| {
        let mut cfg = net(&[fast()]);
        cfg.transports.push(transport(protocol, sched, "cubic", vec![0]));
        cfg.flows.push(sized(0, 0, 0, 4_000_000));
        let rec = run(&cfg).unwrap();
        assert_eq!(bools(&rec, "flows", "completed"), vec![true]);
        u64s(&rec, "links", "packets_forwarded")[0]
    };
    let tcp = packets(Protocol::Tcp, "");
    for name in ["minrtt", "roundrobin"] {
        let mptcp = packets(Protocol::Mptcp, name);
        assert!(mptcp <= tcp * 102 / 100, "{name}: {mptcp} data packets vs TCP {tcp}");
    }
}

#[test]
fn redundant_sends_every_byte_on_every_path() {
    // Two similar paths (20 ms and 30 ms RTT), no random loss: each subflow carries the whole
    // 4 MB once, so a full flow's worth is counted as redundant; minRTT sends each byte once.
    let cfg = || net(&[path(20, 20, 34), path(20, 30, 50)]);
    let size = 4_000_000;
    let red = run_mptcp(cfg(), "redundant", json!({}), 6 << 20, Load::Warm(size));
    for (i, &b) in red.sent.iter().enumerate() {
        assert!(b >= size * 99 / 100, "subflow {i} sent {b} of {size}");
    }
    assert!(red.redundant >= size * 99 / 100, "redundant bytes {}", red.redundant);
    let min = run_mptcp(cfg(), "minrtt", json!({}), 6 << 20, Load::Warm(size));
    assert_eq!(min.redundant, 0);
    assert_eq!(min.assigned().iter().sum::<u64>(), size, "minrtt assigned {:?}", min.assigned());
    // On fast + slow paths a short transfer goes out whole on both.
    let short = het_warm("redundant", json!({}), IW_BYTES);
    assert_eq!(short.sent, vec![IW_BYTES, IW_BYTES]);
}

#[test]
fn redundant_bytes_count_copies_on_the_wire_not_copies_still_queued() {
    // A 20 Mbit/s path beside a 2 Mbit/s, 400 ms one, both with short queues: losses and
    // timeouts leave copies queued on a subflow that cannot send them before the data is
    // acknowledged through the other one (counting copies when queued overstated them here by
    // 7 100 bytes). What the records call redundant is what went on the wire: every byte a
    // subflow sent, minus its own loss retransmissions, is either the first copy of a byte of
    // the transfer or a counted redundant copy.
    let size = 4_000_000;
    let red = run_mptcp(net(&[path(20, 20, 5), path(2, 400, 3)]), "redundant", json!({}), 1 << 20, Load::Warm(size));
    let on_wire: u64 = red.assigned().iter().sum();
    assert!(red.redundant > 0, "no copies were made");
    assert_eq!(on_wire, size + red.redundant, "assigned {:?}, redundant {}", red.assigned(), red.redundant);
}

/// A 1 MB transfer (both subflows get RTT samples and open their windows), then right after
/// it a `size` transfer on the same connection. Returns the run and the bytes the slow
/// subflow sent during the second transfer (total sent minus what it had acknowledged when the
/// second was written: an upper bound, equal to the bytes sent after the write when nothing
/// of the first was still in flight).
fn after_warmup(sched: &str, size: u64, loss_recovery: LossRecoveryConfig) -> (Out, u64) {
    let load = Load::Series(vec![1_000_000, size]);
    let o = run_mptcp_with(net(&[fast(), slow(100)]), sched, json!({}), 6 << 20, load, loss_recovery);
    let write_ns = u64s(&o.rec, "blocks", "sent_ns")[1];
    let slow_bytes = o.sent[1] - o.acked_at(1, write_ns);
    (o, slow_bytes)
}

#[test]
fn ecf_leaves_the_slow_path_idle_when_using_it_would_finish_later() {
    // 150 kB at 20 Mbit/s is 60 ms of serialisation: the fast path alone is done in well
    // under one 100 ms round trip of the slow path, so anything put on the slow path arrives
    // after the fast path would have delivered it. ECF waits; minRTT uses the slow path.
    // Without RACK-TLP (RFC 6675), minRTT's slow subflow also waits for an RTO at the end
    // (292 ms against ECF's 69 ms); with Linux's RACK-TLP its tail is repaired without one
    // (104 ms), and what remains is the slow path's one-way delay.
    for lr in [LossRecoveryConfig::Rfc6675, LossRecoveryConfig::RackTlp] {
        let (ecf, ecf_slow) = after_warmup("ecf", 150_000, lr);
        let (min, min_slow) = after_warmup("minrtt", 150_000, lr);
        assert_eq!(ecf_slow, 0, "{lr:?}: ecf put {ecf_slow} bytes on the slow path");
        assert!(min_slow > 0, "{lr:?}: minrtt left the slow path idle: no contrast");
        // ECF: the fast path alone, 60 ms of serialisation + 5 ms one way (+ ACK clocking).
        assert!(ecf.time_ns < 75 * MS, "{lr:?}: ecf {} ms", ms(ecf.time_ns));
        // minRTT: its slow-path bytes arrive at least 50 ms (one way) after they are sent, and
        // the fast path keeps sending meanwhile, so they finish after ECF.
        assert!(ecf.time_ns < min.time_ns, "{lr:?}: ecf {} ms vs minrtt {} ms", ms(ecf.time_ns), ms(min.time_ns));
        if lr == LossRecoveryConfig::Rfc6675 {
            assert!(ecf.time_ns + 50 * MS < min.time_ns, "ecf {} ms vs minrtt {} ms", ms(ecf.time_ns), ms(min.time_ns));
        }
    }
}

#[test]
#[ignore = "finding: with only the handshake RTT sample on the slow path (RTTVAR = R/2 = 50 ms, \
            so delta = 100 ms) ECF hands the last window of a 64 kB warm transfer to the slow \
            path and finishes later than minRTT: measured ECF 77.9 ms (slow path 14200 B) vs \
            minRTT 56.0 ms (RACK-TLP; RFC 6675: 77.3 vs 56.1 ms)"]
fn ecf_is_no_slower_than_minrtt_on_a_fresh_connection() {
    let ecf = het_warm("ecf", json!({}), 64_000);
    let min = het_warm("minrtt", json!({}), 64_000);
    assert!(
        ecf.time_ns <= min.time_ns,
        "ecf {} ms vs minrtt {} ms, ecf sent {:?}",
        ms(ecf.time_ns),
        ms(min.time_ns),
        ecf.sent
    );
}

#[test]
fn blest_avoids_the_slow_path_when_it_would_block_the_receive_window() {
    // A 100 kB receive buffer is 4 fast-path BDPs but less than half a slow-path BDP (250 kB):
    // every segment on the slow path holds the window for 100 ms while the fast path could
    // send ~250 kB. minRTT fills it anyway and the receiver's out-of-order queue fills the
    // buffer; BLEST predicts the block and keeps to the fast path.
    let cfg = || net(&[fast(), slow(100)]);
    let blest = run_mptcp(cfg(), "blest", json!({}), 100_000, Load::Warm(4_000_000));
    let min = run_mptcp(cfg(), "minrtt", json!({}), 100_000, Load::Warm(4_000_000));
    let (min_mean, min_max) = min.ofo();
    let (blest_mean, blest_max) = blest.ofo();
    assert!(min.sent[1] > 50_000 && min_max > 50_000, "minrtt slow {} B, ofo max {min_max}", min.sent[1]);
    assert!(blest.sent[1] * 10 < min.sent[1], "blest slow {} B vs minrtt {}", blest.sent[1], min.sent[1]);
    assert!(blest_max * 2 < min_max && blest_mean * 2.0 < min_mean, "ofo blest {blest_max} vs minrtt {min_max}");
    assert!(blest.time_ns <= min.time_ns, "blest {} ms vs minrtt {} ms", ms(blest.time_ns), ms(min.time_ns));
    // With a buffer that does not bind (6 MB) the same BLEST uses the slow path like minRTT.
    let open = run_mptcp(cfg(), "blest", json!({}), 6 << 20, Load::Warm(4_000_000));
    assert!(open.share(1) > 0.2, "blest with a large buffer: shares {:?}", open.sent);
}

#[test]
fn cfs_duplicates_only_the_tail_and_finishes_a_short_flow_before_minrtt() {
    // 64 kB warm: minRTT puts one window on the slow path and waits for it (> 50 ms). CFS
    // does the same, then, once nothing is left to assign, copies what the slow path holds
    // onto the fast path: done at the fast path's pace.
    let size = 64_000;
    let cfs = het_warm("cfs", json!({}), size);
    let min = het_warm("minrtt", json!({}), size);
    assert!(min.time_ns > 50 * MS, "minrtt {} ms", ms(min.time_ns));
    assert!(cfs.time_ns + 15 * MS < min.time_ns, "cfs {} ms vs minrtt {} ms", ms(cfs.time_ns), ms(min.time_ns));
    // Only the tail twice: the copies are at most what the slow path carried, and the fast
    // path sent each byte once (no more than the flow size).
    assert!(cfs.redundant > 0, "cfs made no copy");
    assert!(cfs.redundant <= cfs.sent[1], "cfs copied {} B, slow path carried {}", cfs.redundant, cfs.sent[1]);
    assert!(cfs.sent[0] <= size, "fast path sent {}", cfs.sent[0]);
    // On a 4 MB transfer the tail is a small part of the flow, while the redundant scheduler
    // copies whatever the slow path can carry over the whole transfer.
    let long = het_warm("cfs", json!({}), 4_000_000);
    let red_long = het_warm("redundant", json!({}), 4_000_000);
    assert!(long.redundant < 4_000_000 / 8, "cfs copied {} B of 4 MB", long.redundant);
    assert!(red_long.redundant > 4 * long.redundant, "redundant {} B vs cfs {} B", red_long.redundant, long.redundant);
}

/// Two 10 Mbit/s paths with 40 ms RTT and `queue_packets` queues; `cross_bps` of CBR on path
/// 1's down link for the whole run. An 8 MB download.
fn bwm_run(sched: &str, params: Value, cross_bps: u64, queue_packets: u64) -> Out {
    let mut cfg = net(&[path(10, 40, queue_packets), path(10, 40, queue_packets)]);
    if cross_bps > 0 {
        cfg.cross_traffic.push(CrossTrafficConfig {
            links: vec![2],
            rate_bps: cross_bps,
            packet_bytes: 1500,
            start_ns: 0,
            stop_ns: 60 * S,
        });
    }
    run_mptcp(cfg, sched, params, 6 << 20, Load::Cold(8_000_000))
}

#[test]
fn bwm_splits_in_proportion_to_measured_bandwidth_when_cross_traffic_halves_a_path() {
    // 5 Mbit/s of cross traffic leaves path 1 half its capacity: 10 : 5, so path 0 should
    // carry 2/3 of the bytes; without it, 1/2. Strict round-robin (no measurement) stays near
    // 1/2 and is held back by the halved path. Queues: 200 packets (2.4 BDP, bufferbloat).
    let params = json!({"quota_rtt": "common_min_srtt"});
    let halved = bwm_run("bwm", params.clone(), 5_000_000, 200);
    let equal = bwm_run("bwm", params, 0, 200);
    let rr = bwm_run("roundrobin", json!({"cwnd_limited": false}), 5_000_000, 200);
    assert!((halved.share(0) - 2.0 / 3.0).abs() < 0.04, "halved: shares {:?}", halved.sent);
    assert!((equal.share(0) - 0.5).abs() < 0.03, "equal: shares {:?}", equal.sent);
    assert!(rr.share(0) < 0.6, "strict round-robin shares {:?}", rr.sent);
    assert!(halved.time_ns < rr.time_ns, "bwm {} ms vs round-robin {} ms", ms(halved.time_ns), ms(rr.time_ns));
}

#[test]
#[ignore = "finding: BWM as Fig. 4 prints it (quota = bw x own sRTT, EWMA 0.825 / 0.125) with \
            200-packet queues does not follow bandwidth: path-0 share 0.107 with 5 Mbit/s of cross \
            traffic on path 1 (expected 2/3), 0.871 on identical paths (expected 1/2; 6.0 s vs \
            minRTT's 3.5 s; measured with RFC 6675 recovery, before RACK-TLP became the default); common_min_srtt passes (test above). Root cause: \
            experiments/README.md, 002_"]
fn bwm_default_splits_in_proportion_to_measured_bandwidth() {
    let halved = bwm_run("bwm", json!({}), 5_000_000, 200);
    let equal = bwm_run("bwm", json!({}), 0, 200);
    assert!((halved.share(0) - 2.0 / 3.0).abs() < 0.04, "halved: shares {:?}", halved.sent);
    assert!((equal.share(0) - 0.5).abs() < 0.03, "equal: shares {:?}", equal.sent);
}

/// 002_'s paths: two identical 100 Mbit/s, 1 ms paths whose queues never fill (the 6 MiB
/// receive window bounds what is queued, as with the paper's "largest queue the OS allows").
/// A 100 MB download: 4 s at the two paths' 200 Mbit/s.
fn bwm_identical(params: Value) -> Out {
    let cfg = net(&[path(100, 1, 100_000), path(100, 1, 100_000)]);
    run_mptcp(cfg, "bwm", params, 6 << 20, Load::Cold(100_000_000))
}

#[test]
fn bwm_with_bandwidth_proportional_quotas_shares_two_identical_paths_evenly() {
    // The starvation regression: the connection is limited by the receive window, so a path's
    // measured bandwidth is the share it was given; with a common RTT in the quota neither
    // path's queue raises its own quota, and the two stay even.
    let o = bwm_identical(json!({"quota_rtt": "common_min_srtt"}));
    assert!((o.share(0) - 0.5).abs() < 0.05, "shares {:?}", o.sent);
    assert!(o.time_ns < 5 * S, "{} ms", ms(o.time_ns));
}

#[test]
#[ignore = "finding: BWM as Fig. 4 prints it (quota = bw x own sRTT) starves one of two \
            identical paths once the receive window binds: path-0 share 0.996, 8.4 s where both paths need 4 s \
            (root cause: experiments/README.md, 002_)"]
fn bwm_as_printed_shares_two_identical_paths_evenly() {
    let o = bwm_identical(json!({}));
    assert!((o.share(0) - 0.5).abs() < 0.05, "shares {:?}", o.sent);
}

#[test]
fn rp_penalises_a_bloated_slow_path_once_per_fast_rtt_not_once_per_its_own() {
    // 004_ slide 18's paths (a fast one beside 1 Mbit/s, both 250 ms, 1000-packet queues),
    // 100 MB, 6 MB buffer. Halving the slow path once per its own sRTT (up to 2 s) lets its
    // queue grow between penalties; the kernel's rule (once per sRTT of the retransmitting
    // subflow, OOT `last_rbuf_opti`) keeps it down. The fast path then waits less on the
    // connection-level window for data queued on the slow one.
    //
    // One run does not show it reliably: the per-own-sRTT run's time is bimodal in the phase
    // of its penalties. At 47 Mbit/s the kernel's RTO variance term (`tcp_rtt_estimator`'s
    // `rttvar_us`) keeps the fast subflow's RTO at 812 ms through a 539 ms window stall at
    // 3.18 s; RFC 6298's term gave 512 ms, so `tcp_cwnd_restart` halved its 1.78 MB window
    // there, and that single halving moved the per-own-sRTT run from 24.3 s to 30.5 s (the
    // kernel's rule: 22.1 vs 22.4 s; with the restart off, RFC 6298's term gives Linux's times
    // to the ms: docs/testbed.md, Session 13 (rpm13)). So five fast-path rates, 45..=49 Mbit/s.
    // Measured (ms; kernel's rule / per own sRTT): times 23037/35421, 21865/33245, 22092/24272,
    // 21417/28367, 21086/21965 (sums 109497 / 143270, 76 %); the slow path's mean sRTT
    // 680/1171, 666/1114, 654/811, 641/893, 631/729; fast path stalled 6101 / 30206 ms in all.
    // Rates 44..=48 and 46..=50 give time sums of 73 % and 82 %, mean sRTT sums of 67 % and
    // 75 %, stalls x5.5 and x3.8; with RFC 6298's term (45..=49, 44..=48, 46..=50) 80 / 78 /
    // 72 %, 74 / 71 / 66 %, x3.7 / x4.3 / x5.4: the margins below hold for either estimator.
    let run_rule = |fast_mbps: u64, params: Value| {
        let mut c = net(&[path(fast_mbps, 250, 1000), path(1, 250, 1000)]);
        c.duration_ns = 300 * S;
        let o = run_mptcp(c, "minrtt+rp", params, 6 << 20, Load::Cold(100_000_000));
        // 1 ms samples with less than a fifth of the fast window in flight: with everything
        // written at connect(), only the connection-level window holds the fast path back.
        let (cwnd, flight) = (o.series(0, "cwnd_bytes"), o.series(0, "in_flight_bytes"));
        let stalled_ms = cwnd.iter().zip(&flight).filter(|(c, f)| **f * 5 < **c).count() as u64;
        [o.time_ns, o.mean(1, "srtt_ns") as u64, stalled_ms]
    };
    let own = || json!({"rp_penalty_interval": "penalized_srtt"});
    let runs: Vec<(u64, [u64; 3], [u64; 3])> = std::thread::scope(|s| {
        let handles: Vec<_> =
            (45..=49).map(|mbps| s.spawn(move || (mbps, run_rule(mbps, json!({})), run_rule(mbps, own())))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let (mut oot, mut per_own) = ([0u64; 3], [0u64; 3]);
    for (mbps, k, o) in &runs {
        // The queue: larger under the per-own-sRTT rule in every run (by 15 % or more here).
        assert!(k[1] < o[1], "{mbps} Mbit/s: slow mean srtt {} ms vs {} ms", ms(k[1]), ms(o[1]));
        for i in 0..3 {
            oot[i] += k[i];
            per_own[i] += o[i];
        }
    }
    let what = format!("oot {oot:?} vs per-own-rtt {per_own:?} (time ns, mean slow srtt ns sum, stalled ms)");
    assert!(oot[1] * 5 < per_own[1] * 4, "mean slow srtt: {what}");
    assert!(oot[2] * 2 < per_own[2], "fast path stalled: {what}");
    assert!(oot[0] * 20 < per_own[0] * 17, "transfer time: {what}");
}

#[test]
fn rp_halves_the_slow_window_and_retransmits_when_the_receive_window_blocks() {
    // The BLEST scenario (100 kB buffer): minRTT's slow-path segments block the window. RP
    // re-sends the blocking head on the fast path and halves the slow subflow's window.
    let cfg = || net(&[fast(), slow(100)]);
    let rp = run_mptcp(cfg(), "minrtt+rp", json!({}), 100_000, Load::Warm(4_000_000));
    let min = run_mptcp(cfg(), "minrtt", json!({}), 100_000, Load::Warm(4_000_000));
    assert_eq!(min.redundant, 0);
    assert!(rp.redundant >= 10 * MSS, "rp re-sent {} B", rp.redundant);
    // The slow window is halved repeatedly: a 1 ms sample at most 55 % of the previous one
    // (Cubic's own loss response is x0.7). Measured: 19 with RP, 0 without.
    let halvings = |o: &Out| o.series(1, "cwnd_bytes").windows(2).filter(|w| w[1] * 100 <= w[0] * 55).count();
    let (rp_cwnd, min_cwnd) = (rp.mean(1, "cwnd_bytes"), min.mean(1, "cwnd_bytes"));
    // Measured: rp 84568 B, minrtt 137280 B on average over the run.
    assert!(rp_cwnd < 0.8 * min_cwnd, "slow cwnd: rp {rp_cwnd:.0} B vs minrtt {min_cwnd:.0} B");
    assert!(
        halvings(&rp) >= 3 && halvings(&rp) > 2 * halvings(&min),
        "halvings: rp {} minrtt {}",
        halvings(&rp),
        halvings(&min)
    );
}

#[test]
fn freeze_stops_using_a_path_slower_than_the_fastest_by_more_than_its_threshold() {
    let run4 =
        |rtt_ms, sched, params| run_mptcp(net(&[fast(), slow(rtt_ms)]), sched, params, 6 << 20, Load::Warm(4_000_000));
    // 150 ms vs 10 ms: 140 ms > the 100 ms threshold. Only probes (one segment a second) and
    // what was in flight when it froze go slow; minRTT puts a large share there.
    let frozen = run4(150, "freeze", json!({}));
    let min = run4(150, "minrtt", json!({}));
    assert!(frozen.share(1) < 0.02, "freeze shares {:?}", frozen.sent);
    assert!(min.share(1) > 0.15, "minrtt shares {:?}", min.sent);
    // 60 ms vs 10 ms (50 ms < threshold): the slow path is used about as much as by minRTT
    // (not exactly: its 172-packet queue can add up to 100 ms, which freezes it at times).
    let near = run4(60, "freeze", json!({}));
    let near_min = run4(60, "minrtt", json!({}));
    assert!(near.share(1) > 0.8 * near_min.share(1), "freeze {:?} vs minrtt {:?}", near.sent, near_min.sent);
    // A threshold no RTT difference here reaches (1 s): exactly minRTT.
    let lax = run4(150, "freeze", json!({"threshold_ns": 1000 * MS}));
    assert_eq!(lax.sent, min.sent);
}

#[test]
fn linux_sends_bursts_beyond_the_window_to_the_subflow_that_drains_first() {
    // 28 kB warm: both subflows idle, so their linger times tie at 0 and the oldest (the fast
    // path) gets one burst; the burst may exceed the 10-segment window by the modelled send
    // buffer (2 x 10 x 1448 = 28960 B), so the whole transfer queues on the fast path and is
    // done in two fast round trips. minRTT stops at the window and sends the rest slow.
    let size = 28_000;
    let linux = het_warm("linux", json!({}), size);
    let min = het_warm("minrtt", json!({}), size);
    assert_eq!(linux.sent, vec![size, 0]);
    assert!(min.sent[1] > 0, "minrtt shares {:?}", min.sent);
    assert!(linux.time_ns + 20 * MS < min.time_ns, "linux {} ms vs minrtt {} ms", ms(linux.time_ns), ms(min.time_ns));
    // A burst is bounded: with the burst size cut to one segment (and the send buffer to one
    // window), the fast path takes only its window and the rest spills to the slow path.
    let small = het_warm("linux", json!({"burst_bytes": MSS, "sndbuf_factor": 1}), size);
    assert!(small.sent[1] > 0, "one-segment bursts: {:?}", small.sent);
}

#[test]
fn arrival_order_schedulers_keep_a_short_flow_off_the_slow_path_but_use_it_for_a_long_one() {
    let min = het_warm("minrtt", json!({}), 64_000);
    for name in ["daps", "otias", "sttf"] {
        // 64 kB: every segment is expected to arrive sooner behind the fast path's queue
        // than after the slow path's 50 ms one-way delay, so none goes slow.
        let short = het_warm(name, json!({}), 64_000);
        assert_eq!(short.sent[1], 0, "{name}: {:?}", short.sent);
        assert!(
            short.time_ns + 15 * MS < min.time_ns,
            "{name} {} ms vs minrtt {} ms",
            ms(short.time_ns),
            ms(min.time_ns)
        );
        // 1 MB takes the fast path ~400 ms alone: later segments arrive sooner on the slow
        // path, which is then used, and the transfer is not much slower than minRTT's.
        let long = het_warm(name, json!({}), 1_000_000);
        let min_long = het_warm("minrtt", json!({}), 1_000_000);
        assert!(long.sent[1] > 0, "{name} never used the slow path for 1 MB");
        assert!(
            long.time_ns < min_long.time_ns * 112 / 100,
            "{name} {} ms vs minrtt {} ms",
            ms(long.time_ns),
            ms(min_long.time_ns)
        );
    }
}

#[test]
#[ignore = "finding: on a 4 MB warm transfer with a 6 MB buffer the arrival-order schedulers \
            hold more out-of-order data than minRTT, not less (mean ofo bytes: minRTT 25195, \
            DAPS 38388, OTIAS 34065, STTF 202661) and DAPS/OTIAS finish ~50 % later (1580 / \
            1622 ms vs 1071 ms; RACK-TLP, RFC 6675 gave much the same): their estimates assume the slow path's queue drains at the \
            window growth rate (STTF: doubling per RTT), so data queued there arrives late"]
fn arrival_order_schedulers_hold_less_out_of_order_data_than_minrtt() {
    let min = het_warm("minrtt", json!({}), 4_000_000);
    let (min_mean, _) = min.ofo();
    let mut report = format!("minrtt: mean ofo {min_mean:.0} B, {} ms", ms(min.time_ns));
    let mut worse = false;
    for name in ["daps", "otias", "sttf"] {
        let o = het_warm(name, json!({}), 4_000_000);
        let (mean, _) = o.ofo();
        report.push_str(&format!("; {name}: {mean:.0} B, {} ms", ms(o.time_ns)));
        worse |= mean >= min_mean;
    }
    assert!(!worse, "{report}");
}

#[test]
fn bm_keeps_a_deep_slow_queue_from_bloating_without_slowing_the_transfer() {
    // Slow path 4 Mbit/s, 40 ms RTT behind a 2000-packet queue (6 s at 4 Mbit/s): Cubic
    // fills it and the sRTT grows far above 40 ms. BM caps the subflow's data once its sRTT
    // exceeds 3x its minimum; the queue and the sRTT stay small, the transfer no slower.
    let cfg = || net(&[path(20, 10, 100), path(4, 40, 2000)]);
    let min = run_mptcp(cfg(), "minrtt", json!({}), 16 << 20, Load::Cold(16_000_000));
    let bm = run_mptcp(cfg(), "minrtt+bm", json!({}), 16 << 20, Load::Cold(16_000_000));
    let max_srtt = |o: &Out| o.series(1, "srtt_ns").into_iter().max().unwrap_or(0);
    assert!(max_srtt(&min) > 300 * MS, "minrtt slow srtt {} ms", ms(max_srtt(&min)));
    assert!(max_srtt(&bm) * 2 < max_srtt(&min), "bm {} ms vs minrtt {} ms", ms(max_srtt(&bm)), ms(max_srtt(&min)));
    assert!(
        bm.max_queue("p1.d") * 2 < min.max_queue("p1.d"),
        "queue bm {} vs minrtt {}",
        bm.max_queue("p1.d"),
        min.max_queue("p1.d")
    );
    assert!(bm.time_ns <= min.time_ns * 102 / 100, "bm {} ms vs minrtt {} ms", ms(bm.time_ns), ms(min.time_ns));
}
