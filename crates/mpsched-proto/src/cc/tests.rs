//! Congestion-control unit tests: RFC rules checked on hand-driven ACK sequences.

use super::*;

const MSS: u64 = 1448;

fn tcb(cwnd_segs: u64, ssthresh_segs: u64) -> CcState {
    CcState {
        cwnd_bytes: cwnd_segs * MSS,
        ssthresh_bytes: ssthresh_segs.saturating_mul(MSS),
        mss_bytes: MSS,
    }
}

fn ack(now_ns: u64, acked: u64) -> AckSample {
    ack_rtt(now_ns, acked, 50_000_000)
}

fn ack_rtt(now_ns: u64, acked: u64, rtt_ns: u64) -> AckSample {
    AckSample {
        now_ns,
        acked_bytes: acked,
        rtt_sample_ns: Some(rtt_ns),
        min_rtt_ns: rtt_ns,
        srtt_ns: rtt_ns,
        cwnd_limited: true,
        ..Default::default()
    }
}

#[test]
fn cube_root_is_exact_on_cubes_and_floors_otherwise() {
    assert_eq!(cubic::cbrt_u128(0), 0);
    assert_eq!(cubic::cbrt_u128(27), 3);
    assert_eq!(cubic::cbrt_u128(26), 2);
    assert_eq!(cubic::cbrt_u128(u128::MAX), 6_981_463_658_331);
}

#[test]
fn slow_start_abc_limits_growth_to_two_segments_per_ack() {
    // RFC 3465 §2.2: cwnd += min(N, L * SMSS), L = 2.
    let mut t = tcb(10, u64::MAX);
    let mut r = Reno::default();
    r.on_ack(&mut t, &ack(0, 5 * MSS), &CoupledView::SINGLE);
    assert_eq!(t.cwnd_bytes, 12 * MSS);
}

#[test]
fn reno_avoidance_adds_one_mss_per_window() {
    // RFC 5681 §3.1: about one SMSS per RTT in congestion avoidance.
    let mut t = tcb(20, 10);
    let mut r = Reno::default();
    for _ in 0..20 {
        r.on_ack(&mut t, &ack(0, MSS), &CoupledView::SINGLE);
    }
    assert_eq!(t.cwnd_bytes, 21 * MSS);
    assert_eq!(
        r.ssthresh_on_loss(&t, 0, &CoupledView::SINGLE),
        21 * MSS / 2
    );
}

#[test]
fn no_growth_when_not_cwnd_limited() {
    let mut t = tcb(10, u64::MAX);
    let mut a = ack(0, 2 * MSS);
    a.cwnd_limited = false;
    for name in NAMES {
        let mut c = build(name).unwrap();
        c.inner_mut().on_ack(&mut t, &a, &CoupledView::SINGLE);
        assert_eq!(t.cwnd_bytes, 10 * MSS, "{name}");
    }
}

#[test]
fn unknown_name_lists_the_valid_ones() {
    let e = build("vegas").unwrap_err().to_string();
    assert!(
        e.contains("vegas") && e.contains("reno, cubic, lia, olia, balia"),
        "{e}"
    );
}

