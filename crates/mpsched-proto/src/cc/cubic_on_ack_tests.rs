//! `Cubic::on_ack` with `bictcp_update`'s hold tested first and the recomputation out of line
//! (`on_ack_recomputing`) against the former single body, kept here as the reference: the
//! same `Cubic` and `CcState` after every step of random ACK sequences.

use super::*;
use proptest::prelude::*;

const MSS: u64 = 1448;

/// `on_ack` as it was written before the split (one body, `bictcp_update` inline).
fn on_ack_reference(c: &mut Cubic, tcb: &mut CcState, ack: &AckSample) {
    let Some(acked) = linux_slow_start(tcb, ack) else {
        return;
    };
    let cwnd = tcb.cwnd_bytes;
    let mss = tcb.mss_bytes;
    c.ack_cnt_bytes += acked;
    let now_jiffies = jiffies32(ack.now_ns);
    let since_jiffies = now_jiffies.wrapping_sub(c.last_time_jiffies) as i32;
    let cnt = if c.last_cwnd_bytes == cwnd && since_jiffies <= LAST_TIME_HOLD_JIFFIES {
        c.cnt
    } else {
        let cnt = if c.epoch_start_ns.get().is_some() && now_jiffies == c.last_time_jiffies {
            c.cnt
        } else {
            c.last_cwnd_bytes = cwnd;
            c.last_time_jiffies = now_jiffies;
            let sample = AckSample {
                acked_bytes: acked,
                ..*ack
            };
            c.target_cnt(cwnd, mss, &sample)
        };
        let cnt = c.friendly_cnt(cwnd, mss, cnt).max(2);
        c.cnt = cnt;
        cnt
    };
    let step = cnt * tcb.mss_bytes;
    if c.cnt_acc_bytes >= step {
        c.cnt_acc_bytes = 0;
        tcb.cwnd_bytes += tcb.mss_bytes;
    }
    c.cnt_acc_bytes += acked;
    if c.cnt_acc_bytes >= step {
        let n = c.cnt_acc_bytes / step;
        c.cnt_acc_bytes -= n * step;
        tcb.cwnd_bytes += n * tcb.mss_bytes;
    }
}

