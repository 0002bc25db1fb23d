//! The scoreboard's segments as stored: 8 bytes a segment.
//!
//! A segment keeps its sequence number as a 27-bit offset from `seq_base` beside its five
//! state bits (the low 32 bits of its word), and its latest send time as a 32-bit offset in ns
//! from `time_base` (the high 32). Both bases are set when a flight starts from nothing
//! outstanding, and moved up when a value does not fit: the sequence base to the front
//! segment, the time base to the earliest stored send time (every slot rewritten; once per
//! ~4.29 s of sending or ~128 MiB sent, as a flight spans far less: Linux's receive window is
//! at most 6 MiB by default, `tcp_rmem`, and a flight's send times lie within a few RTTs). A
//! flight that does not fit even then (a window of 128 MiB or more; an RTO backed off for
//! seconds while older segments stay outstanding) moves the queue to its wide form, 16 bytes
//! a segment (the word holds the whole send time above the bits, and a second queue the
//! sequence numbers) until it fits again or empties, so what is read back is always what was
//! stored.

use std::collections::VecDeque;
use std::num::NonZeroU64;

/// A slot's state bits (the low bits of its word, narrow or wide).
const BITS_MASK: u64 = (1 << SEQ_SHIFT) - 1;
const SEQ_SHIFT: u32 = 5;
/// Narrow sequence offsets stay below this (27 bits beside the state bits).
pub(super) const SEQ_LIMIT: u64 = 1 << (32 - SEQ_SHIFT);
/// Send times stay below this (a wide word keeps the time above a byte of bits).
pub(super) const XMIT_LIMIT: u64 = 1 << 56;
/// A narrow queue's time base stays at or below this, so a time whose offset fits is below
/// [`XMIT_LIMIT`] (the fast paths need no test of their own).
const TIME_BASE_MAX: u64 = XMIT_LIMIT - (1 << 32);
/// A wide word's bits: the send time is above them.
const WIDE_SHIFT: u32 = 8;

/// A stored segment, decoded (its length is where the next one starts).
#[derive(Debug, Clone, Copy)]
pub(super) struct Slot {
    pub(super) seq: u64,
    pub(super) xmit_ns: u64,
    /// State, `EVER_RETX` and `DATA_FIN` bits (see `scoreboard.rs`).
    pub(super) bits: u8,
}

/// What the words' offsets count from, or the wide form's sequence numbers: 16 bytes (the
/// enum's tag is the time base's zero, which a time base plus one never is).
#[derive(Debug, Clone)]
enum Bases {
    Narrow {
        /// At or below the front segment's sequence number.
        seq_base: u64,
        /// The time base plus one: at or below every stored send time, at most
        /// [`TIME_BASE_MAX`].
        time_base_1: NonZeroU64,
    },
    /// Every segment's sequence number, in order (the words hold the send times and bits).
    /// Boxed: a pointer shares the bases' 16 bytes, a queue would not.
    #[allow(clippy::box_collection)]
    Wide(Box<VecDeque<u64>>),
}

impl Default for Bases {
    fn default() -> Self {
        Bases::Narrow {
            seq_base: 0,
            time_base_1: NonZeroU64::MIN,
        }
    }
}

/// The segments in sequence order (binary search by sequence number), a word each.
#[derive(Debug, Clone, Default)]
pub(super) struct Slots {
    /// Narrow: `(xmit_ns - time_base) << 32 | (seq - seq_base) << 5 | bits`. Wide:
    /// `xmit_ns << 8 | bits` (the sequence numbers in `bases`). The bits are the low ones
    /// either way.
    raw: VecDeque<u64>,
    bases: Bases,
}

/// A narrow word.
#[inline(always)]
fn narrow(seq_offset: u64, time_offset: u64, bits: u8) -> u64 {
    time_offset << 32 | seq_offset << SEQ_SHIFT | u64::from(bits)
}

/// A narrow word's sequence offset (from `seq_base`).
#[inline(always)]
fn narrow_seq_offset(word: u64) -> u64 {
    u64::from(word as u32 >> SEQ_SHIFT)
}

