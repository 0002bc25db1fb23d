//! The one-subflow pure ACK (`mptcp/receiver/ack.rs`) against the general transmit path: two
//! receivers fed the same arrivals (`tests::in_order`'s harness, both taking segments the
//! same way), one sending through `poll_transmit` (the one-subflow ACK where it applies), the
//! other always through the subflow loop, must emit the same segments, every field, and hold
//! the same state after every step.

use super::in_order::{arrivals, bulk_arrival, bulk_setup, run_both_ways, setups, Ways};
use proptest::prelude::*;

const WAYS: Ways = Ways {
    general_receive: false,
    general_transmit: true,
};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(160))]
    #[test]
    fn the_plain_ack_is_the_general_paths_ack(
        setup in setups(),
        (segs, steps) in arrivals(),
    ) {
        run_both_ways(&setup, &segs, &steps, WAYS)?;
    }
}

/// The comparison above is not empty: on a bulk arrival with a few losses repaired late, most
/// ACKs are plain ones and the others (handshake, SACK-carrying ACKs) go the general way.
#[test]
fn both_ways_send_on_a_bulk_arrival() {
    let (segs, steps) = bulk_arrival(&[false; 300]);
    for (mptcp, is_client) in [(false, false), (true, false), (true, true)] {
        let setup = bulk_setup(mptcp, is_client);
        let counts = run_both_ways(&setup, &segs, &steps, WAYS).expect("same ACKs and state");
        assert!(
            counts.plain_acks > 100 && counts.other_sends > 10,
            "{counts:?}"
        );
    }
}

/// A client whose third handshake ACK still waits when data makes an ACK due: that handshake
/// segment goes first, as the general path sends it, then the ACK of the data.
#[test]
fn a_waiting_handshake_segment_goes_before_the_ack() {
    use crate::mptcp::{ConnConfig, DataReceiver, Mode};
    use crate::tcp::{flags, Segment};
    for mode in [Mode::Tcp, Mode::Mptcp] {
        let mut cfg = ConnConfig::new(mode, true, 1);
        cfg.tcp.delayed_ack = false;
        let mut a = DataReceiver::new(cfg.clone());
        let mut b = DataReceiver::new(cfg);
        let syn_ack = Segment {
            flags: flags::SYN | flags::ACK | flags::MP_CAPABLE,
            ack: 1,
            ts_val: 1,
            ..Default::default()
        };
        let data = Segment {
            flags: flags::ACK | flags::DSS_MAP,
            seq: 1,
            len: 1428,
            ack: 1,
            ts_val: 2,
            ..Default::default()
        };
        let mut sent = Vec::new();
        for r in [&mut a, &mut b] {
            r.connect(1_000);
            let syn = r.poll_transmit(1_000);
            r.handle_segment(2_000, 0, &syn_ack);
            r.handle_segment(2_000, 0, &data);
            sent.push(syn);
        }
        assert!(!a.plain_ack_due(), "the third ACK waits");
        for _ in 0..3 {
            let (x, y) = (a.poll_transmit(2_000), b.poll_transmit_general(2_000));
            assert_eq!(x, y);
            sent.push(x);
        }
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
        // The SYNs, the third ACK (ACK 1), the data's ACK (1 + 1428), nothing more.
        let acks: Vec<Option<u64>> = sent.iter().map(|s| s.map(|(_, s)| s.ack)).collect();
        assert_eq!(
            acks,
            [Some(0), Some(0), Some(1), Some(1429), None],
            "{sent:?}"
        );
    }
}