/// One step of a sequence: an ACK (time advanced by `dt_ns`, `segs` segments acknowledged,
/// cwnd limited or not, an RTT sample or not), or an event that moves the state the way the
/// sender does (a loss, an RTO, the end of a recovery, cwnd set from outside, idle time).
#[derive(Debug, Clone)]
enum Step {
    Ack {
        dt_ns: u64,
        segs: u64,
        limited: bool,
        rtt_ns: Option<u64>,
    },
    Loss,
    Rto,
    RecoveryExit,
    SetCwnd(u64),
    TxStart(u64),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        12 => (
            prop_oneof![0..5_000_000u64, 0..40_000_000u64, Just(4_000_000u64), 0..2_000_000_000u64],
            1..4u64,
            prop::bool::weighted(0.9),
            prop::option::weighted(0.8, 1_000_000..200_000_000u64),
        )
            .prop_map(|(dt_ns, segs, limited, rtt_ns)| Step::Ack { dt_ns, segs, limited, rtt_ns }),
        1 => Just(Step::Loss),
        1 => Just(Step::Rto),
        1 => Just(Step::RecoveryExit),
        1 => (2..400u64).prop_map(Step::SetCwnd),
        1 => (0..3_000_000_000u64).prop_map(Step::TxStart),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn on_ack_split_matches_the_single_body(
        start_ns in 0..100_000_000_000u64,
        cwnd_segs in 2..200u64,
        ssthresh_segs in prop::option::of(2..300u64),
        steps in prop::collection::vec(step(), 1..400),
    ) {
        let mut tcb = CcState {
            cwnd_bytes: cwnd_segs * MSS,
            ssthresh_bytes: ssthresh_segs.map_or(u64::MAX, |s| s * MSS),
            mss_bytes: MSS,
        };
        let (mut new, mut old) = (Cubic::default(), Cubic::default());
        let mut tcb_old = tcb;
        let view = CoupledView::SINGLE;
        let mut now = start_ns;
        let mut una = 0;
        for s in steps {
            match s {
                Step::Ack { dt_ns, segs, limited, rtt_ns } => {
                    now += dt_ns;
                    una += segs * MSS;
                    let ack = AckSample {
                        now_ns: now,
                        acked_bytes: segs * MSS,
                        rtt_sample_ns: rtt_ns,
                        min_rtt_ns: rtt_ns.unwrap_or(50_000_000),
                        srtt_ns: rtt_ns.unwrap_or(50_000_000),
                        snd_una: una,
                        snd_nxt: una + tcb.cwnd_bytes,
                        cwnd_limited: limited,
                        pacing_rate_bps: 100_000_000,
                    };
                    new.on_rtt_sample(&mut tcb, &ack);
                    old.on_rtt_sample(&mut tcb_old, &ack);
                    new.on_ack(&mut tcb, &ack, &view);
                    on_ack_reference(&mut old, &mut tcb_old, &ack);
                }
                Step::Loss => {
                    for (c, t) in [(&mut new, &mut tcb), (&mut old, &mut tcb_old)] {
                        t.ssthresh_bytes = c.ssthresh_on_loss(t, now, &view);
                        t.cwnd_bytes = t.ssthresh_bytes;
                    }
                }
                Step::Rto => {
                    for (c, t) in [(&mut new, &mut tcb), (&mut old, &mut tcb_old)] {
                        t.ssthresh_bytes = c.on_rto(t, now, &view);
                        t.cwnd_bytes = MSS;
                    }
                }
                Step::RecoveryExit => {
                    new.on_recovery_exit(&mut tcb, now);
                    old.on_recovery_exit(&mut tcb_old, now);
                }
                Step::SetCwnd(segs) => {
                    tcb.cwnd_bytes = segs * MSS;
                    tcb_old.cwnd_bytes = segs * MSS;
                }
                Step::TxStart(idle_ns) => {
                    new.on_tx_start(now, idle_ns);
                    old.on_tx_start(now, idle_ns);
                }
            }
            prop_assert_eq!(tcb, tcb_old);
            prop_assert_eq!(format!("{new:?}"), format!("{old:?}"));
        }
    }
}

/// A congestion-avoidance sequence that takes both ways of the split (ACKs inside the hold
/// and past it, cwnd growing), compared with the reference at every ACK.
#[test]
fn a_congestion_avoidance_sequence_takes_both_ways() {
    let mut tcb = CcState {
        cwnd_bytes: 50 * MSS,
        ssthresh_bytes: 40 * MSS,
        mss_bytes: MSS,
    };
    let (mut new, mut old, mut tcb_old) = (Cubic::default(), Cubic::default(), tcb);
    let (mut held, mut recomputed) = (0, 0);
    let mut now = 10_000_000_000;
    for i in 0..2_000u64 {
        now += 1_000_000 + (i % 7) * 300_000;
        let ack = AckSample {
            now_ns: now,
            acked_bytes: MSS,
            cwnd_limited: true,
            ..Default::default()
        };
        if new.holds_cnt(tcb.cwnd_bytes, now) {
            held += 1;
        } else {
            recomputed += 1;
        }
        new.on_ack(&mut tcb, &ack, &CoupledView::SINGLE);
        on_ack_reference(&mut old, &mut tcb_old, &ack);
        assert_eq!(tcb, tcb_old, "ACK {i}");
        assert_eq!(format!("{new:?}"), format!("{old:?}"), "ACK {i}");
    }
    assert!(tcb.cwnd_bytes > 60 * MSS, "cwnd {}", tcb.cwnd_bytes);
    assert!(
        held > 1_000 && recomputed > 50,
        "held {held}, recomputed {recomputed}"
    );
}
