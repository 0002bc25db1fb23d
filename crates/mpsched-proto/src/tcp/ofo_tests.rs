//! The out-of-order queue's runs against a queue of one entry a segment.

use super::*;
use proptest::prelude::*;

const MSS: u64 = 1448;

fn seg(seq: u64, dsn: u64, len: u32, data_fin: bool) -> Ooo {
    Ooo {
        seq,
        dsn,
        len,
        data_fin,
    }
}

/// The queue as it was before runs: segments sorted by `seq`, one refused where a queued one
/// starts.
#[derive(Default)]
struct Model(Vec<Ooo>);

impl Model {
    fn offer(&mut self, o: Ooo) -> bool {
        match self.0.binary_search_by_key(&o.seq, |m| m.seq) {
            Ok(_) => false,
            Err(at) => {
                self.0.insert(at, o);
                true
            }
        }
    }

    fn pop_front_by(&mut self, seq: u64) -> Option<Ooo> {
        (self.0.first()?.seq <= seq).then(|| self.0.remove(0))
    }
}

/// Offers `segs` in order to a queue based at `rcv_nxt`, checking each answer against the
/// model; returns the queue.
fn offered(segs: &[Ooo], rcv_nxt: u64) -> (OfoQueue, Model) {
    let (mut q, mut m) = (OfoQueue::default(), Model::default());
    for &o in segs {
        assert_eq!(q.offer(o, rcv_nxt, MSS), m.offer(o), "{o:?}");
        assert_eq!(q.segments(), m.0);
    }
    (q, m)
}

/// Pops everything, checking each segment against the model.
fn drain(mut q: OfoQueue, mut m: Model) {
    while let Some(o) = m.pop_front_by(u64::MAX) {
        assert_eq!(q.pop_front_by(u64::MAX), Some(o));
    }
    assert!(q.is_empty() && q.pop_front_by(u64::MAX).is_none());
}

/// `n` full segments from `seq`, contiguous in sequence number and in DSN.
fn window(seq: u64, dsn: u64, n: u64) -> Vec<Ooo> {
    (0..n)
        .map(|k| seg(seq + k * MSS, dsn + k * MSS, MSS as u32, false))
        .collect()
}

#[test]
fn a_window_behind_a_hole_is_one_run_and_comes_out_a_segment_at_a_time() {
    let mut segs = window(2449, 7_000, 100);
    // A short last segment with DATA_FIN ends the run.
    segs.push(seg(2449 + 100 * MSS, 7_000 + 100 * MSS, 500, true));
    let (q, _) = offered(&segs, 1001);
    assert_eq!(q.entries(), 1);
    assert!(!q.is_wide());
    // Nothing continues a run past its DATA_FIN, nor past a short segment.
    let after = seg(
        2449 + 100 * MSS + 500,
        7_000 + 100 * MSS + 500,
        MSS as u32,
        false,
    );
    let (mut q, mut m) = offered(&[segs.clone(), vec![after]].concat(), 1001);
    assert_eq!(q.entries(), 2);
    let mut short = window(900_000, 900_000, 2);
    short[0].len = 1000;
    short[1].seq = 901_000;
    short[1].dsn = 901_000;
    for o in short {
        assert!(q.offer(o, 1001, MSS) && m.offer(o));
    }
    assert_eq!(q.entries(), 4);
    assert_eq!(q.segments(), m.0);
    // Popped up to a point: only segments starting at or below it.
    assert_eq!(q.pop_front_by(2448), None);
    assert_eq!(q.pop_front_by(2449), m.pop_front_by(2449));
    assert_eq!(q.pop_front_by(2449), None);
    assert_eq!(q.pop_front_by(2449 + MSS), m.pop_front_by(2449 + MSS));
    drain(q, m);
}

#[test]
fn a_dsn_jump_or_a_gap_starts_a_new_run() {
    let mut segs = window(5_000, 50_000, 10);
    for o in &mut segs[5..] {
        o.dsn += 100_000;
    }
    let mut later = window(5_000 + 12 * MSS, 50_000 + 12 * MSS, 3);
    later[0].dsn -= 40_000; // a DSN below the mapping's: a signed distance
    segs.append(&mut later);
    let (q, m) = offered(&segs, 4_000);
    // [0, 5), [5, 10) by the DSN jump, [12] by its own DSN, [13, 15) after it.
    assert_eq!(q.entries(), 4);
    drain(q, m);
}

