//! The event queue: a heap ordered by (time, insertion sequence).
//!
//! The explicit sequence number makes simultaneous events fire in the order they were
//! scheduled (FIFO), so the order never depends on heap internals and a run is bit-reproducible.
//! The queue owns no clock: the caller (the event loop) advances time to each popped event.
//!
//! Layout, for the cost of a sift at depth (thousands of timers and arrivals pending): an event
//! packs into 32 bits ([`PackedEvent`]) and the heap holds 16-byte keys and nothing else,
//! `at_ns << 64 | seq << 32 | event` (half the bytes per move of a key beside its event).
//! `seq` is 32 bits: when it runs out, the pending keys
//! are renumbered in their order (see [`EventQueue::renumber`]), so the order of events is
//! exactly (time, push order) however many are pushed.
//!
//! Two lanes, one order: events pushed with [`EventQueue::push_later`] (timers, wake-ups,
//! starts: usually far ahead) wait in a second heap, so the packet events pushed with
//! [`EventQueue::push`] (a hop's arrival, tens of microseconds to milliseconds ahead) do not
//! sift up through every pending timer, and pops do not sift down through them. Both lanes share
//! the sequence counter and [`EventQueue::pop`] takes the smaller of the two heads' keys, so
//! events still come out by (time, push order) over both lanes.
//!
//! A popped packet event's root slot stays in the first heap, marked taken
//! (`root_taken`), until the next [`EventQueue::push`] overwrites it (one sift down from the
//! root) or the next pop removes it: a hop's arrival is most often followed by a push (the
//! link's next head, the packet's next hop), and a pop then push costs two sifts, the pop's
//! down to the bottom and back up, the push's up.

use lane::Lane;
use timer_lane::TimerLane;

mod lane;
mod timer_lane;

/// Bits of the key below the time: sequence (high 32) and the packed event (low 32).
const CODE_MASK: u128 = 0xffff_ffff;

/// Puts `key` at slot `pos` of the `ARITY`-ary min-heap `keys` (slot `pos` is free: a new leaf)
/// and moves it up past every parent greater than it (both lanes' push).
#[inline(always)]
fn sift_up<const ARITY: usize>(keys: &mut [u128], mut pos: usize, key: u128) {
    while pos > 0 {
        let parent = (pos - 1) / ARITY;
        if keys[parent] <= key {
            break;
        }
        keys[pos] = keys[parent];
        pos = parent;
    }
    keys[pos] = key;
}

/// Every key of the `ARITY`-ary heap `keys` is at least its parent (both lanes' debug check).
#[cfg(any(test, debug_assertions))]
fn heap_order_holds<const ARITY: usize>(keys: &[u128]) -> bool {
    (1..keys.len()).all(|i| keys[(i - 1) / ARITY] <= keys[i])
}

/// An event that the queue stores in 32 bits (`unpack(pack(e)) == e`).
pub trait PackedEvent: Copy {
    /// The event as 32 bits.
    fn pack(self) -> u32;
    /// The event packed as `code`.
    fn unpack(code: u32) -> Self;
}

impl PackedEvent for u32 {
    #[inline]
    fn pack(self) -> u32 {
        self
    }
    #[inline]
    fn unpack(code: u32) -> Self {
        code
    }
}

/// A queue of events of type `E`, each due at an absolute time in nanoseconds.
pub struct EventQueue<E> {
    /// Min-heap of `at_ns << 64 | seq << 32 | event`; keys are unique (one seq each).
    heap: Lane,
    /// The same for the events pushed with [`EventQueue::push_later`].
    later: TimerLane,
    /// The head key of `later`, `u128::MAX` when it is empty: kept beside the first heap so
    /// choosing the lane to pop reads one heap, not two.
    later_head: u128,
    /// The first heap's root is the event [`pop`](Self::pop) last returned: removed in
    /// effect (not counted, not peeked), overwritten by the next push or removed by the next
    /// pop.
    root_taken: bool,
    /// Sequence number of the next push; below `seq_end`.
    next_seq: u64,
    /// When `next_seq` reaches this, the pending keys are renumbered (2^32; lower in tests).
    seq_end: u64,
    _event: std::marker::PhantomData<E>,
}

