//! The scoreboard's storage upkeep: DSN runs (a segment's DSN is not stored per segment) and
//! giving back room a past flight or recovery episode left (see the module doc of
//! `scoreboard.rs`).

use super::{Scoreboard, SentSeg, KEEP_RETRANSMISSIONS, KEEP_SLOTS};

impl Scoreboard {
    /// Segment `seq` starts a DSN run (a jump in the data, or a flight from nothing
    /// outstanding, whose runs are all gone and whose offsets start from it).
    #[inline(never)]
    pub(super) fn new_run(&mut self, seq: u64, dsn: u64) {
        if self.segs.is_empty() {
            self.dsn_runs.clear();
            self.seq_base = seq;
        }
        self.dsn_runs.push_back((seq, dsn));
    }

    /// Segment `seq` lies 4 GiB or more above the offsets' base: the base moves up to the
    /// front segment (every offset shifted down by as much; once per ~4 GiB a subflow sends).
    /// A flight of 4 GiB or more has no base that fits and is refused (Linux's window is at
    /// most 2^30 bytes, RFC 7323 §2.3, so its flights stay far below).
    #[cold]
    #[inline(never)]
    pub(super) fn rebase(&mut self, seq: u64) {
        let shift = self.segs.front().map_or(0, |s| s.offset);
        for s in self.segs.iter_mut() {
            s.offset -= shift;
        }
        self.seq_base += shift as u64;
        assert!(
            seq - self.seq_base <= u32::MAX as u64,
            "a subflow's flight stays under 4 GiB"
        );
    }

    /// `s` with its DSN (from the run it falls in).
    pub(super) fn with_dsn(&self, mut s: SentSeg) -> SentSeg {
        let runs = &self.dsn_runs;
        let (run_seq, run_dsn) = if runs.len() == 1 {
            runs[0]
        } else {
            runs[runs.partition_point(|r| r.0 <= s.seq) - 1]
        };
        s.dsn = run_dsn.wrapping_add(s.seq - run_seq);
        s
    }

    /// The flight is under half the queue's room: keep one and a half times the flight (the
    /// peak of a slow start would otherwise stay reserved for the whole connection). Tighter
    /// bounds measured worse at 10 000 flows (room kept at 1.125x, given back under 2/3: the
    /// heap fragments more than the room saves); looser ones keep up to 4x a flight a loss
    /// halved (benches/RESULTS.md, Session 9, perf17m).
    #[inline(never)]
    pub(super) fn give_back_room(&mut self) {
        self.segs
            .shrink_to((self.segs.len() + self.segs.len() / 2).max(KEEP_SLOTS));
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
            self.rtx_fifo.shrink_to(KEEP_RETRANSMISSIONS);
        }
    }
}
