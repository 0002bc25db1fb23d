//! Single-subflow scenarios: handshake, slow start timing, tail loss (RTO), several losses in
//! one window (SACK recovery), lost SYN.

use super::util::*;
use crate::cc;
use crate::tcp::{flags, HsOption, LossRecovery, Receiver, Role, Segment, Sender, TcpConfig};

/// Download over one path: `a` = client data receiver, `b` = server data sender.
fn download(
    total: u64,
    rate_bps: u64,
    one_way_ns: u64,
    cc_name: &str,
) -> Pair<TcpReceiverEp, TcpSenderEp> {
    download_with(TcpConfig::default(), total, rate_bps, one_way_ns, cc_name)
}

pub(super) fn download_with(
    cfg: TcpConfig,
    total: u64,
    rate_bps: u64,
    one_way_ns: u64,
    cc_name: &str,
) -> Pair<TcpReceiverEp, TcpSenderEp> {
    let mut rx = Receiver::new(cfg.clone(), Role::Client, HsOption::None);
    rx.connect(0);
    let mut tx = Sender::new(
        cfg,
        Role::Server,
        HsOption::None,
        cc::build(cc_name).unwrap(),
    );
    tx.queue(0, total, true);
    Pair::new(
        TcpReceiverEp::new(rx),
        TcpSenderEp { tx },
        vec![Link::new(rate_bps, one_way_ns)],
        vec![Link::new(rate_bps, one_way_ns)],
    )
}

pub(super) fn run_to_completion(p: &mut Pair<TcpReceiverEp, TcpSenderEp>, total: u64) {
    let done = p.drive(600_000 * MS, |a, b| {
        a.delivered_bytes == total && b.tx.is_idle()
    });
    assert!(
        done,
        "flow did not complete: delivered {} of {total}",
        p.a.delivered_bytes
    );
}

#[test]
fn slow_start_64kb_takes_four_rtts() {
    // 64 KB = 46 segments (45 * 1448 + 376). RTT 20 ms, 1 Gb/s (serialisation ~12 us/segment).
    // SYN -> SYN-ACK: 1 RTT; the third ACK reaches the server at 1.5 RTT; IW 10 arrives at
    // 2 RTT; quickack ACKs each of them, cwnd 10 -> 20; 20 segments arrive at 3 RTT, cwnd ->
    // 40; the last 16 segments arrive at 4 RTT. Completion = 4 RTT = 80 ms (+ < 1 ms of
    // serialisation).
    let total = 65_536;
    let mut p = download(total, 1_000 * MBPS, 10 * MS, "reno");
    run_to_completion(&mut p, total);
    let fct = p.a.last_delivery_ns;
    assert!((80 * MS..81 * MS).contains(&fct), "fct {fct} ns");
    let st = p.b.tx.stats();
    assert_eq!(st.bytes_sent, total);
    assert_eq!(st.bytes_retransmitted, 0);
    assert_eq!(p.b.tx.rtt().min_rtt_ns / MS, 20);
}

/// RFC 6675 alone (no probe).
pub(super) fn rfc6675() -> TcpConfig {
    TcpConfig {
        loss_recovery: LossRecovery::Rfc6675,
        ..TcpConfig::default()
    }
}

#[test]
fn with_rfc6675_a_tail_loss_is_repaired_by_rto() {
    let total = 20 * 1448;
    let mut p = download_with(rfc6675(), total, 100 * MBPS, 10 * MS, "reno");
    // Drop the first transmission of the last segment: no later data to trigger SACK.
    let mut seen = false;
    p.ba[0].drop = Some(Box::new(move |s: &Segment| {
        let last = s.len > 0 && s.seq + s.len as u64 == total + 1;
        let drop = last && !seen;
        seen |= last;
        drop
    }));
    run_to_completion(&mut p, total);
    let st = p.b.tx.stats();
    assert_eq!(st.rto_count, 1);
    assert_eq!(st.fast_retransmits, 0);
    assert_eq!(st.bytes_retransmitted, 1448);
    // The RTO is at least 200 ms (Linux TCP_RTO_MIN) on top of the ~2-3 RTT transfer.
    assert!(
        p.a.last_delivery_ns > 250 * MS,
        "fct {}",
        p.a.last_delivery_ns
    );
}

