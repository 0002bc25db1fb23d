//! Tests of the scoreboard's 8-byte slots (`scoreboard_slots.rs`): the bases moved up, the
//! wide form and back, against what was stored.

use super::slots::{Slots, SEQ_LIMIT};

// The random lengths below (up to 2^30) reach past the narrow offsets.
const _: () = assert!(SEQ_LIMIT < 1 << 30);
use super::tests::{board, MSS};
use super::*;

/// Every outstanding segment as read back: (seq, len, dsn, xmit_ns, flags, ever_retx).
pub(super) fn stored(b: &Scoreboard) -> Vec<(u64, u32, u64, u64, u8, bool)> {
    (0..b.segs_out())
        .map(|j| {
            let s = b.with_dsn(b.get(j));
            (s.seq, s.len, s.dsn, s.xmit_ns, s.flags, s.ever_retx)
        })
        .collect()
}

#[test]
fn offsets_move_up_past_4_gib_and_read_back_exact() {
    // A flight of three 32 MiB segments sent on to 3 * 2^32 (past the 27-bit offset of the
    // first base many times), 1.2 s apart (past the 32-bit time offset every few pushes): each
    // push that does not fit moves the bases up to the front segment and the earliest send
    // time, and the queue stays narrow; every segment reads back as sent.
    let mut b = Scoreboard::default();
    let start = 1_000;
    let len: u64 = 1 << 25;
    let gap_ns = 1_200_000_000;
    let mut seq = start;
    let mut sent = Vec::new();
    for i in 0..400u64 {
        b.push(seq, len as u32, 5 * seq, false, i * gap_ns);
        sent.push((seq, i * gap_ns));
        seq += len;
        // Keep three segments outstanding.
        if sent.len() > 3 {
            let (acked, _) = sent.remove(0);
            b.advance_una(acked + len, i * gap_ns + 1);
        }
        let expected: Vec<_> = sent
            .iter()
            .map(|&(q, t)| (q, len as u32, 5 * q, t, 0, false))
            .collect();
        assert_eq!(stored(&b), expected, "after push {i}");
        assert!(!b.segs.is_wide(), "after push {i}");
    }
    let (seq_base, time_base) = b.segs.narrow_bases().unwrap();
    assert!(seq_base <= sent[0].0 && seq_base > start + 3 * u64::from(u32::MAX));
    assert!(
        time_base <= sent[0].1 && time_base > 300 * gap_ns,
        "the bases moved up"
    );
    // SACKs find segments by sequence number through the moved base.
    let (last, _) = sent[2];
    assert_eq!(b.apply_sack(&[(last, last + len)], 400 * gap_ns), len);
    assert_eq!(b.sacked_segs(), 1);
    // An empty scoreboard starts its offsets at the next flight.
    b.advance_una(seq, 401 * gap_ns);
    b.push(seq, 100, 1, false, 402 * gap_ns);
    assert_eq!(b.segs.narrow_bases(), Some((seq, 402 * gap_ns)));
    assert_eq!(b.get(0).seq, seq);
}

