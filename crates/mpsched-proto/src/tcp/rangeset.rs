//! A set of disjoint half-open `u64` ranges, kept merged (SACK scoreboard, out-of-order
//! queues). O(log n) per insert plus the ranges it merges.

use std::collections::BTreeMap;

/// Disjoint, non-adjacent `[start, end)` ranges keyed by start.
#[derive(Debug, Clone, Default)]
pub struct RangeSet {
    ranges: BTreeMap<u64, u64>,
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
        self.ranges.iter().next().map(|(&s, &e)| (s, e))
    }

    /// End of the highest range.
    #[inline]
    pub fn last_end(&self) -> Option<u64> {
        self.ranges.iter().next_back().map(|(_, &e)| e)
    }

    /// The range containing `x`, if any.
    pub fn containing(&self, x: u64) -> Option<(u64, u64)> {
        self.ranges
            .range(..=x)
            .next_back()
            .filter(|(_, &e)| e > x)
            .map(|(&s, &e)| (s, e))
    }

    /// Adds `[start, end)`. `gap` is called for every sub-range that was not covered before,
    /// in increasing order. Returns the number of newly covered bytes.
    pub fn insert_with(&mut self, start: u64, end: u64, mut gap: impl FnMut(u64, u64)) -> u64 {
        if start >= end {
            return 0;
        }
        let mut new_start = start;
        let mut new_end = end;
        let mut cur = start;
        let mut added = 0;
        // A range starting at or before `start` that reaches it merges with us.
        if let Some((&s, &e)) = self.ranges.range(..=start).next_back() {
            if e >= start {
                new_start = s;
                new_end = new_end.max(e);
                cur = cur.max(e);
                self.ranges.remove(&s);
                self.total_bytes -= e - s;
            }
        }
        // Every range starting inside (start, end] merges too.
        while let Some((&s, &e)) = self.ranges.range(start..=end).next() {
            if s > cur {
                gap(cur, s);
                added += s - cur;
            }
            cur = cur.max(e);
            new_end = new_end.max(e);
            self.ranges.remove(&s);
            self.total_bytes -= e - s;
        }
        if cur < end {
            gap(cur, end);
            added += end - cur;
        }
        self.ranges.insert(new_start, new_end);
        self.total_bytes += new_end - new_start;
        added
    }

    /// Adds `[start, end)`; returns the number of newly covered bytes.
    pub fn insert(&mut self, start: u64, end: u64) -> u64 {
        self.insert_with(start, end, |_, _| {})
    }

    /// Removes everything below `x`.
    pub fn remove_below(&mut self, x: u64) {
        if self.ranges.is_empty() {
            return; // the common case: nothing out of order
        }
        while let Some((&s, &e)) = self.ranges.iter().next() {
            if s >= x {
                break;
            }
            self.ranges.remove(&s);
            self.total_bytes -= e - s;
            if e > x {
                self.ranges.insert(x, e);
                self.total_bytes += e - x;
                break;
            }
        }
    }

    /// Removes and returns the lowest range if it starts at or below `x`.
    pub fn pop_first_if_starts_by(&mut self, x: u64) -> Option<(u64, u64)> {
        let (s, e) = self.first()?;
        if s > x {
            return None;
        }
        self.ranges.remove(&s);
        self.total_bytes -= e - s;
        Some((s, e))
    }

    /// Removes `[start, end)` from the set.
    pub fn remove(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        // The range starting before `start` keeps its left part (and a right part beyond end).
        if let Some((&s, &e)) = self.ranges.range(..start).next_back() {
            if e > start {
                self.ranges.insert(s, start);
                self.total_bytes -= e - start;
                if e > end {
                    self.ranges.insert(end, e);
                    self.total_bytes += e - end;
                }
            }
        }
        // Ranges starting inside [start, end).
        while let Some((&s, &e)) = self.ranges.range(start..end).next() {
            self.ranges.remove(&s);
            self.total_bytes -= e - s;
            if e > end {
                self.ranges.insert(end, e);
                self.total_bytes += e - end;
                break;
            }
        }
    }

    /// Iterates the ranges in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.ranges.iter().map(|(&s, &e)| (s, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