/// A narrow word decoded with its queue's bases.
#[inline(always)]
fn narrow_slot(word: u64, seq_base: u64, time_base: u64) -> Slot {
    Slot {
        seq: seq_base + narrow_seq_offset(word),
        xmit_ns: time_base + (word >> 32),
        bits: (word & BITS_MASK) as u8,
    }
}

impl Slots {
    #[inline(always)]
    pub(super) fn is_wide(&self) -> bool {
        matches!(self.bases, Bases::Wide(_))
    }
    #[inline(always)]
    pub(super) fn len(&self) -> usize {
        self.raw.len()
    }
    #[inline(always)]
    pub(super) fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }
    /// Room, in segments.
    #[inline(always)]
    pub(super) fn capacity(&self) -> usize {
        self.raw.capacity()
    }
    /// Makes room for `segments` in all (no effect when there is).
    pub(super) fn reserve(&mut self, segments: usize) {
        self.raw
            .reserve_exact(segments.saturating_sub(self.raw.len()));
    }
    /// Gives back room down to `keep` segments (at least the queue's length), in a fresh buffer.
    pub(super) fn give_back_room(&mut self, keep: usize) {
        crate::tcp::give_back_room(&mut self.raw, keep);
        if let Bases::Wide(seqs) = &mut self.bases {
            crate::tcp::give_back_room(seqs, keep);
        }
    }

    /// The queue's room, emptied (what it held is dropped): a finished connection's, for the
    /// next one's board ([`Slots::adopt_room`]).
    pub(super) fn take_room(&mut self) -> VecDeque<u64> {
        let mut raw = std::mem::take(&mut self.raw);
        raw.clear();
        raw
    }
    /// Takes `raw`, empty, as the room of this queue, which is empty and has none.
    pub(super) fn adopt_room(&mut self, raw: VecDeque<u64>) {
        debug_assert!(raw.is_empty() && self.raw.capacity() == 0);
        self.raw = raw;
    }

    /// Segment `i`.
    #[inline(always)]
    pub(super) fn get(&self, i: usize) -> Slot {
        let word = self.raw[i];
        match self.bases {
            Bases::Narrow {
                seq_base,
                time_base_1,
            } => narrow_slot(word, seq_base, time_base_1.get() - 1),
            Bases::Wide(_) => self.get_wide(i),
        }
    }
    #[cold]
    #[inline(never)]
    fn get_wide(&self, i: usize) -> Slot {
        let Bases::Wide(seqs) = &self.bases else {
            unreachable!("a wide queue has its sequence numbers")
        };
        Slot {
            seq: seqs[i],
            xmit_ns: self.raw[i] >> WIDE_SHIFT,
            bits: (self.raw[i] & BITS_MASK) as u8,
        }
    }
    /// The front segment.
    #[inline(always)]
    pub(super) fn front(&self) -> Option<Slot> {
        if self.raw.is_empty() {
            return None;
        }
        Some(self.get(0))
    }
    /// The narrow bases, (sequence, time), for [`Slots::pop_front_narrow_to`]; none while wide.
    #[inline(always)]
    pub(super) fn narrow_bases(&self) -> Option<(u64, u64)> {
        match self.bases {
            Bases::Narrow {
                seq_base,
                time_base_1,
            } => Some((seq_base, time_base_1.get() - 1)),
            Bases::Wide(_) => None,
        }
    }
    /// The front segment and its end (`end_seq` if it is the last) of a narrow queue whose
    /// [`Slots::narrow_bases`] are `bases`, taken off the queue if it ends at or below `ack`.
    /// The end is read first and the word taken by the pop (which reads it at the head
    /// as it is): one index wrap fewer than a front read, a read of the next and a pop.
    #[inline(always)]
    pub(super) fn pop_front_narrow_to(
        &mut self,
        bases: (u64, u64),
        end_seq: u64,
        ack: u64,
    ) -> Option<(Slot, u64)> {
        debug_assert!(!self.is_wide());
        let (seq_base, time_base) = bases;
        let end = match self.raw.get(1) {
            Some(&next) => seq_base + narrow_seq_offset(next),
            None if self.raw.is_empty() => return None,
            None => end_seq,
        };
        if end > ack {
            return None;
        }
        let word = self.raw.pop_front()?;
        Some((narrow_slot(word, seq_base, time_base), end))
    }
    /// Segment `i`'s sequence number.
    #[inline(always)]
    pub(super) fn seq(&self, i: usize) -> u64 {
        match &self.bases {
            Bases::Narrow { seq_base, .. } => seq_base + narrow_seq_offset(self.raw[i]),
            Bases::Wide(seqs) => seqs[i],
        }
    }
    /// Segment `i`'s bits (the low bits of its word in either form).
    #[inline(always)]
    pub(super) fn bits(&self, i: usize) -> u8 {
        (self.raw[i] & BITS_MASK) as u8
    }
    /// End of segment `i`: where the next one starts, or `end_seq` for the last.
    #[inline(always)]
    pub(super) fn end_of(&self, i: usize, end_seq: u64) -> u64 {
        if i + 1 < self.raw.len() {
            self.seq(i + 1)
        } else {
            end_seq
        }
    }
    #[inline(always)]
    pub(super) fn pop_front(&mut self) {
        self.raw.pop_front();
        if let Bases::Wide(seqs) = &mut self.bases {
            seqs.pop_front();
        }
    }
    /// How many leading segments start at or below `seq` (a partition point).
    pub(super) fn count_at_or_below(&self, seq: u64) -> usize {
        match &self.bases {
            Bases::Narrow { seq_base, .. } => {
                let Some(offset) = seq.checked_sub(*seq_base) else {
                    return 0;
                };
                self.raw
                    .partition_point(|&w| narrow_seq_offset(w) <= offset)
            }
            Bases::Wide(seqs) => seqs.partition_point(|&s| s <= seq),
        }
    }

    /// A queue with nothing in it starts its offsets from this flight: its first segment
    /// `seq`, sent at `now_ns`.
    pub(super) fn restart(&mut self, seq: u64, now_ns: u64) {
        debug_assert!(self.raw.is_empty());
        self.bases = Bases::Narrow {
            seq_base: seq,
            time_base_1: NonZeroU64::MIN.saturating_add(now_ns.min(TIME_BASE_MAX)),
        };
    }

    /// Appends a segment (above every stored one); `front_abs` is the front segment's absolute
    /// index (segments ever popped: paces the wide queue's tries to narrow again).
    #[inline(always)]
    pub(super) fn push(&mut self, seq: u64, xmit_ns: u64, bits: u8, front_abs: u64) {
        if let Bases::Narrow {
            seq_base,
            time_base_1,
        } = self.bases
        {
            let offset = seq.wrapping_sub(seq_base);
            let dt = (xmit_ns + 1).wrapping_sub(time_base_1.get());
            // Both fit: the offset under 2^27, the time offset under 2^32 (one compare).
            if (offset | dt >> SEQ_SHIFT) < SEQ_LIMIT {
                if self.raw.len() == self.raw.capacity() {
                    crate::tcp::grow_by_a_quarter(&mut self.raw);
                }
                self.raw.push_back(narrow(offset, dt, bits));
                return;
            }
        }
        self.push_slow(seq, xmit_ns, bits, front_abs);
    }
    /// [`Slots::push`] of a segment whose offsets do not fit, or onto a wide queue.
    #[cold]
    #[inline(never)]
    fn push_slow(&mut self, seq: u64, xmit_ns: u64, bits: u8, front_abs: u64) {
        assert!(xmit_ns < XMIT_LIMIT, "a run stays under 2^56 ns");
        let abs = front_abs + self.len() as u64;
        if !self.is_wide() {
            self.refit(seq, xmit_ns);
        } else if abs & ((self.len() as u64 + 1).next_power_of_two() - 1) == 0 {
            // At most one try in as many pushes as the queue holds: O(1) a push.
            self.try_narrow(seq, xmit_ns);
        }
        match &mut self.bases {
            Bases::Wide(seqs) => {
                if self.raw.len() == self.raw.capacity() {
                    crate::tcp::grow_by_a_quarter(&mut self.raw);
                }
                self.raw.push_back(xmit_ns << WIDE_SHIFT | u64::from(bits));
                seqs.push_back(seq);
            }
            Bases::Narrow { .. } => self.push(seq, xmit_ns, bits, front_abs),
        }
    }

    /// Stores segment `i`'s latest send time and its bits (its sequence number never changes).
    #[inline(always)]
    pub(super) fn set(&mut self, i: usize, xmit_ns: u64, bits: u8) {
        if let Bases::Narrow { time_base_1, .. } = self.bases {
            let dt = (xmit_ns + 1).wrapping_sub(time_base_1.get());
            if dt <= u64::from(u32::MAX) {
                let word = &mut self.raw[i];
                *word = dt << 32 | (*word & (u64::from(u32::MAX) & !BITS_MASK)) | u64::from(bits);
                return;
            }
        }
        self.set_slow(i, xmit_ns, bits);
    }
    /// [`Slots::set`] of a time that does not fit, or in a wide queue.
    #[cold]
    #[inline(never)]
    fn set_slow(&mut self, i: usize, xmit_ns: u64, bits: u8) {
        assert!(xmit_ns < XMIT_LIMIT, "a run stays under 2^56 ns");
        if !self.is_wide() {
            let last = self.seq(self.len() - 1);
            self.refit(last, xmit_ns);
        }
        if self.is_wide() {
            self.raw[i] = xmit_ns << WIDE_SHIFT | u64::from(bits);
        } else {
            self.set(i, xmit_ns, bits);
        }
    }

    /// The bases that fit every stored segment, a segment starting at `seq_hi` (at or above
    /// every stored one) and a send time `xmit_ns`, if there are: the front's sequence number,
    /// the earliest send time.
    fn fitting_bases(&self, seq_hi: u64, xmit_ns: u64) -> Option<(u64, u64)> {
        let seq_lo = self.front().map_or(seq_hi, |s| s.seq);
        let (mut t_lo, mut t_hi) = (xmit_ns, xmit_ns);
        for i in 0..self.len() {
            let t = self.get(i).xmit_ns;
            (t_lo, t_hi) = (t_lo.min(t), t_hi.max(t));
        }
        let time_base = t_lo.min(TIME_BASE_MAX);
        (seq_hi - seq_lo < SEQ_LIMIT && t_hi - time_base <= u64::from(u32::MAX))
            .then_some((seq_lo, time_base))
    }

    /// Every word rewritten narrow from these bases (each segment read before its word is).
    fn narrow_all(&mut self, seq_base: u64, time_base: u64) {
        for i in 0..self.len() {
            let s = self.get(i);
            self.raw[i] = narrow(s.seq - seq_base, s.xmit_ns - time_base, s.bits);
        }
        self.bases = Bases::Narrow {
            seq_base,
            time_base_1: NonZeroU64::MIN.saturating_add(time_base),
        };
    }

    /// The narrow queue moved to new bases, or to the wide form if none fit (see
    /// [`Slots::fitting_bases`]).
    fn refit(&mut self, seq_hi: u64, xmit_ns: u64) {
        if self.try_narrow(seq_hi, xmit_ns) {
            return;
        }
        let mut seqs = VecDeque::with_capacity(self.len() + self.len() / 4 + 1);
        for i in 0..self.len() {
            let s = self.get(i);
            seqs.push_back(s.seq);
            self.raw[i] = s.xmit_ns << WIDE_SHIFT | u64::from(s.bits);
        }
        self.bases = Bases::Wide(Box::new(seqs));
    }

    /// Narrow words from the bases that fit every segment, with one starting at `seq_hi` and
    /// sent at `xmit_ns`, if there are ([`Slots::fitting_bases`]): a wide queue back to
    /// narrow, or a narrow one moved to new bases. Returns whether they fit.
    fn try_narrow(&mut self, seq_hi: u64, xmit_ns: u64) -> bool {
        let fit = self.fitting_bases(seq_hi, xmit_ns);
        if let Some((seq_base, time_base)) = fit {
            self.narrow_all(seq_base, time_base);
        }
        fit.is_some()
    }

    /// The words as stored (tests: which form, which buffer).
    #[cfg(test)]
    pub(super) fn words(&self) -> &VecDeque<u64> {
        &self.raw
    }
}
