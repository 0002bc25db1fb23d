//! Tests of `run/inflight.rs`: every segment comes back as stored, whichever pool keeps it.

use super::*;
use mpsched_proto::tcp::flags;

#[test]
fn a_record_is_36_bytes() {
    assert_eq!(std::mem::size_of::<Record>(), 36);
}

#[test]
fn the_dsn_or_the_data_ack_by_kind_and_the_other_whole_unless_0() {
    let mut f = InFlight::default();
    let d = Destination { flow: 9, subflow: 2, to_client: true, request: false };
    let m32 = u32::MAX as u64;
    let data =
        Segment { flags: flags::ACK | flags::DSS_MAP, seq: 7, len: 1448, ack: 1, dsn: m32, ..Default::default() };
    let ack =
        Segment { flags: flags::ACK | flags::DATA_ACK, seq: 1, ack: 9, data_ack: m32, window: 5, ..Default::default() };
    let cases = [
        // The kept one up to 32 bits, the other 0: the record.
        (data, false),
        (ack, false),
        // The handshake's third ACK (seq and ack 1) is kept as data: its DSN, DATA_ACK 0.
        (Segment { seq: 1, ack: 1, len: 0, dsn: 5, ..data }, false),
        // A DATA_ACK on data, a DSN on a pure ACK (a two-way transfer): whole.
        (Segment { data_ack: 1, ..data }, true),
        (Segment { data_ack: m32 + 1, dsn: 0, ..data }, true),
        (Segment { dsn: 1, ..ack }, true),
        (Segment { dsn: 1 << 40, data_ack: 0, ..ack }, true),
        (Segment { seq: 1, ack: 1, dsn: 5, data_ack: 3, ..data }, true),
        // The kept one one past 32 bits: whole.
        (Segment { dsn: m32 + 1, ..data }, true),
        (Segment { data_ack: m32 + 1, ..ack }, true),
    ];
    for (seg, wide) in cases {
        let i = f.insert(d, &seg);
        assert_eq!(f.segment(i), seg);
        let dest = f.destination(i);
        assert_eq!((dest.flow, dest.subflow, dest.to_client, dest.request), (9, 2, true, false));
        assert_eq!(f.wide.slots.len() - f.wide.free_slots().len(), wide as usize, "{seg:?}");
        let mut at = i;
        assert_eq!((*f.take(&mut at), at), (seg, NO_SEGMENT));
    }
    // With SACK blocks too (the SACK pool's read back goes through the same unpacking).
    let mut sacked = Segment { data_ack: 12345, ..ack };
    sacked.sack_len = 1;
    sacked.sack[0] = (20, 30);
    let i = f.insert(d, &sacked);
    assert_eq!((f.segment(i), f.sacks.slots.len() - f.sacks.free_slots().len()), (sacked, 1));
    assert_eq!(f.wide.slots.len() - f.wide.free_slots().len(), 0);
    let mut at = i;
    assert_eq!(*f.take(&mut at), sacked);
}

