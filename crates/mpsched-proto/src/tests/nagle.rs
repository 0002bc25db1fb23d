//! Nagle's algorithm with Minshall's check on a single sender (writers without TCP_NODELAY).

use super::util::MS;
use crate::cc;
use crate::tcp::{flags, Segment, Sender, TcpConfig};

/// Sends what the sender lets out at `now_ns`, returning the segments' lengths.
fn drain_lens(tx: &mut Sender, now_ns: u64) -> Vec<u32> {
    std::iter::from_fn(|| tx.poll_transmit(now_ns))
        .map(|s| s.len)
        .collect()
}

fn ack_to(tx: &mut Sender, now_ns: u64, ack: u64) {
    tx.handle_segment(
        now_ns,
        &Segment {
            flags: flags::ACK,
            ack,
            window: 1 << 20,
            ..Default::default()
        },
    );
}

/// An established cubic sender of 1000-byte segments, with Nagle on or off.
fn sender_1000(nagle: bool) -> Sender {
    let cfg = TcpConfig {
        mss_bytes: 1000,
        nagle,
        ..TcpConfig::default()
    };
    Sender::established(cfg, cc::build("cubic").unwrap())
}

#[test]
fn nagle_holds_the_last_partial_segment_until_the_earlier_partial_one_is_acknowledged() {
    // Linux `tcp_nagle_test` with Minshall's check, as on the testbed's bulk transfers (no
    // TCP_NODELAY): a mapping that ends in a partial segment (an MPTCP hand-over cut at the
    // connection window's edge) sets `snd_sml`; the queue's last, partial segment then waits
    // until the ACK covers it, whatever the window (docs/testbed.md, tcp11y).
    let mut tx = sender_1000(true);
    tx.queue(0, 2500, false);
    assert_eq!(drain_lens(&mut tx, 0), vec![1000, 1000, 500]);
    tx.queue(2500, 300, false);
    assert!(
        drain_lens(&mut tx, 0).is_empty(),
        "held: the 500-byte segment is unacknowledged"
    );
    ack_to(&mut tx, MS, 1 + 2000);
    assert!(
        drain_lens(&mut tx, MS).is_empty(),
        "an ACK below snd_sml releases nothing"
    );
    ack_to(&mut tx, 2 * MS, 1 + 2500);
    assert_eq!(
        drain_lens(&mut tx, 2 * MS),
        vec![300],
        "released by the ACK of snd_sml"
    );
}

#[test]
fn without_nagle_or_with_only_full_segments_out_the_last_partial_segment_leaves_at_once() {
    // TCP_NODELAY (the testbed's rpc and messages modes): no hold.
    let mut tx = sender_1000(false);
    tx.queue(0, 2500, false);
    assert_eq!(drain_lens(&mut tx, 0), vec![1000, 1000, 500]);
    tx.queue(2500, 300, false);
    assert_eq!(drain_lens(&mut tx, 0), vec![300]);
    // Nagle on, but every segment out is full: Minshall's check lets the partial tail go.
    let mut tx = sender_1000(true);
    tx.queue(0, 2000, false);
    assert_eq!(drain_lens(&mut tx, 0), vec![1000, 1000]);
    tx.queue(2000, 300, false);
    assert_eq!(drain_lens(&mut tx, 0), vec![300]);
    // ... and a TCP FIN is never held.
    let mut tx = sender_1000(true);
    tx.queue(0, 2500, false);
    assert_eq!(drain_lens(&mut tx, 0), vec![1000, 1000, 500]);
    tx.queue(2500, 300, true);
    assert_eq!(drain_lens(&mut tx, 0), vec![300]);
}
