//! RACK-TLP (RFC 8985 as Linux 6.18 runs it) against RFC 6675 on one subflow: tail losses
//! repaired by a probe instead of the RTO, time-based marking with fewer than DupThresh SACKs,
//! and the window reduction after a probe that repaired a loss.

use super::tcp::{download_with, rfc6675, run_to_completion};
use super::util::*;
use crate::tcp::{LossRecovery, Segment, TcpConfig};

/// Drops the first transmission of every segment whose sequence number `pick` selects.
fn drop_first_tx(pick: impl Fn(u64) -> bool + 'static) -> Box<dyn FnMut(&Segment) -> bool> {
    let mut dropped = Vec::new();
    Box::new(move |s: &Segment| {
        let d = s.len > 0 && pick(s.seq) && !dropped.contains(&s.seq);
        if d {
            dropped.push(s.seq);
        }
        d
    })
}

#[test]
fn with_rack_tlp_a_tail_loss_is_repaired_by_a_probe_not_the_rto() {
    // Linux default (tcp_early_retrans = 3, tcp_recovery = 1): the last two of 20 segments are
    // lost. The ACK of segment 18 arrives at ~70 ms; with two segments out the probe timer is
    // 2 SRTT + 2 ms, so the last segment is resent at ~112 ms. Its SACK (~132 ms) lets RACK
    // mark segment 19 lost after min_rtt / 4 (+ 2 ms of timer slack, ~139 ms): fast recovery
    // resends it, delivered at ~149 ms, where the RTO alone would need > 290 ms.
    let total = 20 * 1448;
    let cfg = TcpConfig::default();
    assert_eq!(cfg.loss_recovery, LossRecovery::RackTlp, "Linux's default");
    let mut p = download_with(cfg, total, 100 * MBPS, 10 * MS, "cubic");
    p.ba[0].drop = Some(drop_first_tx(|seq| seq > 18 * 1448));
    run_to_completion(&mut p, total);
    let st = p.b.tx.stats();
    assert_eq!(st.rto_count, 0);
    assert_eq!(st.tail_loss_probes, 1);
    assert_eq!(st.fast_retransmits, 1);
    assert_eq!(st.bytes_retransmitted, 2 * 1448);
    let fct = p.a.last_delivery_ns;
    assert!((140 * MS..160 * MS).contains(&fct), "fct {fct}");
}

#[test]
fn the_same_tail_loss_waits_for_the_rto_with_rfc6675_and_about_two_srtt_with_rack_tlp() {
    // The last three of 40 segments are lost (nothing after them to SACK). The last ACK is a
    // delayed one (~131 ms, SRTT then ~26 ms). RFC 6675 has no signal until the RTO (SRTT +
    // 200 ms after it, ~356 ms), then slow start from one segment: ~427 ms. RACK-TLP probes
    // 2 SRTT + 2 ms after it (~184 ms), the probe's SACK lets RACK mark the other two lost at
    // once, and PRR resends them over two round trips: ~245 ms.
    let total = 40 * 1448;
    let tail = |seq: u64| seq > 37 * 1448;
    let mut fct = Vec::new();
    for cfg in [rfc6675(), TcpConfig::default()] {
        // A receive buffer of the initial 64 KB window: no segment grows rcv_ssthresh and
        // re-arms quickack (Linux `tcp_grow_window`), so the last ACK is a delayed one.
        let cfg = TcpConfig {
            rcv_buf_bytes: 65_536,
            ..cfg
        };
        let mut p = download_with(cfg.clone(), total, 100 * MBPS, 10 * MS, "cubic");
        p.ba[0].drop = Some(drop_first_tx(tail));
        run_to_completion(&mut p, total);
        let st = p.b.tx.stats();
        assert_eq!(st.bytes_retransmitted, 3 * 1448, "{:?}", cfg.loss_recovery);
        if cfg.rack_tlp() {
            assert_eq!((st.rto_count, st.tail_loss_probes), (0, 1));
        } else {
            assert_eq!((st.rto_count, st.tail_loss_probes), (1, 0));
        }
        fct.push(p.a.last_delivery_ns);
    }
    let srtt_ms = 20;
    // Both see the same first 37 segments; the difference is the repair of the tail.
    let saved_ms = (fct[0] - fct[1]) / MS;
    assert!(
        saved_ms >= 200 - 2 * srtt_ms,
        "rfc6675 {} ms, rack-tlp {} ms",
        fct[0] / MS,
        fct[1] / MS
    );
}

