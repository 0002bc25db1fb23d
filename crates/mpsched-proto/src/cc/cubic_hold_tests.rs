//! CUBIC's hold of `cnt` (Linux `bictcp_update`): the window's growth rate is recomputed only
//! when cwnd has changed or 1/32 s has passed, and the cubic target at most once per ms.

use super::*;

const MSS: u64 = 1448;
const MS: u64 = 1_000_000;

fn ack(now_ns: u64) -> AckSample {
    AckSample {
        now_ns,
        acked_bytes: MSS,
        rtt_sample_ns: Some(50 * MS),
        min_rtt_ns: 50 * MS,
        srtt_ns: 50 * MS,
        cwnd_limited: true,
        ..Default::default()
    }
}

/// A CUBIC sender in congestion avoidance at 70 segments after a loss at 100: concave growth
/// towards W_max, so the target (and with it `cnt`) moves with time alone. Its first ACK, at
/// `t0`, starts the epoch and computes `cnt`.
fn after_loss(t0: u64) -> (Cubic, CcState) {
    let mut c = Cubic::default();
    let mut t = CcState {
        cwnd_bytes: 100 * MSS,
        ssthresh_bytes: 100 * MSS,
        mss_bytes: MSS,
    };
    let ss = c.ssthresh_on_loss(&t, 0, &CoupledView::SINGLE);
    t.cwnd_bytes = ss;
    t.ssthresh_bytes = ss;
    c.on_ack(&mut t, &ack(t0), &CoupledView::SINGLE);
    (c, t)
}

#[test]
fn cnt_is_held_while_cwnd_is_unchanged_for_up_to_a_32nd_of_a_second() {
    let t0 = 10_000 * MS;
    let (mut c, mut t) = after_loss(t0);
    let cwnd = t.cwnd_bytes;
    let held = c.cnt();
    assert!(
        held > 2,
        "cnt {held}: the test needs a cnt the Reno floor does not set"
    );
    // 31.25 ms later the target has grown; cnt is still the one computed at t0.
    for dt_us in [1_000, 10_000, 31_250] {
        c.on_ack(&mut t, &ack(t0 + dt_us * 1_000), &CoupledView::SINGLE);
        assert_eq!(t.cwnd_bytes, cwnd, "no growth within {held} segments' ACKs");
        assert_eq!(
            c.cnt(),
            held,
            "cnt recomputed {dt_us} us after the last time"
        );
    }
    // Past 1/32 s it is recomputed towards the later, higher target: a smaller cnt.
    c.on_ack(&mut t, &ack(t0 + 31_251 * 1_000), &CoupledView::SINGLE);
    assert_eq!(t.cwnd_bytes, cwnd);
    assert!(c.cnt() < held, "cnt {} after 1/32 s, held {held}", c.cnt());
}

#[test]
fn a_cwnd_change_recomputes_cnt_but_the_target_at_most_once_per_ms() {
    let t0 = 10_000 * MS;
    let (mut c, mut t) = after_loss(t0);
    let first = c.cnt();
    // cwnd grew within the ms: `cnt` keeps the target of t0 (Linux `goto tcp_friendliness`).
    t.cwnd_bytes += 2 * MSS;
    c.on_ack(&mut t, &ack(t0 + 999_000), &CoupledView::SINGLE);
    assert_eq!(c.cnt(), first, "the target recomputed within 1 ms");
    // A ms after t0 the new cwnd is taken: now above the target (which starts at cwnd), so
    // cnt is the plateau's 100 * cwnd / mss.
    c.on_ack(&mut t, &ack(t0 + 1_000_000), &CoupledView::SINGLE);
    assert_eq!(
        c.cnt(),
        100 * t.cwnd_bytes / MSS,
        "cnt with cwnd + 2 MSS, was {first}"
    );
    // And that recomputation restarts the hold.
    let held = c.cnt();
    c.on_ack(&mut t, &ack(t0 + 20 * MS), &CoupledView::SINGLE);
    assert_eq!(c.cnt(), held);
}

#[test]
fn an_rto_clears_the_hold() {
    let t0 = 10_000 * MS;
    let (mut c, mut t) = after_loss(t0);
    let ss = c.on_rto(&t, t0 + MS, &CoupledView::SINGLE);
    t.ssthresh_bytes = ss;
    // Same cwnd, 2 ms later: a held cnt would survive; after the reset the epoch restarts
    // and cnt is computed afresh (cwnd at W_max after the RTO's reset: the plateau's cnt).
    c.on_ack(&mut t, &ack(t0 + 2 * MS), &CoupledView::SINGLE);
    assert_eq!(
        c.cnt(),
        20,
        "before any loss (the reset forgot it) cnt is capped at 20"
    );
}
