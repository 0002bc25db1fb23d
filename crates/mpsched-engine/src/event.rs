//! The event queue: a binary heap ordered by (time, insertion sequence).
//!
//! The explicit sequence number makes simultaneous events fire in the order they were
//! scheduled (FIFO), so the order never depends on heap internals and a run is bit-reproducible.
//! The queue owns no clock: the caller (the event loop) advances time to each popped event.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

struct Entry<E> {
    /// `at_ns << 64 | seq`: one integer comparison orders by time, then by push order.
    key: u128,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    // Reversed so that `BinaryHeap` (a max-heap) pops the earliest entry first.
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        other.key.cmp(&self.key)
    }
}

/// A queue of events of type `E`, each due at an absolute time in nanoseconds.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    next_seq: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    /// An empty queue.
    pub fn new() -> Self {
        Self { heap: BinaryHeap::new(), next_seq: 0 }
    }

    /// Schedules `event` at absolute time `at_ns`.
    #[inline]
    pub fn push(&mut self, at_ns: u64, event: E) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry { key: (at_ns as u128) << 64 | seq as u128, event });
    }

    /// Removes and returns the earliest event with its time; ties come out in push order.
    #[inline]
    pub fn pop(&mut self) -> Option<(u64, E)> {
        self.heap.pop().map(|e| ((e.key >> 64) as u64, e.event))
    }

    /// Time of the earliest event, if any.
    #[inline]
    pub fn peek_time_ns(&self) -> Option<u64> {
        self.heap.peek().map(|e| (e.key >> 64) as u64)
    }

    /// The earliest event, if any (the one [`pop`](Self::pop) returns next).
    #[inline]
    pub fn peek(&self) -> Option<&E> {
        self.heap.peek().map(|e| &e.event)
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// True when no event is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn simultaneous_events_pop_in_push_order() {
        let mut q = EventQueue::new();
        for i in 0..10 {
            q.push(5, i);
        }
        q.push(1, 100);
        assert_eq!(q.pop(), Some((1, 100)));
        for i in 0..10 {
            assert_eq!(q.pop(), Some((5, i)));
        }
        assert_eq!(q.pop(), None);
    }

    proptest! {
        #[test]
        fn pops_are_sorted_by_time_then_push_order(times in proptest::collection::vec(0u64..50, 0..300)) {
            let mut q = EventQueue::new();
            for (i, t) in times.iter().enumerate() {
                q.push(*t, i);
            }
            let mut expected: Vec<(u64, usize)> = times.iter().copied().zip(0..).collect();
            expected.sort();
            let got: Vec<(u64, usize)> = std::iter::from_fn(|| q.pop()).collect();
            prop_assert_eq!(got, expected);
        }
    }
}