#[test]
fn several_losses_in_one_window_recovered_by_sack_without_rto() {
    // Both loss detections: DupThresh and RACK's time rule find the same four holes.
    for cfg in [rfc6675(), TcpConfig::default()] {
        let total = 300 * 1448;
        let mut p = download_with(cfg.clone(), total, 100 * MBPS, 10 * MS, "cubic");
        let lost: Vec<u64> = [40u64, 42, 45, 50].iter().map(|i| 1 + i * 1448).collect();
        let mut dropped = Vec::new();
        p.ba[0].drop = Some(Box::new(move |s: &Segment| {
            if s.len > 0 && lost.contains(&s.seq) && !dropped.contains(&s.seq) {
                dropped.push(s.seq);
                return true;
            }
            false
        }));
        run_to_completion(&mut p, total);
        let st = p.b.tx.stats();
        let mode = cfg.loss_recovery;
        assert_eq!(
            st.rto_count, 0,
            "{mode:?}: SACK recovery must avoid the RTO"
        );
        assert_eq!(
            st.fast_retransmits, 1,
            "{mode:?}: one recovery episode for one window"
        );
        assert_eq!(
            st.bytes_retransmitted,
            4 * 1448,
            "{mode:?}: exactly the lost segments are resent"
        );
        assert!(p.b.tx.cc_state().ssthresh_bytes < u64::MAX);
    }
}

#[test]
fn lost_retransmission_is_detected_without_rto() {
    // Segment 40 is lost, and so is its first retransmission. New data sent after that
    // retransmission is SACKed, which shows it was lost (Linux RACK, in both modes): a second
    // retransmission follows within the same recovery, no RTO.
    for cfg in [rfc6675(), TcpConfig::default()] {
        let total = 300 * 1448;
        let mut p = download_with(cfg.clone(), total, 100 * MBPS, 10 * MS, "cubic");
        let target = 1 + 40 * 1448;
        let mut drops = 0;
        p.ba[0].drop = Some(Box::new(move |s: &Segment| {
            let d = s.len > 0 && s.seq == target && drops < 2;
            drops += d as u32;
            d
        }));
        run_to_completion(&mut p, total);
        let st = p.b.tx.stats();
        let mode = cfg.loss_recovery;
        assert_eq!(st.rto_count, 0, "{mode:?}");
        assert_eq!(st.fast_retransmits, 1, "{mode:?}");
        assert_eq!(st.bytes_retransmitted, 2 * 1448, "{mode:?}");
    }
}

