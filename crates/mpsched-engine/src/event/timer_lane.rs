//! The second lane's heap (timers, wake-ups, flow starts): a 4-ary min-heap of unique `u128`
//! keys laid out so that the four children of a key fill one 64-byte line.
//!
//! Why not std's `BinaryHeap` here: at 10 000 flows this lane holds one or two keys a flow side
//! (~20 000 keys, 320 KB) and is popped about once in twenty events, so between two pops the
//! flows' state evicts most of it, and a pop's sift to the bottom reads one cold line a level:
//! ~14 levels of two children, half of whose pairs straddle two lines (16-byte keys, children
//! at `2i+1`, `2i+2`). Four children a level halve the levels, and with the root stored three
//! slots into a 64-byte aligned buffer, children `4i+1 ..= 4i+4` sit at slots `4(i+1) ..`, so
//! each level is exactly one line. A level costs three comparisons more than a binary one,
//! which does not matter for a lane popped this rarely (the packet lane, popped every event
//! and holding a few keys a busy link, stays binary: benches/RESULTS.md, perf17q).
//!
//! The pop moves the hole to the bottom and sifts the last key up from there (Floyd's order,
//! as std's `BinaryHeap::pop`): the last key is a leaf's, usually late, so it rises little and
//! the sift down needs no comparison against it.

/// Keys a line (64 bytes of `u128`).
const LINE_KEYS: usize = 4;
/// Lanes at least this big (32 KB: L1's size) prefetch each pop's next level (a hint: no
/// effect on order); smaller ones stay cached between pops and would only pay the instructions.
const PREFETCH_MIN_KEYS: usize = 2048;
/// Slots before the root, so that every group of four children starts a line.
const ROOT_SLOT: usize = LINE_KEYS - 1;

/// One 64-byte line of keys.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u128; LINE_KEYS]);

/// Min-heap of `len` keys: key `i` is slot `ROOT_SLOT + i` of `lines`, and is at most its
/// children `4i+1 ..= 4i+4`.
#[derive(Default)]
pub(super) struct TimerLane {
    lines: Vec<Line>,
    len: usize,
}

impl TimerLane {
    #[inline(always)]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The least key, if any.
    #[inline(always)]
    pub(super) fn peek(&self) -> Option<u128> {
        (self.len > 0).then(|| self.keys()[0])
    }

    /// The second least key, if any: the least of the root's children (one line).
    #[inline]
    pub(super) fn second(&self) -> Option<u128> {
        self.keys().get(1..self.len.min(LINE_KEYS + 1))?.iter().min().copied()
    }

    /// The keys, heap order: key `i` at index `i`.
    #[inline(always)]
    fn keys(&self) -> &[u128] {
        // SAFETY: `lines` is `lines.len() * LINE_KEYS` contiguous, initialised `u128`s (`Line` is
        // `repr(C)`, no padding: 64 bytes of keys), and `ROOT_SLOT + len` never exceeds that (see
        // `push`). An empty lane may have no buffer: its pointer is then only aligned, so the
        // offset is taken with `wrapping_add` (in bounds whenever `len > 0`).
        unsafe {
            let base = self.lines.as_ptr() as *const u128;
            std::slice::from_raw_parts(base.wrapping_add(ROOT_SLOT), self.len)
        }
    }

    /// The room for `n` keys (`n <= len + 1`), heap order.
    #[inline(always)]
    fn keys_mut(&mut self, n: usize) -> &mut [u128] {
        debug_assert!(ROOT_SLOT + n <= self.lines.len() * LINE_KEYS);
        // SAFETY: as in `keys`; the caller grew `lines` to hold `n` keys.
        unsafe {
            let base = self.lines.as_mut_ptr() as *mut u128;
            std::slice::from_raw_parts_mut(base.add(ROOT_SLOT), n)
        }
    }

    /// Adds `key`, sifting it up from a new leaf.
    #[inline]
    pub(super) fn push(&mut self, key: u128) {
        let n = self.len + 1;
        if ROOT_SLOT + n > self.lines.len() * LINE_KEYS {
            self.lines.push(Line([0; LINE_KEYS]));
        }
        self.len = n;
        super::sift_up::<LINE_KEYS>(self.keys_mut(n), n - 1, key);
        self.debug_check();
    }

