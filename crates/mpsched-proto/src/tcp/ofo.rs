//! The receiver's queue of out-of-order segments, sorted by `seq`, in 12 bytes a segment.
//!
//! At a shared bottleneck most receivers hold a window behind a hole at some time, and the
//! peak of the run is then when the queues are longest. A queued segment keeps its sequence
//! number as a 32-bit offset from `base` (the cumulative ACK point when the queue last started
//! from empty: every queued segment lies above it), its length in 31 bits beside the
//! DATA_FIN bit, and its DSN as a signed 32-bit distance from `dsn_base` (the DSN the first
//! queued segment's mapping gives the base; MPTCP's other subflows make a subflow's DSNs jump
//! either way, so the distance is signed). A segment that does not fit (4 GiB or more above
//! the base, a 2 GiB length, a DSN 2 GiB or more from `dsn_base`) moves the queue to plain
//! 24-byte entries until it empties, so what is read back is always what was stored.

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

/// An [`Ooo`] as stored: `seq - base`, length and DATA_FIN bit, `dsn - dsn_base`.
#[derive(Debug, Clone, Copy)]
struct Packed {
    offset: u32,
    len_fin: u32,
    dsn_offset: i32,
}

/// The queue (arrivals behind a hole come in order, so an insert is mostly a push at the
/// back). Boxed while it holds segments and nothing otherwise: a flow is mostly in order, and
/// the receiver stays within its size budget.
#[derive(Debug, Clone, Default)]
pub(super) struct OfoQueue(Option<Box<Queue>>);

#[derive(Debug, Clone, Default)]
struct Queue {
    base: u64,
    dsn_base: u64,
    packed: VecDeque<Packed>,
    /// The queue while a segment does not fit `Packed` (`packed` is then empty); empty
    /// otherwise.
    wide: VecDeque<Ooo>,
}

impl Queue {
    fn unpack(&self, p: Packed) -> Ooo {
        let (len, data_fin) = (p.len_fin & !DATA_FIN, p.len_fin & DATA_FIN != 0);
        Ooo {
            seq: self.base + u64::from(p.offset),
            dsn: self.dsn_base.wrapping_add(i64::from(p.dsn_offset) as u64),
            len,
            data_fin,
        }
    }

    fn get(&self, index: usize) -> Option<Ooo> {
        if self.wide.is_empty() {
            self.packed.get(index).map(|&p| self.unpack(p))
        } else {
            self.wide.get(index).copied()
        }
    }

    fn len(&self) -> usize {
        self.packed.len() + self.wide.len()
    }

    /// Moves the packed entries to the plain queue.
    #[cold]
    fn widen(&mut self) {
        let all: VecDeque<Ooo> = self.packed.iter().map(|&p| self.unpack(p)).collect();
        self.packed = VecDeque::new();
        self.wide = all;
    }
}

impl OfoQueue {
    pub(super) fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    pub(super) fn front(&self) -> Option<Ooo> {
        self.0.as_ref()?.get(0)
    }

    pub(super) fn back_seq(&self) -> Option<u64> {
        let q = self.0.as_ref()?;
        if q.wide.is_empty() {
            q.packed.back().map(|p| q.base + u64::from(p.offset))
        } else {
            q.wide.back().map(|o| o.seq)
        }
    }

    /// Where a segment starting at `seq` goes (`Err`), or the queued one that starts there.
    /// (Out of line, as `insert`: inlined, the out-of-order path took registers from the
    /// receiver's in-order path.)
    #[inline(never)]
    pub(super) fn search(&self, seq: u64) -> Result<usize, usize> {
        match &self.0 {
            None => Err(0),
            Some(q) if !q.wide.is_empty() => q.wide.binary_search_by_key(&seq, |o| o.seq),
            // Every queued segment is at or above the base; one below it goes first.
            Some(q) if seq < q.base => Err(0),
            Some(q) => q
                .packed
                .binary_search_by_key(&(seq - q.base), |p| u64::from(p.offset)),
        }
    }

