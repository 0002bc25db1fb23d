//! The receiver's queue of out-of-order segments, sorted by `seq`, kept as runs of segments
//! contiguous in sequence space and in DSN, 12 bytes a run.
//!
//! At a shared bottleneck most receivers hold a window behind a hole at some time, and the
//! peak of the run is then when the queues are longest. A window behind one hole is mostly one
//! run: segments each starting where the one before ended, in sequence number and in DSN, all
//! `seg_bytes` long (the MSS) but the last. A run stores its first segment's sequence number as
//! a 32-bit offset from `base` (the cumulative ACK point when the queue last started from
//! empty: every queued segment lies above it), its bytes in 31 bits beside the DATA_FIN bit
//! (which belongs to its last segment), and its first DSN as a signed 32-bit distance from
//! `dsn_base` (the DSN the first queued segment's mapping gives the base; MPTCP's other
//! subflows make a subflow's DSNs jump either way, so the distance is signed). Its segments
//! are read back from these: segment `k` starts `k * seg_bytes` after the first, in sequence
//! number and in DSN. So the queue costs bytes per hole, not per segment, and every segment
//! boundary is kept: the receiver counts a segment that starts where a queued one starts as a
//! duplicate, and releases the queue one segment at a time (the MPTCP data receiver measures
//! the bytes read per release, `rcv_space_adjust`).
//!
//! A segment that does not fit (4 GiB or more above the base, longer than `seg_bytes`, a DSN
//! 2 GiB or more from `dsn_base`) moves the queue to plain 24-byte segments until it empties,
//! so what is read back is always what was stored.

use std::collections::VecDeque;

/// An out-of-order segment waiting for the hole below it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Ooo {
    pub(super) seq: u64,
    pub(super) dsn: u64,
    pub(super) len: u32,
    pub(super) data_fin: bool,
}

const DATA_FIN: u32 = 1 << 31;

/// Segments contiguous in sequence number and DSN, all `seg_bytes` long but the last (1 to
/// `seg_bytes`): the first's `seq - base`, the run's bytes and its last segment's DATA_FIN
/// bit, the first's `dsn - dsn_base`.
#[derive(Debug, Clone, Copy)]
struct Run {
    offset: u32,
    len_fin: u32,
    dsn_offset: i32,
}

impl Run {
    fn bytes(self) -> u32 {
        self.len_fin & !DATA_FIN
    }

    fn data_fin(self) -> bool {
        self.len_fin & DATA_FIN != 0
    }
}

/// The queue (arrivals behind a hole come in order, so an insert mostly lengthens the last
/// run). Boxed while it holds segments and nothing otherwise: a flow is mostly in order, and
/// the receiver stays within its size budget.
#[derive(Debug, Clone, Default)]
pub(super) struct OfoQueue(Option<Box<Queue>>);

#[derive(Debug, Clone, Default)]
struct Queue {
    base: u64,
    dsn_base: u64,
    /// The length of every segment of a run but its last (the receiver's MSS).
    seg_bytes: u32,
    runs: VecDeque<Run>,
    /// The queue, one entry a segment, while a segment does not fit a run (`runs` is then
    /// empty); empty otherwise.
    wide: VecDeque<Ooo>,
}

impl Queue {
    fn seq(&self, r: Run) -> u64 {
        self.base + u64::from(r.offset)
    }

    fn dsn(&self, r: Run) -> u64 {
        self.dsn_base.wrapping_add(i64::from(r.dsn_offset) as u64)
    }

    /// Where the last segment of `r` starts, bytes after its first.
    fn last_start(&self, r: Run) -> u32 {
        (r.bytes() - 1) / self.seg_bytes * self.seg_bytes
    }

    /// The run's first segment.
    fn first(&self, r: Run) -> Ooo {
        let only = r.bytes() <= self.seg_bytes;
        Ooo {
            seq: self.seq(r),
            dsn: self.dsn(r),
            len: r.bytes().min(self.seg_bytes),
            data_fin: only && r.data_fin(),
        }
    }