#[test]
fn prr_brings_pipe_down_to_ssthresh_without_bursts() {
    // RFC 6937: during recovery the sender transmits about ssthresh / RecoverFS of what is
    // delivered, so pipe falls smoothly to ssthresh; at the end cwnd = ssthresh (Reno: half
    // the window before the loss) and pipe does not exceed it.
    use crate::tcp::CaState;
    let total = 600 * 1448;
    let mut p = download(total, 50 * MBPS, 10 * MS, "reno");
    let mut first = true;
    p.ba[0].drop = Some(Box::new(move |s: &Segment| {
        let d = s.len > 0 && s.seq == 1 + 150 * 1448 && first;
        first &= !d;
        d
    }));
    let (mut prior, mut max_pipe, mut exit) = (0, 0, None);
    let mut last_state = CaState::Open;
    let done = p.drive(600_000 * MS, |a, b| {
        let tx = &b.tx;
        match (last_state, tx.ca_state()) {
            (CaState::Open, CaState::Open) if max_pipe == 0 => prior = tx.cc_state().cwnd_bytes,
            (_, CaState::Recovery) if exit.is_none() => {
                max_pipe = max_pipe.max(tx.in_flight_bytes())
            }
            (CaState::Recovery, CaState::Open) if exit.is_none() => {
                exit = Some((tx.cc_state(), tx.in_flight_bytes()))
            }
            _ => {}
        }
        last_state = tx.ca_state();
        a.delivered_bytes == total && tx.is_idle()
    });
    assert!(done);
    let (cc_at_exit, pipe_at_exit) = exit.expect("one recovery");
    let mss = 1448;
    // ssthresh = cwnd / 2 at the loss (the window may have grown by <= 2 MSS since `prior`).
    let ss = cc_at_exit.ssthresh_bytes;
    assert!(
        ss >= prior / 2 && ss <= prior / 2 + mss,
        "ssthresh {ss} prior {prior}"
    );
    assert_eq!(cc_at_exit.cwnd_bytes, ss);
    assert!(
        pipe_at_exit <= ss + mss,
        "pipe {pipe_at_exit} ssthresh {ss}"
    );
    assert!(
        max_pipe <= prior + 2 * mss,
        "no burst beyond the old window: {max_pipe}"
    );
    assert_eq!(p.b.tx.stats().rto_count, 0);
}

#[test]
fn congestion_losses_at_a_drop_tail_bottleneck_back_off_by_the_algorithms_beta() {
    // 20 Mb/s, 20 ms RTT (BDP 33 segments), 40-packet drop-tail queue. Every fast recovery
    // sets ssthresh = beta * cwnd: 1/2 for Reno, 717/1024 for CUBIC.
    use crate::tcp::CaState;
    for (cc_name, num, den) in [("reno", 1u64, 2u64), ("cubic", 717, 1024)] {
        let total = 8 << 20;
        let mut p = download(total, 20 * MBPS, 10 * MS, cc_name);
        p.ba[0] = Link::new(20 * MBPS, 10 * MS).queue_limit(Some(40 * 1500));
        let (mut last_open_cwnd, mut checked) = (0u64, 0);
        let mut last_state = CaState::Open;
        let done = p.drive(600_000 * MS, |a, b| {
            let tx = &b.tx;
            let st = tx.ca_state();
            if st == CaState::Open {
                last_open_cwnd = tx.cc_state().cwnd_bytes;
            } else if last_state == CaState::Open && st == CaState::Recovery {
                let ss = tx.cc_state().ssthresh_bytes;
                let expect = last_open_cwnd * num / den;
                // cwnd may have grown by up to 2 MSS between our last look and the loss.
                assert!(
                    ss + 2 >= expect && ss <= expect + 2 * 1448,
                    "{cc_name}: {ss} vs {expect}"
                );
                checked += 1;
            }
            last_state = st;
            a.delivered_bytes == total && tx.is_idle()
        });
        assert!(done && checked >= 2, "{cc_name}: {checked} recoveries");
        assert!(p.ba[0].dropped > 0);
    }
}

#[test]
fn lost_syn_is_retransmitted_after_one_second() {
    let total = 10_000;
    let mut p = download(total, 100 * MBPS, 10 * MS, "reno");
    let mut first = true;
    p.ab[0].drop = Some(Box::new(move |s: &Segment| {
        let d = s.has(flags::SYN) && first;
        first &= !s.has(flags::SYN);
        d
    }));
    run_to_completion(&mut p, total);
    // SYN again at 1 s, then handshake + one flight: ~1 s + 2 RTT.
    let fct = p.a.last_delivery_ns;
    assert!((1_040 * MS..1_050 * MS).contains(&fct), "fct {fct}");
}