#[test]
fn with_rack_tlp_a_loss_with_one_later_segment_is_marked_by_the_reordering_timer() {
    // The second-to-last segment is lost: one SACK is far from DupThresh, but RACK marks it
    // lost min_rtt / 4 after the last segment was delivered: fast recovery, no RTO. RFC 6675
    // needs the RTO for the same loss.
    let total = 20 * 1448;
    let target = 1 + 18 * 1448;
    for cfg in [TcpConfig::default(), rfc6675()] {
        let mut p = download_with(cfg.clone(), total, 100 * MBPS, 10 * MS, "cubic");
        p.ba[0].drop = Some(drop_first_tx(move |seq| seq == target));
        run_to_completion(&mut p, total);
        let st = p.b.tx.stats();
        assert_eq!(st.bytes_retransmitted, 1448);
        let fct = p.a.last_delivery_ns;
        if cfg.rack_tlp() {
            assert_eq!(
                (st.rto_count, st.fast_retransmits, st.tail_loss_probes),
                (0, 1, 0)
            );
            // Segment 19's ACK (SACK) at ~2.5 RTT + serialisation; the hole is resent after
            // min_rtt / 4 + 2 ms = 7 ms and delivered half an RTT later.
            assert!(fct < 100 * MS, "fct {fct}");
        } else {
            assert_eq!((st.rto_count, st.fast_retransmits), (1, 0));
            assert!(fct > 250 * MS, "fct {fct}");
        }
    }
}

#[test]
fn a_probe_that_repaired_a_loss_reduces_the_window_once() {
    // Linux `tcp_process_tlp_ack`: the probe resent the lost last segment; once an ACK goes
    // beyond the probe's snd_nxt (new data written later), the loss is known to have been
    // real, and cwnd drops to the congestion control's ssthresh, without a recovery episode.
    let total = 20 * 1448;
    let mut p = download_with(TcpConfig::default(), total, 100 * MBPS, 10 * MS, "cubic");
    p.ba[0].drop = Some(drop_first_tx(move |seq| seq == 1 + 19 * 1448));
    run_to_completion(&mut p, total);
    let st = p.b.tx.stats();
    assert_eq!(
        (st.tail_loss_probes, st.rto_count, st.fast_retransmits),
        (1, 0, 0)
    );
    assert_eq!(
        st.tlp_recoveries, 0,
        "the ACK has not gone beyond the probe yet"
    );
    let before = p.b.tx.cc_state();
    assert_eq!(before.ssthresh_bytes, u64::MAX);
    let now = p.now_ns;
    p.b.tx.queue(total, 10 * 1448, false);
    let more = total + 10 * 1448;
    let done = p.drive(now + 10_000 * MS, |a, b| {
        a.delivered_bytes == more && b.tx.is_idle()
    });
    assert!(done);
    let st = p.b.tx.stats();
    assert_eq!(
        (st.tlp_recoveries, st.rto_count, st.fast_retransmits),
        (1, 0, 0)
    );
    let after = p.b.tx.cc_state();
    assert!(
        after.ssthresh_bytes < before.cwnd_bytes,
        "ssthresh {} after cwnd {}",
        after.ssthresh_bytes,
        before.cwnd_bytes
    );
}

