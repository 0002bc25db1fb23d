//! Tests of the scoreboard (`scoreboard.rs`).

use super::slots::XMIT_LIMIT;
use super::*;
pub(super) const MSS: u64 = 100;

impl Scoreboard {
    /// [`Scoreboard::advance_una_noting`] without the RTT sources.
    pub(super) fn advance_una(&mut self, ack: u64, now_ns: u64) -> u64 {
        self.advance_una_noting(ack, now_ns, &mut CaRttSources::default())
    }

    /// [`Scoreboard::apply_sack_noting`] without the RTT sources.
    pub(super) fn apply_sack(&mut self, blocks: &[(u64, u64)], now_ns: u64) -> u64 {
        self.apply_sack_noting(blocks, now_ns, &mut CaRttSources::default())
    }
}

pub(super) fn board(n: u64) -> Scoreboard {
    let mut b = Scoreboard::default();
    for i in 0..n {
        b.push(1 + i * MSS, MSS as u32, i * MSS, false, i);
    }
    b
}

#[test]
fn three_sacked_segments_above_make_a_loss() {
    let mut b = board(10);
    // Segment 0 lost; 1 and 2 SACKed: not yet lost (RFC 6675 IsLost needs > 2 * SMSS).
    assert_eq!(b.apply_sack(&[(101, 301)], 50), 200);
    assert_eq!(b.update_lost(MSS), 0);
    assert_eq!(b.pipe_bytes(), 800);
    assert_eq!(b.apply_sack(&[(101, 401)], 50), 100);
    assert_eq!(b.update_lost(MSS), 100);
    assert_eq!(b.pipe_bytes(), 1000 - 300 - 100);
    let s = b.next_lost().unwrap();
    assert_eq!(s.seq, 1);
    b.mark_retransmitted(100);
    assert_eq!(b.pipe_bytes(), 700);
    assert!(b.next_lost().is_none());
    // The retransmission fills the hole: cumulative ACK up to 401.
    assert_eq!(b.advance_una(401, 60), 400);
    assert_eq!(b.pipe_bytes(), 600);
    assert_eq!(b.sacked_bytes(), 0);
    assert_eq!(b.lost_bytes(), 0);
}

#[test]
fn retransmission_is_lost_once_a_later_sent_segment_is_delivered() {
    let mut b = board(10); // segment i sent at t = i
    b.apply_sack(&[(101, 401)], 50);
    b.update_lost(MSS);
    assert_eq!(b.next_lost().map(|s| s.seq), Some(1));
    b.mark_retransmitted(100);
    // Only segments sent before the retransmission were delivered: nothing to say.
    assert_eq!(b.detect_lost_retransmissions(), 0);
    assert_eq!(b.pipe_bytes(), 10 * MSS - 300 - 100 + 100);
    // New data sent at t = 150 is SACKed: the retransmission (t = 100) must have been lost.
    b.push(1 + 10 * MSS, MSS as u32, 10 * MSS, false, 150);
    b.apply_sack(&[(1 + 10 * MSS, 1 + 11 * MSS)], 200);
    assert_eq!(b.detect_lost_retransmissions(), 100);
    assert_eq!(b.next_lost().map(|s| s.seq), Some(1), "eligible again");
    b.mark_retransmitted(200);
    assert_eq!(b.detect_lost_retransmissions(), 0);
}

#[test]
fn rto_marks_everything_unsacked_lost() {
    let mut b = board(5);
    b.apply_sack(&[(301, 401)], 50);
    b.mark_all_lost();
    assert_eq!(b.pipe_bytes(), 0);
    let mut n = 0;
    while b.next_lost().is_some() {
        b.mark_retransmitted(100);
        n += 1;
    }
    assert_eq!(n, 4);
    assert_eq!(b.pipe_bytes(), 400);
    assert_eq!(b.advance_una(501, 60), 500);
    assert_eq!(b.pipe_bytes(), 0);
}