#[test]
fn a_syn_into_a_dead_link_is_retransmitted_linearly_then_doubling() {
    // Linux 6.18 (`tcp_syn_linear_timeouts` = 4): SYNs at 0, 1, 2, 3, 4, 5 s, then 7, 11 s
    // (measured against a blackholed address: five 1 s gaps, then 2, 4, 8 ... s). A path that
    // comes back at 6.5 s carries the SYN of 7 s; the transfer ends about 2 RTT later.
    let total = 10_000;
    let mut p = download(total, 100 * MBPS, 10 * MS, "reno");
    let syns = std::rc::Rc::new(std::cell::Cell::new(0u32));
    let seen = syns.clone();
    p.ab[0].drop = Some(Box::new(move |s: &Segment| {
        seen.set(seen.get() + u32::from(s.has(flags::SYN)));
        s.has(flags::SYN)
    }));
    p.drive(6_500 * MS, |_, _| false);
    p.ab[0].drop = None;
    run_to_completion(&mut p, total);
    let fct = p.a.last_delivery_ns;
    assert!(
        (7_040 * MS..7_050 * MS).contains(&fct),
        "fct {} ms",
        fct / MS
    );
    assert_eq!(syns.get(), 6, "SYNs before the path returned");
}

#[test]
fn a_syn_into_a_dead_link_is_given_up_after_ten_retransmissions() {
    // Linux 6.18 `tcp_write_timeout`: a SYN_SENT socket expires at the timeout after its
    // `tcp_syn_retries` (6) + `tcp_syn_linear_timeouts` (4) = 10th retransmission: SYNs at 0,
    // 1, 2, 3, 4, 5, 7, 11, 19, 35, 67 s, the socket closed at 131 s. A path that returns
    // after that carries nothing: no SYN leaves again.
    let total = 10_000;
    let mut p = download(total, 100 * MBPS, 10 * MS, "reno");
    let syn_times = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let seen = syn_times.clone();
    let clock = std::rc::Rc::new(std::cell::Cell::new(0u64));
    let now = clock.clone();
    p.ab[0].drop = Some(Box::new(move |s: &Segment| {
        if s.has(flags::SYN) {
            seen.borrow_mut().push(now.get());
        }
        true
    }));
    // Step the clock in 1 ms slices so the drop rule knows when each SYN left.
    let mut t = 0;
    while t < 140_000 * MS {
        t += MS;
        clock.set(t);
        p.drive(t, |_, _| false);
    }
    let secs: Vec<u64> = syn_times
        .borrow()
        .iter()
        .map(|&ns| ns / (1_000 * MS))
        .collect();
    assert_eq!(secs, vec![0, 1, 2, 3, 4, 5, 7, 11, 19, 35, 67]);
    p.ab[0].drop = None;
    p.drive(300_000 * MS, |_, _| false);
    assert_eq!(syn_times.borrow().len(), 11, "a SYN after the give-up");
    assert_eq!(p.a.last_delivery_ns, 0, "delivered after the give-up");
}

#[test]
fn delayed_ack_after_quickack_acks_every_second_segment() {
    // A receive buffer of the initial 64 KB window: rcv_ssthresh has no room to grow, so no
    // segment re-arms quickack mode (Linux `tcp_grow_window`; the next test has it grow).
    let total = 200 * 1448;
    let cfg = TcpConfig {
        rcv_buf_bytes: 65_536,
        ..TcpConfig::default()
    };
    let mut p = download_with(cfg, total, 100 * MBPS, 5 * MS, "reno");
    run_to_completion(&mut p, total);
    let acks = p.a.rx.stats().acks_sent;
    // 16 quickacks, then about one ACK per two segments (plus handshake-free ACK count).
    assert!(
        (16 + (200 - 16) / 2..=16 + (200 - 16) / 2 + 10).contains(&acks),
        "acks {acks}"
    );
}

#[test]
fn random_loss_transfers_everything_once_in_order() {
    for seed in 0..20u64 {
        let total = 150_000 + seed * 777;
        let mut p = download(
            total,
            20 * MBPS,
            7 * MS,
            if seed % 2 == 0 { "reno" } else { "cubic" },
        );
        p.ab[0] = Link::new(20 * MBPS, 7 * MS).lossy(20_000, seed);
        p.ba[0] = Link::new(20 * MBPS, 7 * MS).lossy(30_000, seed + 100);
        run_to_completion(&mut p, total);
    }
}