#[test]
fn a_flight_past_the_narrow_offsets_is_kept_wide_and_narrows_again() {
    // Segments of 2^31 bytes: a flight of two spans 2^31 > 2^27 (no base fits), so the queue
    // goes wide; the numbers read back exact there (a flight of 4 GiB and more too); once the
    // flight fits again a later push moves it back to narrow slots.
    let mut b = Scoreboard::default();
    let len: u64 = 1 << 31;
    b.push(0, len as u32, 0, false, 0);
    assert!(!b.segs.is_wide());
    b.push(len, len as u32, len, false, 1);
    assert!(b.segs.is_wide(), "a flight spanning 2^31 is wide");
    b.push(2 * len, len as u32, 2 * len, true, 2);
    b.push(3 * len, 7, 3 * len, false, 3);
    assert_eq!(
        b.segs.words().len(),
        4,
        "a word a segment, and its sequence number"
    );
    let want = |i: u64, l: u32| (i * len, l, i * len, i, 0, false);
    assert_eq!(
        stored(&b),
        vec![
            want(0, len as u32),
            want(1, len as u32),
            want(2, len as u32),
            want(3, 7)
        ]
    );
    assert!(b.get(2).data_fin);
    // SACKs, losses, retransmissions and the RTO's marks work on wide slots.
    assert_eq!(b.apply_sack(&[(3 * len, 3 * len + 7)], 10), 7);
    b.mark_all_lost();
    assert_eq!(b.next_lost().map(|s| s.seq), Some(0));
    b.mark_retransmitted(20);
    let s = b.get(0);
    assert_eq!((s.flags, s.ever_retx, s.xmit_ns), (LOST | RETX, true, 20));
    assert_eq!(b.get(3).flags, SACKED);
    assert_eq!(b.pipe_segs(), 1);
    // The segments of 2^31 acknowledged: small ones that fit the narrow offsets follow, and
    // within as many pushes as the queue holds it is narrow again, every value as stored.
    assert_eq!(b.advance_una(3 * len, 30), 3 * len);
    let mut seq = 3 * len + 7;
    for i in 0..8u64 {
        b.push(seq, 100, seq, false, 40 + i);
        seq += 100;
    }
    assert!(!b.segs.is_wide(), "narrow again");
    assert_eq!(b.segs.words().len(), 9);
    let mut expected = vec![(3 * len, 7, 3 * len, 3, SACKED, false)];
    expected.extend((0..8u64).map(|i| {
        let q = 3 * len + 7 + 100 * i;
        (q, 100, q, 40 + i, 0, false)
    }));
    assert_eq!(stored(&b), expected);
}

#[test]
fn a_send_time_held_for_minutes_is_kept_wide_and_exact() {
    // An RTO backed off to a minute: the front segment's retransmissions are sent minutes
    // after the SACKed segments above it, so no 32-bit time offset fits them all: wide, and
    // every time reads back as stored; when the hole is filled the queue narrows again.
    let mut b = board(4); // segment i sent at t = i
    b.apply_sack(&[(101, 401)], 50);
    b.mark_all_lost();
    let mut t = 1_000_000_000u64;
    for _ in 0..7 {
        assert_eq!(b.next_lost().map(|s| s.seq), Some(1));
        b.mark_retransmitted(t);
        b.mark_all_lost();
        t *= 2;
    }
    let last = t / 2;
    assert!(b.segs.is_wide(), "times 64 s apart");
    assert_eq!(b.get(0).xmit_ns, last);
    assert_eq!(b.get(0).flags, LOST);
    assert_eq!(
        (1..4).map(|i| b.get(i).xmit_ns).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    // The RTT sources read the wide times too.
    let mut src = CaRttSources::default();
    assert_eq!(b.advance_una_noting(401, t, &mut src), 400);
    assert!(src.retx_acked);
    b.push(401, 100, 400, false, t);
    assert!(!b.segs.is_wide(), "an emptied queue starts narrow");
    assert_eq!(b.get(0).xmit_ns, t);
}

/// xorshift64: the random tests' numbers, the same on every run.
pub(super) fn rng(mut state: u64) -> impl FnMut(u64) -> u64 {
    move |n| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    }
}