#[test]
fn rack_marks_a_hole_lost_once_rack_rtt_plus_reo_wnd_has_passed() {
    let mut b = board(10); // segment i sent at t = i
                           // Only segment 2 is SACKed, at t = 50: one SACK, far from DupThresh.
    b.apply_sack(&[(201, 301)], 50);
    assert_eq!(b.update_lost(MSS), 0, "RFC 6675 sees no loss");
    // RACK.rtt = 48 (segment 2); reo_wnd 10: segment 0 is lost at 0 + 48 + 10 = 58,
    // segment 1 at 59. Before that the caller gets the reordering timer.
    assert_eq!(b.rack_mark_lost(50, 10), (0, Some(58)));
    assert_eq!(b.rack_mark_lost(58, 10), (MSS, Some(59)));
    assert_eq!(b.rack_mark_lost(59, 10), (MSS, None));
    // Segments sent after segment 2 are not judged (nothing later was delivered).
    assert_eq!(b.lost_bytes(), 2 * MSS);
    assert_eq!(b.pipe_bytes(), 10 * MSS - MSS - 2 * MSS);
    assert_eq!(b.next_lost().map(|s| s.seq), Some(1));
}

#[test]
fn a_once_sent_segment_delivered_below_the_highest_sack_is_reordering() {
    let mut b = board(10);
    b.apply_sack(&[(301, 401)], 50);
    assert!(!b.reord_seen(), "a hole is not reordering");
    // Segment 1 (sent once) is SACKed after segment 3 was: it arrived out of order.
    b.apply_sack(&[(101, 201), (301, 401)], 51);
    assert!(b.reord_seen());
    // A retransmitted segment filling a hole is not evidence of reordering.
    let mut b = board(10);
    b.apply_sack(&[(201, 401)], 50);
    b.update_lost(MSS);
    b.mark_all_lost();
    assert_eq!(b.next_lost().map(|s| s.seq), Some(1));
    b.mark_retransmitted(60);
    b.advance_una(101, 70);
    assert!(!b.reord_seen());
    // ... but a cumulative ACK of a never-retransmitted segment below the highest SACK is.
    b.advance_una(201, 71);
    assert!(b.reord_seen());
}

#[test]
fn a_stored_segment_is_8_bytes_and_keeps_its_bits() {
    let mut b = Scoreboard::default();
    let seq = u64::MAX - 2000;
    b.push(seq, 500, 7, false, 1);
    b.push(seq + 500, 499, 507, true, 2);
    // The latest send time a slot keeps.
    b.probe_last(XMIT_LIMIT - 1);
    let s = b.with_dsn(b.get(1));
    assert_eq!(
        (s.seq, s.len, s.dsn, s.data_fin, s.ever_retx, s.xmit_ns),
        (seq + 500, 499, 507, true, true, XMIT_LIMIT - 1)
    );
    b.probe_last(9);
    let s = b.with_dsn(b.get(1));
    assert_eq!(
        (s.seq, s.len, s.dsn, s.data_fin, s.ever_retx, s.xmit_ns),
        (seq + 500, 499, 507, true, true, 9)
    );
    let s = b.with_dsn(b.get(0));
    assert_eq!(
        (s.seq, s.len, s.dsn, s.data_fin, s.ever_retx),
        (seq, 500, 7, false, false)
    );
    // One 8-byte word a segment (narrow), with every bit of state set and read back.
    let mut b = board(3);
    b.apply_sack(&[(101, 201)], 10);
    b.mark_all_lost();
    b.next_lost().unwrap();
    b.mark_retransmitted(11);
    assert!(!b.segs.is_wide());
    assert_eq!(b.segs.words().len(), 3);
    assert_eq!(std::mem::size_of_val(&b.segs.words()[0]), 8);
    let flags = |i| {
        let s = b.get(i);
        (s.flags, s.ever_retx, s.xmit_ns)
    };
    assert_eq!(flags(0), (LOST | RETX, true, 11));
    assert_eq!(flags(1), (SACKED, false, 1));
    assert_eq!(flags(2), (LOST, false, 2));
}

