//! A set of disjoint half-open `u64` ranges, kept merged (SACK scoreboard, out-of-order
//! queues), in a sorted `Vec`. A binary search finds where an operation starts; inserting or
//! removing a range in the middle moves the ranges after it, which is a few at most here: a
//! sender's SACKed ranges and a receiver's out-of-order ranges are separated by holes, and a
//! window has few holes at once.
//!
//! Why a `Vec` and not a `BTreeMap`: a `BTreeMap<u64, u64>` keeps a 192-byte leaf node for
//! even one range, and keeps it when emptied; the `Vec` starts at 4 ranges, 64 bytes, grows by
//! doubling only for a window with more holes, and is freed when the set empties. At 10 000
//! concurrent flows behind one drop-tail bottleneck (whose losses hit most flows at about the
//! same time) this lowers the peak RSS by 2.7 MB, and the search of a few contiguous ranges
//! costs fewer instructions than the tree's (benches/RESULTS.md, Session 13, perf17u).
//!
//! Data mostly arrives (and is SACKed) in order, so the common operations have a fast path
//! that needs no search: an empty set answers at once, and an insert at or beyond the start
//! of the highest range only looks at that range. The tests check the fast paths against the
//! general ones and against a model on random operations.

/// Disjoint, non-adjacent `[start, end)` ranges in increasing order.
#[derive(Debug, Clone, Default)]
pub struct RangeSet {
    ranges: Vec<(u64, u64)>,
    total_bytes: u64,
}

