//! Sender-side record of transmitted segments: SACK scoreboard, loss marking and "pipe".
//!
//! RFC 6675 terms: a segment is SACKed, deemed lost (`IsLost`: more than
//! (DupThresh - 1) * SMSS bytes or DupThresh segments SACKed above it), retransmitted.
//! `pipe` uses Linux's bookkeeping (`tcp_packets_in_flight()`, in bytes):
//! outstanding - (SACKed + lost) + retransmitted-in-flight.
//!
//! Cost: segments live in a `VecDeque` in sequence order (binary search by sequence number),
//! 8 bytes each (`scoreboard_slots.rs`: a sequence offset beside the state bits, a send time
//! offset): a segment's length is where the next one starts (they are contiguous), and its
//! DSN is not stored per segment: consecutive segments
//! mostly carry consecutive data (one mapping handed down is cut into many segments; plain TCP
//! is one run for the whole connection), so the DSN comes from a short list of runs `(first
//! seq, its DSN)` that starts a new run only where the DSN jumps. The queue gives back room
//! once the flight is under two thirds of it, keeping a quarter more than the flight (a
//! slow-start overshoot would otherwise keep its peak for the whole connection, and a flight
//! halved by a loss twice its room); newly SACKed ranges are found against a merged
//! [`RangeSet`], so an ACK only touches the segments whose state changes. Loss marking and
//! the retransmission candidate are two forward pointers (absolute segment indices), so each
//! segment is visited O(1) times per episode.
//!
//! Lost retransmissions: RFC 6675 alone finds them only by RTO. Linux (RACK, RFC 8985, on by
//! default) marks a retransmission lost once a segment sent after it has been delivered; with
//! no reordering seen Linux uses a zero reordering window in recovery (`tcp_rack_reo_wnd`).
//! We keep that one RACK rule for retransmissions (a FIFO in send order, O(1) per ACK) and
//! keep DupThresh for first transmissions (what RACK reduces to with >= 3 SACKed segments),
//! unless the sender enables RACK-TLP, which uses [`Scoreboard::rack_mark_lost`] instead: first
//! transmissions are in send order too, so the same left-to-right pointer serves.

use super::fifo::InlineFifo;
use super::rangeset::RangeSet;
use slots::{Slot, Slots};
use std::collections::VecDeque;

/// RFC 6675 §2 DupThresh, also Linux's default `tp->reordering` (`TCP_FASTRETRANS_THRESH`).
pub const DUP_THRESH: u64 = 3;

const SACKED: u8 = 1;
const LOST: u8 = 2;
/// Retransmitted and the retransmission is presumed in flight.
const RETX: u8 = 4;
/// A [`Slot`]'s bits beside the state: retransmitted at least once, DATA_FIN (five in all).
const EVER_RETX: u8 = 8;
const DATA_FIN: u8 = 16;

/// Below this many slots the queue keeps whatever room it has (see [`Scoreboard::advance_una_noting`]).
const KEEP_SLOTS: usize = 64;

/// Room kept for retransmissions in flight between recovery episodes.
const KEEP_RETRANSMISSIONS: usize = 8;

impl Slot {
    /// The segment, which ends at `end`; its `dsn` is left 0 (the caller fills it when
    /// needed: [`Scoreboard::with_dsn`]).
    #[inline(always)]
    fn unpack(self, end: u64) -> SentSeg {
        let (seq, bits) = (self.seq, self.bits);
        SentSeg {
            seq,
            len: (end - seq) as u32,
            dsn: 0,
            data_fin: bits & DATA_FIN != 0,
            flags: bits & (SACKED | LOST | RETX),
            ever_retx: bits & EVER_RETX != 0,
            xmit_ns: self.xmit_ns,
        }
    }
}