    pub(super) fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |q| q.len())
    }

    /// Puts `o` at `index` (from [`OfoQueue::search`]); `rcv_nxt`, the cumulative ACK point,
    /// is below every queued segment and becomes the base of a queue that was empty.
    #[inline(never)]
    pub(super) fn insert(&mut self, index: usize, o: Ooo, rcv_nxt: u64) {
        let q = self.0.get_or_insert_with(|| {
            Box::new(Queue {
                base: rcv_nxt,
                // Where the first segment's mapping puts the base: segments of one mapping
                // then keep their sequence offset as their DSN offset.
                dsn_base: o.dsn.wrapping_sub(o.seq.wrapping_sub(rcv_nxt)),
                ..Queue::default()
            })
        });
        let offset = o
            .seq
            .checked_sub(q.base)
            .and_then(|d| u32::try_from(d).ok());
        let dsn_offset = i32::try_from(o.dsn.wrapping_sub(q.dsn_base) as i64).ok();
        match (offset, dsn_offset) {
            (Some(offset), Some(dsn_offset)) if q.wide.is_empty() && o.len < DATA_FIN => {
                let p = Packed {
                    offset,
                    len_fin: o.len | if o.data_fin { DATA_FIN } else { 0 },
                    dsn_offset,
                };
                if q.packed.len() == q.packed.capacity() {
                    super::grow_by_a_quarter(&mut q.packed);
                }
                q.packed.insert(index, p);
            }
            _ => {
                if q.wide.is_empty() {
                    q.widen();
                }
                if q.wide.len() == q.wide.capacity() {
                    super::grow_by_a_quarter(&mut q.wide);
                }
                q.wide.insert(index, o);
            }
        }
    }

    pub(super) fn pop_front(&mut self) {
        if let Some(q) = &mut self.0 {
            if q.wide.is_empty() {
                q.packed.pop_front();
            } else {
                q.wide.pop_front();
            }
            if q.len() == 0 {
                // The episode is over: give its room back (a flow is mostly in order).
                self.0 = None;
            }
        }
    }

    #[cfg(test)]
    fn get(&self, index: usize) -> Option<Ooo> {
        self.0.as_ref()?.get(index)
    }

    #[cfg(test)]
    fn is_wide(&self) -> bool {
        self.0.as_ref().is_some_and(|q| !q.wide.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_that_do_not_fit_12_bytes_widen_the_queue_until_it_empties() {
        assert_eq!(std::mem::size_of::<Packed>(), 12);
        let ooo = |seq: u64, len: u32| Ooo {
            seq,
            dsn: seq * 3,
            len,
            data_fin: seq.is_multiple_of(2),
        };
        let mut q = OfoQueue::default();
        let mut expected = Vec::new();
        let rcv_nxt = 1000;
        // In order, then one that goes first, then one 4 GiB above the base, then a 2 GiB one.
        for o in [
            ooo(5000, 100),
            ooo(9000, 100),
            ooo(2000, 100),
            ooo(rcv_nxt + (1 << 32), 10),
        ] {
            let at = q.search(o.seq).unwrap_err();
            q.insert(at, o, rcv_nxt);
            expected.insert(at, o);
            assert_eq!(q.len(), expected.len());
            assert_eq!(
                (0..q.len()).map(|i| q.get(i).unwrap()).collect::<Vec<_>>(),
                expected
            );
        }
        assert!(q.is_wide());
        assert_eq!(q.search(9000), Ok(2));
        assert_eq!(q.back_seq(), Some(rcv_nxt + (1 << 32)));
        for o in expected {
            assert_eq!(q.front(), Some(o));
            q.pop_front();
        }
        assert!(q.is_empty() && !q.is_wide());
        let big = Ooo {
            len: DATA_FIN,
            ..ooo(1 << 40, 0)
        };
        q.insert(0, big, 1 << 40);
        assert!(q.is_wide());
        assert_eq!(q.front(), Some(big));
        q.pop_front();
        q.insert(0, ooo(1 << 41, 1448), 1 << 41);
        assert!(!q.is_wide());
        assert_eq!(q.front(), Some(ooo(1 << 41, 1448)));
    }

    #[test]
    fn dsns_2_gib_either_side_of_the_mapping_fit_and_farther_ones_widen() {
        // The first segment's mapping puts DSN 10_000 at the base (rcv_nxt 1000, seq 2000,
        // DSN 11_000): DSNs within 2^31 - 1 above and 2^31 below it are packed, as MPTCP's
        // jumps between mappings make them; one farther either way widens the queue, and every
        // segment reads back as stored.
        let rcv_nxt = 1000;
        let dsn_base: u64 = 10_000;
        let at = |seq: u64, dsn: u64| Ooo {
            seq,
            dsn,
            len: 100,
            data_fin: false,
        };
        for (dsn, wide) in [
            (dsn_base + (1 << 31) - 1, false),
            (dsn_base - 10_000, false),
            (dsn_base.wrapping_sub(1 << 31), false),
            (dsn_base + (1 << 31), true),
            (dsn_base.wrapping_sub((1 << 31) + 1), true),
        ] {
            let mut q = OfoQueue::default();
            let first = at(2000, 11_000);
            q.insert(0, first, rcv_nxt);
            let second = at(3000, dsn);
            let i = q.search(second.seq).unwrap_err();
            q.insert(i, second, rcv_nxt);
            let third = at(1500, 10_500);
            q.insert(0, third, rcv_nxt);
            assert_eq!(q.is_wide(), wide, "{dsn}");
            assert_eq!(
                (0..3).map(|i| q.get(i).unwrap()).collect::<Vec<_>>(),
                vec![third, first, second],
                "{dsn}"
            );
        }
    }
}
