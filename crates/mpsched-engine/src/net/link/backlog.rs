//! A link's backlog (accepted packets not yet fully served) in 16 bytes an entry, kept apart
//! from `link.rs` (a child module: it reads the link's private rings).
//!
//! A bottleneck's backlog holds every queued packet (tens of thousands at a shared
//! bottleneck), and a ring cycles through its whole buffer, so its size per entry is resident
//! for the run. An entry keeps its end of service and its bytes whole, and its start as the
//! service time back from the end in 32 bits (up to 4.29 s to serialise one packet). An entry
//! whose service takes longer (a rate of a few kbit/s, a capacity that stops mid-packet or
//! never resumes) or that does not go on into the pipe (lost after the transmitter, or
//! reordered) is marked, and its whole record is kept in a side ring (`Link::side`), in
//! order; so what is read back is always what was stored, and the packet path, which reads
//! ends and bytes, never looks at the side ring.

use super::Link;

/// A packet accepted and not yet fully served, as the link reads it. (When it reached the
/// queue is kept apart, in `Link::queued`, and only where the impairments come first;
/// elsewhere it reached the queue when the link accepted it, at or before any time the queue
/// is asked about.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Pending {
    pub(super) start_ns: u64,
    pub(super) end_ns: u64,
    /// Bytes the queue counts (framing included; a packet's `size_bytes` is a `u32` and the
    /// framing at most `MAX_OVERHEAD_BYTES`, see `framed_u32`).
    pub(super) bytes: u32,
    /// The packet went on into the FIFO propagation pipe (not lost after the transmitter,
    /// not reordered into the propagation slab): the pipe holds these in backlog order.
    pub(super) piped: bool,
}

/// `Packed::service_ns` of an entry whose record is in the side ring.
const SIDE: u32 = u32::MAX;

/// A [`Pending`] in 16 bytes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Packed {
    end_ns: u64,
    /// `end_ns - start_ns`, or [`SIDE`].
    service_ns: u32,
    bytes: u32,
}

impl Packed {
    /// `p` as stored, marked [`SIDE`] when its record goes to the side ring (`p.start_ns <=
    /// p.end_ns` always: a packet's service starts before it ends).
    #[inline(always)]
    fn pack(p: Pending) -> Packed {
        debug_assert!(p.start_ns <= p.end_ns);
        let service_ns = p.end_ns - p.start_ns;
        let fits = service_ns < u64::from(SIDE) && p.piped;
        Self { end_ns: p.end_ns, service_ns: if fits { service_ns as u32 } else { SIDE }, bytes: p.bytes }
    }

    #[inline(always)]
    fn in_side(&self) -> bool {
        self.service_ns == SIDE
    }

    /// The record of an entry not in the side ring.
    #[inline(always)]
    fn unpack(self) -> Pending {
        Pending {
            start_ns: self.end_ns - u64::from(self.service_ns),
            end_ns: self.end_ns,
            bytes: self.bytes,
            piped: true,
        }
    }
}

impl<P> Link<P> {
    #[inline(always)]
    pub(super) fn backlog_len(&self) -> usize {
        self.backlog.len()
    }

    /// The first entry's end of service and bytes (what the packet path reads).
    #[inline(always)]
    pub(super) fn backlog_front_end_bytes(&self) -> Option<(u64, u32)> {
        self.backlog.front().map(|q| (q.end_ns, q.bytes))
    }

    #[inline(always)]
    pub(super) fn backlog_front(&self) -> Option<Pending> {
        let q = *self.backlog.front()?;
        if q.in_side() {
            return self.side.front().copied();
        }
        Some(q.unpack())
    }

    pub(super) fn backlog_get(&self, index: usize) -> Option<Pending> {
        let q = *self.backlog.get(index)?;
        if q.in_side() {
            return self.side.get(self.side_index(index)).copied();
        }
        Some(q.unpack())
    }

    /// Where entry `index`'s record is (or goes) in the side ring: the side entries before it.
    #[cold]
    #[inline(never)]
    fn side_index(&self, index: usize) -> usize {
        (0..index).filter(|&i| self.backlog[i].in_side()).count()
    }