/// One transmitted segment (a copy of the stored one, with its length).
#[derive(Debug, Clone, Copy)]
pub struct SentSeg {
    /// First subflow sequence number.
    pub seq: u64,
    /// Payload length, bytes.
    pub len: u32,
    /// DSN of the first byte.
    pub dsn: u64,
    /// Carries DATA_FIN.
    pub data_fin: bool,
    flags: u8,
    /// Retransmitted at least once (its delivery time is then ambiguous for RACK).
    ever_retx: bool,
    /// Time of the latest (re)transmission, ns.
    xmit_ns: u64,
}

/// The scoreboard. Invariant: `segs` are contiguous in sequence space starting at `snd_una`
/// and ending at `end_seq`.
#[derive(Debug, Clone, Default)]
pub struct Scoreboard {
    /// The segments, with the bases their offsets count from.
    segs: Slots,
    /// DSN runs `(seq, dsn)`: from `seq` on, segment DSNs follow sequence numbers (`dsn +
    /// (seq' - seq)`) until the next run. The first starts at or below `segs[0]`; empty when
    /// `segs` is. Almost always one run (the data follows the sequence numbers), kept inline
    /// (`tcp::fifo`).
    dsn_runs: InlineFifo<(u64, u64)>,
    /// DSN the next segment has if it continues the last run (a push compares this, without
    /// reading `dsn_runs`' buffer).
    next_dsn: u64,
    /// End of the last segment (the next one starts there).
    end_seq: u64,
    /// Absolute index of `segs[0]` (segments ever popped).
    front_abs: u64,
    sacked_ranges: RangeSet,
    out_bytes: u64,
    sacked_bytes: u64,
    /// SACKed segments, and those below the loss pointer: 32 bits, as the lost and
    /// retransmitted counts below (the scoreboard's size budget: `Slots` holds a time base).
    sacked_segs: u32,
    lost_bytes: u64,
    retx_bytes: u64,
    /// Segments deemed lost and not SACKed, and retransmitted ones outstanding (Linux
    /// `lost_out`, `retrans_out`: the window is counted in segments). 32 bits, as Linux's:
    /// 2^32 segments outstanding would take 32 GiB of slots.
    lost_segs: u32,
    retx_segs: u32,
    /// Segments below this absolute index have been judged by `IsLost` (lost or SACKed).
    loss_ptr: u64,
    sacked_below_ptr_bytes: u64,
    sacked_below_ptr_segs: u32,
    /// Next candidate for retransmission (absolute index).
    rtx_ptr: u64,
    /// Retransmissions in send order: (absolute index, send time).
    rtx_fifo: VecDeque<(u64, u64)>,
    /// RACK.xmit_ts: latest send time of a delivered, never-retransmitted segment.
    rack_xmit_ns: u64,
    /// RACK.end_seq: its end sequence number (breaks ties between equal send times).
    rack_end_seq: u64,
    /// RACK.rtt: RTT of that segment, ns.
    rack_rtt_ns: u64,
    /// Minimum RTT, ns: a retransmitted segment delivered sooner than this after its last
    /// transmission may have been the original (Linux `tcp_rack_advance`).
    min_rtt_ns: u64,
    /// End of the highest SACKed segment (Linux `tcp_highest_sack_seq`, "fack"); 0: none yet.
    fack: u64,
    /// Reordering was seen (Linux `tp->reord_seen`): a never-retransmitted segment below the
    /// highest SACKed one was delivered after it.
    reord_seen: bool,
    /// Outstanding segments shorter than `full_len` (see [`Scoreboard::short_segs`]).
    short_segs: u32,
    /// A full segment's length, bytes (the sender's MSS; 0: none counts as short). A u16, as
    /// Linux's `mss_cache`, so the counter fits beside `reord_seen` (the sender's size budget).
    full_len: u16,
}