proptest::proptest! {
    /// Any segment comes back as stored, whichever pool keeps it: values drawn around the
    /// edges every packing tests (0, 1, 2^16, 2^32, 2^48), the SACK blocks included.
    #[test]
    fn any_segment_reads_back_as_stored(
        v in proptest::collection::vec(proptest::prop_oneof![
            0u64..3, 1447u64..1449, 65_534u64..65_538, (1u64 << 32) - 2..(1u64 << 32) + 2,
            (1u64 << 48) - 2..(1u64 << 48) + 2, proptest::prelude::any::<u64>()
        ], 18),
        flags in proptest::prelude::any::<u16>(), sack_len in 0u8..10,
        flow in proptest::prelude::any::<u32>(), subflow in proptest::prelude::any::<u8>(),
        to_client in proptest::prelude::any::<bool>(), request in proptest::prelude::any::<bool>(),
    ) {
        let mut sack = [(0, 0); MAX_SACK_BLOCKS];
        for (k, b) in sack.iter_mut().enumerate() {
            // Mostly empty blocks past `sack_len`, as a receiver sends them.
            if k < usize::from(sack_len) || v[17] % 5 == 0 {
                *b = (v[9 + 2 * k], v[10 + 2 * k]);
            }
        }
        let (seq, ack) = match v[0] % 3 { 0 => (v[1], 1), 1 => (1, v[1]), _ => (v[1], v[2]) };
        let (dsn, data_ack) = match v[3] % 3 { 0 => (v[4], 0), 1 => (0, v[4]), _ => (v[4], v[5]) };
        let ts_val = v[6];
        let seg = Segment {
            flags, seq, len: v[7] as u32, ack, window: v[8], sack_len, sack, ts_val,
            ts_ecr: if v[2] % 2 == 0 { ts_val.wrapping_sub(v[5] % (1 << 33)) } else { v[5] },
            dsn, data_ack,
        };
        let d = Destination { flow, subflow, to_client, request };
        let mut f = InFlight::default();
        let other = f.insert(d, &Segment { seq: 3, ack: 1, ..Default::default() });
        let i = f.insert(d, &seg);
        f.set_next(other, i);
        proptest::prop_assert_eq!(f.segment(i), seg);
        let dest = f.destination(i);
        proptest::prop_assert_eq!((dest.flow, dest.subflow, dest.to_client, dest.request), (flow, subflow, to_client, request));
        let mut at = other;
        f.take(&mut at);
        proptest::prop_assert_eq!(at, i);
        proptest::prop_assert_eq!(*f.take(&mut at), seg);
        proptest::prop_assert_eq!(at, NO_SEGMENT);
    }
}

#[test]
fn seq_or_ack_of_1_send_times_past_48_bits_and_sack_lens_past_7() {
    let mut f = InFlight::default();
    let d = Destination { flow: 6, subflow: 3, to_client: false, request: true };
    let data = Segment { flags: flags::ACK, seq: 7, len: 1448, ack: 1, ts_val: 5, ts_ecr: 4, ..Default::default() };
    let ack = Segment { flags: flags::ACK, seq: 1, ack: 9, window: 100, ts_val: 5, ts_ecr: 4, ..Default::default() };
    let (t48, t47) = (1u64 << 48, (1u64 << 48) - 1);
    let cases = [
        // A data segment (ack 1), a pure ACK (seq 1), both 1: the record.
        (data, false),
        (ack, false),
        (Segment { seq: 1, ..data }, false),
        // Neither is 1 (the SYN at (0, 0); a segment acknowledging data and carrying some): whole.
        (Segment { ack: 2, ..data }, true),
        (Segment { seq: 0, ack: 0, ..data }, true),
        (Segment { seq: 2, ..ack }, true),
        // Send times: the last that fits 48 bits, and the first that does not.
        (Segment { ts_val: t47, ts_ecr: t47 - 3, ..data }, false),
        (Segment { ts_val: t48, ts_ecr: t48 - 3, ..data }, true),
        (Segment { ts_val: u64::MAX, ts_ecr: u64::MAX, ..ack }, true),
        // `sack_len` with zero blocks (a value as stored, not as valid): 7 fits (in the SACK
        // pool), 8 does not.
        (Segment { sack_len: 7, ..ack }, false),
        (Segment { sack_len: 8, ..ack }, true),
        (Segment { sack_len: u8::MAX, ..data }, true),
    ];
    for (seg, wide) in cases {
        let i = f.insert(d, &seg);
        assert_eq!(f.segment(i), seg);
        let dest = f.destination(i);
        assert_eq!((dest.flow, dest.subflow, dest.to_client, dest.request), (6, 3, false, true));
        assert_eq!(f.wide.slots.len() - f.wide.free_slots().len(), wide as usize, "{seg:?}");
        assert_eq!(f.remove(i), NO_SEGMENT);
    }
}