#[test]
fn once_reordering_is_seen_rack_waits_its_reordering_window_where_dupthresh_retransmits() {
    // Two segments are held back on the way: segment 30 by 0.2 ms (one later segment overtakes
    // it: one SACK, no loss marked, and its late arrival shows reordering), then segment 120 by
    // 3 ms (dozens of later segments are SACKed meanwhile at 100 Mbit/s). RFC 6675 (and RACK
    // before any reordering, Linux `tcp_rack_reo_wnd`) marks 120 lost at the third SACK and
    // resends it for nothing; once reordering has been seen RACK waits min RTT / 4 (5 ms) and
    // the late original arrives first.
    let total = 300 * 1448;
    let late = [(1 + 30 * 1448, 200_000), (1 + 120 * 1448, 3 * MS)];
    for cfg in [TcpConfig::default(), rfc6675()] {
        let mut p = download_with(cfg.clone(), total, 100 * MBPS, 10 * MS, "cubic");
        let mut held = Vec::new();
        p.ba[0].hold = Some(Box::new(move |s: &Segment| {
            let Some(&(seq, d)) = late.iter().find(|&&(seq, _)| seq == s.seq && s.len > 0) else {
                return 0;
            };
            if held.contains(&seq) {
                return 0;
            }
            held.push(seq);
            d
        }));
        run_to_completion(&mut p, total);
        let st = p.b.tx.stats();
        if cfg.rack_tlp() {
            assert_eq!((st.bytes_retransmitted, st.fast_retransmits), (0, 0));
        } else {
            assert_eq!((st.bytes_retransmitted, st.fast_retransmits), (1448, 1));
        }
    }
}

#[test]
fn retransmission_timeouts_fire_on_the_kernels_timer_wheel() {
    // Linux keeps the RTO in jiffies (HZ 250 on the testbed: 4 ms) and its retransmission
    // timer is a `timer_list`, filed in the timer wheel with its expiry rounded up to the
    // level's granularity: the backed-off timeouts of a dead path fire on jiffy boundaries,
    // each gap at least the doubled RTO and at most one level-1 bucket (32 ms) more.
    use crate::tcp::JIFFY_NS;
    let total = 40 * 1448;
    let mut p = download_with(TcpConfig::default(), total, 100 * MBPS, 10 * MS, "reno");
    let head = 20 * 1448 + 1;
    let sends = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let seen = sends.clone();
    let clock = std::rc::Rc::new(std::cell::Cell::new(0u64));
    let now = clock.clone();
    p.ba[0].drop = Some(Box::new(move |s: &Segment| {
        if s.len > 0 && s.seq == head {
            seen.borrow_mut().push(now.get());
        }
        s.len > 0 && s.seq >= head
    }));
    let step_ns = 100_000;
    let mut t = 0;
    while t < 4_000 * MS {
        t += step_ns;
        clock.set(t);
        p.drive(t, |_, _| false);
    }
    let rto_ns = p.b.tx.rtt().rto_ns();
    assert_eq!(rto_ns % JIFFY_NS, 0, "rto {rto_ns} ns");
    let times = sends.borrow().clone();
    // First transmission, then the RTO retransmissions (backoff 1, 2, 3 ...).
    assert!(times.len() >= 4, "head sent at {times:?}");
    for w in times[1..].windows(2) {
        assert_eq!(w[1] % JIFFY_NS, 0, "fired off a jiffy: {times:?}");
    }
    for (i, w) in times[1..].windows(2).enumerate() {
        let backed_off = rto_ns << (i + 1);
        let gap = w[1] - w[0];
        assert!(
            gap >= backed_off && gap <= backed_off + 32 * MS,
            "gap {gap} for {backed_off}: {times:?}"
        );
    }
}

#[test]
fn the_probe_and_the_reordering_timer_fire_on_jiffy_boundaries() {
    // Linux 6.18 turns both timeouts into jiffies (`usecs_to_jiffies(2 srtt +
    // TCP_TIMEOUT_MIN_US)` in `tcp_schedule_loss_probe`, `usecs_to_jiffies(reo_timeout +
    // TCP_TIMEOUT_MIN_US)` in `tcp_rack_mark_lost`) and arms `icsk_retransmit_timer`, a
    // `timer_list` the wheel fires at a jiffy boundary (4 ms at the testbed's HZ 250), never
    // early. The scenarios of the probe and reordering tests above, stopped when each fires.
    let jiffy = crate::tcp::JIFFY_NS;
    let total = 20 * 1448;
    let mut p = download_with(TcpConfig::default(), total, 100 * MBPS, 10 * MS, "cubic");
    p.ba[0].drop = Some(drop_first_tx(|seq| seq > 18 * 1448));
    assert!(p.drive(10_000 * MS, |_, b| b.tx.stats().tail_loss_probes == 1));
    let probe_ns = p.now_ns;
    assert_eq!(probe_ns % jiffy, 0, "probe at {probe_ns} ns");

    let target = 1 + 18 * 1448;
    let mut p = download_with(TcpConfig::default(), total, 100 * MBPS, 10 * MS, "cubic");
    p.ba[0].drop = Some(drop_first_tx(move |seq| seq == target));
    assert!(p.drive(10_000 * MS, |_, b| b.tx.stats().fast_retransmits == 1));
    let reo_ns = p.now_ns;
    assert_eq!(reo_ns % jiffy, 0, "reordering timer at {reo_ns} ns");
}