impl RangeSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sum of the range lengths.
    #[inline]
    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    /// True when the set holds no range.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Lowest range.
    #[inline]
    pub fn first(&self) -> Option<(u64, u64)> {
        self.ranges.first().copied()
    }

    /// End of the highest range.
    #[inline]
    pub fn last_end(&self) -> Option<u64> {
        self.ranges.last().map(|&(_, e)| e)
    }

    /// The range containing `x`, if any.
    #[inline]
    pub fn containing(&self, x: u64) -> Option<(u64, u64)> {
        if self.ranges.is_empty() {
            return None;
        }
        self.containing_search(x)
    }

    fn containing_search(&self, x: u64) -> Option<(u64, u64)> {
        // The newest data (what a SACK block reports first) is mostly in the highest range.
        if let Some(&(s, e)) = self.ranges.last() {
            if x >= s {
                return (x < e).then_some((s, e));
            }
        }
        let i = self.ranges.partition_point(|&(s, _)| s <= x);
        i.checked_sub(1)
            .map(|j| self.ranges[j])
            .filter(|&(_, e)| e > x)
    }

    /// Adds `[start, end)`. `gap` is called for every sub-range that was not covered before,
    /// in increasing order. Returns the number of newly covered bytes.
    pub fn insert_with(&mut self, start: u64, end: u64, mut gap: impl FnMut(u64, u64)) -> u64 {
        if start >= end {
            return 0;
        }
        // In order: `start` at or beyond the start of the highest range, so no other range
        // can merge. Extend that range, or add one after it.
        if let Some(last) = self.ranges.last_mut() {
            let (s, e) = *last;
            if start >= s {
                if start <= e {
                    if end <= e {
                        return 0;
                    }
                    gap(e, end);
                    last.1 = end;
                } else {
                    gap(start, end);
                    self.ranges.push((start, end));
                }
                let added = end - start.max(e);
                self.total_bytes += added;
                return added;
            }
        }
        self.insert_general(start, end, gap)
    }

    /// [`RangeSet::insert_with`] by search, for any `start`.
    fn insert_general(&mut self, start: u64, end: u64, mut gap: impl FnMut(u64, u64)) -> u64 {
        let mut new_start = start;
        let mut new_end = end;
        let mut cur = start;
        let mut added = 0;
        // Ranges starting at or before `start`: the last of them merges with us if it reaches
        // `start`.
        let past = self.ranges.partition_point(|&(s, _)| s <= start);
        let mut lo = past;
        if let Some(&(s, e)) = lo.checked_sub(1).map(|j| &self.ranges[j]) {
            if e >= start {
                lo -= 1;
                new_start = s;
                new_end = new_end.max(e);
                cur = cur.max(e);
                self.total_bytes -= e - s;
            }
        }
        // Every range starting inside (start, end] merges too: from the first one past those
        // starting at or before `start`.
        let mut j = past;
        while let Some(&(s, e)) = self.ranges.get(j).filter(|r| r.0 <= end) {
            if s > cur {
                gap(cur, s);
                added += s - cur;
            }
            cur = cur.max(e);
            new_end = new_end.max(e);
            self.total_bytes -= e - s;
            j += 1;
        }
        if cur < end {
            gap(cur, end);
            added += end - cur;
        }
        // `lo..j` are the merged ranges (none: `lo == j`, an insert).
        if lo == j {
            self.ranges.insert(lo, (new_start, new_end));
        } else {
            self.ranges[lo] = (new_start, new_end);
            self.ranges.drain(lo + 1..j);
        }
        self.total_bytes += new_end - new_start;
        added
    }

    /// Adds `[start, end)`; returns the number of newly covered bytes.
    #[inline]
    pub fn insert(&mut self, start: u64, end: u64) -> u64 {
        self.insert_with(start, end, |_, _| {})
    }

    /// Removes everything below `x`.
    #[inline]
    pub fn remove_below(&mut self, x: u64) {
        if self.ranges.is_empty() {
            return; // the common case: nothing out of order
        }
        self.remove_below_search(x);
    }

    fn remove_below_search(&mut self, x: u64) {
        // Ranges ending at or below `x` go whole (ends increase as starts do).
        let n = self.ranges.partition_point(|&(_, e)| e <= x);
        self.total_bytes -= self.ranges[..n].iter().map(|&(s, e)| e - s).sum::<u64>();
        self.ranges.drain(..n);
        match self.ranges.first_mut() {
            Some(first) if first.0 < x => {
                self.total_bytes -= x - first.0;
                first.0 = x;
            }
            Some(_) => {}
            None => self.give_back_room(),
        }
    }

    /// An emptied set frees its room: a set is empty between loss episodes, most of a
    /// connection, and its next episode allocates again (once an episode; 4 ranges, 64
    /// bytes, first). Kept, the room of a flow's worst episode (a slow start's burst of
    /// losses) would stay for the rest of the connection; keeping room for 4 ranges measured
    /// 3 MB more peak RSS at 10 000 flows than freeing it (benches/RESULTS.md, Session 13).
    #[inline]
    fn give_back_room(&mut self) {
        if self.ranges.capacity() > 0 {
            self.free_room();
        }
    }

    #[cold]
    #[inline(never)]
    fn free_room(&mut self) {
        self.ranges = Vec::new();
    }

    /// Removes and returns the lowest range if it starts at or below `x`.
    #[inline]
    pub fn pop_first_if_starts_by(&mut self, x: u64) -> Option<(u64, u64)> {
        let &(s, e) = self.ranges.first()?;
        if s > x {
            return None;
        }
        self.ranges.remove(0);
        self.total_bytes -= e - s;
        if self.ranges.is_empty() {
            self.give_back_room();
        }
        Some((s, e))
    }

    /// Removes `[start, end)` from the set.
    pub fn remove(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        let i = self.ranges.partition_point(|&(s, _)| s < start);
        // The range starting before `start` keeps its left part (and a right part beyond end).
        if let Some(j) = i.checked_sub(1) {
            let (s, e) = self.ranges[j];
            if e > start {
                self.ranges[j] = (s, start);
                self.total_bytes -= e - start;
                if e > end {
                    self.ranges.insert(i, (end, e));
                    self.total_bytes += e - end;
                    return; // it covered all of `[start, end)`
                }
            }
        }
        // Ranges starting inside [start, end): gone, but for a part beyond `end`.
        let mut j = i;
        while let Some(&(s, e)) = self.ranges.get(j).filter(|r| r.0 < end) {
            if e > end {
                self.ranges[j].0 = end;
                self.total_bytes -= end - s;
                break;
            }
            self.total_bytes -= e - s;
            j += 1;
        }
        self.ranges.drain(i..j);
        if self.ranges.is_empty() {
            self.give_back_room();
        }
    }

    /// Iterates the ranges in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.ranges.iter().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// One operation on a set, over a small universe so that ranges meet often.
    #[derive(Debug, Clone)]
    enum Op {
        Insert(u64, u64),
        Remove(u64, u64),
        RemoveBelow(u64),
        PopFirstBy(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u64..64, 0u64..12).prop_map(|(s, l)| Op::Insert(s, s + l)),
            1 => (0u64..64, 0u64..12).prop_map(|(s, l)| Op::Remove(s, s + l)),
            1 => (0u64..64).prop_map(Op::RemoveBelow),
            1 => (0u64..64).prop_map(Op::PopFirstBy),
        ]
    }

    /// Maximal runs of covered points of the model.
    fn runs(model: &[bool]) -> Vec<(u64, u64)> {
        let mut out: Vec<(u64, u64)> = Vec::new();
        for (i, &c) in model.iter().enumerate() {
            let i = i as u64;
            match out.last_mut() {
                Some(r) if c && r.1 == i => r.1 += 1,
                _ if c => out.push((i, i + 1)),
                _ => {}
            }
        }
        out
    }

    proptest! {
        /// Every operation, fast path or not, leaves the set equal to a point-by-point model;
        /// inserts report the newly covered gaps in order; the in-order fast path of insert
        /// gives what the general search gives.
        #[test]
        fn operations_match_a_point_model(ops in proptest::collection::vec(op(), 1..60)) {
            let mut set = RangeSet::new();
            let mut model = vec![false; 96];
            for op in ops {
                match op {
                    Op::Insert(s, e) => {
                        let mut general = set.clone();
                        let mut gaps_general = Vec::new();
                        // (`insert_with` returns before the search for an empty range.)
                        let added_general = if s < e {
                            general.insert_general(s, e, |a, b| gaps_general.push((a, b)))
                        } else {
                            0
                        };
                        let mut gaps = Vec::new();
                        let added = set.insert_with(s, e, |a, b| gaps.push((a, b)));
                        let mut want = Vec::new();
                        for x in s..e {
                            if !model[x as usize] {
                                model[x as usize] = true;
                                match want.last_mut() {
                                    Some((_, b)) if *b == x => *b += 1,
                                    _ => want.push((x, x + 1)),
                                }
                            }
                        }
                        prop_assert_eq!(&gaps, &want);
                        prop_assert_eq!(added, want.iter().map(|(a, b)| b - a).sum::<u64>());
                        prop_assert_eq!((added_general, gaps_general), (added, gaps));
                        prop_assert_eq!(general.iter().collect::<Vec<_>>(), set.iter().collect::<Vec<_>>());
                    }
                    Op::Remove(s, e) => {
                        set.remove(s, e);
                        (s..e).for_each(|x| model[x as usize] = false);
                    }
                    Op::RemoveBelow(x) => {
                        set.remove_below(x);
                        (0..x).for_each(|i| model[i as usize] = false);
                    }
                    Op::PopFirstBy(x) => {
                        let want = runs(&model).first().copied().filter(|r| r.0 <= x);
                        prop_assert_eq!(set.pop_first_if_starts_by(x), want);
                        if let Some((a, b)) = want {
                            (a..b).for_each(|i| model[i as usize] = false);
                        }
                    }
                }
                let want = runs(&model);
                prop_assert_eq!(set.iter().collect::<Vec<_>>(), want.clone());
                prop_assert_eq!(set.total_bytes(), want.iter().map(|(a, b)| b - a).sum::<u64>());
                prop_assert_eq!(set.first(), want.first().copied());
                prop_assert_eq!(set.last_end(), want.last().map(|r| r.1));
                for x in 0..96u64 {
                    let inside = want.iter().copied().find(|r| r.0 <= x && x < r.1);
                    prop_assert_eq!(set.containing(x), inside);
                }
            }
        }
    }

    #[test]
    fn merges_and_reports_gaps() {
        let mut r = RangeSet::new();
        assert_eq!(r.insert(10, 20), 10);
        assert_eq!(r.insert(30, 40), 10);
        let mut gaps = Vec::new();
        assert_eq!(r.insert_with(5, 45, |a, b| gaps.push((a, b))), 20);
        assert_eq!(gaps, vec![(5, 10), (20, 30), (40, 45)]);
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![(5, 45)]);
        assert_eq!(r.total_bytes(), 40);
        assert_eq!(r.insert(45, 50), 5);
        assert_eq!(r.iter().count(), 1, "adjacent ranges merge");
        r.remove_below(20);
        assert_eq!(r.first(), Some((20, 50)));
        assert_eq!(r.total_bytes(), 30);
        assert_eq!(r.containing(49), Some((20, 50)));
        assert_eq!(r.containing(50), None);
        r.remove(25, 30);
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![(20, 25), (30, 50)]);
        r.remove(10, 35);
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![(35, 50)]);
        assert_eq!(r.total_bytes(), 15);
        r.remove(40, 100);
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![(35, 40)]);
    }

    #[test]
    fn a_few_ranges_take_64_bytes_of_heap() {
        // What this layout is for (the module comment): room for 4 ranges, not a 192-byte
        // B-tree leaf; a fifth range grows the room.
        let mut r = RangeSet::new();
        assert_eq!(r.ranges.capacity(), 0, "an empty set allocates nothing");
        for i in 0..4 {
            r.insert(10 * i, 10 * i + 5);
        }
        assert_eq!(r.ranges.capacity() * std::mem::size_of::<(u64, u64)>(), 64);
        r.insert(100, 105);
        assert!(r.ranges.capacity() > 4);
        assert_eq!(std::mem::size_of::<RangeSet>(), 32);
        // Emptied (by each way a set empties), the set frees its room.
        for empty in [0, 1, 2] {
            let mut r = RangeSet::new();
            for i in 0..40 {
                r.insert(10 * i, 10 * i + 5);
            }
            assert!(r.ranges.capacity() >= 40);
            match empty {
                0 => r.remove_below(1_000),
                1 => r.remove(0, 1_000),
                _ => {
                    r.remove(10, 1_000);
                    assert_eq!(r.pop_first_if_starts_by(0), Some((0, 5)));
                }
            }
            assert!(r.is_empty());
            assert_eq!(r.ranges.capacity(), 0, "emptied by way {empty}");
        }
    }
}