#[test]
fn echoes_and_lengths_that_do_not_fit_are_kept_whole() {
    let mut f = InFlight::default();
    let d = Destination { flow: 3, subflow: 1, to_client: true, request: false };
    let now = 10_000_000_000u64;
    let cases = [
        // An echo just under 4.29 s back fits the record; these do not.
        (now, now - u32::MAX as u64, 1448, false),
        (now, now - u32::MAX as u64 - 1, 1448, true),
        // No echo yet (0) at a send time past 4.29 s.
        (now, 0, 1448, true),
        // An echo later than the send time.
        (now, now + 1, 1448, true),
        (now, now, 1 << 16, true),
        (now, now, u16::MAX as u32, false),
    ];
    for (ts_val, ts_ecr, len, wide) in cases {
        let s = Segment { flags: flags::ACK, seq: 5, ack: 1, len, ts_val, ts_ecr, ..Default::default() };
        let i = f.insert(d, &s);
        assert_eq!(f.segment(i), s);
        assert_eq!(f.wide.slots.len() - f.wide.free_slots().len(), wide as usize, "{ts_val} {ts_ecr} {len}");
        f.remove(i);
    }
}

#[test]
fn records_with_side_entries_keep_their_skb_link() {
    let mut f = InFlight::default();
    let d = Destination { flow: 0, subflow: 0, to_client: true, request: false };
    let plain = Segment { seq: 0, ack: 1, len: 1448, ts_val: 9, ts_ecr: 4, ..Default::default() };
    let mut sacked = Segment { seq: 1448, ack: 1, len: 1448, ..Default::default() };
    sacked.sack_len = 1;
    sacked.sack[0] = (1, 2);
    let wide = Segment { seq: 1 << 40, ack: 1, len: 1448, ..Default::default() };
    let ids = [f.insert(d, &plain), f.insert(d, &sacked), f.insert(d, &wide), f.insert(d, &plain)];
    for w in ids.windows(2) {
        f.set_next(w[0], w[1]);
    }
    assert_eq!((f.segment(ids[1]), f.segment(ids[2])), (sacked, wide));
    assert_eq!(f.take_next(ids[2]), ids[3]);
    f.set_next(ids[2], ids[3]);
    assert_eq!(f.remove(ids[0]), ids[1]);
    assert_eq!(f.remove(ids[1]), ids[2]);
    assert_eq!(f.remove(ids[2]), ids[3]);
    assert_eq!(f.remove(ids[3]), NO_SEGMENT);
    assert_eq!((f.sacks.free_slots().len(), f.wide.free_slots().len(), f.records.free_slots().len()), (1, 1, 4));
    // Reused side slots start unlinked.
    let again = f.insert(d, &sacked);
    assert_eq!(f.take_next(again), NO_SEGMENT);
}

#[test]
fn segments_come_back_as_stored_and_slots_are_reused() {
    let mut f = InFlight::default();
    let data =
        Segment { flags: flags::ACK, seq: 1 << 20, ack: 1, len: 1448, dsn: 7, ts_val: 3 << 40, ..Default::default() };
    let mut ack =
        Segment { flags: flags::ACK | flags::DATA_ACK, seq: 1, ack: 99, window: 1 << 30, ..Default::default() };
    ack.sack_len = 2;
    ack.sack[0] = (200, 300);
    ack.sack[1] = (400, 500);
    // Bytes past the valid blocks are kept too (a fourth block: see
    // `a_fourth_sack_block_keeps_the_segment_whole`).
    ack.sack[2] = (101, 102);
    let d = Destination { flow: 5, subflow: 2, to_client: true, request: false };
    let a = f.insert(d, &data);
    let b = f.insert(Destination { to_client: false, ..d }, &ack);
    assert_eq!(f.segment(a), data);
    assert_eq!(f.segment(b), ack);
    assert!(f.destination(a).to_client && !f.destination(b).to_client);
    assert_eq!((f.destination(b).flow, f.destination(b).subflow), (5, 2));
    f.remove(b);
    f.remove(a);
    // Last freed, first reused; the SACK slot is freed with its record.
    assert_eq!(f.insert(d, &data), a);
    assert_eq!(f.insert(d, &ack), b);
    assert_eq!(f.segment(b), ack);
    assert_eq!(f.sacks.slots.len(), 1);
}

