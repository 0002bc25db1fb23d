//! A first-in first-out queue that keeps its first entry inline and only the entries behind it
//! on the heap, giving that room back when they are gone.
//!
//! Per flow, three small queues hold one entry almost all the time: the sender's queue of DSN
//! mappings (a bulk writer's data merges into one mapping), the scoreboard's DSN runs (one
//! while the data follows the sequence numbers) and the receiver's released data (one mapping
//! per in-order segment, read and cleared in the same call). As a `VecDeque` / `Vec` each kept
//! a 64- or 96-byte block for the connection's life (issue 17: ~0.25 KB a long flow at 100 000
//! flows, benches/RESULTS.md Session 15, perf17a). Here the first entry is a field; a second
//! one spills the rest into a boxed `VecDeque`, freed (a real free, see
//! [`crate::tcp::give_back_room`]) as soon as the queue is back to one entry or none.

use std::collections::VecDeque;

/// See the module doc. Invariant: `rest` is `None` or non-empty, and `None` when `head` is.
#[derive(Debug, Clone)]
pub(crate) struct InlineFifo<T> {
    head: Option<T>,
    // Boxed on purpose: 8 bytes in the owning struct (a `VecDeque` is 32) for a spill that
    // almost never happens.
    #[allow(clippy::box_collection)]
    rest: Option<Box<VecDeque<T>>>,
}

impl<T> Default for InlineFifo<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> InlineFifo<T> {
    /// An empty queue; allocates nothing.
    pub(crate) const fn new() -> Self {
        Self {
            head: None,
            rest: None,
        }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        usize::from(self.head.is_some()) + self.rest.as_ref().map_or(0, |r| r.len())
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.head.is_none()
    }

    /// Holds more than one entry (the rest is on the heap).
    #[inline]
    pub(crate) fn has_more_than_one(&self) -> bool {
        self.rest.is_some()
    }

    #[inline]
    pub(crate) fn push_back(&mut self, x: T) {
        if self.head.is_none() {
            self.head = Some(x);
        } else {
            self.spill(x);
        }
    }

    /// A second entry or more: behind the head, on the heap.
    #[cold]
    #[inline(never)]
    fn spill(&mut self, x: T) {
        self.rest.get_or_insert_with(Box::default).push_back(x);
    }

    #[inline]
    pub(crate) fn pop_front(&mut self) -> Option<T> {
        let h = self.head.take()?;
        if self.rest.is_some() {
            self.refill_head();
        }
        Some(h)
    }

    /// The head was taken: the next entry moves up, and an emptied rest is freed.
    #[cold]
    #[inline(never)]
    fn refill_head(&mut self) {
        if let Some(r) = self.rest.as_mut() {
            self.head = r.pop_front();
            if r.is_empty() {
                self.rest = None;
            }
        }
    }

    #[inline]
    pub(crate) fn front(&self) -> Option<&T> {
        self.head.as_ref()
    }

    #[inline]
    pub(crate) fn front_mut(&mut self) -> Option<&mut T> {
        self.head.as_mut()
    }

    #[inline]
    pub(crate) fn back_mut(&mut self) -> Option<&mut T> {
        match self.rest.as_mut() {
            Some(r) => r.back_mut(),
            None => self.head.as_mut(),
        }
    }

    /// Entry `i` from the front.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> Option<&T> {
        if i == 0 {
            self.head.as_ref()
        } else {
            self.rest.as_ref()?.get(i - 1)
        }
    }

    /// The number of entries from the front for which `pred` holds (the queue must be
    /// partitioned by it, as for `slice::partition_point`).
    pub(crate) fn partition_point(&self, mut pred: impl FnMut(&T) -> bool) -> usize {
        match (&self.head, &self.rest) {
            (Some(h), _) if !pred(h) => 0,
            (Some(_), Some(r)) => 1 + r.partition_point(pred),
            (Some(_), None) => 1,
            (None, _) => 0,
        }
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.head
            .iter()
            .chain(self.rest.iter().flat_map(|r| r.iter()))
    }

    /// Empties the queue and frees its heap room, if any.
    #[inline]
    pub(crate) fn clear(&mut self) {
        self.head = None;
        self.rest = None;
    }

    /// The entries taken out in order, the queue left empty with no heap room.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = T> {
        let head = self.head.take();
        let rest = self.rest.take();
        head.into_iter()
            .chain(rest.into_iter().flat_map(|r| r.into_iter()))
    }

    /// Entries of room on the heap (tests): 0 while the queue holds one entry or none.
    #[cfg(test)]
    pub(crate) fn heap_capacity(&self) -> usize {
        self.rest.as_ref().map_or(0, |r| r.capacity())
    }
}