#[test]
fn hystart_ends_cubic_slow_start_before_any_loss() {
    // No loss anywhere, but a 10 Mb/s bottleneck whose (unbounded) queue builds up: RTT
    // samples rise above min RTT + max(min RTT / 8, 4 ms) and HyStart sets ssthresh = cwnd.
    // Reno, with the same path, never leaves slow start (no loss, ssthresh stays infinite).
    let total = 3 << 20;
    let mut p = download(total, 10 * MBPS, 10 * MS, "cubic");
    run_to_completion(&mut p, total);
    let st = p.b.tx.stats();
    assert_eq!(st.rto_count + st.fast_retransmits, 0);
    let ss = p.b.tx.cc_state().ssthresh_bytes;
    assert!(ss < u64::MAX, "HyStart set ssthresh");
    // It fires around the BDP (10 Mb/s * 20 ms = 25 KB) plus the 4 ms threshold, far below
    // the 3 MB an unchecked slow start would reach.
    assert!(ss < 200 * 1448, "ssthresh {ss}");
    let mut p = download(total, 10 * MBPS, 10 * MS, "reno");
    run_to_completion(&mut p, total);
    assert_eq!(p.b.tx.cc_state().ssthresh_bytes, u64::MAX);
}

#[test]
fn window_restarts_after_an_idle_period_longer_than_the_rto() {
    // RFC 5681 §4.1 / Linux tcp_slow_start_after_idle: after 2 s of silence (RTO ~ 220 ms)
    // cwnd falls back to the initial window; ssthresh keeps 3/4 of the old cwnd.
    let total = 1 << 20;
    let mut p = download(total, 100 * MBPS, 10 * MS, "cubic");
    run_to_completion(&mut p, total);
    let before = p.b.tx.cc_state();
    assert!(before.cwnd_bytes > 20 * 1448);
    p.now_ns += 2_000 * MS;
    p.b.tx.queue(total, 100 * 1448, true);
    let t = p.now_ns;
    p.drive(t + MS, |_, _| false);
    let after = p.b.tx.cc_state();
    assert_eq!(after.cwnd_bytes, 10 * 1448);
    assert_eq!(
        after.ssthresh_bytes,
        before.ssthresh_bytes.max(before.cwnd_bytes / 4 * 3)
    );
    assert_eq!(
        p.b.tx.outstanding_bytes(),
        10 * 1448,
        "one initial window in flight"
    );
}

#[test]
fn penalty_halves_cwnd_each_time_it_is_asked_for() {
    let mut p = download(2 << 20, 100 * MBPS, 10 * MS, "reno");
    p.drive(200 * MS, |_, _| false);
    let tx = &mut p.b.tx;
    let before = tx.cc_state();
    assert!(before.cwnd_bytes > 20 * 1448 && before.ssthresh_bytes == u64::MAX);
    tx.penalize();
    assert_eq!(tx.cc_state().cwnd_bytes, before.cwnd_bytes / 2);
    assert_eq!(
        tx.cc_state().ssthresh_bytes,
        u64::MAX,
        "slow start: ssthresh kept"
    );
    // The rate limit is the scheduler's (RP: once per sRTT of the retransmitting subflow).
    tx.penalize();
    assert_eq!(tx.cc_state().cwnd_bytes, before.cwnd_bytes / 4);
}