#[test]
fn cubic_backs_off_to_0_7_and_regrows_to_wmax_after_k() {
    let mut t = tcb(100, 50);
    let mut c = Cubic::default();
    let ss = c.ssthresh_on_loss(&t, 0, &CoupledView::SINGLE);
    assert_eq!(ss, 100 * MSS * 717 / 1024);
    t.cwnd_bytes = ss;
    t.ssthresh_bytes = ss;
    // K = cbrt(W_max * (1 - beta) / C) = cbrt(100 * 0.3 / 0.4) = 4.2 s. Feed one window of
    // ACKs every RTT (200 ms, long enough that the Reno-friendly estimate, 70 + 0.53 per RTT,
    // stays below the cubic curve); cwnd must approach W_max = 100 segments by K, plateau
    // there, then grow convexly: W(6 s) = 100 + 0.4 * 1.8^3 = 102.
    let rtt = 200_000_000u64;
    let mut now = 1;
    let mut at_k = 0;
    while now < 6_000_000_000 {
        let w = t.cwnd_bytes;
        let mut acked = 0;
        while acked < w {
            c.on_ack(&mut t, &ack_rtt(now, MSS, rtt), &CoupledView::SINGLE);
            acked += MSS;
        }
        now += rtt;
        if now <= 4_150_000_000 {
            at_k = t.cwnd_bytes;
        }
    }
    let at_k_segs = at_k / MSS;
    assert!(
        (95..=101).contains(&at_k_segs),
        "cwnd near K: {at_k_segs} segments, end {}",
        t.cwnd_bytes / MSS
    );
    assert!(
        (101..=104).contains(&(t.cwnd_bytes / MSS)),
        "convex growth after K: {}",
        t.cwnd_bytes / MSS
    );
}

#[test]
fn hystart_delay_increase_ends_slow_start() {
    // RTT rises from 50 ms to 60 ms (> 50 + max(50/8, 4) = 56.25 ms) once cwnd >= 16.
    let mut t = tcb(16, u64::MAX);
    let mut c = Cubic::default();
    let mut now = 1_000_000;
    let mut una = 1;
    for i in 0..40u64 {
        let mut a = ack(now, MSS);
        a.rtt_sample_ns = Some(if i < 10 { 50_000_000 } else { 60_000_000 });
        una += MSS;
        a.snd_una = una;
        a.snd_nxt = una + 12 * MSS;
        c.on_rtt_sample(&mut t, &a);
        c.on_ack(&mut t, &a, &CoupledView::SINGLE);
        now += 5_000_000; // spaced ACKs: no ACK train
        if c.hystart_found() {
            break;
        }
    }
    assert!(c.hystart_found());
    assert_eq!(t.ssthresh_bytes, t.cwnd_bytes);
}

#[test]
fn hystart_rounds_start_at_the_first_ack_below_the_low_window() {
    // Slow start from 10 segments, 30 ms RTT, ACKs of 2 segments 1.2 ms apart, each releasing
    // 4 segments (no pacing rate: train threshold 30 ms / 2 = 15 ms). Rounds: 5, 10 and 20
    // ACKs (the initial 10 segments, then the 20 and 40 they released); round 3's train
    // spans 22.8 ms. Linux resets rounds before its cwnd >= 16 test, so round 3 starts at
    // its first ACK and its train passes 15 ms; rounds first started when cwnd reached 16
    // (mid round 1) stay misaligned and see at most 8.4 ms of round 3.
    let mut t = tcb(10, u64::MAX);
    let mut c = Cubic::default();
    let (mut una, mut nxt) = (1, 1 + 10 * MSS);
    let mut feed = |c: &mut Cubic, t: &mut CcState, now: u64| {
        let mut a = ack_rtt(now, 2 * MSS, 30_000_000);
        una += 2 * MSS;
        a.snd_una = una;
        a.snd_nxt = nxt;
        c.on_rtt_sample(t, &a);
        c.on_ack(t, &a, &CoupledView::SINGLE);
        nxt += 4 * MSS;
    };
    for (round, acks) in [(1u64, 5u64), (2, 10), (3, 20)] {
        for k in 0..acks {
            feed(&mut c, &mut t, round * 30_000_000 + k * 1_200_000);
        }
        assert_eq!(c.hystart_found(), round == 3, "round {round}");
    }
    // Found at round 3's 14th ACK (15.6 ms into the round): cwnd 40 + 2 * 13.
    assert_eq!(t.ssthresh_bytes, 66 * MSS);
}

