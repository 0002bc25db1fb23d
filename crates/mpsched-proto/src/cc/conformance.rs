//! The same random operation sequences applied to every congestion control, with invariants
//! checked after each step (s2n-quic's congestion-controller model test).

use super::*;
use proptest::prelude::*;

const MSS: u64 = 1448;

#[derive(Debug, Clone)]
enum Op {
    /// ACK of `segs` MSS after `gap_ms`, RTT sample `rtt_ms`, window-limited or not.
    Ack {
        segs: u64,
        gap_ms: u64,
        rtt_ms: u64,
        limited: bool,
    },
    /// Fast retransmit (ssthresh from the policy, cwnd = ssthresh at recovery end).
    Loss,
    /// Retransmission timeout (cwnd one segment).
    Rto,
    /// Sending resumes after `idle_ms` of silence.
    Idle { idle_ms: u64 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (1u64..4, 0u64..30, 5u64..300, any::<bool>())
            .prop_map(|(segs, gap_ms, rtt_ms, limited)| Op::Ack { segs, gap_ms, rtt_ms, limited }),
        1 => Just(Op::Loss),
        1 => Just(Op::Rto),
        1 => (0u64..5_000).prop_map(|idle_ms| Op::Idle { idle_ms }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn invariants_hold_for_every_algorithm(ops in proptest::collection::vec(op(), 1..400), other_cwnd in 2u64..200) {
        for name in NAMES {
            let mut cc = build(name).unwrap();
            let mut t = CcState { cwnd_bytes: 10 * MSS, ssthresh_bytes: u64::MAX, mss_bytes: MSS };
            // A second subflow for the coupled algorithms.
            let mut subs = [
                CoupledSubflow { active: true, cwnd_bytes: t.cwnd_bytes, srtt_ns: 50_000_000, mss_bytes: MSS, loss_interval_bytes: 100_000 },
                CoupledSubflow { active: true, cwnd_bytes: other_cwnd * MSS, srtt_ns: 80_000_000, mss_bytes: MSS, loss_interval_bytes: 50_000 },
            ];
            let mut now = 1_000_000u64;
            let mut una = 1u64;
            for o in &ops {
                subs[0].cwnd_bytes = t.cwnd_bytes;
                let view = CoupledView { subflows: &subs, me: 0 };
                let before = t;
                match *o {
                    Op::Ack { segs, gap_ms, rtt_ms, limited } => {
                        now += gap_ms * 1_000_000;
                        una += segs * MSS;
                        let a = AckSample {
                            now_ns: now,
                            acked_bytes: segs * MSS,
                            rtt_sample_ns: Some(rtt_ms * 1_000_000),
                            min_rtt_ns: 5_000_000,
                            srtt_ns: rtt_ms * 1_000_000,
                            snd_una: una,
                            snd_nxt: una + t.cwnd_bytes,
                            cwnd_limited: limited,
                            pacing_rate_bps: 10_000_000,
                        };
                        cc.inner_mut().on_rtt_sample(&mut t, &a);
                        cc.inner_mut().on_ack(&mut t, &a, &view);
                        let grown = t.cwnd_bytes.saturating_sub(before.cwnd_bytes);
                        // RFC 3465: at most L = 2 MSS per ACK in slow start; CUBIC at most
                        // acked / 2 (cnt >= 2) plus one gently applied MSS; never more than
                        // acked + 1 MSS.
                        prop_assert!(grown <= 2 * MSS.max(a.acked_bytes / 2) + MSS, "{name}: +{grown} on {o:?}");
                        if !limited {
                            prop_assert_eq!(t.cwnd_bytes, before.cwnd_bytes, "{}: grew while not cwnd-limited", name);
                        }
                        if t.cwnd_bytes < before.cwnd_bytes {
                            prop_assert_eq!(name, "olia", "only OLIA may shrink the window on an ACK");
                        }
                    }
                    Op::Loss => {
                        let ss = cc.inner_mut().ssthresh_on_loss(&t, now, &view);
                        prop_assert!(ss >= MIN_SSTHRESH_SEGMENTS * MSS, "{}: ssthresh {} too small", name, ss);
                        prop_assert!(ss <= t.cwnd_bytes.max(MIN_SSTHRESH_SEGMENTS * MSS), "{}: ssthresh above cwnd", name);
                        prop_assert_eq!(t, before, "{}: ssthresh_on_loss must not change the state", name);
                        t.ssthresh_bytes = ss;
                        t.cwnd_bytes = ss;
                        cc.inner_mut().on_recovery_exit(&mut t, now);
                    }
                    Op::Rto => {
                        let ss = cc.inner_mut().on_rto(&t, now, &view);
                        prop_assert!(ss >= MIN_SSTHRESH_SEGMENTS * MSS);
                        t.ssthresh_bytes = ss;
                        t.cwnd_bytes = MSS;
                    }
                    Op::Idle { idle_ms } => {
                        now += idle_ms * 1_000_000;
                        cc.inner_mut().on_tx_start(now, idle_ms * 1_000_000);
                    }
                }
                prop_assert!(t.cwnd_bytes >= MSS, "{}: cwnd below one MSS", name);
                prop_assert!(t.cwnd_bytes < 1 << 40, "{}: cwnd runaway", name);
            }
        }
    }
}