#[test]
fn subflow_view_reports_linux_pacing_rate_and_window_state() {
    let mut p = download(1 << 20, 100 * MBPS, 10 * MS, "reno");
    p.drive(150 * MS, |_, _| false);
    let mut v = crate::sched::SubflowView::default();
    p.b.tx.fill_view(&mut v);
    assert!(v.established && v.has_rtt_sample && !v.in_fast_recovery && !v.in_loss_recovery);
    assert_eq!(v.mss_bytes, 1448);
    assert!(v.srtt_ns >= 20 * MS && v.min_rtt_ns >= 20 * MS);
    // Slow start below ssthresh / 2: 200 % of cwnd per srtt (Linux tcp_pacing_ss_ratio).
    let expect = 2 * v.cwnd_bytes.max(p.b.tx.outstanding_bytes()) * 8 * 1_000_000_000 / v.srtt_ns;
    assert!(
        v.pacing_rate_bps.abs_diff(expect) <= 1,
        "{} vs {expect}",
        v.pacing_rate_bps
    );
    assert_eq!(v.bytes_sent, p.b.tx.stats().bytes_sent);
    assert!(v.in_flight_bytes <= v.cwnd_bytes);
}

#[test]
fn a_delayed_ack_fires_on_the_timer_wheel_at_the_next_jiffy_after_40_ms() {
    // Linux `tcp_send_delayed_ack` arms `icsk_delack_timer` (a `timer_list`) at jiffies + ato
    // (TCP_DELACK_MIN = HZ / 25 = 10 jiffies = 40 ms at the testbed's HZ 250); the timer wheel
    // fires it at the next jiffy boundary after that, never early: a segment at 5.5 ms (jiffy 1)
    // is acknowledged at jiffy 1 + 10 + 1 = 48 ms, not at 45.5 ms.
    let cfg = TcpConfig {
        quickack_segments: 0,
        ..TcpConfig::default()
    };
    let mut rx = Receiver::established(cfg);
    rx.set_window_clamp(65_536); // rcv_ssthresh 64 704: the segment grows it, no quickack
    let seg = Segment {
        flags: flags::ACK,
        seq: 1,
        len: 1448,
        ack: 1,
        ts_val: 1,
        ..Default::default()
    };
    rx.handle_segment(5_500_000, &seg);
    assert!(
        rx.poll_transmit(5_500_000).is_none(),
        "acknowledged at once"
    );
    assert_eq!(rx.poll_timeout(), Some(48 * MS));
    rx.handle_timeout(47 * MS);
    assert!(
        rx.poll_transmit(47 * MS).is_none(),
        "fired before its jiffy"
    );
    rx.handle_timeout(48 * MS);
    assert!(rx.poll_transmit(48 * MS).is_some());
}

#[test]
fn small_segments_grow_the_window_by_one_segment_each_as_linux_counts_packets() {
    // Linux counts cwnd, what an ACK acknowledges and the window's use in packets
    // (`tcp_cong_avoid(sk, ack, acked_sacked)`, `tcp_is_cwnd_limited`): a 300-byte request
    // acknowledged while it filled a one-segment window opens a second segment, as a full one
    // would. A sender cut to one segment writes 300 bytes, then 300 more 5 ms later, every
    // 100 ms: the first round the second write waits for the first's ACK, from the next one
    // both are out at once (counted in bytes, the window grew 300 bytes an ACK and stopped
    // short of a second segment, so every second write waited a round trip).
    let mut p = download(300, 100 * MBPS, 10 * MS, "cubic");
    run_to_completion(&mut p, 300);
    for _ in 0..3 {
        p.b.tx.penalize();
    }
    let mss = p.b.tx.cc_state().mss_bytes;
    assert_eq!(
        p.b.tx.cc_state().cwnd_bytes / mss,
        1,
        "one segment of window"
    );
    let mut off = 300;
    let mut both_out = Vec::new();
    for _ in 0..4 {
        for gap in [5 * MS, MS] {
            p.b.tx.queue(off, 300, false);
            off += 300;
            let t = p.now_ns;
            p.drive(t + gap, |_, _| false);
        }
        both_out.push(p.b.tx.outstanding_bytes() == 600);
        let t = p.now_ns;
        p.drive(t + 94 * MS, |_, _| false);
    }
    assert_eq!(both_out, [false, true, true, true]);
    assert!(p.b.tx.cc_state().cwnd_bytes >= 2 * mss);
}