impl<E: PackedEvent> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: PackedEvent> EventQueue<E> {
    /// An empty queue.
    pub fn new() -> Self {
        Self::with_seq_end(1 << 32)
    }

    fn with_seq_end(seq_end: u64) -> Self {
        Self {
            heap: Lane::default(),
            later: TimerLane::default(),
            later_head: u128::MAX,
            root_taken: false,
            next_seq: 0,
            seq_end,
            _event: std::marker::PhantomData,
        }
    }

    /// Schedules `event` at absolute time `at_ns`. (Always inlined: left to itself the compiler
    /// makes it a call, which costs ~12 instructions a packet more on a run of many short flows.)
    #[inline(always)]
    pub fn push(&mut self, at_ns: u64, event: E) {
        let key = self.key(at_ns, event);
        if std::mem::take(&mut self.root_taken) {
            // `root_taken` holds only with a root: the new key takes its place and sifts down.
            self.heap.replace_root(key);
        } else {
            self.heap.push(key);
        }
    }

    /// Schedules `event` at `at_ns` in the second lane, for events usually far ahead of the
    /// packet events (timers, wake-ups, flow starts). Order is as if pushed with
    /// [`push`](Self::push): (time, push order) over both lanes.
    #[inline(always)]
    pub fn push_later(&mut self, at_ns: u64, event: E) {
        let key = self.key(at_ns, event);
        self.later_head = self.later_head.min(key);
        self.later.push(key);
    }