#[test]
fn dsns_survive_jumps_acks_and_a_fresh_flight() {
    // Segments of three mappings whose DSNs jump (as MPTCP hands them down), one of them
    // counting down (a lower DSN resent after higher ones).
    let mut b = Scoreboard::default();
    let segs = [
        (1, 100, 5000),
        (101, 100, 5100),
        (201, 100, 900),
        (301, 50, 1000),
        (351, 100, u64::MAX - 99),
    ];
    for &(seq, len, dsn) in &segs {
        b.push(seq, len, dsn, false, seq);
    }
    let dsns = |b: &Scoreboard| b.unsacked_mappings().collect::<Vec<_>>();
    let all: Vec<_> = segs
        .iter()
        .map(|&(_, len, dsn)| (dsn, len as u64))
        .collect();
    assert_eq!(dsns(&b), all);
    // Acknowledging past the first run drops it; the others keep their DSNs.
    b.advance_una(251, 400);
    assert_eq!(dsns(&b), all[2..]);
    b.advance_una(451, 500);
    assert!(dsns(&b).is_empty());
    // A new flight after everything was acknowledged starts its own run.
    b.push(451, 100, 77, false, 600);
    b.push(551, 100, 177, true, 601);
    assert_eq!(dsns(&b), vec![(77, 100), (177, 100)]);
}

#[test]
fn the_queue_gives_back_room_when_the_flight_shrinks() {
    let mut b = Scoreboard::default();
    for i in 0..4096u64 {
        b.push(1 + 10 * i, 10, 1 + 10 * i, false, i);
    }
    assert!(b.segs.capacity() >= 4096);
    // A flight of 100 segments is left: room for at most a quarter more than that is kept.
    b.advance_una(1 + 10 * (4096 - 100), 5000);
    assert_eq!(b.segs_out(), 100);
    assert!(b.segs.capacity() <= 125, "capacity {}", b.segs.capacity());
    assert_eq!(
        b.unsacked_mappings().next(),
        Some((1 + 10 * (4096 - 100), 10))
    );
}

#[test]
fn room_given_back_moves_the_flight_to_a_fresh_buffer() {
    // A shrink in place (`shrink_to`'s realloc) frees nothing under mimalloc when the block
    // would shrink by less than half: the flight must leave the old buffer for a new one.
    let mut b = Scoreboard::default();
    for i in 0..1000u64 {
        b.push(1 + 10 * i, 10, 1 + 10 * i, false, i);
    }
    let old_start = b.segs.words().as_slices().0.as_ptr() as usize;
    let old_end = old_start + b.segs.capacity() * std::mem::size_of::<u64>();
    b.advance_una(1 + 10 * 550, 2000);
    let (front, back) = b.segs.words().as_slices();
    assert!(back.is_empty());
    let new_start = front.as_ptr() as usize;
    assert!(
        new_start >= old_end || new_start + std::mem::size_of_val(front) <= old_start,
        "the flight stayed in the old buffer"
    );
    assert_eq!((b.segs_out(), b.segs.capacity()), (450, 562));
    assert_eq!(b.unsacked_mappings().next(), Some((1 + 10 * 550, 10)));
}

#[test]
fn a_flight_halved_by_a_loss_gives_back_room_and_one_that_dips_keeps_it() {
    // A congestion window of 1 000 segments halved (Reno's loss response): the room the full
    // window took is given back down to 1.25x the new flight; a dip to 70 % keeps its room (no
    // reallocation on every small change of the flight).
    let mut b = Scoreboard::default();
    for i in 0..1000u64 {
        b.push(1 + 10 * i, 10, 1 + 10 * i, false, i);
    }
    let full = b.segs.capacity();
    assert!(full >= 1000);
    b.advance_una(1 + 10 * 300, 2000);
    assert_eq!((b.segs_out(), b.segs.capacity()), (700, full));
    b.advance_una(1 + 10 * 550, 2001);
    assert_eq!(b.segs_out(), 450);
    assert!(b.segs.capacity() <= 562, "capacity {}", b.segs.capacity());
    // Sending on from there keeps the order and the DSNs.
    b.push(1 + 10 * 1000, 10, 1 + 10 * 1000, false, 3000);
    assert_eq!(b.unsacked_mappings().next(), Some((1 + 10 * 550, 10)));
    assert_eq!(b.segs_out(), 451);
}