#[test]
fn a_segment_between_two_starts_of_a_run_splits_it() {
    let segs = window(10_000, 10_000, 10);
    let (mut q, mut m) = offered(&segs, 9_000);
    // Overlapping the fourth segment's second half and the fifth's first: queued between them.
    let mid = seg(
        10_000 + 3 * MSS + 700,
        10_000 + 3 * MSS + 700,
        MSS as u32,
        false,
    );
    assert!(q.offer(mid, 9_000, MSS) && m.offer(mid));
    assert_eq!(q.entries(), 3);
    assert_eq!(q.segments(), m.0);
    // Starts of the split run's segments are still known: duplicates on both sides.
    for k in [0, 3, 4, 9] {
        let dup = seg(10_000 + k * MSS, 1, 7, false);
        assert!(!q.offer(dup, 9_000, MSS) && !m.offer(dup));
    }
    assert!(!q.offer(mid, 9_000, MSS));
    // The same start with another DSN or length is still a duplicate; another start is not.
    let other = seg(10_000 + 9 * MSS + 1, 3, 10, true);
    assert!(q.offer(other, 9_000, MSS) && m.offer(other));
    assert_eq!(q.segments(), m.0);
    drain(q, m);
}

#[test]
fn a_segment_that_fills_a_gap_joins_the_runs_around_it() {
    let all = window(3_000, 80_000, 11);
    // Segments 1-4 and 6-10, then 5 (appended to the first run, joining the second), then 0
    // (starting the run).
    let order = [1, 2, 3, 4, 6, 7, 8, 9, 10, 5, 0];
    let segs: Vec<Ooo> = order.iter().map(|&i| all[i]).collect();
    let (q, m) = offered(&segs[..9], 2_000);
    assert_eq!(q.entries(), 2);
    let (q, m) = {
        let (mut q, mut m) = (q, m);
        for &o in &segs[9..] {
            assert!(q.offer(o, 2_000, MSS) && m.offer(o));
        }
        (q, m)
    };
    assert_eq!(q.entries(), 1);
    assert_eq!(q.segments(), all);
    drain(q, m);
    // A last segment with DATA_FIN may not join the run behind it, nor a short one.
    let mut fin = all.clone();
    fin[5].data_fin = true;
    let (q, _) = offered(&[&fin[..5], &fin[6..], &fin[5..6]].concat(), 2_000);
    assert_eq!(q.entries(), 2);
}

#[test]
fn segments_that_do_not_fit_a_run_widen_the_queue_until_it_empties() {
    assert_eq!(std::mem::size_of::<Run>(), 12);
    let rcv_nxt = 1000;
    let ooo = |seq: u64, len: u32| seg(seq, seq * 3, len, seq.is_multiple_of(2));
    // Runs, then one that goes first, then one 4 GiB above the base.
    let segs = [
        ooo(5000, 100),
        ooo(9000, 100),
        ooo(2000, 100),
        ooo(rcv_nxt + (1 << 32), 10),
    ];
    let (q, m) = offered(&segs, rcv_nxt);
    assert!(q.is_wide());
    assert_eq!(q.entries(), 4);
    drain(q, m);
    // Longer than the MSS: one run could not say where its segments end.
    let window_then_long = [
        window(2000, 2000, 3),
        vec![seg(2000 + 3 * MSS, 2000 + 3 * MSS, MSS as u32 + 1, true)],
    ]
    .concat();
    let (mut q, m) = offered(&window_then_long, rcv_nxt);
    assert!(q.is_wide());
    assert_eq!(q.entries(), 4);
    // Still wide for what follows, read back as stored.
    let o = seg(3000, 3000, 8, false);
    assert!(q.offer(o, rcv_nxt, MSS));
    let mut m = m;
    m.offer(o);
    drain(q, m);
    // Empty again: runs again.
    let (q, _) = offered(&window(1 << 41, 5, 3), 1 << 41);
    assert!(!q.is_wide());
    assert_eq!(q.entries(), 1);
}