#[cfg(test)]
mod tests {
    use super::InlineFifo;
    use std::collections::VecDeque;

    #[test]
    fn one_entry_stays_inline_and_a_second_spills() {
        let mut q = InlineFifo::new();
        assert_eq!(q.heap_capacity(), 0);
        q.push_back((1u64, 10u64));
        assert_eq!(q.heap_capacity(), 0, "one entry allocates nothing");
        assert!(!q.has_more_than_one());
        q.push_back((2, 20));
        assert!(q.heap_capacity() > 0, "a second entry goes to the heap");
        assert_eq!(q.len(), 2);
        assert_eq!(q.get(1), Some(&(2, 20)));
        assert_eq!(q.pop_front(), Some((1, 10)));
        assert_eq!(
            q.heap_capacity(),
            0,
            "back to one entry, the heap room is freed"
        );
        assert_eq!(q.front(), Some(&(2, 20)));
        assert_eq!(q.pop_front(), Some((2, 20)));
        assert!(q.is_empty());
        assert_eq!(q.pop_front(), None);
    }

    #[test]
    fn clear_and_drain_free_the_heap_room() {
        let mut q = InlineFifo::new();
        for i in 0..10u64 {
            q.push_back(i);
        }
        assert!(q.heap_capacity() >= 9);
        q.clear();
        assert!(q.is_empty());
        assert_eq!(q.heap_capacity(), 0);
        for i in 0..5u64 {
            q.push_back(i);
        }
        assert_eq!(q.drain().collect::<Vec<_>>(), vec![0, 1, 2, 3, 4]);
        assert!(q.is_empty());
        assert_eq!(q.heap_capacity(), 0);
    }

