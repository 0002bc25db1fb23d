//! The receiver's out-of-order queue: segments arriving in any order, some twice, come out
//! once each, in sequence order, with their own DSNs.

use crate::tcp::{flags, Receiver, Released, Segment, TcpConfig};
use proptest::prelude::*;

proptest! {
    #[test]
    fn segments_in_any_order_are_released_once_in_order(
        lens in proptest::collection::vec(1u32..=1448, 1..120),
        dsn_jumps in proptest::collection::vec(0u64..3, 120),
        order_keys in proptest::collection::vec(any::<u32>(), 240),
        twice in proptest::collection::vec(any::<bool>(), 120),
    ) {
        released_once_in_order(&lens, &dsn_jumps, &order_keys, &twice)?;
    }

    /// The same with mostly full segments and rarer DSN jumps, so the out-of-order queue holds
    /// long runs (`tcp/ofo.rs`) that duplicates, fills and releases meet.
    #[test]
    fn full_segments_in_any_order_are_released_once_in_order(
        lens in proptest::collection::vec(prop_oneof![4 => Just(1448u32), 1 => 1u32..=1448], 1..120),
        dsn_jumps in proptest::collection::vec(prop_oneof![9 => Just(0u64), 1 => 1u64..3], 120),
        order_keys in proptest::collection::vec(0u32..64, 240),
        twice in proptest::collection::vec(any::<bool>(), 120),
    ) {
        released_once_in_order(&lens, &dsn_jumps, &order_keys, &twice)?;
    }
}

/// Feeds the stream of `lens` (DSNs jumping by `dsn_jumps`) in the order of `order_keys`, the
/// segments marked in `twice` twice: each byte is released once, in order, with its own DSN.
fn released_once_in_order(
    lens: &[u32],
    dsn_jumps: &[u64],
    order_keys: &[u32],
    twice: &[bool],
) -> Result<(), TestCaseError> {
    // The stream: contiguous sequence numbers; DSNs that sometimes jump (as MPTCP maps).
    let mut segs = Vec::new();
    let (mut seq, mut dsn) = (1u64, 1_000u64);
    for (i, &len) in lens.iter().enumerate() {
        dsn += dsn_jumps[i] * 10_000;
        segs.push((seq, len, dsn, i + 1 == lens.len()));
        seq += len as u64;
        dsn += len as u64;
    }
    // Arrival order: every segment once, some twice, shuffled by the keys.
    let mut arrivals: Vec<usize> = (0..segs.len()).collect();
    arrivals.extend((0..segs.len()).filter(|&i| twice[i]));
    let mut keyed: Vec<(u32, usize)> = arrivals
        .iter()
        .enumerate()
        .map(|(k, &i)| (order_keys[k], i))
        .collect();
    keyed.sort();
    let mut rx = Receiver::established(TcpConfig::default());
    let mut released: Vec<Released> = Vec::new();
    let mut fed_bytes = 0;
    for &(_, i) in &keyed {
        let (seq, len, dsn, fin) = segs[i];
        let f = flags::ACK | if fin { flags::DATA_FIN } else { 0 };
        let seg = Segment {
            flags: f,
            seq,
            len,
            ack: 1,
            dsn,
            ts_val: 1,
            ..Default::default()
        };
        rx.handle_segment(1, &seg);
        fed_bytes += len as u64;
        released.extend(rx.drain_released());
    }
    let want: Vec<Released> = segs
        .iter()
        .map(|&(_, len, dsn, fin)| Released {
            dsn,
            len: len as u64,
            data_fin: fin,
        })
        .collect();
    prop_assert_eq!(released, want);
    prop_assert_eq!(rx.rcv_nxt(), seq);
    prop_assert_eq!(rx.ofo_bytes(), 0);
    let stream_bytes = seq - 1;
    prop_assert_eq!(rx.stats().bytes_in_order, stream_bytes);
    prop_assert_eq!(rx.stats().duplicate_bytes, fed_bytes - stream_bytes);
    Ok(())
}