#[test]
fn dsns_2_gib_either_side_of_the_mapping_fit_and_farther_ones_widen() {
    // The first segment's mapping puts DSN 10_000 at the base (rcv_nxt 1000, seq 2000,
    // DSN 11_000): DSNs within 2^31 - 1 above and 2^31 below it are packed, as MPTCP's
    // jumps between mappings make them; one farther either way widens the queue, and every
    // segment reads back as stored.
    let rcv_nxt = 1000;
    let dsn_base: u64 = 10_000;
    let at = |seq: u64, dsn: u64| seg(seq, dsn, 100, false);
    for (dsn, wide) in [
        (dsn_base + (1 << 31) - 1, false),
        (dsn_base - 10_000, false),
        (dsn_base.wrapping_sub(1 << 31), false),
        (dsn_base + (1 << 31), true),
        (dsn_base.wrapping_sub((1 << 31) + 1), true),
    ] {
        let (q, m) = offered(
            &[at(2000, 11_000), at(3000, dsn), at(1500, 10_500)],
            rcv_nxt,
        );
        assert_eq!(q.is_wide(), wide, "{dsn}");
        drain(q, m);
    }
}

#[test]
fn runs_at_the_edges_of_the_offsets_read_back_exactly() {
    // A run whose segments reach 4 GiB above the base, or a DSN 2 GiB above the mapping's:
    // the two segments below the edge are one run, the third widens the queue.
    let base = 1u64 << 50;
    let anchor = seg(base + 100, 1_000_100, 100, false);
    let dsn_base = 1_000_000;
    for (seq, dsn) in [
        (base + (1 << 32) - 2 * MSS, dsn_base),
        (base + 10_000, dsn_base + (1 << 31) - 1 - MSS),
    ] {
        let segs = [vec![anchor], window(seq, dsn, 3)].concat();
        let (q, m) = offered(&segs[..3], base);
        assert_eq!(q.entries(), 2);
        assert!(!q.is_wide());
        let (q2, m2) = offered(&segs, base);
        assert!(q2.is_wide());
        drain(q, m);
        drain(q2, m2);
    }
}

proptest! {
    /// Any offers and pops: the runs answer and hold exactly what a queue of one entry a
    /// segment does. Segments on a grid of the MSS or 700 bytes after a grid point, full or
    /// 700 or 748 bytes long (so short segments meet contiguous ones), sometimes at any
    /// offset and length (partial overlaps), longer than the MSS, with DATA_FIN, or with a
    /// DSN jump.
    #[test]
    fn runs_behave_as_a_queue_of_segments(
        ops in proptest::collection::vec(
            (0u64..40, 0u8..8, 0u32..1448, 0u8..40, 0u8..20, any::<u16>(), 0u8..8),
            1..200,
        ),
    ) {
        let rcv_nxt = 1000;
        let (mut q, mut m) = (OfoQueue::default(), Model::default());
        for (slot, shift, off, kind, jump, dsn_jump, pop) in ops {
            if pop == 0 {
                let upto = rcv_nxt + slot * MSS + u64::from(off);
                prop_assert_eq!(q.pop_front_by(upto), m.pop_front_by(upto));
            } else {
                let shift = match shift {
                    0 => u64::from(off),
                    1 | 2 => 700,
                    _ => 0,
                };
                let seq = rcv_nxt + 1 + slot * MSS + shift;
                let len = match kind {
                    0 => 1 + off,
                    1 => MSS as u32 + 1 + off,
                    2..=5 => 700,
                    6..=9 => MSS as u32 - 700,
                    _ => MSS as u32,
                };
                let dsn = seq + 5_000 + if jump == 0 { u64::from(dsn_jump) * 1_000 } else { 0 };
                let o = seg(seq, dsn, len, kind == 10 || (kind == 0 && jump < 5));
                prop_assert_eq!(q.offer(o, rcv_nxt, MSS), m.offer(o));
            }
            prop_assert_eq!(q.segments(), m.0.clone());
            prop_assert_eq!(q.is_empty(), m.0.is_empty());
        }
        while let Some(o) = m.pop_front_by(u64::MAX) {
            prop_assert_eq!(q.pop_front_by(u64::MAX), Some(o));
        }
        prop_assert!(q.is_empty());
    }
}