#[test]
fn sack_entries_are_22_bytes_and_edges_out_of_reach_of_the_ack_go_whole() {
    assert_eq!(std::mem::size_of::<SackEntry>(), 22);
    let mut f = InFlight::default();
    let d = Destination { flow: 2, subflow: 0, to_client: false, request: false };
    // The highest `ack` whose whole reach (2^24 - 2 above it) stays below 2^32.
    let a = u32::MAX as u64 - (1 << 24) + 2;
    let mut ack = Segment { flags: flags::ACK, seq: 1, ack: a, ..Default::default() };
    ack.sack_len = 2;
    ack.sack[0] = (a, a + (1 << 24) - 2);
    ack.sack[1] = (a + 10, a + 20);
    let with = |k: usize, block: (u64, u64)| {
        let mut s = ack;
        s.sack[k] = block;
        s
    };
    let cases = [
        // Edges at the ack and at the top of the reach; an empty block; a start of 0 (the empty
        // edge's code) with an end in reach: the SACK pool.
        (ack, false),
        (with(1, (0, 0)), false),
        (with(1, (0, a + 5)), false),
        (with(2, (a + 1, a + 2)), false),
        // One past the reach; just below the ack (its code would be the empty edge's 0); further
        // below (wraps); at 2^32, past the reach of this ack: whole.
        (with(0, (a, a + (1 << 24) - 1)), true),
        (with(1, (a - 1, a + 20)), true),
        (with(1, (a + 10, a - 2)), true),
        (with(2, (5, 6)), true),
        (with(1, (a + 10, u32::MAX as u64 + 1)), true),
    ];
    for (seg, wide) in cases {
        let i = f.insert(d, &seg);
        assert_eq!(f.segment(i), seg);
        let live = |f: &InFlight| {
            (f.sacks.slots.len() - f.sacks.free_slots().len(), f.wide.slots.len() - f.wide.free_slots().len())
        };
        assert_eq!(live(&f), (!wide as usize, wide as usize), "{seg:?}");
        let mut at = i;
        assert_eq!((*f.take(&mut at), at), (seg, NO_SEGMENT));
        assert_eq!(live(&f), (0, 0));
    }
    // Edges past 32 bits within reach of an `ack` that fits 32 bits: the SACK pool, read back
    // exactly (kept as distances above the `ack`).
    let mut top = Segment { ack: u32::MAX as u64, ..ack };
    top.sack[0] = (u32::MAX as u64 + 2, u32::MAX as u64 + 6);
    top.sack[1] = (u32::MAX as u64, u32::MAX as u64 + 1);
    let i = f.insert(d, &top);
    assert_eq!((f.segment(i), f.sacks.slots.len() - f.sacks.free_slots().len()), (top, 1));
    assert_eq!(f.wide.slots.len() - f.wide.free_slots().len(), 0);
    let mut at = i;
    assert_eq!(*f.take(&mut at), top);
    // A data segment's blocks (a two-way transfer) are kept from its `ack` of 1.
    let mut data = Segment { flags: flags::ACK, seq: 9, len: 100, ack: 1, ..Default::default() };
    data.sack_len = 1;
    data.sack[0] = (1, 1 << 23);
    let i = f.insert(d, &data);
    assert_eq!((f.segment(i), f.sacks.slots.len() - f.sacks.free_slots().len()), (data, 1));
}