    /// The run of `o` alone, if it fits.
    fn pack(&self, o: Ooo) -> Option<Run> {
        let offset = u32::try_from(o.seq.checked_sub(self.base)?).ok()?;
        let dsn_offset = i32::try_from(o.dsn.wrapping_sub(self.dsn_base) as i64).ok()?;
        (o.len <= self.seg_bytes).then_some(Run {
            offset,
            len_fin: o.len | if o.data_fin { DATA_FIN } else { 0 },
            dsn_offset,
        })
    }

    /// The part of `r` from `skip` bytes on (a multiple of `seg_bytes` below its bytes): its
    /// first segment was stored as one that fits, so the part fits.
    fn tail(r: Run, skip: u32) -> Run {
        Run {
            offset: r.offset + skip,
            len_fin: r.len_fin - skip,
            dsn_offset: r.dsn_offset.wrapping_add(skip as i32),
        }
    }

    /// True when `n` starts `l` bytes after `p`, in sequence number and in DSN.
    fn starts_after(n: Run, p: Run, l: u32) -> bool {
        u64::from(n.offset) == u64::from(p.offset) + u64::from(l)
            && i64::from(n.dsn_offset) == i64::from(p.dsn_offset) + i64::from(l)
    }

    /// True when `p` is one full segment without DATA_FIN (`l` bytes) that `n` continues.
    fn leads_into(p: Run, n: Run, l: u32) -> bool {
        p.len_fin == l && Self::starts_after(n, p, l)
    }

    fn insert_run(&mut self, at: usize, r: Run) {
        if self.runs.len() == self.runs.capacity() {
            super::grow_by_a_quarter(&mut self.runs);
        }
        self.runs.insert(at, r);
    }

    /// [`OfoQueue::offer`] on runs; `p` is the offered segment's own run.
    fn offer_run(&mut self, p: Run) -> bool {
        let l = self.seg_bytes;
        // Runs starting at or below `o`: arrivals behind a hole come in order, so mostly all.
        let at = match self.runs.back() {
            Some(&r) if r.offset <= p.offset => self.runs.len(),
            _ => self.runs.partition_point(|r| r.offset <= p.offset),
        };
        if at > 0 {
            let r = self.runs[at - 1];
            let into = p.offset - r.offset;
            if into <= self.last_start(r) {
                if into.is_multiple_of(l) {
                    // A queued segment starts there.
                    return false;
                }
                // Between two of the run's segments (overlapping the first): split the run
                // there and put `o` between its parts.
                let skip = (into / l + 1) * l;
                self.runs[at - 1].len_fin = skip;
                self.insert_run(at, p);
                self.insert_run(at + 1, Self::tail(r, skip));
                return true;
            }
            // After the run's last segment: `o` continues it if it starts at its end in
            // sequence number and DSN, the last segment is a full one, and no DATA_FIN ends it.
            let bytes = r.bytes();
            if Self::starts_after(p, r, bytes)
                && bytes.is_multiple_of(l)
                && !r.data_fin()
                && bytes < DATA_FIN - p.bytes()
            {
                let grown = bytes + p.len_fin;
                self.runs[at - 1].len_fin = grown;
                // `o` may fill the gap to the next run exactly: join the two.
                if let Some(&n) = self.runs.get(at) {
                    if Self::leads_into(p, n, l) && n.bytes() < DATA_FIN - grown {
                        self.runs[at - 1].len_fin = grown + n.len_fin;
                        self.runs.remove(at);
                    }
                }
                return true;
            }
        }
        // Before the next run: `o` starts it if it is a full segment that ends where the run
        // starts, in sequence number and DSN.
        if let Some(n) = self.runs.get_mut(at) {
            if Self::leads_into(p, *n, l) && n.bytes() < DATA_FIN - l {
                n.offset = p.offset;
                n.dsn_offset = p.dsn_offset;
                n.len_fin += l;
                return true;
            }
        }
        self.insert_run(at, p);
        true
    }