#[test]
fn the_congestion_controls_rtt_comes_from_the_latest_segment_an_ack_delivers() {
    // Linux `ca_rtt_us`: a pure SACK gives a sample (from the latest-sent newly SACKed
    // segment), a cumulative ACK of retransmitted data gives none (Karn), one of first
    // transmissions gives the latest-sent one's RTT. Segment i is sent at t = i.
    let mut b = board(10);
    let mut src = CaRttSources::default();
    b.apply_sack_noting(&[(301, 601)], 50, &mut src);
    assert_eq!(
        src.ca_rtt(50),
        Some(50 - 5),
        "SACK of segments 3..5: the latest is 5"
    );
    b.update_lost(MSS);
    b.next_lost().unwrap();
    b.mark_retransmitted(60);
    // The retransmission of segment 0 arrives (1 and 2 are still out): cumulative ACK to 101.
    let mut src = CaRttSources::default();
    b.advance_una_noting(101, 80, &mut src);
    assert_eq!(src.ca_rtt(80), None, "retransmitted data acknowledged");
    // Segments 1 and 2 (first transmissions, sent at 1 and 2) and the SACKed 3..5.
    let mut src = CaRttSources::default();
    b.advance_una_noting(601, 90, &mut src);
    assert_eq!(src.ca_rtt(90), Some(90 - 2));
}

#[test]
#[should_panic(expected = "a run stays under 2^56 ns")]
fn a_send_time_past_56_bits_is_refused() {
    let mut b = Scoreboard::default();
    b.push(0, 100, 0, false, XMIT_LIMIT);
}

/// SACKs a random run of whole segments of the flight `una..next` (at least two segments),
/// leaving at least its first segment a hole.
fn sack_a_run_above_a_hole(
    b: &mut Scoreboard,
    una: u64,
    next: u64,
    t: u64,
    rand: &mut impl FnMut(u64) -> u64,
) {
    let segs = (next - una) / MSS;
    let first = 1 + rand(segs - 1);
    let last = first + 1 + rand(segs - first);
    b.apply_sack(&[(una + first * MSS, una + last * MSS)], t);
}

#[test]
fn nothing_to_judge_means_rack_marks_nothing_and_arms_no_timer() {
    // Random flights sent in bursts (segments of one burst share their send time, so RACK's
    // order often falls to the end sequence), with ACKs, SACKs (holes), RACK marking,
    // retransmissions and probes. Wherever `rack_nothing_to_judge` says so, `rack_mark_lost`
    // on a copy must mark nothing, arm no timer and leave its pointer, whatever the
    // reordering window. (Fails with the SACKed test dropped, or with the send time alone
    // compared.)
    let mut rand = super::slots_tests::rng(0x9e37_79b9_7f4a_7c15u64);
    let (mut said_nothing, mut judged_a_tie) = (0, 0);
    for _flight in 0..40 {
        let mut b = Scoreboard::default();
        // A retransmission delivered within 2 ns of its sending does not move RACK.
        b.set_min_rtt(2);
        let (mut una, mut next, mut t) = (1u64, 1u64, 0u64);
        for _step in 0..300 {
            match rand(7) {
                0 | 1 => {
                    for _ in 0..1 + rand(4) {
                        b.push(next, MSS as u32, next - 1, false, t);
                        next += MSS;
                    }
                }
                2 if next > una => {
                    una += MSS * rand((next - una) / MSS + 1);
                    b.advance_una(una, t);
                }
                3 if next > una + MSS => sack_a_run_above_a_hole(&mut b, una, next, t, &mut rand),
                4 => {
                    b.rack_mark_lost(t, rand(3));
                }
                5 => {
                    // A tail loss probe resends the last segment (above the pointer).
                    b.probe_last(t);
                }
                _ => {
                    if b.next_lost().is_some() {
                        b.mark_retransmitted(t);
                    }
                }
            }
            t += rand(3);
            let nothing = b.rack_nothing_to_judge();
            for reo_wnd_ns in [0, 1, 2, 1000] {
                let mut c = b.clone();
                let found = c.rack_mark_lost(t, reo_wnd_ns);
                if nothing {
                    assert_eq!(found, (0, None), "told nothing to judge");
                    // Nor does it move on (past SACKed segments).
                    assert_eq!(c.loss_ptr, b.loss_ptr, "told nothing to judge");
                }
            }
            said_nothing += u32::from(nothing);
            // A segment at the pointer sent with the latest delivered one, below it: judged.
            let idx = (b.loss_ptr - b.front_abs) as usize;
            if idx < b.segs.len() {
                let s = b.segs.get(idx);
                let tie = s.xmit_ns == b.rack_xmit_ns && s.seq < b.rack_end_seq;
                judged_a_tie += u32::from(tie && s.bits & SACKED == 0 && !nothing);
            }
        }
    }
    // Both answers occur, and ties in send time (bursts) among them.
    assert!(said_nothing > 1000, "{said_nothing}");
    assert!(judged_a_tie > 10, "{judged_a_tie}");
}