#[test]
fn in_pingpong_mode_a_small_segment_waits_for_data_to_carry_its_ack() {
    // Linux: data sent within ato (40 ms) of the last receipt enters pingpong mode
    // (`tcp_event_data_sent`, `tcp_pingpong_thresh` = 1), where `tcp_in_quickack_mode` is false:
    // an RPC request's ACK is delayed and leaves with the next data on the subflow
    // (`tcp_event_ack_sent`); a delayed ACK that fires ends the mode (`tcp_delack_timer_handler`).
    let mut rx = Receiver::established(TcpConfig::default());
    let req = |seq: u64| Segment {
        flags: flags::ACK,
        seq,
        len: 300,
        ack: 1,
        ts_val: 1,
        ..Default::default()
    };
    rx.handle_segment(MS, &req(1));
    assert!(rx.poll_transmit(MS).is_some(), "quickack before pingpong");
    // Nothing to acknowledge: the data carries no extra ACK, but it answers within ato.
    assert!(!rx.ack_rides_on_data(3 * MS));
    assert!(rx.in_pingpong());
    rx.handle_segment(20 * MS, &req(301));
    assert!(
        rx.poll_transmit(20 * MS).is_none(),
        "no quickack in pingpong mode"
    );
    assert!(rx.ack_rides_on_data(21 * MS));
    let ack = rx
        .poll_transmit(21 * MS)
        .expect("the ACK leaves with the data");
    assert_eq!(ack.ack, 601);
    assert!(rx.poll_timeout().is_none(), "no delayed ACK left");
    // No data follows the next one: the delayed ACK fires and ends pingpong mode.
    rx.handle_segment(40 * MS, &req(601));
    assert!(rx.poll_transmit(40 * MS).is_none());
    let fire = rx.poll_timeout().expect("a delayed ACK");
    rx.handle_timeout(fire);
    assert!(rx.poll_transmit(fire).is_some());
    assert!(!rx.in_pingpong());
    rx.handle_segment(fire + 10 * MS, &req(901));
    assert!(rx.poll_transmit(fire + 10 * MS).is_some(), "quickack again");
}

#[test]
fn a_duplicate_below_the_last_ack_is_answered_with_the_old_timestamp() {
    // Linux: a segment wholly below `rcv_wup` (the last ACK sent) is refused by `tcp_sequence`
    // before `tcp_replace_ts_recent`, and the dupack echoes TS.Recent of the last in-order
    // segment; one at `rcv_wup` (a retransmission filling the hole) updates it.
    let mut rx = Receiver::established(TcpConfig::default());
    let seg = |seq: u64, ts_val: u64| Segment {
        flags: flags::ACK,
        seq,
        len: 1000,
        ack: 1,
        ts_val,
        ..Default::default()
    };
    rx.handle_segment(MS, &seg(1, 10));
    assert_eq!(rx.poll_transmit(MS).expect("quickack").ts_ecr, 10);
    rx.handle_segment(2 * MS, &seg(1001, 20));
    assert_eq!(rx.poll_transmit(2 * MS).expect("quickack").ts_ecr, 20);
    rx.handle_segment(3 * MS, &seg(1, 30));
    let dup = rx.poll_transmit(3 * MS).expect("dupack");
    assert_eq!((dup.ack, dup.ts_ecr), (2001, 20), "the original's time");
    // A hole at 2001: 3001 arrives out of order, then 2001 (at the last ACK) fills it.
    rx.handle_segment(4 * MS, &seg(3001, 40));
    assert_eq!(rx.poll_transmit(4 * MS).expect("dupack").ts_ecr, 20);
    rx.handle_segment(5 * MS, &seg(2001, 50));
    let ack = rx.poll_transmit(5 * MS).expect("the hole filled");
    assert_eq!((ack.ack, ack.ts_ecr), (4001, 50));
}