impl Scoreboard {
    /// Makes room for `segments` outstanding segments in all (no effect when there is).
    pub fn reserve(&mut self, segments: usize) {
        self.segs.reserve(segments);
    }
    /// Linux `tcp_packets_in_flight()`: segments out, less SACKed and lost ones, plus
    /// retransmissions in flight (`pipe_bytes` counted in segments, whatever their size).
    #[inline]
    pub fn pipe_segs(&self) -> u64 {
        self.segs.len() as u64 + u64::from(self.retx_segs)
            - u64::from(self.sacked_segs)
            - u64::from(self.lost_segs)
    }

    /// Bytes sent and not cumulatively acknowledged.
    #[inline]
    pub fn outstanding_bytes(&self) -> u64 {
        self.out_bytes
    }
    /// Bytes SACKed above the cumulative ACK.
    #[cfg(test)]
    pub fn sacked_bytes(&self) -> u64 {
        self.sacked_bytes
    }
    /// Bytes deemed lost and not SACKed.
    #[inline]
    pub fn lost_bytes(&self) -> u64 {
        self.lost_bytes
    }
    /// RFC 6675 pipe (Linux `tcp_packets_in_flight()` in bytes).
    #[inline]
    pub fn pipe_bytes(&self) -> u64 {
        self.out_bytes + self.retx_bytes - self.sacked_bytes - self.lost_bytes
    }
    /// True when nothing is outstanding.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }

    /// Records a first transmission (appended at the right edge). Inline in the send path: a
    /// call there cost ~14 instructions a packet (benches/RESULTS.md, Session 16, perf17t).
    #[inline(always)]
    pub fn push(&mut self, seq: u64, len: u32, dsn: u64, data_fin: bool, now_ns: u64) {
        debug_assert!(self.segs.is_empty() || self.end_seq == seq);
        debug_assert!(len > 0);
        let end = seq + len as u64;
        let bits = if data_fin { DATA_FIN } else { 0 };
        if dsn != self.next_dsn || self.segs.is_empty() {
            if self.segs.is_empty() {
                // A flight from nothing outstanding: the offsets count from it.
                self.segs.restart(seq, now_ns);
            }
            self.new_run(seq, dsn);
        }
        self.next_dsn = dsn.wrapping_add(len as u64);
        self.segs.push(seq, now_ns, bits, self.front_abs);
        self.end_seq = end;
        self.out_bytes += len as u64;
        self.short_segs += self.is_short(len);
    }

    /// End of segment `i`: where the next one starts.
    #[inline(always)]
    fn end_of(&self, i: usize) -> u64 {
        self.segs.end_of(i, self.end_seq)
    }

    /// Segment `i` (index in `segs`), its `dsn` left 0 (most uses need only its state).
    #[inline(always)]
    fn get(&self, i: usize) -> SentSeg {
        self.segs.get(i).unpack(self.end_of(i))
    }

    /// Stores the state, `ever_retx` and send time of `s` back into segment `i`.
    #[inline]
    fn put(&mut self, i: usize, s: &SentSeg) {
        let bits = s.flags
            | if s.ever_retx { EVER_RETX } else { 0 }
            | if s.data_fin { DATA_FIN } else { 0 };
        // The sequence number never changes: only the send time and bits are written.
        self.segs.set(i, s.xmit_ns, bits);
    }

    /// Cumulative ACK up to `ack` (exclusive): drops covered segments, returns acked bytes,
    /// noting the RTT sources of the acknowledged segments.
    pub fn advance_una_noting(&mut self, ack: u64, now_ns: u64, src: &mut CaRttSources) -> u64 {
        // The form tested once, not at every covered segment: narrow, the loop decodes the
        // words with the bases in registers.
        let acked = match self.segs.narrow_bases() {
            Some(bases) => self.ack_covered(ack, now_ns, src, |slots, end_seq, ack| {
                slots.pop_front_narrow_to(bases, end_seq, ack)
            }),
            None => self.ack_covered_wide(ack, now_ns, src),
        };
        if self.dsn_runs.has_more_than_one() {
            let front = self.segs.front().map_or(u64::MAX, |s| s.seq);
            while self.dsn_runs.get(1).is_some_and(|r| r.0 <= front) {
                self.dsn_runs.pop_front();
            }
        }
        if self.segs.capacity() > KEEP_SLOTS && self.segs.len() * 3 < self.segs.capacity() * 2 {
            // Out of line: see `give_back_room` for the bounds.
            self.give_back_room();
        }
        self.loss_ptr = self.loss_ptr.max(self.front_abs);
        self.rtx_ptr = self.rtx_ptr.max(self.front_abs);
        if !self.rtx_fifo.is_empty() {
            self.drop_acked_retransmissions();
        }
        self.sacked_ranges.remove_below(ack);
        acked
    }