#[test]
fn slots_read_back_what_was_stored_through_rebases_widening_and_narrowing() {
    // Random pushes (lengths up to 2^30, so flights span past the 27-bit offsets now and
    // then), rewrites of send times and bits (times jumping by up to minutes, as an RTO's
    // backoff) and pops, against a plain queue of what was stored. Counts that every form
    // occurs: a rebase, a widening, a narrowing again, a restart.
    let mut rand = rng(0x2545_f491_4f6c_dd1d);
    let mut slots = Slots::default();
    let mut model: VecDeque<(u64, u64, u8)> = VecDeque::new();
    let (mut next_seq, mut now, mut popped) = (1u64 << 40, 5u64, 0u64);
    let (mut rebased, mut widened, mut narrowed) = (0, 0, 0);
    for step in 0..20_000 {
        let before = (slots.is_wide(), slots.narrow_bases(), slots.is_empty());
        now += match rand(100) {
            0 => rand(200_000_000_000),
            1..=9 => rand(3_000_000_000),
            _ => rand(1_000_000),
        };
        match rand(10) {
            0..=3 => {
                if slots.is_empty() {
                    slots.restart(next_seq, now);
                }
                let bits = rand(32) as u8;
                slots.push(next_seq, now, bits, popped);
                model.push_back((next_seq, now, bits));
                next_seq += match rand(50) {
                    0 => 1 + rand(1 << 30),
                    _ => 1 + rand(3000),
                };
            }
            4..=6 if !model.is_empty() => {
                let i = rand(model.len() as u64) as usize;
                let bits = rand(32) as u8;
                // A state change keeps the time; a retransmission sends at `now`.
                let t = if rand(2) == 0 { model[i].1 } else { now };
                slots.set(i, t, bits);
                model[i] = (model[i].0, t, bits);
            }
            _ => {
                for _ in 0..rand(4) {
                    if model.pop_front().is_some() {
                        slots.pop_front();
                        popped += 1;
                    }
                }
            }
        }
        assert_eq!(slots.len(), model.len(), "step {step}");
        for (i, &(seq, t, bits)) in model.iter().enumerate() {
            let s = slots.get(i);
            assert_eq!(
                (s.seq, s.xmit_ns, s.bits),
                (seq, t, bits),
                "step {step} slot {i}"
            );
            assert_eq!(
                (slots.seq(i), slots.bits(i)),
                (seq, bits),
                "step {step} slot {i}"
            );
        }
        if let Some(&(seq, _, _)) = model.front() {
            assert_eq!(slots.front().map(|s| s.seq), Some(seq));
            let probe = seq + rand(1 << 31);
            let below = model.iter().filter(|m| m.0 <= probe).count();
            assert_eq!(slots.count_at_or_below(probe), below, "step {step}");
        }
        let after = (slots.is_wide(), slots.narrow_bases());
        match (before.0, after.0) {
            (false, false) if before.1 != after.1 && !before.2 => rebased += 1,
            (false, true) => widened += 1,
            (true, false) => narrowed += 1,
            _ => {}
        }
        assert_eq!(slots.words().len(), model.len());
    }
    assert!(rebased > 20, "{rebased}");
    assert!(widened > 20, "{widened}");
    assert!(narrowed > 20, "{narrowed}");
}

