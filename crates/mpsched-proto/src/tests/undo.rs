//! The Eifel undo (Linux 6.18 `tcp_packet_delayed`, `tcp_try_undo_loss`,
//! `tcp_try_undo_recovery`): an ACK that echoes a timestamp from before the episode's first
//! retransmission restores the window; one that echoes the retransmission does not.

use crate::cc;
use crate::tcp::{flags, CaState, LossRecovery, Segment, Sender, TcpConfig};

const MS: u64 = 1_000_000;

/// A Reno sender with `n` segments out, sent at 1 ms (their timestamp), and its MSS.
fn sender_with(n: u64, loss_recovery: LossRecovery) -> (Sender, u64) {
    let cfg = TcpConfig {
        loss_recovery,
        ..TcpConfig::default()
    };
    let mut s = Sender::established(cfg, cc::build("reno").unwrap());
    let mss = TcpConfig::default().mss_bytes;
    s.queue(0, 100 * mss, false);
    for _ in 0..n {
        s.poll_transmit(MS).expect("within the initial window");
    }
    (s, mss)
}

fn ack(to: u64, ts_ecr: u64, sack: &[(u64, u64)]) -> Segment {
    let mut a = Segment {
        flags: flags::ACK,
        ack: to,
        ts_ecr,
        ..Default::default()
    };
    for (k, &b) in sack.iter().enumerate() {
        a.sack[k] = b;
    }
    a.sack_len = sack.len() as u8;
    a
}

/// Ten segments out, the first two acknowledged at 21 ms, then silence until the RTO: the
/// head is resent at the timeout. Returns the sender, MSS, cwnd before the timeout and the
/// time of the retransmission. (RFC 6675 loss detection: no tail-loss probe before the RTO.)
fn after_an_rto() -> (Sender, u64, u64, u64) {
    let (mut s, mss) = sender_with(10, LossRecovery::Rfc6675);
    s.handle_segment(21 * MS, &ack(1 + 2 * mss, MS, &[]));
    while s.poll_transmit(21 * MS).is_some() {}
    let cwnd = s.cc_state().cwnd_bytes;
    let t = s.poll_timeout().expect("RTO armed");
    assert!(s.handle_timeout(t).is_some(), "the RTO fired");
    assert_eq!(
        (s.ca_state(), s.cc_state().cwnd_bytes),
        (CaState::Loss, mss)
    );
    s.poll_transmit(t).expect("the head resent");
    (s, mss, cwnd, t)
}

#[test]
fn an_ack_echoing_the_original_undoes_the_rto() {
    // The originals arrived, their ACKs were lost; the retransmitted head is below the
    // receiver's last ACK, so its dupack echoes the original's 1 ms. Linux: `tcp_process_loss`
    // -> `tcp_try_undo_loss`: Open, cwnd back to `prior_cwnd`, ssthresh to `prior_ssthresh`
    // (slow start's: unbounded), nothing left marked lost.
    let (mut s, mss, cwnd, t) = after_an_rto();
    let end = 1 + 10 * mss;
    s.handle_segment(t + 20 * MS, &ack(end, MS, &[]));
    assert_eq!(s.ca_state(), CaState::Open);
    assert!(
        s.cc_state().cwnd_bytes >= cwnd,
        "{} < {cwnd}",
        s.cc_state().cwnd_bytes
    );
    assert_eq!(s.cc_state().ssthresh_bytes, u64::MAX);
    assert_eq!(s.stats().undos, 1);
}

#[test]
fn an_ack_echoing_the_retransmission_keeps_the_rto_s_reduction() {
    let (mut s, mss, cwnd, t) = after_an_rto();
    let end = 1 + 10 * mss;
    s.handle_segment(t + 20 * MS, &ack(end, t, &[]));
    assert!(
        s.cc_state().cwnd_bytes < cwnd,
        "{} >= {cwnd}",
        s.cc_state().cwnd_bytes
    );
    assert!(s.cc_state().ssthresh_bytes < u64::MAX);
    assert_eq!(s.stats().undos, 0);
}

#[test]
fn a_recovery_ended_by_the_original_is_undone() {
    // Segment 0 is late, 1..9 SACKed at 21 ms: RACK marks 0 lost (no reordering window once
    // three are SACKed) and fast recovery resends it at 21 ms. The ACK that ends the episode
    // echoes 1 ms: the original arrived (Linux `tcp_try_undo_recovery`), so cwnd stays at its
    // value before the recovery, not ssthresh; echoing 21 ms (the retransmission), cwnd is
    // ssthresh (`tcp_end_cwnd_reduction`).
    for (echo, undone) in [(MS, true), (21 * MS, false)] {
        let (mut s, mss) = sender_with(10, LossRecovery::RackTlp);
        let end = 1 + 10 * mss;
        s.handle_segment(21 * MS, &ack(1, MS, &[(1 + mss, end)]));
        assert_eq!(s.ca_state(), CaState::Recovery);
        let prior = 10 * mss;
        let seg = s.poll_transmit(21 * MS).expect("the fast retransmission");
        assert_eq!(seg.seq, 1);
        s.handle_segment(31 * MS, &ack(end, echo, &[]));
        assert_eq!(s.ca_state(), CaState::Open);
        assert_eq!(s.stats().undos, u64::from(undone));
        if undone {
            assert!(
                s.cc_state().cwnd_bytes >= prior,
                "{}",
                s.cc_state().cwnd_bytes
            );
        } else {
            assert_eq!(s.cc_state().cwnd_bytes, s.cc_state().ssthresh_bytes);
            assert!(s.cc_state().cwnd_bytes < prior);
        }
    }
}