    /// [`Scoreboard::advance_una_noting`]'s loop over the covered segments, `pop_covered`
    /// taking the front segment off with its end while it ends at or below the ACK. Returns
    /// acked bytes.
    #[inline(always)]
    fn ack_covered(
        &mut self,
        ack: u64,
        now_ns: u64,
        src: &mut CaRttSources,
        pop_covered: impl Fn(&mut Slots, u64, u64) -> Option<(Slot, u64)>,
    ) -> u64 {
        let mut acked = 0;
        while let Some((front, end)) = pop_covered(&mut self.segs, self.end_seq, ack) {
            let abs = self.front_abs;
            self.front_abs += 1;
            let len = end - front.seq;
            acked += len;
            self.out_bytes -= len;
            // saturating: an MSS changed since the push would make the count approximate.
            self.short_segs = self.short_segs.saturating_sub(self.is_short(len as u32));
            // The slot's bits tested as stored, and the segment unpacked only for a marked one:
            // a `SentSeg` built for all was written out to the stack for the call (~12 stores).
            if front.bits & (SACKED | LOST | RETX | EVER_RETX) != 0 {
                // The slot in three values, not a `Slot` (passing the `Slot` measured +8
                // instructions a packet on e2e (1): the loop then keeps it on the stack).
                let slot = (front.seq, front.xmit_ns, front.bits);
                self.acked_marked(slot, end, abs, now_ns, src);
                continue;
            }
            // Sent once, neither SACKed, lost nor retransmitted (most segments): an RTT source,
            // and RACK's and reordering's evidence (`note_reordering`, `rack_advance` for a
            // segment never retransmitted).
            let xmit_ns = front.xmit_ns;
            src.note_ackt(xmit_ns);
            if end <= self.fack {
                self.reord_seen = true;
            }
            self.rack_advance_to(xmit_ns, end, now_ns);
        }
        acked
    }

    /// Applies SACK blocks; returns newly SACKed bytes, noting the RTT sources of the newly
    /// SACKed segments.
    #[inline(never)]
    pub fn apply_sack_noting(
        &mut self,
        blocks: &[(u64, u64)],
        now_ns: u64,
        src: &mut CaRttSources,
    ) -> u64 {
        let Some(lo) = self.segs.front().map(|s| s.seq) else {
            return 0;
        };
        let hi = self.end_seq;
        let mut newly = 0;
        let prior_fack = self.fack;
        for &(s, e) in blocks {
            let (s, e) = (s.max(lo), e.min(hi));
            if s >= e {
                continue;
            }
            // Split borrow: collect gaps first (at most a few per block), then mark.
            let mut gaps: [(u64, u64); 8] = [(0, 0); 8];
            let mut n = 0;
            let mut overflow = false;
            self.sacked_ranges.insert_with(s, e, |a, b| {
                if n < gaps.len() {
                    gaps[n] = (a, b);
                    n += 1;
                } else {
                    overflow = true;
                }
            });
            if overflow {
                // Pathological block pattern: mark the whole block (already SACKed segments
                // are skipped inside).
                newly += self.mark_sacked(s, e, now_ns, prior_fack, src);
            } else {
                for &(a, b) in &gaps[..n] {
                    newly += self.mark_sacked(a, b, now_ns, prior_fack, src);
                }
            }
        }
        newly
    }

