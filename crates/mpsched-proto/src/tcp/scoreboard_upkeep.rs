//! The scoreboard's upkeep: the cumulative ACK of a marked segment (out of the ACK loop), DSN
//! runs (a segment's DSN is not stored per segment) and giving back room a past flight or
//! recovery episode left (see the module doc of `scoreboard.rs`).

use super::{CaRttSources, Scoreboard, SentSeg, Slot, KEEP_RETRANSMISSIONS, KEEP_SLOTS, SACKED};

impl Scoreboard {
    /// [`Scoreboard::advance_una_noting`] for a segment SACKed, lost or ever retransmitted
    /// (absolute index `abs`): out of line, so the loop over the others keeps few values live.
    #[cold]
    #[inline(never)]
    pub(super) fn acked_marked(
        &mut self,
        (seq, xmit_ns, bits): (u64, u64, u8),
        end: u64,
        abs: u64,
        now_ns: u64,
        src: &mut CaRttSources,
    ) {
        let s = &Slot { seq, xmit_ns, bits }.unpack(end);
        let len = s.len as u64;
        src.retx_acked |= s.ever_retx;
        if s.flags & SACKED != 0 {
            self.sacked_bytes -= len;
            self.sacked_segs -= 1;
            if abs < self.loss_ptr {
                self.sacked_below_ptr_bytes -= len;
                self.sacked_below_ptr_segs -= 1;
            }
            return;
        }
        if !s.ever_retx {
            src.note_ackt(s.xmit_ns);
        }
        self.uncount_marks(s.flags, len);
        self.note_reordering(s, self.fack);
        self.rack_advance(s, now_ns);
    }

    /// [`Scoreboard::advance_una_noting`]'s loop on a wide queue (out of line: rare).
    #[cold]
    #[inline(never)]
    pub(super) fn ack_covered_wide(
        &mut self,
        ack: u64,
        now_ns: u64,
        src: &mut CaRttSources,
    ) -> u64 {
        self.ack_covered(ack, now_ns, src, |slots, end_seq, ack| {
            let front = slots.front()?;
            let end = slots.end_of(0, end_seq);
            if end > ack {
                return None;
            }
            slots.pop_front();
            Some((front, end))
        })
    }

    /// Segment `seq` starts a DSN run (a jump in the data, or a flight from nothing
    /// outstanding, whose runs are all gone).
    #[inline(never)]
    pub(super) fn new_run(&mut self, seq: u64, dsn: u64) {
        if self.segs.is_empty() {
            self.dsn_runs.clear();
        }
        self.dsn_runs.push_back((seq, dsn));
    }

    /// Entries of heap room the DSN runs hold (tests of `tcp::fifo`).
    #[cfg(test)]
    pub(crate) fn dsn_runs_heap_entries(&self) -> usize {
        self.dsn_runs.heap_capacity()
    }

    /// `s` with its DSN (from the run it falls in).
    pub(super) fn with_dsn(&self, mut s: SentSeg) -> SentSeg {
        let runs = &self.dsn_runs;
        let (run_seq, run_dsn) = if !runs.has_more_than_one() {
            *runs.front().expect("a segment lies in a run")
        } else {
            *runs
                .get(runs.partition_point(|r| r.0 <= s.seq) - 1)
                .expect("a segment lies in a run")
        };
        s.dsn = run_dsn.wrapping_add(s.seq - run_seq);
        s
    }

    /// The flight is under two thirds of the queue's room: keep a quarter more than the flight
    /// (the peak of a slow start would otherwise stay reserved for the whole connection), in a
    /// fresh buffer, not by `shrink_to`, whose realloc mimalloc ignores for a shrink by less
    /// than half. Under glibc (half, 1.5x; benches/RESULTS.md Session 9, perf17m) tighter
    /// bounds fragmented its heap more than they saved; under mimalloc with a real free, half /
    /// 1.5x -> two thirds / 1.25x saves ~2 MB more at 10 000 flows and three quarters / 1.125x
    /// nothing more (Session 14, perf17m2).
    #[inline(never)]
    pub(super) fn give_back_room(&mut self) {
        let keep = (self.segs.len() + self.segs.len() / 4).max(KEEP_SLOTS);
        self.segs.give_back_room(keep);
    }

    /// Forgets retransmissions below the cumulative ACK (in recovery only, so out of line),
    /// and gives back the room of an episode whose retransmissions are all acknowledged.
    #[inline(never)]
    pub(super) fn drop_acked_retransmissions(&mut self) {
        while self
            .rtx_fifo
            .front()
            .is_some_and(|&(abs, _)| abs < self.front_abs)
        {
            self.rtx_fifo.pop_front();
        }
        if self.rtx_fifo.is_empty() && self.rtx_fifo.capacity() > KEEP_RETRANSMISSIONS {
            crate::tcp::give_back_room(&mut self.rtx_fifo, KEEP_RETRANSMISSIONS);
        }
    }
}