    /// [`OfoQueue::offer`] on plain segments.
    fn offer_wide(&mut self, o: Ooo) -> bool {
        match self.wide.binary_search_by_key(&o.seq, |w| w.seq) {
            Ok(_) => false,
            Err(at) => {
                if self.wide.len() == self.wide.capacity() {
                    super::grow_by_a_quarter(&mut self.wide);
                }
                self.wide.insert(at, o);
                true
            }
        }
    }

    /// Moves the runs' segments to the plain queue.
    #[cold]
    fn widen(&mut self) {
        let mut all = VecDeque::new();
        for &r in &self.runs {
            let mut r = r;
            loop {
                all.push_back(self.first(r));
                if r.bytes() <= self.seg_bytes {
                    break;
                }
                r = Self::tail(r, self.seg_bytes);
            }
        }
        self.runs = VecDeque::new();
        self.wide = all;
    }
}

impl OfoQueue {
    pub(super) fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// Queues `o` in `seq` order unless a queued segment starts at `o.seq` (then false, and
    /// nothing changes). `rcv_nxt`, the cumulative ACK point, is below every queued segment
    /// and becomes the base of a queue that was empty; `mss_bytes` is then the length of the
    /// segments its runs hold. (Out of line: inlined, the out-of-order path took registers
    /// from the receiver's in-order path.)
    #[inline(never)]
    pub(super) fn offer(&mut self, o: Ooo, rcv_nxt: u64, mss_bytes: u64) -> bool {
        let q = self.0.get_or_insert_with(|| {
            Box::new(Queue {
                base: rcv_nxt,
                // Where the first segment's mapping puts the base: segments of one mapping
                // then keep their sequence offset as their DSN offset.
                dsn_base: o.dsn.wrapping_sub(o.seq.wrapping_sub(rcv_nxt)),
                seg_bytes: mss_bytes.clamp(1, u64::from(DATA_FIN - 1)) as u32,
                ..Queue::default()
            })
        });
        if q.wide.is_empty() {
            if let Some(p) = q.pack(o) {
                return q.offer_run(p);
            }
            q.widen();
        }
        q.offer_wide(o)
    }

    /// Takes the first queued segment if it starts at or below `seq`.
    #[inline]
    pub(super) fn pop_front_by(&mut self, seq: u64) -> Option<Ooo> {
        let q = self.0.as_mut()?;
        let front = if let Some(&r) = q.runs.front() {
            let o = q.first(r);
            if o.seq > seq {
                return None;
            }
            if r.bytes() <= q.seg_bytes {
                q.runs.pop_front();
            } else {
                q.runs[0] = Queue::tail(r, q.seg_bytes);
            }
            o
        } else {
            let o = *q.wide.front()?;
            if o.seq > seq {
                return None;
            }
            q.wide.pop_front();
            o
        };
        if q.runs.is_empty() && q.wide.is_empty() {
            // The episode is over: give its room back (a flow is mostly in order).
            self.0 = None;
        }
        Some(front)
    }

    /// The queued segments, in order.
    #[cfg(test)]
    fn segments(&self) -> Vec<Ooo> {
        let Some(q) = &self.0 else {
            return Vec::new();
        };
        if !q.wide.is_empty() {
            return q.wide.iter().copied().collect();
        }
        let mut c = q.clone();
        c.widen();
        c.wide.into_iter().collect()
    }

    /// Entries stored: runs, or segments while wide.
    #[cfg(test)]
    fn entries(&self) -> usize {
        self.0.as_ref().map_or(0, |q| q.runs.len() + q.wide.len())
    }

    #[cfg(test)]
    fn is_wide(&self) -> bool {
        self.0.as_ref().is_some_and(|q| !q.wide.is_empty())
    }
}

#[cfg(test)]
#[path = "ofo_tests.rs"]
mod tests;