    /// A segment leaving the scoreboard's lost and retransmitted counts (acknowledged or SACKed).
    #[inline(always)]
    fn uncount_marks(&mut self, flags: u8, len: u64) {
        if flags & LOST != 0 {
            self.lost_bytes -= len;
            self.lost_segs -= 1;
        }
        if flags & RETX != 0 {
            self.retx_bytes -= len;
            self.retx_segs -= 1;
        }
    }

    /// Linux `tcp_sacktag_one` / `tcp_clean_rtx_queue` feeding `tcp_check_sack_reordering`: a
    /// segment sent once and delivered below the highest segment SACKed before this ACK
    /// arrived out of order.
    fn note_reordering(&mut self, s: &SentSeg, prior_fack: u64) {
        if !s.ever_retx && s.seq + (s.len as u64) <= prior_fack {
            self.reord_seen = true;
        }
    }

    /// Reordering was seen on this subflow (RACK then keeps its reordering window in
    /// recovery and past DupThresh SACKs).
    pub fn reord_seen(&self) -> bool {
        self.reord_seen
    }

    fn mark_sacked(
        &mut self,
        start: u64,
        end: u64,
        now_ns: u64,
        prior_fack: u64,
        src: &mut CaRttSources,
    ) -> u64 {
        // First segment ending after `start`: the last one starting at or before it, unless
        // that one ends by `start` (only the last segment can: they are contiguous).
        let starting = self.segs.count_at_or_below(start);
        let mut i = starting.saturating_sub(1);
        if starting == self.segs.len() && self.end_seq <= start {
            i = starting;
        }
        let mut newly = 0;
        while i < self.segs.len() {
            let abs = self.front_abs + i as u64;
            let mut s = self.get(i);
            if s.seq >= end {
                break;
            }
            // Only whole segments count (our receivers SACK whole segments).
            if s.seq >= start && s.seq + s.len as u64 <= end && s.flags & SACKED == 0 {
                let len = s.len as u64;
                self.uncount_marks(s.flags, len);
                if !s.ever_retx {
                    // The highest newly SACKed one, as Linux walks them in sequence order
                    // (first transmissions: the latest sent).
                    src.last_sackt_ns = src.last_sackt_ns.max(Some(s.xmit_ns));
                }
                s.flags = SACKED;
                self.put(i, &s);
                self.note_reordering(&s, prior_fack);
                self.fack = self.fack.max(s.seq + len);
                self.rack_advance(&s, now_ns);
                self.sacked_bytes += len;
                self.sacked_segs += 1;
                newly += len;
                if abs < self.loss_ptr {
                    self.sacked_below_ptr_bytes += len;
                    self.sacked_below_ptr_segs += 1;
                }
            }
            i += 1;
        }
        newly
    }

    /// RFC 6675 `IsLost` applied from the left: marks every not-yet-judged segment that has
    /// enough SACKed data above it. Returns bytes newly marked lost.
    pub fn update_lost(&mut self, mss_bytes: u64) -> u64 {
        let mut newly = 0;
        loop {
            let idx = (self.loss_ptr - self.front_abs) as usize;
            if idx >= self.segs.len() {
                break;
            }
            let s = self.get(idx);
            if s.flags & SACKED != 0 {
                self.pass_sacked_at_ptr(&s);
                continue;
            }
            let above_bytes = self.sacked_bytes - self.sacked_below_ptr_bytes;
            let above_segs = u64::from(self.sacked_segs - self.sacked_below_ptr_segs);
            if above_bytes > (DUP_THRESH - 1) * mss_bytes || above_segs >= DUP_THRESH {
                newly += self.judge_lost_at_ptr(idx, s);
            } else {
                break;
            }
        }
        newly
    }