/// The scenario of the probe tests above (100 Mbit/s, 20 ms RTT, 20 segments) with the first
/// transmission of the last `lost` segments dropped: the time from the arrival of the last
/// ACK at the sender to the probe's departure, and the SRTT when that ACK arrived.
fn probe_gap_after_last_ack(lost: u64) -> (u64, u64) {
    let total = 20 * 1448;
    let mut p = download_with(TcpConfig::default(), total, 100 * MBPS, 10 * MS, "cubic");
    p.ba[0].drop = Some(drop_first_tx(move |seq| seq > (20 - lost) * 1448));
    let lost_bytes = lost * 1448;
    assert!(p.drive(10_000 * MS, |_, b| b.tx.outstanding_bytes() == lost_bytes));
    let (ack_ns, srtt_ns) = (p.now_ns, p.b.tx.rtt().srtt_ns);
    assert!(p.drive(10_000 * MS, |_, b| b.tx.stats().tail_loss_probes == 1));
    let st = p.b.tx.stats();
    assert_eq!(st.rto_count, 0, "a probe, not the RTO");
    (p.now_ns - ack_ns, srtt_ns)
}

#[test]
fn the_probe_leaves_two_srtt_after_the_last_ack_as_the_testbed_measures() {
    // Linux 6.18 `tcp_schedule_loss_probe`, re-armed by the last ACK (`tcp_set_xmit_timer`,
    // advancing_rto): 2 SRTT (`srtt_us >> 2`) + TCP_TIMEOUT_MIN_US with two segments out,
    // rounded up to jiffies, then up to the next jiffy on the wheel. Testbed (6.18.44, HZ 250,
    // this scenario, 5 flows, server capture): 45.8-48.0 ms from the ACK of segment 18 to the
    // probe. A probe timed from the last new data instead would leave ~20 ms earlier.
    let (gap_ns, srtt_ns) = probe_gap_after_last_ack(2);
    let jiffy = crate::tcp::JIFFY_NS;
    let pto_ns = (2 * srtt_ns + 2 * MS).div_ceil(jiffy) * jiffy;
    assert!(
        (pto_ns..pto_ns + jiffy).contains(&gap_ns),
        "gap {gap_ns}, srtt {srtt_ns}"
    );
    assert!((44 * MS..=48 * MS).contains(&gap_ns), "gap {gap_ns}");
}

#[test]
fn with_one_segment_out_the_probe_waits_for_a_delayed_ack_but_not_past_the_rto() {
    // One segment out: Linux adds `tcp_rto_min_us` (200 ms) for a delayed ACK of it (2 SRTT
    // + 200 ms = ~241 ms), but the RTO formula (`icsk_rto` = SRTT + 200 ms, ~221 ms) comes
    // first and the probe takes its time. Testbed (same scenario, only the last segment lost,
    // 5 flows): the probe 225.9-231.5 ms after the ACK of segment 19, no RTO.
    let (gap_ns, srtt_ns) = probe_gap_after_last_ack(1);
    assert!(
        gap_ns < 2 * srtt_ns + 200 * MS,
        "gap {gap_ns}, srtt {srtt_ns}"
    );
    assert!((220 * MS..=232 * MS).contains(&gap_ns), "gap {gap_ns}");
}
