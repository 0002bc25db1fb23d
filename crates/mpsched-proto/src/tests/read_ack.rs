//! When the MPTCP receiver's ACKs leave: a filled connection-level hole at once, a small frame
//! when the application can read it, the DATA_ACK on whichever subflow carries data.

use super::util::*;
use crate::mptcp::{ConnConfig, DataReceiver, Mode};

#[test]
fn filling_a_connection_level_hole_is_acknowledged_at_once() {
    // Subflow 1 delivers the missing DSN 0 in order at its own level; DATA_ACK jumps over the
    // out-of-order data from subflow 0, and the new window must reach the sender now, not
    // after subflow 1's 40 ms delayed ACK.
    const MSS: u64 = crate::tcp::MPTCP_DATA_MSS_BYTES_FOR_1500;
    let mut cfg = ConnConfig::new(Mode::Mptcp, false, 2);
    cfg.tcp.quickack_segments = 0;
    let mut rx = DataReceiver::new(cfg);
    crate::tests::util::establish_two_subflows(&mut rx);
    let data = |dsn: u64| crate::tests::util::mapped_data(0, dsn, MSS, 0);
    rx.handle_segment(2, 0, &data(MSS));
    assert_eq!(
        rx.poll_transmit(2),
        None,
        "one in-order segment: delayed ACK"
    );
    assert_eq!(rx.ofo_bytes(), MSS);
    rx.handle_segment(3, 1, &data(0));
    let (sf, ack) = rx.poll_transmit(3).expect("immediate ACK");
    assert_eq!((sf, ack.data_ack), (1, 2 * MSS));
    assert_eq!(rx.delivered_bytes(), 2 * MSS);
}

#[test]
fn a_small_frame_is_acknowledged_when_the_application_can_read_it() {
    // Linux (6.18): a 160-byte frame out of quickack mode gets a delayed ACK, which leaves at
    // the application's read (`mptcp_cleanup_rbuf` -> `tcp_cleanup_rbuf`) once nothing is
    // left unread. A frame that overtook one still on the slower subflow waits in the
    // connection's out-of-order queue, so its ACK waits for that frame (or the timer); a
    // full-sized segment read the same way keeps its delayed ACK.
    const FRAME: u64 = 160;
    let mut cfg = ConnConfig::new(Mode::Mptcp, false, 2);
    cfg.tcp.quickack_segments = 0;
    let mut rx = DataReceiver::new(cfg);
    crate::tests::util::establish_two_subflows(&mut rx);
    let frame = |k: u64, dsn: u64| crate::tests::util::mapped_data(k, dsn, FRAME, 0);
    rx.handle_segment(2, 0, &frame(0, 0));
    let (sf, ack) = rx.poll_transmit(2).expect("read at once: ACK at once");
    assert_eq!((sf, ack.ack, ack.data_ack), (0, 1 + FRAME, FRAME));
    // Frame 2 on subflow 0 overtakes frame 1, still crossing subflow 1.
    rx.handle_segment(3, 0, &frame(1, 2 * FRAME));
    assert_eq!(rx.poll_transmit(3), None, "nothing readable: the ACK waits");
    assert!(
        rx.poll_timeout().is_some_and(|t| t > 3 + 30 * MS),
        "the delayed-ACK timer runs"
    );
    rx.handle_segment(4, 1, &frame(0, FRAME));
    let mut acks: Vec<(usize, u64)> = std::iter::from_fn(|| rx.poll_transmit(4))
        .map(|(sf, a)| (sf, a.ack))
        .collect();
    acks.sort();
    assert_eq!(
        acks,
        vec![(0, 1 + 2 * FRAME), (1, 1 + FRAME)],
        "the read answers both subflows"
    );
    // A full segment read at once: no pushed frame, one MSS unacknowledged: delayed.
    let mss = crate::tcp::MPTCP_DATA_MSS_BYTES_FOR_1500;
    let mut full = crate::tests::util::mapped_data(0, 3 * FRAME, mss, 0);
    full.seq = 1 + FRAME;
    rx.handle_segment(5, 1, &full);
    assert_eq!(
        rx.poll_transmit(5),
        None,
        "a full segment keeps its delayed ACK"
    );
}

#[test]
fn data_leaving_on_one_subflow_carries_the_data_ack_of_another() {
    // Every MPTCP segment carries the connection's DATA_ACK (Linux
    // `mptcp_established_options_dss`): an RPC's response leaving on subflow 0 tells the
    // client that its request, read from subflow 1, arrived, while subflow 1's own delayed
    // ACK still waits. Without it the client learned of the request only at subflow 1's
    // delayed-ACK timer, after the response could already be complete.
    let mut cfg = ConnConfig::new(Mode::Mptcp, false, 2);
    cfg.tcp.quickack_segments = 0;
    let mut rx = DataReceiver::new(cfg);
    crate::tests::util::establish_two_subflows(&mut rx);
    let mss = crate::tcp::MPTCP_DATA_MSS_BYTES_FOR_1500;
    rx.handle_segment(2, 1, &crate::tests::util::mapped_data(0, 0, mss, 0));
    assert_eq!(rx.poll_transmit(2), None, "one full segment: a delayed ACK");
    assert!(
        rx.ack_rides_on_data(0, 3),
        "the other direction's data carries the DATA_ACK"
    );
    let (sf, ack) = rx.poll_transmit(3).expect("an ACK on the data's subflow");
    assert_eq!(
        (sf, ack.ack, ack.data_ack),
        (0, 1, mss),
        "subflow 0's own ACK point unchanged"
    );
    assert_eq!(rx.poll_transmit(3), None);
    assert!(
        rx.poll_timeout().is_some(),
        "subflow 1's delayed ACK still waits"
    );
    assert!(!rx.ack_rides_on_data(0, 4), "nothing new to tell");
}