    #[inline(always)]
    fn key(&mut self, at_ns: u64, event: E) -> u128 {
        if self.next_seq == self.seq_end {
            self.renumber();
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        (at_ns as u128) << 64 | (seq as u128) << 32 | event.pack() as u128
    }

    /// The earliest key of the first heap not taken: its root, or with the root taken the
    /// smaller of the root's children.
    #[inline(always)]
    fn heap_head(&self) -> Option<u128> {
        let keys = self.heap.as_slice();
        if !self.root_taken {
            return keys.first().copied();
        }
        match (keys.get(1), keys.get(2)) {
            (Some(&a), Some(&b)) => Some(a.min(b)),
            (a, _) => a.copied(),
        }
    }

    /// The earliest key of both lanes, and whether it is in the second lane.
    #[inline(always)]
    fn head(&self) -> Option<(u128, bool)> {
        // Keys are unique, so only an empty second lane (its sentinel) can tie a real key.
        match self.heap_head() {
            Some(n) if n < self.later_head => Some((n, false)),
            _ if !self.later.is_empty() => Some((self.later_head, true)),
            Some(n) => Some((n, false)),
            None => None,
        }
    }

    /// Removes and returns the earliest event with its time; ties come out in push order.
    #[inline]
    pub fn pop(&mut self) -> Option<(u64, E)> {
        self.pop_code().map(|(at_ns, code)| (at_ns, E::unpack(code)))
    }

    /// [`pop`](Self::pop), the event left packed (a caller that dispatches on the code's bits
    /// decodes only the kind it meets).
    #[inline]
    pub fn pop_code(&mut self) -> Option<(u64, u32)> {
        if std::mem::take(&mut self.root_taken) {
            self.heap.pop_root();
        }
        let (top, later) = self.head()?;
        if later {
            self.later.pop();
            self.later_head = self.later.peek().unwrap_or(u128::MAX);
        } else {
            self.root_taken = true;
        }
        Some(((top >> 64) as u64, top as u32))
    }

    /// Time of the earliest event, if any.
    #[inline]
    pub fn peek_time_ns(&self) -> Option<u64> {
        self.head().map(|(k, _)| (k >> 64) as u64)
    }

    /// The earliest event, if any (the one [`pop`](Self::pop) returns next).
    #[inline]
    pub fn peek(&self) -> Option<E> {
        self.head().map(|(k, _)| E::unpack(k as u32))
    }

    /// The packed code of the packet lane's earliest event (pushed with [`push`](Self::push)),
    /// the second lane not looked at: a hint of what comes next (the event loop prefetches
    /// for it), cheaper than [`peek`](Self::peek) and usually the same event.
    #[inline(always)]
    pub fn peek_packet_code(&self) -> Option<u32> {
        self.heap_head().map(|k| k as u32)
    }

    /// The packed code of the second lane's earliest event (pushed with
    /// [`push_later`](Self::push_later)), the packet lane not looked at: a hint of which timer
    /// comes next (the event loop prefetches its flow's state).
    #[inline(always)]
    pub fn peek_later_code(&self) -> Option<u32> {
        (!self.later.is_empty()).then_some(self.later_head as u32)
    }

    /// The packed code of the second lane's second earliest event, if any: a hint of which
    /// timer comes after the next.
    #[inline]
    pub fn peek_later_second_code(&self) -> Option<u32> {
        self.later.second().map(|k| k as u32)
    }

    /// Number of pending events in the packet lane (pushed with [`push`](Self::push)).
    #[inline(always)]
    pub fn packet_lane_len(&self) -> usize {
        self.heap.len() - self.root_taken as usize
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.packet_lane_len() + self.later.len()
    }

    /// True when no event is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Gives the pending keys of both lanes the sequence numbers 0, 1, ... in their order, so
    /// sequence numbers stay 32 bits while the order of events, (time, push order), is
    /// unchanged: a sorted array is a valid heap, and keys are unique, so the sort is
    /// deterministic. Each key stays in its lane.
    #[cold]
    fn renumber(&mut self) {
        if std::mem::take(&mut self.root_taken) {
            self.heap.pop_root();
        }
        let now_keys = self.heap.take_keys().into_iter().map(|k| (k, false));
        let later_keys = self.later.take_keys().into_iter().map(|k| (k, true));
        let mut keys: Vec<(u128, bool)> = now_keys.chain(later_keys).collect();
        keys.sort_unstable();
        let (mut now, mut later) = (Vec::new(), Vec::new());
        for (i, &(k, in_later)) in keys.iter().enumerate() {
            let k = (k >> 64) << 64 | (i as u128) << 32 | (k & CODE_MASK);
            if in_later {
                later.push(k);
            } else {
                now.push(k);
            }
        }
        self.next_seq = keys.len() as u64;
        // Sorted: `keys` is, and the new sequence numbers follow its order.
        self.heap = Lane::from_sorted(now);
        self.later = TimerLane::from_sorted(later);
        self.later_head = self.later.peek().unwrap_or(u128::MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    #[test]
    fn simultaneous_events_pop_in_push_order() {
        let mut q = EventQueue::new();
        for i in 0..10u32 {
            q.push(5, i);
        }
        q.push_later(5, 50);
        q.push(5, 10);
        q.push(1, 100);
        assert_eq!(q.pop(), Some((1, 100)));
        for i in 0..10 {
            assert_eq!(q.pop(), Some((5, i)));
        }
        // The second lane's event was pushed between the two: it comes out between them.
        assert_eq!(q.pop(), Some((5, 50)));
        assert_eq!(q.pop(), Some((5, 10)));
        assert_eq!(q.pop(), None);
    }

    proptest! {
        #[test]
        fn pops_are_sorted_by_time_then_push_order(times in proptest::collection::vec(0u64..50, 0..300)) {
            let mut q = EventQueue::new();
            for (i, t) in times.iter().enumerate() {
                q.push(*t, i as u32);
            }
            let mut expected: Vec<(u64, u32)> = times.iter().copied().zip(0..).collect();
            expected.sort();
            let got: Vec<(u64, u32)> = std::iter::from_fn(|| q.pop()).collect();
            prop_assert_eq!(got, expected);
        }

        /// Pushes (to either lane) and pops interleaved, against a sorted map keyed by (time,
        /// push count); with a small sequence space too, so renumbering happens many times
        /// mid-run.
        #[test]
        fn interleaved_pushes_and_pops_match_a_sorted_map(
            ops in proptest::collection::vec((0u64..40, 0u8..3), 0..400),
            seq_end in prop_oneof![Just(1u64 << 32), 1u64..20],
        ) {
            let mut q = EventQueue::with_seq_end(seq_end);
            let mut model = BTreeMap::new();
            let mut now = 0;
            // Which pushes went to the packet lane (`push`), by push number.
            let mut lanes = vec![false; ops.len()];
            for (n, (dt, op)) in ops.into_iter().enumerate() {
                if op == 0 {
                    let got = q.pop();
                    let want = model.pop_first().map(|((t, _), e)| (t, e));
                    prop_assert_eq!(got, want);
                    if let Some((t, _)) = got {
                        now = t;
                    }
                } else {
                    // Either lane: the order is (time, push order) over both.
                    if op == 1 {
                        q.push(now + dt, n as u32);
                        lanes[n] = true;
                    } else {
                        q.push_later(now + dt, n as u32);
                    }
                    model.insert((now + dt, n), n as u32);
                }
                prop_assert_eq!(q.len(), model.len());
                prop_assert_eq!(q.is_empty(), model.is_empty());
                prop_assert_eq!(q.peek_time_ns(), model.keys().next().map(|k| k.0));
                prop_assert_eq!(q.peek(), model.values().next().copied());
                // The packet lane's own head: the least key pushed with `push`.
                let packet_head = model.iter().find(|&(&(_, n), _)| lanes[n]).map(|(_, &e)| e);
                prop_assert_eq!(q.peek_packet_code(), packet_head);
                prop_assert_eq!(q.packet_lane_len(), model.keys().filter(|&&(_, n)| lanes[n]).count());
                // The second lane's own head: the least key pushed with `push_later`.
                let later_head = model.iter().find(|&(&(_, n), _)| !lanes[n]).map(|(_, &e)| e);
                prop_assert_eq!(q.peek_later_code(), later_head);
                let later_second = model.iter().filter(|&(&(_, n), _)| !lanes[n]).nth(1).map(|(_, &e)| e);
                prop_assert_eq!(q.peek_later_second_code(), later_second);
            }
            let rest: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
            let want: Vec<_> = model.into_iter().map(|((t, _), e)| (t, e)).collect();
            prop_assert_eq!(rest, want);
        }

        /// The second lane at depth (hundreds of keys, four children a level: the partial last
        /// group, the hole's way down and the last key's way up): mostly `push_later`, pops in
        /// runs, times spread wide and often tied, against a sorted map; with a small sequence
        /// space too, so the lane is renumbered while deep.
        #[test]
        fn a_deep_second_lane_matches_a_sorted_map(
            ops in proptest::collection::vec((0u64..1000, 0u8..10), 0..2000),
            seq_end in prop_oneof![Just(1u64 << 32), 300u64..700],
        ) {
            let mut q = EventQueue::with_seq_end(seq_end);
            let mut model = BTreeMap::new();
            let mut now = 0;
            for (n, (dt, op)) in ops.into_iter().enumerate() {
                match op {
                    // A run of pops (a tenth of the ops pop up to four events).
                    0 => {
                        for _ in 0..(dt % 5) {
                            let got = q.pop();
                            prop_assert_eq!(got, model.pop_first().map(|((t, _), e)| (t, e)));
                            if let Some((t, _)) = got {
                                now = t;
                            }
                        }
                    }
                    1 => {
                        q.push(now + dt, n as u32);
                        model.insert((now + dt, n), n as u32);
                    }
                    _ => {
                        // A coarse time, so that many keys tie on it and order by push.
                        let at = now + dt / 50 * 50;
                        q.push_later(at, n as u32);
                        model.insert((at, n), n as u32);
                    }
                }
                prop_assert_eq!(q.len(), model.len());
                prop_assert_eq!(q.peek(), model.values().next().copied());
            }
            let rest: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
            let want: Vec<_> = model.into_iter().map(|((t, _), e)| (t, e)).collect();
            prop_assert_eq!(rest, want);
        }
    }
}