#[test]
fn a_scoreboard_at_times_over_minutes_and_a_wide_window_acts_as_a_small_one() {
    // The same random sends, ACKs, SACKs, loss marking, retransmissions, probes and RTOs on two
    // scoreboards: one at small times and sequence numbers (always narrow), one with every
    // time scaled by 10^8 (steps of up to 200 ms, RTOs of minutes) and every sequence
    // number and length by 2^15 (a flight of 41 segments spans past the 27-bit offsets). All
    // the rules compare
    // sums and differences of times or of sequence numbers, so the second must answer as the
    // first, scaled, and store what the first stores, scaled, whether narrow or wide.
    const TIME: u64 = 100_000_000;
    const SEQ: u64 = 1 << 15;
    let mut rand = rng(0x9e37_79b9_7f4a_7c15);
    let (mut wide_steps, mut narrow_steps) = (0, 0);
    for flight in 0..30 {
        let (mut a, mut b) = (Scoreboard::default(), Scoreboard::default());
        a.set_min_rtt(2);
        b.set_min_rtt(2 * TIME);
        let (mut una, mut next, mut t) = (1u64, 1u64, 1u64);
        for step in 0..300 {
            let op = rand(10);
            let got: (u64, u64, Option<u64>) = match op {
                0 | 1 => {
                    for _ in 0..1 + rand(4) {
                        let fin = rand(20) == 0;
                        a.push(next, MSS as u32, next * 3, fin, t);
                        b.push(next * SEQ, (MSS * SEQ) as u32, next * 3, fin, t * TIME);
                        next += MSS;
                    }
                    (0, 0, None)
                }
                2 if next > una => {
                    una += MSS * rand((next - una) / MSS + 1);
                    let (x, y) = (a.advance_una(una, t), b.advance_una(una * SEQ, t * TIME));
                    (x, y / SEQ, None)
                }
                3 if next > una + MSS => {
                    let segs = (next - una) / MSS;
                    let first = 1 + rand(segs - 1);
                    let last = first + 1 + rand(segs - first);
                    let (s, e) = (una + first * MSS, una + last * MSS);
                    let x = a.apply_sack(&[(s, e)], t);
                    let y = b.apply_sack(&[(s * SEQ, e * SEQ)], t * TIME);
                    (x, y / SEQ, None)
                }
                4 => {
                    let reo = rand(3);
                    let (x, dx) = a.rack_mark_lost(t, reo);
                    let (y, dy) = b.rack_mark_lost(t * TIME, reo * TIME);
                    assert_eq!(dx.map(|d| d * TIME), dy, "flight {flight} step {step}");
                    (x, y / SEQ, None)
                }
                5 => {
                    let (x, y) = (a.update_lost(MSS), b.update_lost(MSS * SEQ));
                    (x, y / SEQ, None)
                }
                6 => {
                    let x = a.probe_last(t).map(|s| s.seq);
                    let y = b.probe_last(t * TIME).map(|s| s.seq / SEQ);
                    assert_eq!(x, y, "flight {flight} step {step}");
                    (0, 0, None)
                }
                7 if rand(8) == 0 => {
                    // An RTO, later and later (backed off).
                    t += 100 * rand(20);
                    a.mark_all_lost();
                    b.mark_all_lost();
                    (0, 0, None)
                }
                _ => {
                    let x = a.next_lost().map(|s| (s.seq, s.dsn, s.len as u64));
                    let y = b
                        .next_lost()
                        .map(|s| (s.seq / SEQ, s.dsn, s.len as u64 / SEQ));
                    assert_eq!(x, y, "flight {flight} step {step}");
                    if x.is_some() {
                        a.mark_retransmitted(t);
                        b.mark_retransmitted(t * TIME);
                    }
                    let (x, y) = (
                        a.detect_lost_retransmissions(),
                        b.detect_lost_retransmissions(),
                    );
                    (x, y / SEQ, Some(op))
                }
            };
            assert_eq!(got.0, got.1, "flight {flight} step {step} op {op}");
            t += rand(3);
            let scaled: Vec<_> = stored(&a)
                .into_iter()
                .map(|(q, l, d, x, f, e)| (q * SEQ, l * SEQ as u32, d, x * TIME, f, e))
                .collect();
            assert_eq!(stored(&b), scaled, "flight {flight} step {step} op {op}");
            assert_eq!(
                (
                    a.pipe_segs(),
                    a.sacked_segs(),
                    a.any_retrans_done(),
                    a.reord_seen()
                ),
                (
                    b.pipe_segs(),
                    b.sacked_segs(),
                    b.any_retrans_done(),
                    b.reord_seen()
                )
            );
            assert_eq!(a.rack_nothing_to_judge(), b.rack_nothing_to_judge());
            assert!(!a.segs.is_wide());
            if b.segs.is_wide() {
                wide_steps += 1;
            } else if !b.is_empty() {
                narrow_steps += 1;
            }
        }
    }
    assert!(wide_steps > 500, "{wide_steps}");
    assert!(narrow_steps > 500, "{narrow_steps}");
}