#[test]
fn values_past_32_bits_are_kept_whole() {
    let mut f = InFlight::default();
    let d = Destination { flow: 1, subflow: 0, to_client: false, request: true };
    let mut seg = Segment { flags: flags::ACK, len: 1000, ..Default::default() };
    seg.sack_len = 1;
    seg.sack[0] = (1 << 33, (1 << 33) + 1000);
    for field in 0..5 {
        let mut s = seg;
        let big = u32::MAX as u64 + 1 + field;
        match field {
            0 => s.seq = big,
            1 => s.ack = big,
            2 => s.dsn = big,
            3 => s.data_ack = big,
            _ => s.window = big,
        }
        let i = f.insert(d, &s);
        assert_eq!(f.segment(i), s);
        assert_eq!((f.destination(i).flow, f.destination(i).request), (1, true));
        f.remove(i);
    }
    assert_eq!(f.wide.slots.len(), 1);
    assert_eq!(f.wide.free_slots().len(), 1);
}

#[test]
fn a_fourth_sack_block_keeps_the_segment_whole() {
    let mut f = InFlight::default();
    let d = Destination { flow: 4, subflow: 1, to_client: false, request: false };
    let mut ack = Segment { flags: flags::ACK, seq: 1, ack: 100, ..Default::default() };
    ack.sack_len = 3;
    ack.sack[0] = (300, 400);
    ack.sack[1] = (500, 600);
    ack.sack[2] = (700, 800);
    let three = f.insert(d, &ack);
    assert_eq!(f.segment(three), ack);
    assert_eq!((f.sacks.slots.len(), f.wide.slots.len()), (1, 0));
    // A fourth block, valid or only a stale value past `sack_len`: kept whole, read back equal.
    for (len, block) in [(4, (900, 1000)), (3, (0, 1)), (3, (1, 0))] {
        let mut four = ack;
        four.sack_len = len;
        four.sack[3] = block;
        let i = f.insert(d, &four);
        assert_eq!(f.segment(i), four);
        assert_eq!(f.destination(i).flow, 4);
        assert_eq!((f.sacks.slots.len(), f.wide.slots.len() - f.wide.free_slots().len()), (1, 1), "{block:?}");
        f.remove(i);
    }
    assert_eq!(f.segment(three), ack);
}

#[test]
fn a_packet_carries_two_words_and_messages_are_kept_by_slot() {
    use super::super::{Carried, Payload, Receiver, MAX_FLOWS};
    use mpsched_engine::net::Packet;
    assert_eq!((std::mem::size_of::<Payload>(), std::mem::size_of::<Packet<Payload>>()), (8, 20));
    let to = Receiver { flow: 0, to_client: false, request: false };
    assert!(matches!(Payload::segment(0, to).carried(), Carried::Segment(0)));
    // A segment's packet names its flow and endpoint, whatever the index, up to the last flow.
    let last = Receiver { flow: MAX_FLOWS as u32 - 1, to_client: true, request: false };
    let p = Payload::segment((1 << 31) - 1, last);
    assert!(matches!(p.carried(), Carried::Segment(i) if i == (1 << 31) - 1));
    assert_eq!(p.receiver(), last);
    for (to_client, request) in [(false, true), (true, true), (false, false)] {
        let to = Receiver { flow: 12_345, to_client, request };
        assert_eq!(Payload::segment(7, to).receiver(), to);
    }
    assert!(matches!(Payload::cross().carried(), Carried::Cross));
    assert!(matches!(Payload::app_msg((1 << 31) - 2).carried(), Carried::AppMsg(s) if s == (1 << 31) - 2));
    let mut f = InFlight::default();
    let a = f.insert_app_msg(7, u32::MAX);
    let b = f.insert_app_msg(u32::MAX - 1, 3);
    let Carried::AppMsg(slot) = Payload::app_msg(b).carried() else { panic!("a message") };
    assert_eq!(f.take_app_msg(slot), (u32::MAX - 1, 3));
    // A freed slot is reused; the other message is kept.
    assert_eq!(f.insert_app_msg(1, 2), b);
    assert_eq!((f.take_app_msg(a), f.take_app_msg(b)), ((7, u32::MAX), (1, 2)));
}