#[test]
fn rack_order_written_out_is_the_tuple_order() {
    // `rack::sent_before` replaced `(send time, end) < (send time, end)` on the ACK path: the
    // same order on every pair, ties of send time and of end included.
    let values = [0, 1, 2, 1 << 31, u64::MAX - 1, u64::MAX];
    for a0 in values {
        for a1 in values {
            for b0 in values {
                for b1 in values {
                    let (a, b) = ((a0, a1), (b0, b1));
                    assert_eq!(rack::sent_before(a, b), a < b, "{a:?} {b:?}");
                }
            }
        }
    }
}

#[test]
fn last_ackt_is_the_latest_send_time_of_the_acked_first_transmissions() {
    // `CaRttSources::note_ackt` keeps the last time noted, not the maximum: random sends (at
    // non-decreasing times, as the sender sends), SACKs, loss marking, retransmissions,
    // probes and RTOs, and before every cumulative ACK the expected `last_ackt` from what is
    // stored: the latest send time among the segments it covers that are neither SACKed nor
    // ever retransmitted (Linux `tcp_clean_rtx_queue`). Counts that ACKs covering several
    // such segments, and marked ones among them, occur.
    let mut rand = super::slots_tests::rng(0x2545_f491_4f6c_dd1du64);
    let (mut several, mut mixed) = (0, 0);
    for flight in 0..40 {
        let mut b = Scoreboard::default();
        b.set_min_rtt(2);
        let (mut una, mut next, mut t) = (1u64, 1u64, 1u64);
        for step in 0..400 {
            t += rand(3);
            match rand(10) {
                0..=2 => {
                    for _ in 0..1 + rand(4) {
                        b.push(next, MSS as u32, next, false, t);
                        next += MSS;
                        t += rand(2);
                    }
                }
                3 if next > una + MSS => sack_a_run_above_a_hole(&mut b, una, next, t, &mut rand),
                4 => {
                    b.rack_mark_lost(t, rand(3));
                }
                5 => {
                    b.update_lost(MSS);
                }
                6 if rand(4) == 0 => {
                    b.probe_last(t);
                }
                7 if rand(8) == 0 => {
                    t += 100 * rand(20);
                    b.mark_all_lost();
                }
                8 if b.next_lost().is_some() => b.mark_retransmitted(t),
                8 => {}
                _ if next > una => {
                    una += MSS * (1 + rand((next - una) / MSS));
                    let covered: Vec<_> = super::slots_tests::stored(&b)
                        .into_iter()
                        .filter(|s| s.0 + u64::from(s.1) <= una)
                        .collect();
                    let firsts: Vec<u64> = covered
                        .iter()
                        .filter(|s| s.4 & SACKED == 0 && !s.5)
                        .map(|s| s.3)
                        .collect();
                    several += u32::from(firsts.len() > 1);
                    mixed += u32::from(!firsts.is_empty() && firsts.len() < covered.len());
                    let mut src = CaRttSources::default();
                    b.advance_una_noting(una, t, &mut src);
                    assert_eq!(
                        src.last_ackt_ns,
                        firsts.iter().copied().max(),
                        "flight {flight} step {step}"
                    );
                    assert_eq!(
                        src.retx_acked,
                        covered.iter().any(|s| s.5),
                        "flight {flight} step {step}"
                    );
                }
                _ => {}
            }
        }
    }
    assert!(several > 500, "{several}");
    assert!(mixed > 100, "{mixed}");
}