    /// Random pushes, pops, back edits, clears and searches against a `VecDeque`.
    #[test]
    fn behaves_as_a_vecdeque() {
        let mut q = InlineFifo::new();
        let mut model: VecDeque<u64> = VecDeque::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = 0u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            match x % 11 {
                0..=4 => {
                    next += 1 + x % 3;
                    q.push_back(next);
                    model.push_back(next);
                }
                5..=7 => assert_eq!(q.pop_front(), model.pop_front()),
                8 => {
                    // Kept sorted, so `partition_point` has a partition to find.
                    if let (Some(a), Some(b)) = (q.back_mut(), model.back_mut()) {
                        *a += 1;
                        *b += 1;
                        next = next.max(*b);
                    }
                    if model.len() == 1 {
                        let (a, b) = (q.front_mut().unwrap(), model.front_mut().unwrap());
                        *a += 1;
                        *b += 1;
                        next = next.max(*b);
                    }
                }
                9 => {
                    if x.is_multiple_of(7) {
                        q.clear();
                        model.clear();
                    }
                }
                _ => {
                    let probe = next.saturating_sub(x % 8);
                    assert_eq!(
                        q.partition_point(|&v| v <= probe),
                        model.partition_point(|&v| v <= probe)
                    );
                }
            }
            assert_eq!(q.len(), model.len());
            assert_eq!(q.is_empty(), model.is_empty());
            assert_eq!(q.has_more_than_one(), model.len() > 1);
            assert_eq!(q.front(), model.front());
            assert!(q.iter().eq(model.iter()));
            for i in 0..model.len().min(3) {
                assert_eq!(q.get(i), model.get(i));
            }
            if model.len() <= 1 {
                assert_eq!(q.heap_capacity(), 0);
            }
        }
    }

    /// The sender's queue of mappings and the scoreboard's DSN runs: one entry stays inline, a
    /// second (data after a gap, as MPTCP maps it) goes to the heap, and the room is freed
    /// once the first is sent (the queue) or acknowledged (the runs).
    #[test]
    fn a_senders_queue_and_dsn_runs_spill_only_beyond_one_entry() {
        use crate::tcp::{flags, Segment, Sender, TcpConfig};
        let mss = TcpConfig::default().mss_bytes;
        let mut s = Sender::established(TcpConfig::default(), crate::cc::build("reno").unwrap());
        s.queue(0, 3 * mss, false);
        s.queue(3 * mss, 2 * mss, false);
        assert_eq!(
            s.queue_heap_entries(),
            0,
            "contiguous data merges into one mapping"
        );
        s.queue(100 * mss, mss, false);
        assert!(s.queue_heap_entries() > 0, "a second mapping spills");
        let queued: Vec<_> = s.unsent_mappings().collect();
        assert_eq!(queued, vec![(0, 5 * mss), (100 * mss, mss)]);
        let dsns: Vec<u64> = (0..5).map(|_| s.poll_transmit(0).unwrap().dsn).collect();
        assert_eq!(dsns, vec![0, mss, 2 * mss, 3 * mss, 4 * mss]);
        assert_eq!(
            s.queue_heap_entries(),
            0,
            "the first mapping sent, the room is freed"
        );
        assert_eq!(
            s.unsent_mappings().collect::<Vec<_>>(),
            vec![(100 * mss, mss)]
        );
        assert_eq!(s.dsn_runs_heap_entries(), 0, "one DSN run so far");
        assert_eq!(s.poll_transmit(0).unwrap().dsn, 100 * mss);
        assert!(
            s.dsn_runs_heap_entries() > 0,
            "the jump starts a second run"
        );
        let ack = Segment {
            flags: flags::ACK,
            ack: 1 + 5 * mss,
            ..Default::default()
        };
        s.handle_segment(1_000_000, &ack);
        assert_eq!(
            s.dsn_runs_heap_entries(),
            0,
            "the first run acknowledged and freed"
        );
        let left: Vec<_> = s.unacked_mappings().collect();
        assert_eq!(left, vec![(100 * mss, mss)]);
    }

    /// The receiver's released data: an in-order segment's one entry stays inline; a filled
    /// hole releases several, on the heap until the owner clears them.
    #[test]
    fn a_receivers_released_data_spills_only_for_a_filled_hole() {
        use crate::tcp::{flags, Receiver, Segment, TcpConfig};
        let seg = |seq: u64, dsn: u64| Segment {
            flags: flags::ACK,
            seq,
            len: 100,
            ack: 1,
            dsn,
            ts_val: 1,
            ..Default::default()
        };
        let mut rx = Receiver::established(TcpConfig::default());
        rx.handle_segment(1, &seg(1, 1_000));
        assert_eq!(rx.released(0).map(|r| (r.dsn, r.len)), Some((1_000, 100)));
        assert_eq!(rx.released(1), None);
        assert_eq!(rx.released_heap_entries(), 0, "one entry allocates nothing");
        rx.clear_released();
        // 201.. and 401.. wait behind the hole at 101 (DSNs not contiguous: two entries).
        rx.handle_segment(1, &seg(201, 5_000));
        rx.handle_segment(1, &seg(301, 5_100));
        rx.handle_segment(1, &seg(401, 9_000));
        assert_eq!(rx.released(0), None);
        rx.handle_segment(1, &seg(101, 1_100));
        assert!(rx.released_heap_entries() > 0, "a filled hole spills");
        let got: Vec<(u64, u64)> = (0..)
            .map_while(|i| rx.released(i))
            .map(|r| (r.dsn, r.len))
            .collect();
        assert_eq!(got.first(), Some(&(1_100, 100)));
        assert_eq!(got.last().map(|r| r.0 + r.1), Some(9_100));
        assert_eq!(got.iter().map(|r| r.1).sum::<u64>(), 400);
        rx.clear_released();
        assert_eq!(rx.released(0), None);
        assert_eq!(rx.released_heap_entries(), 0, "cleared, the room is freed");
    }
}