#[test]
fn cubic_slow_start_takes_a_stretch_ack_whole_and_hystart_goes_on() {
    // A receiver that acknowledges each GSO skb once sends ACKs of several segments. Linux
    // `tcp_slow_start` grows cwnd by all of them (no RFC 3465 per-ACK limit since 3.9), and
    // nothing is left over for `bictcp_update` while below ssthresh, so no cubic epoch starts
    // and HyStart (which skips the second after an epoch starts) keeps running. Here: ACKs of
    // 6 segments 1.5 ms apart, each releasing 12, 30 ms RTT (train threshold 15 ms); rounds of
    // 3, 6 and 12 ACKs from cwnd 18; round 3's train passes 15 ms at its 12th ACK.
    let mut t = tcb(18, u64::MAX);
    let mut c = Cubic::default();
    let (mut una, mut nxt) = (1, 1 + 18 * MSS);
    let mut feed = |c: &mut Cubic, t: &mut CcState, now: u64| {
        let mut a = ack_rtt(now, 6 * MSS, 30_000_000);
        una += 6 * MSS;
        a.snd_una = una;
        a.snd_nxt = nxt;
        c.on_rtt_sample(t, &a);
        c.on_ack(t, &a, &CoupledView::SINGLE);
        nxt += 12 * MSS;
    };
    feed(&mut c, &mut t, 30_000_000);
    assert_eq!(t.cwnd_bytes, 24 * MSS, "one ACK of 6 segments opens 6");
    for k in 1..3 {
        feed(&mut c, &mut t, 30_000_000 + k * 1_500_000);
    }
    for (round, acks) in [(2u64, 6u64), (3, 12)] {
        for k in 0..acks {
            feed(&mut c, &mut t, round * 30_000_000 + k * 1_500_000);
        }
        assert_eq!(c.hystart_found(), round == 3, "round {round}");
    }
    // Found at round 3's 12th ACK (16.5 ms into it): cwnd 72 + 6 * 11.
    assert_eq!(t.ssthresh_bytes, 138 * MSS);
}

fn two(cwnd0: u64, rtt0: u64, cwnd1: u64, rtt1: u64) -> [CoupledSubflow; 2] {
    [
        CoupledSubflow {
            active: true,
            cwnd_bytes: cwnd0 * MSS,
            srtt_ns: rtt0,
            mss_bytes: MSS,
            loss_interval_bytes: 0,
        },
        CoupledSubflow {
            active: true,
            cwnd_bytes: cwnd1 * MSS,
            srtt_ns: rtt1,
            mss_bytes: MSS,
            loss_interval_bytes: 0,
        },
    ]
}

#[test]
fn lia_is_no_more_aggressive_than_reno_on_the_best_path() {
    // RFC 6356 §3 goal 2: the multipath flow takes no more than a single TCP on its best path.
    // Two equal paths: alpha = 2w * (w/r^2) / (2w/r)^2 = 1/2, increase = alpha/w_total per
    // MSS = 1/(4w): each subflow grows at a quarter of Reno's rate.
    let subs = two(20, 50_000_000, 20, 50_000_000);
    let view = CoupledView {
        subflows: &subs,
        me: 0,
    };
    assert!((lia::lia_alpha(&view) - 0.5).abs() < 1e-12);
    let mut t = tcb(20, 10);
    let mut l = Lia::default();
    for _ in 0..80 {
        l.on_ack(&mut t, &ack(0, MSS), &view);
    }
    // Reno would add 4 MSS over 80 acked MSS at cwnd 20; LIA adds ~1 MSS.
    let grown = t.cwnd_bytes - 20 * MSS;
    assert!((MSS - 2..=MSS + 2).contains(&grown), "grew {grown}");
}

#[test]
fn coupled_algorithms_fall_back_to_reno_with_one_subflow() {
    for name in ["lia", "olia", "balia"] {
        let mut t1 = tcb(20, 10);
        let mut t2 = tcb(20, 10);
        let mut c = build(name).unwrap();
        let mut r = Reno::default();
        for _ in 0..45 {
            c.inner_mut()
                .on_ack(&mut t1, &ack(0, MSS), &CoupledView::SINGLE);
            r.on_ack(&mut t2, &ack(0, MSS), &CoupledView::SINGLE);
        }
        assert_eq!(t1, t2, "{name}");
    }
}