#[test]
fn freed_slots_are_reused_last_freed_first_through_their_own_links() {
    let mut f = InFlight::default();
    let d = Destination { flow: 1, subflow: 0, to_client: true, request: false };
    let seg = |i: u64| Segment { seq: 1448 * i, ack: 1, len: 1448, ..Default::default() };
    let mut sacked = seg(9);
    sacked.sack_len = 1;
    sacked.sack[0] = (5, 6);
    let ids: Vec<u32> = (0..5).map(|i| f.insert(d, &seg(i))).collect();
    let sides: Vec<u32> = (0..3).map(|_| f.insert(d, &sacked)).collect();
    assert_eq!((ids.clone(), sides.clone()), (vec![0, 1, 2, 3, 4], vec![5, 6, 7]));
    for &i in [1, 3, 0].iter().chain(&sides) {
        f.remove(i);
    }
    assert_eq!(f.records.free_slots(), vec![7, 6, 5, 0, 3, 1]);
    assert_eq!(f.sacks.free_slots(), vec![2, 1, 0]);
    // Reused in reverse order of freeing, each coming back as stored; then new slots.
    for (want, s) in [(7, seg(10)), (6, sacked), (5, seg(11)), (0, sacked), (3, seg(12)), (1, seg(13)), (8, seg(14))] {
        let i = f.insert(d, &s);
        assert_eq!((i, f.segment(i)), (want, s));
        assert_eq!(f.take_next(i), NO_SEGMENT);
    }
    assert_eq!((f.records.free_slots(), f.sacks.free_slots()), (vec![], vec![0]));
    assert_eq!((f.segment(2), f.segment(4)), (seg(2), seg(4)));
    // Messages too: the freed slot's flow is read before it is overwritten by the link.
    let m = [f.insert_app_msg(3, 4), f.insert_app_msg(5, 6)];
    assert_eq!(f.take_app_msg(m[0]), (3, 4));
    assert_eq!(f.insert_app_msg(7, 8), m[0]);
    assert_eq!((f.take_app_msg(m[1]), f.take_app_msg(m[0])), ((5, 6), (7, 8)));
}

#[test]
fn take_reads_and_frees_records_and_side_entries_alike() {
    let mut f = InFlight::default();
    let d = Destination { flow: 2, subflow: 1, to_client: false, request: true };
    let plain =
        Segment { flags: flags::ACK, seq: 9, ack: 1, len: 1448, ts_val: 9, ts_ecr: 4, dsn: 3, ..Default::default() };
    let mut sacked = Segment { flags: flags::ACK, seq: 1, ack: 77, window: 5, ..Default::default() };
    sacked.sack_len = 2;
    sacked.sack[0] = (100, 200);
    sacked.sack[1] = (300, 400);
    let wide = Segment { seq: 1 << 40, ack: 1, len: 1448, ..Default::default() };
    for round in 0..2 {
        let ids = [f.insert(d, &plain), f.insert(d, &sacked), f.insert(d, &wide), f.insert(d, &plain)];
        for w in ids.windows(2) {
            f.set_next(w[0], w[1]);
        }
        let want = [plain, sacked, wide, plain];
        for (k, &i) in ids.iter().enumerate() {
            assert_eq!(f.segment(i), want[k]);
            let next = ids.get(k + 1).copied().unwrap_or(NO_SEGMENT);
            let mut at = i;
            assert_eq!((*f.take(&mut at), at), (want[k], next), "round {round}, segment {k}");
        }
        // All freed, side entries too, and reused in the next round.
        assert_eq!(f.records.free_slots().len(), 4);
        assert_eq!((f.sacks.free_slots().len(), f.wide.free_slots().len()), (1, 1));
        assert_eq!((f.records.slots.len(), f.sacks.slots.len(), f.wide.slots.len()), (4, 1, 1));
    }
}