    /// The entries in order (double-ended: `rev` walks from the newest). Without side records
    /// (the common case) straight from the ring; otherwise side records pair with their marked
    /// entries by rank, collected first.
    pub(super) fn backlog_iter(&self) -> impl DoubleEndedIterator<Item = Pending> + '_ {
        let plain = self.side.is_empty().then(|| self.backlog.iter().map(|q| q.unpack()));
        let paired = (!self.side.is_empty()).then(|| {
            let mut side = self.side.iter();
            let records: Vec<Pending> = self
                .backlog
                .iter()
                .map(|q| if q.in_side() { *side.next().expect("a record per marked entry") } else { q.unpack() })
                .collect();
            records.into_iter()
        });
        plain.into_iter().flatten().chain(paired.into_iter().flatten())
    }

    #[inline(always)]
    pub(super) fn backlog_pop_front(&mut self) {
        if self.backlog.pop_front().is_some_and(|q| q.in_side()) {
            self.side.pop_front();
        }
    }

    #[inline(always)]
    pub(super) fn backlog_push(&mut self, p: Pending) {
        let q = Packed::pack(p);
        if q.in_side() {
            self.side.push_back(p);
        }
        self.backlog.push_back(q);
    }

    /// Entry `index` takes new times (`retime_waiting`).
    pub(super) fn backlog_set_times(&mut self, index: usize, start_ns: u64, end_ns: u64) {
        let old = self.backlog[index];
        let p = Pending { start_ns, end_ns, ..self.backlog_get(index).expect("index below the length") };
        let q = Packed::pack(p);
        let k = self.side_index(index);
        match (old.in_side(), q.in_side()) {
            (true, true) => self.side[k] = p,
            (true, false) => self.side.remove(k),
            (false, true) => self.side.insert(k, p),
            (false, false) => {}
        }
        self.backlog[index] = q;
    }

    /// The newest entry does not go into the pipe (lost after the transmitter, or reordered).
    pub(super) fn backlog_unpipe_last(&mut self) {
        let Some(&q) = self.backlog.back() else { return };
        if q.in_side() {
            if let Some(p) = self.side.back_mut() {
                p.piped = false;
            }
        } else {
            self.side.push_back(Pending { piped: false, ..q.unpack() });
            if let Some(last) = self.backlog.back_mut() {
                last.service_ns = SIDE;
            }
        }
    }

    #[inline(always)]
    pub(super) fn backlog_clear(&mut self) {
        self.backlog.clear();
        if !self.side.is_empty() {
            self.side.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_that_do_not_fit_16_bytes_keep_their_record_in_the_side_ring() {
        assert_eq!(std::mem::size_of::<Packed>(), 16);
        let spec = crate::net::LinkSpec::plain(1_000_000, 0);
        let mut link = Link::<u64>::new(spec, crate::rng::Rng::stream(0, 0));
        let long = u64::from(SIDE);
        let entry = |start_ns: u64, service_ns: u64, bytes: u32, piped: bool| Pending {
            start_ns,
            end_ns: start_ns + service_ns,
            bytes,
            piped,
        };
        let mut stored = vec![
            entry(0, 1, 1500, true),
            entry(1, long - 1, u32::MAX, true), // fits
            entry(long, long, 1500, true),      // 4.29 s of service: side
            entry(2 * long, 5, 100, false),     // not piped: side
            entry(2 * long + 5, 5, 100, true),
            Pending { start_ns: 2 * long + 10, end_ns: u64::MAX, bytes: 7, piped: true }, // stuck
        ];
        for &p in &stored {
            link.backlog_push(p);
        }
        assert_eq!(link.side.len(), 3);
        link.backlog_unpipe_last();
        stored[5].piped = false;
        link.backlog_push(entry(u64::MAX - 10, 3, 40, true));
        stored.push(entry(u64::MAX - 10, 3, 40, true));
        link.backlog_unpipe_last(); // moves a packed entry to the side ring
        stored[6].piped = false;
        assert_eq!(link.backlog_iter().collect::<Vec<_>>(), stored);
        assert_eq!(link.backlog_iter().rev().collect::<Vec<_>>(), stored.iter().rev().copied().collect::<Vec<_>>());
        // Re-timing moves entries in and out of the side ring at their rank.
        link.backlog_set_times(2, 10, 20); // side -> packed
        (stored[2].start_ns, stored[2].end_ns) = (10, 20);
        link.backlog_set_times(4, 0, long + 1); // packed -> side
        (stored[4].start_ns, stored[4].end_ns) = (0, long + 1);
        link.backlog_set_times(3, 1, 2); // stays in the side ring (not piped)
        (stored[3].start_ns, stored[3].end_ns) = (1, 2);
        for (i, p) in stored.iter().enumerate() {
            assert_eq!(link.backlog_get(i), Some(*p));
        }
        for p in &stored {
            assert_eq!(link.backlog_front(), Some(*p));
            assert_eq!(link.backlog_front_end_bytes(), Some((p.end_ns, p.bytes)));
            link.backlog_pop_front();
        }
        assert!(link.backlog_len() == 0 && link.side.is_empty());
        // Without side records the entries are read straight from the ring.
        let plain: Vec<Pending> = (0..3).map(|i| entry(10 * i, 5, 100, true)).collect();
        for &p in &plain {
            link.backlog_push(p);
        }
        assert_eq!(link.backlog_iter().collect::<Vec<_>>(), plain);
        assert_eq!(link.backlog_iter().rev().collect::<Vec<_>>(), plain.iter().rev().copied().collect::<Vec<_>>());
    }
}