#[test]
fn olia_moves_window_from_the_largest_to_the_best_path() {
    // Path 1 has the larger window; path 0 has the best l/rtt^2: alpha_0 > 0, alpha_1 < 0.
    let mut subs = two(10, 50_000_000, 30, 50_000_000);
    subs[0].loss_interval_bytes = 1_000_000;
    subs[1].loss_interval_bytes = 100_000;
    let a0 = olia::olia_alpha(&CoupledView {
        subflows: &subs,
        me: 0,
    });
    let a1 = olia::olia_alpha(&CoupledView {
        subflows: &subs,
        me: 1,
    });
    assert!(
        (a0 - 0.5).abs() < 1e-12 && (a1 + 0.5).abs() < 1e-12,
        "{a0} {a1}"
    );
}

#[test]
fn balia_decrease_is_larger_on_the_slower_path() {
    // Path 1 sends at a third of path 0's rate: alpha_1 = 3, so its decrease factor is
    // min(3, 1.5) / 2 = 0.75 of its window, versus 0.5 for path 0.
    let subs = two(30, 50_000_000, 10, 50_000_000);
    let mut b = Balia::default();
    let t0 = tcb(30, 10);
    let t1 = tcb(10, 5);
    assert_eq!(
        b.ssthresh_on_loss(
            &t0,
            0,
            &CoupledView {
                subflows: &subs,
                me: 0
            }
        ),
        15 * MSS
    );
    let s1 = b.ssthresh_on_loss(
        &t1,
        0,
        &CoupledView {
            subflows: &subs,
            me: 1,
        },
    );
    assert_eq!(s1, (10 * MSS - (10 * MSS) * 3 / 4).max(2 * MSS));
}

#[test]
fn hystart_runs_in_fast_recovery_once_prr_takes_cwnd_below_ssthresh() {
    // Linux calls cubic's `pkts_acked` (HyStart) for every ACK with an RTT sample, whatever
    // the state; in fast recovery PRR sets cwnd = pipe + sndcnt, which falls below ssthresh
    // after a large overshoot, and `tcp_in_slow_start` is then true. SACKs that show the
    // queue (40 ms against a 20 ms minimum) then set ssthresh = cwnd: recovery ends at the
    // PRR window (the testbed: ssthresh 77 -> 61 during the first recovery), not at
    // beta x cwnd.
    let mut c = Cubic::default();
    let mut t = tcb(120, u64::MAX);
    let mut a = ack_rtt(1_000_000_000, MSS, 20_000_000);
    a.snd_una = 1;
    a.snd_nxt = 1 + 200 * MSS;
    c.on_rtt_sample(&mut t, &a);
    // The loss: ssthresh = 0.7 x 120; PRR then holds cwnd at 40.
    t.ssthresh_bytes = c.ssthresh_on_loss(&t, 1_020_000_000, &CoupledView::SINGLE);
    assert_eq!(
        t.ssthresh_bytes,
        120 * MSS * cubic::BETA_NUM / cubic::BETA_DEN
    );
    t.cwnd_bytes = 40 * MSS;
    // A new round (snd_una past the round's end) of SACK samples at 40 ms.
    for k in 0..10u64 {
        let mut s = ack_rtt(1_100_000_000 + k * 3_000_000, MSS, 40_000_000);
        s.snd_una = 1 + 201 * MSS;
        s.snd_nxt = 1 + 260 * MSS;
        c.on_rtt_sample(&mut t, &s);
    }
    assert!(c.hystart_found());
    assert_eq!(t.ssthresh_bytes, 40 * MSS, "ssthresh = the PRR window");
}