    /// The segment at the loss pointer is SACKed: it counts below the pointer, which steps past.
    #[inline]
    fn pass_sacked_at_ptr(&mut self, s: &SentSeg) {
        self.sacked_below_ptr_bytes += s.len as u64;
        self.sacked_below_ptr_segs += 1;
        self.loss_ptr += 1;
    }

    /// The segment at the loss pointer (slot `idx`, read as `s`) is judged lost: marked once,
    /// counted in bytes and in segments, and the pointer steps past it. Returns the bytes newly
    /// marked (0 if it was already lost).
    #[inline]
    fn judge_lost_at_ptr(&mut self, idx: usize, mut s: SentSeg) -> u64 {
        self.loss_ptr += 1;
        if s.flags & LOST != 0 {
            return 0;
        }
        s.flags |= LOST;
        self.put(idx, &s);
        let len = s.len as u64;
        self.lost_bytes += len;
        self.lost_segs += 1;
        len
    }

    /// Number of SACKed segments above the cumulative ACK.
    pub fn sacked_segs(&self) -> u64 {
        u64::from(self.sacked_segs)
    }

    /// Number of outstanding segments.
    pub fn segs_out(&self) -> usize {
        self.segs.len()
    }

    /// Tail-loss probe without new data: the highest outstanding segment, to be sent again.
    /// Its state is unchanged (it is not deemed lost); it only stops counting for RACK.
    pub fn probe_last(&mut self, now_ns: u64) -> Option<SentSeg> {
        let last = self.segs.len().checked_sub(1)?;
        let mut s = self.get(last);
        if s.flags & SACKED != 0 {
            return None;
        }
        s.ever_retx = true;
        s.xmit_ns = now_ns;
        self.put(last, &s);
        Some(self.with_dsn(s))
    }

    /// RFC 6675 NextSeg rule 1: the lowest lost, un-SACKed segment not yet retransmitted.
    pub fn next_lost(&mut self) -> Option<SentSeg> {
        while self.rtx_ptr < self.loss_ptr {
            let i = (self.rtx_ptr - self.front_abs) as usize;
            if self.segs.bits(i) & (SACKED | LOST | RETX) == LOST {
                return Some(self.with_dsn(self.get(i)));
            }
            self.rtx_ptr += 1;
        }
        None
    }

    /// Marks the segment returned by [`Scoreboard::next_lost`] as retransmitted at `now_ns`.
    pub fn mark_retransmitted(&mut self, now_ns: u64) {
        let i = (self.rtx_ptr - self.front_abs) as usize;
        let mut s = self.get(i);
        debug_assert_eq!(s.flags, LOST);
        s.flags |= RETX;
        s.ever_retx = true;
        s.xmit_ns = now_ns;
        self.put(i, &s);
        self.retx_bytes += s.len as u64;
        self.retx_segs += 1;
        self.rtx_fifo.push_back((self.rtx_ptr, now_ns));
        self.rtx_ptr += 1;
    }

    /// DSN ranges `(dsn, len)` of the outstanding, un-SACKed segments (for reinjection).
    pub fn unsacked_mappings(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        (0..self.segs.len())
            .filter(|&i| self.segs.bits(i) & SACKED == 0)
            .map(|i| {
                let s = self.with_dsn(self.get(i));
                (s.dsn, s.len as u64)
            })
    }
}

#[path = "scoreboard_slots.rs"]
mod slots;

#[path = "scoreboard_upkeep.rs"]
mod upkeep;

#[path = "scoreboard_room.rs"]
mod room;

#[path = "scoreboard_rack.rs"]
mod rack;

#[path = "scoreboard_rto.rs"]
mod rto;

#[path = "scoreboard_skbs.rs"]
mod skbs;
pub use rack::CaRttSources;

#[cfg(test)]
#[path = "scoreboard_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "scoreboard_slots_tests.rs"]
mod slots_tests;
