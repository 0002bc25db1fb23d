//! The packet lane's heap: a binary min-heap of unique `u128` keys, with the one operation
//! the event loop does most written for itself, [`Lane::replace_root`] (a popped root
//! overwritten by the next push).
//!
//! Why not std's `BinaryHeap` here: its `peek_mut` overwrite is a guard that shortens the
//! vector, restores it on drop and then sifts from the root through a generic range; inlined at
//! every push site of the event loop, that came to ~27 instructions a push with two keys in
//! the heap (benches (1), (2)), where the sift itself is one comparison. The sifts below move a
//! hole (one write a level, the key written once at the end), as std's do.

/// Min-heap of keys in `keys` (`keys[i] <= keys[2i+1]`, `keys[i] <= keys[2i+2]`).
#[derive(Default)]
pub(super) struct Lane {
    keys: Vec<u128>,
}

impl Lane {
    #[inline(always)]
    pub(super) fn len(&self) -> usize {
        self.keys.len()
    }

    #[inline(always)]
    pub(super) fn as_slice(&self) -> &[u128] {
        &self.keys
    }

    /// Adds `key`, sifting it up from a new leaf.
    #[inline]
    pub(super) fn push(&mut self, key: u128) {
        let pos = self.keys.len();
        self.keys.push(key);
        super::sift_up::<2>(self.keys.as_mut_slice(), pos, key);
        self.debug_check();
    }

    /// Replaces the root (the least key) with `key` and sifts it down; an empty lane takes
    /// `key` as its only key (so no caller's slip can make the writes below go out of bounds).
    #[inline(always)]
    pub(super) fn replace_root(&mut self, key: u128) {
        let n = self.keys.len();
        if n == 0 {
            self.keys.push(key);
            return;
        }
        let keys = self.keys.as_mut_ptr();
        let (mut pos, mut child) = (0, 1);
        // SAFETY: every index read or written is below `n`, the vector's length: `pos` is 0
        // (n > 0, tested above) or a former `child`; the loop reads `child` and `child + 1` only while
        // `child + 1 < n`, and the tail reads `child` only when `child + 1 == n`.
        unsafe {
            while child + 1 < n {
                // The lesser child (the right one only when strictly less: keys are unique, so
                // either choice keeps the heap; this one is branch-free).
                child += (*keys.add(child + 1) < *keys.add(child)) as usize;
                let least = *keys.add(child);
                if key <= least {
                    break;
                }
                *keys.add(pos) = least;
                pos = child;
                child = 2 * pos + 1;
            }
            if child + 1 == n {
                let last = *keys.add(child);
                if last < key {
                    *keys.add(pos) = last;
                    pos = child;
                }
            }
            *keys.add(pos) = key;
        }
        self.debug_check();
    }

    /// Removes the root (the least key). The heap must not be empty.
    #[inline]
    pub(super) fn pop_root(&mut self) {
        let last = self.keys.pop().expect("pop_root of an empty lane");
        if !self.keys.is_empty() {
            self.replace_root(last);
        }
    }

    /// The keys, emptying the lane (any order).
    pub(super) fn take_keys(&mut self) -> Vec<u128> {
        std::mem::take(&mut self.keys)
    }

    /// A lane of `keys` sorted ascending (a sorted array is a heap).
    pub(super) fn from_sorted(keys: Vec<u128>) -> Self {
        debug_assert!(keys.windows(2).all(|w| w[0] < w[1]));
        Self { keys }
    }

    /// In debug builds, asserts the heap order after every change (O(n): debug only).
    #[inline(always)]
    fn debug_check(&self) {
        #[cfg(debug_assertions)]
        assert!(self.heap_order_holds(), "heap order broken");
    }

    /// Every key is at least its parent.
    #[cfg(any(test, debug_assertions))]
    fn heap_order_holds(&self) -> bool {
        super::heap_order_holds::<2>(&self.keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Pushes, root replacements and root pops against a sorted vector: the root is always
        /// the least key (and `debug_check` asserts the whole heap order after each step).
        #[test]
        fn the_root_is_the_least_key(ops in proptest::collection::vec((0u8..3, 0u64..64), 0..300)) {
            let mut lane = Lane::default();
            let mut model: Vec<u128> = Vec::new();
            for (n, (op, t)) in ops.into_iter().enumerate() {
                let key = (t as u128) << 64 | n as u128; // unique
                match op {
                    0 => {
                        lane.push(key);
                        model.push(key);
                    }
                    1 => {
                        lane.replace_root(key);
                        model.sort_unstable();
                        match model.first_mut() {
                            Some(root) => *root = key,
                            None => model.push(key), // an empty lane takes it as its root
                        }
                    }
                    _ if !model.is_empty() => {
                        lane.pop_root();
                        model.sort_unstable();
                        model.remove(0);
                    }
                    _ => {}
                }
                model.sort_unstable();
                prop_assert!(lane.heap_order_holds());
                prop_assert_eq!(lane.len(), model.len());
                prop_assert_eq!(lane.as_slice().first(), model.first());
            }
        }
    }

    #[test]
    fn a_broken_order_is_seen() {
        let mut lane = Lane::from_sorted(vec![1, 2, 3]);
        assert!(lane.heap_order_holds());
        lane.keys[0] = 9;
        assert!(!lane.heap_order_holds());
    }
}