    /// Removes the least key. The lane must not be empty. (Out of line: popped about once in
    /// twenty events; inlined into the event loop it cost the loop ~7 instructions a packet in
    /// how the rest compiled, benches (1), (2).)
    #[inline(never)]
    pub(super) fn pop(&mut self) {
        assert!(self.len > 0, "pop of an empty timer lane");
        let n = self.len - 1;
        self.len = n;
        let keys = self.keys_mut(n + 1);
        let last = keys[n];
        if n == 0 {
            return;
        }
        // The hole goes from the root down to a leaf, taking each level's least child (keys are
        // unique, so which of equal children is taken never arises), then the last key fills it,
        // rising to its place.
        let deep = n >= PREFETCH_MIN_KEYS;
        let at = keys.as_mut_ptr();
        let mut pos = 0;
        let mut first = 1;
        // SAFETY: every index read or written is below `n` (`keys` has `n + 1`): the first loop
        // reads `first .. first + 4` only while `first + 4 <= n`, and writes `pos`, which is 0 or
        // a child read before, so below `first`; the tail reads `first .. n`; the last loop reads
        // parents of `pos`, which are below it. Prefetches are hints, never faults.
        unsafe {
            while first + LINE_KEYS <= n {
                // The next level's line is one of the four lines holding this group's children,
                // which sit together (keys `4 * first + 1 ..`, 256 bytes): in a lane too big to
                // stay cached, ask for all four now, so the next level's miss overlaps this one's
                // instead of following it.
                let grandchildren = LINE_KEYS * first + 1;
                if deep && grandchildren < n {
                    let block = at.wrapping_add(grandchildren);
                    for line in 0..LINE_KEYS {
                        crate::prefetch::line(block.wrapping_add(line * LINE_KEYS));
                    }
                }
                let c = at.add(first);
                let lo = (*c.add(1) < *c) as usize;
                let hi = 2 + (*c.add(3) < *c.add(2)) as usize;
                let least = first + if *c.add(hi) < *c.add(lo) { hi } else { lo };
                *at.add(pos) = *at.add(least);
                pos = least;
                first = LINE_KEYS * pos + 1;
            }
            if first < n {
                // A last group of one to three children; their own children would be at or past
                // `n`.
                let mut least = first;
                for i in first + 1..n {
                    if *at.add(i) < *at.add(least) {
                        least = i;
                    }
                }
                *at.add(pos) = *at.add(least);
                pos = least;
            }
            while pos > 0 {
                let parent = (pos - 1) / LINE_KEYS;
                let above = *at.add(parent);
                if above <= last {
                    break;
                }
                *at.add(pos) = above;
                pos = parent;
            }
            *at.add(pos) = last;
        }
        self.debug_check();
    }

    /// The keys, emptying the lane (any order).
    pub(super) fn take_keys(&mut self) -> Vec<u128> {
        let keys = self.keys().to_vec();
        *self = Self::default();
        keys
    }

    /// A lane of `keys` sorted ascending (a sorted array is a heap: a parent's index is below
    /// its children's).
    pub(super) fn from_sorted(keys: Vec<u128>) -> Self {
        debug_assert!(keys.windows(2).all(|w| w[0] < w[1]));
        let mut lane = Self { lines: vec![Line([0; LINE_KEYS]); (ROOT_SLOT + keys.len()).div_ceil(LINE_KEYS)], len: 0 };
        lane.len = keys.len();
        lane.keys_mut(keys.len()).copy_from_slice(&keys);
        lane.debug_check();
        lane
    }

    /// In debug builds, asserts the heap order after every change (O(n): debug only).
    #[inline(always)]
    fn debug_check(&self) {
        #[cfg(debug_assertions)]
        assert!(self.heap_order_holds(), "timer lane heap order broken");
    }

    /// Every key is at least its parent.
    #[cfg(any(test, debug_assertions))]
    fn heap_order_holds(&self) -> bool {
        super::heap_order_holds::<LINE_KEYS>(self.keys())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn each_group_of_children_fills_one_line() {
        let mut lane = TimerLane::default();
        for k in 0..100u128 {
            lane.push(k);
        }
        let base = lane.keys().as_ptr() as usize;
        for i in 0..20 {
            assert_eq!((base + 16 * (LINE_KEYS * i + 1)) % 64, 0, "children of key {i}");
        }
    }

    #[test]
    fn a_broken_order_is_seen() {
        let mut lane = TimerLane::from_sorted(vec![1, 2, 3, 4, 5, 6]);
        assert!(lane.heap_order_holds());
        lane.keys_mut(6)[5] = 0;
        assert!(!lane.heap_order_holds());
    }

    proptest! {
        /// Pushes and pops against a sorted vector: the least key comes out each time (and
        /// `debug_check` asserts the whole heap order after each step); renumbering's
        /// `take_keys` / `from_sorted` round trip keeps the keys.
        #[test]
        fn pops_come_out_least_first(ops in proptest::collection::vec((0u8..4, 0u64..64), 0..400)) {
            let mut lane = TimerLane::default();
            let mut model: Vec<u128> = Vec::new();
            for (n, (op, t)) in ops.into_iter().enumerate() {
                let key = (t as u128) << 64 | n as u128; // unique
                match op {
                    0 | 1 => {
                        lane.push(key);
                        model.push(key);
                    }
                    2 if !model.is_empty() => {
                        prop_assert_eq!(lane.peek(), model.iter().min().copied());
                        lane.pop();
                        model.sort_unstable();
                        model.remove(0);
                    }
                    3 => {
                        let mut keys = lane.take_keys();
                        prop_assert!(lane.is_empty());
                        keys.sort_unstable();
                        lane = TimerLane::from_sorted(keys);
                    }
                    _ => {}
                }
                prop_assert!(lane.heap_order_holds());
                prop_assert_eq!(lane.len(), model.len());
                prop_assert_eq!(lane.peek(), model.iter().min().copied());
                let mut sorted = model.clone();
                sorted.sort_unstable();
                prop_assert_eq!(lane.second(), sorted.get(1).copied());
            }
            model.sort_unstable();
            let mut rest = Vec::new();
            while let Some(k) = lane.peek() {
                rest.push(k);
                lane.pop();
            }
            prop_assert_eq!(rest, model);
        }
    }
}