#[test]
fn an_skb_chain_is_walked_and_freed_whole() {
    let mut f = InFlight::default();
    let d = Destination { flow: 0, subflow: 0, to_client: true, request: false };
    let segs: Vec<Segment> =
        (0..3).map(|i| Segment { seq: 1448 * i, ack: 1, len: 1448, ..Default::default() }).collect();
    let ids: Vec<u32> = segs.iter().map(|s| f.insert(d, s)).collect();
    assert_eq!(f.take_next(ids[0]), NO_SEGMENT);
    f.set_next(ids[0], ids[1]);
    f.set_next(ids[1], ids[2]);
    // Links do not change the segments read back.
    assert_eq!(f.segment(ids[1]), segs[1]);
    f.remove_chain(ids[0]);
    assert_eq!(f.records.free_slots().len(), 3);
    // A reused slot starts unlinked.
    let again = f.insert(d, &segs[0]);
    assert_eq!(f.remove(again), NO_SEGMENT);
}

proptest::proptest! {
    /// Read backs of every kind (data, pure ACK, an ACK with SACK blocks, a segment kept whole),
    /// interleaved with inserts, in any order, each give the segment stored: the kept segment of
    /// a kind keeps the fields that kind fixes whatever was read back before it, and a read
    /// back writes every field that varies.
    #[test]
    fn read_backs_of_mixed_kinds_in_any_order_are_as_stored(
        steps in proptest::collection::vec(
            (0u8..5, proptest::prelude::any::<u64>(), proptest::prelude::any::<u64>(),
             proptest::prelude::any::<u16>(), proptest::prelude::any::<bool>()),
            1..60,
        ),
    ) {
        let d = Destination { flow: 1, subflow: 0, to_client: false, request: false };
        let mut f = InFlight::default();
        let mut live: Vec<(u32, Segment)> = Vec::new();
        for (k, &(kind, a, b, flags, take)) in steps.iter().enumerate() {
            let (a32, b32) = (a & 0xffff_ffff, b & 0xffff_ffff);
            let base = Segment {
                flags, len: (b >> 40) as u32 & 0xffff, window: b32, ts_val: (a >> 20) | 1 << 40,
                ts_ecr: ((a >> 20) | 1 << 40) - (b >> 33), ..Default::default()
            };
            let seg = match kind {
                0 => Segment { seq: a32, ack: 1, dsn: b32, ..base },
                1 => Segment { seq: 1, ack: a32, data_ack: b32, ..base },
                2 => {
                    let mut s = Segment { seq: 1, ack: a32, data_ack: b32, sack_len: 2, ..base };
                    s.sack[0] = (a32 + 10, a32 + 20);
                    s.sack[1] = (a32 + 30, a32 + 40);
                    s
                }
                3 => Segment { seq: a | 2, ack: b | 2, dsn: a, data_ack: b, ..base },
                _ => {
                    let mut s = Segment { seq: a, ack: b, len: flags.into(), window: a ^ b, ..base };
                    s.sack[3] = (b, a);
                    s
                }
            };
            let i = f.insert(d, &seg);
            proptest::prop_assert_eq!(f.segment(i), seg);
            live.push((i, seg));
            // Take one of the live segments, picked by the step's values, every other step or so.
            if take || k + 1 == steps.len() {
                let (i, want) = live.swap_remove((a % live.len() as u64) as usize);
                let mut at = i;
                proptest::prop_assert_eq!(*f.take(&mut at), want);
                proptest::prop_assert_eq!(at, NO_SEGMENT);
            }
        }
        for (i, want) in live {
            let mut at = i;
            proptest::prop_assert_eq!(*f.take(&mut at), want);
        }
        proptest::prop_assert_eq!(f.records.free_slots().len(), f.records.slots.len());
    }
}
