//! CUBIC's hold of `cnt` (Linux `bictcp_update`): the window's growth rate is recomputed only
//! when cwnd has changed or more than `HZ / 32` jiffies have passed, and the cubic target at
//! most once per jiffy; the epoch and its time are counted in jiffies (4 ms at HZ 250).

use super::*;

const MSS: u64 = 1448;
const MS: u64 = 1_000_000;
/// The start of a jiffy (10 s is jiffy 2 500 at HZ 250).
const T0: u64 = 10_000 * MS;

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
fn cnt_is_held_while_cwnd_is_unchanged_for_up_to_hz_over_32_jiffies() {
    let (mut c, mut t) = after_loss(T0);
    let cwnd = t.cwnd_bytes;
    let held = c.cnt();
    assert!(
        held > 2,
        "cnt {held}: the test needs a cnt the Reno floor does not set"
    );
    // Up to the end of the 7th jiffy after T0's the target has grown; cnt is still T0's.
    for dt_us in [1_000, 10_000, 28_000, 31_999] {
        c.on_ack(&mut t, &ack(T0 + dt_us * 1_000), &CoupledView::SINGLE);
        assert_eq!(t.cwnd_bytes, cwnd, "no growth within {held} segments' ACKs");
        assert_eq!(
            c.cnt(),
            held,
            "cnt recomputed {dt_us} us after the last time"
        );
    }
    // In the 8th jiffy it is recomputed towards the later, higher target: a smaller cnt.
    c.on_ack(&mut t, &ack(T0 + 32 * MS), &CoupledView::SINGLE);
    assert_eq!(t.cwnd_bytes, cwnd);
    assert!(
        c.cnt() < held,
        "cnt {} 8 jiffies later, held {held}",
        c.cnt()
    );
}

#[test]
fn the_hold_counts_jiffy_ticks_not_elapsed_time() {
    // Last computed 3.9 ms into a jiffy: 28.1 ms later is already the 8th tick.
    let t1 = T0 + 3_900_000;
    let (mut c, mut t) = after_loss(t1);
    let held = c.cnt();
    c.on_ack(&mut t, &ack(t1 + 28_000_000), &CoupledView::SINGLE);
    assert_eq!(c.cnt(), held, "7 ticks after: held");
    c.on_ack(&mut t, &ack(t1 + 28_100_000), &CoupledView::SINGLE);
    assert!(c.cnt() < held, "8 ticks after (28.1 ms): recomputed");
}

#[test]
fn a_cwnd_change_recomputes_cnt_but_the_target_at_most_once_per_jiffy() {
    let t1 = T0 + MS;
    let (mut c, mut t) = after_loss(t1);
    let first = c.cnt();
    // cwnd grew within the jiffy: `cnt` keeps the target of t1 (Linux `goto tcp_friendliness`).
    t.cwnd_bytes += 2 * MSS;
    c.on_ack(&mut t, &ack(T0 + 3_999_999), &CoupledView::SINGLE);
    assert_eq!(c.cnt(), first, "the target recomputed within the jiffy");
    // At the next jiffy's tick (3 ms after t1) the new cwnd is taken: now above the target
    // (which starts at cwnd), so cnt is the plateau's 100 * cwnd / mss.
    c.on_ack(&mut t, &ack(T0 + 4 * MS), &CoupledView::SINGLE);
    assert_eq!(
        c.cnt(),
        100 * t.cwnd_bytes / MSS,
        "cnt with cwnd + 2 MSS, was {first}"
    );
    // And that recomputation restarts the hold.
    let held = c.cnt();
    c.on_ack(&mut t, &ack(T0 + 20 * MS), &CoupledView::SINGLE);
    assert_eq!(c.cnt(), held);
}

#[test]
fn the_epoch_starts_at_its_jiffy_and_idle_time_shifts_it_in_whole_jiffies() {
    let (mut c, _) = after_loss(T0 + 3_900_000);
    assert_eq!(c.epoch_start_ns(), Some(T0), "epoch_start = tcp_jiffies32");
    // Last send at T0 + 90.3 ms (jiffy +22), sending resumes at T0 + 100.5 ms (jiffy +25):
    // `tcp_jiffies32 - lsndtime` = 3 jiffies, 12 ms, where the idle time is 10.2 ms.
    c.on_tx_start(T0 + 100_500_000, 10_200_000);
    assert_eq!(c.epoch_start_ns(), Some(T0 + 12 * MS));
    // Idle within one jiffy: no shift (`delta > 0` fails).
    c.on_tx_start(T0 + 101_000_000, 400_000);
    assert_eq!(c.epoch_start_ns(), Some(T0 + 12 * MS));
}

#[test]
fn an_rto_clears_the_hold() {
    let (mut c, mut t) = after_loss(T0);
    let ss = c.on_rto(&t, T0 + MS, &CoupledView::SINGLE);
    t.ssthresh_bytes = ss;
    // Same cwnd, 8 ms later: a held cnt would survive; after the reset the epoch restarts
    // and cnt is computed afresh (cwnd at W_max after the RTO's reset: the plateau's cnt).
    c.on_ack(&mut t, &ack(T0 + 8 * MS), &CoupledView::SINGLE);
    assert_eq!(
        c.cnt(),
        20,
        "before any loss (the reset forgot it) cnt is capped at 20"
    );
}
