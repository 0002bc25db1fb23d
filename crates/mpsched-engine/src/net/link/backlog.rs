//! A link's backlog (accepted packets not yet fully served), kept apart from `link.rs` (a child
//! module: it reads the link's private rings).
//!
//! A bottleneck's backlog holds every queued packet (tens of thousands at a shared
//! bottleneck), and a ring cycles through its whole buffer, so its size per entry is resident
//! for the run. Most entries repeat what the pipe already holds: on a link whose impairments
//! come after the queue, a packet that goes on into the pipe arrives `delay_ns` after its end
//! of service unless something delays it further, its bytes are its `size_bytes` plus the
//! framing, and on a plain constant-rate link its service takes the serialisation time of those
//! bytes (on a token bucket's, none: it leaves when the bucket pays). Such an entry is stored
//! nowhere: the backlog's entries are then the pipe's last `Link::derived` entries, read back
//! from them. An entry the pipe does not give exactly (a varying capacity or a rate collapse,
//! jitter or an extra delay, a packet lost after the transmitter or reordered, the impairments
//! before the queue) goes to the ring `Link::backlog` with every entry still pending before it
//! ("materialised", in order), and the backlog stays there until it empties.
//!
//! In the ring, an entry keeps its end of service and its bytes whole, and its start as the
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
        self.derived as usize + self.backlog.len()
    }

    /// Where derived entry `index` is in the pipe (the derived entries are the pipe's tail).
    #[inline(always)]
    fn derived_pipe_index(&self, index: usize) -> usize {
        self.pipe.len() - self.derived as usize + index
    }

    /// Derived entry `index`'s end of service and bytes.
    #[inline(always)]
    fn derived_end_bytes(&self, index: usize) -> (u64, u32) {
        self.piped_end_bytes(self.derived_pipe_index(index))
    }

    /// The end of service and bytes of the derived entry of pipe entry `i`: its arrival less
    /// the link's delay, its size plus the framing (`framed_u32` of what `enqueue` counted).
    /// (The arrival as `Link::pipe_arrive_ns` reads it, from the entry read once here: calling
    /// that, which indexes the pipe again, cost 14 instructions a packet on e2e (1).)
    #[inline(always)]
    fn piped_end_bytes(&self, i: usize) -> (u64, u32) {
        let e = &self.pipe[i];
        let arrive_ns = if self.pipe_wide { self.pipe_times[i] } else { self.pipe_base_ns + u64::from(e.arrive_off) };
        (arrive_ns - self.delay_ns, e.pkt.size_bytes.wrapping_add(self.overhead_bytes))
    }

    /// `settle` of a derived backlog (a link whose impairments come after the queue: no
    /// served prefix, no queue times): forgets the entries ended by `now_ns`; returns the end
    /// and bytes of the first one left.
    #[inline(always)]
    pub(super) fn settle_derived(&mut self, now_ns: u64) -> Option<(u64, u32)> {
        let n = self.pipe.len();
        for i in n - self.derived as usize..n {
            let (end_ns, bytes) = self.piped_end_bytes(i);
            if end_ns > now_ns {
                return Some((end_ns, bytes));
            }
            self.backlog_bytes -= u64::from(bytes);
            self.derived -= 1;
        }
        None
    }

    /// Derived entry `index`'s record.
    fn derived_get(&self, index: usize) -> Pending {
        let (end_ns, bytes) = self.derived_end_bytes(index);
        // A bucket's packet leaves when it is paid for; a constant rate serialises it.
        let service_ns =
            if self.has_bucket { 0 } else { crate::time::serialization_ns(u64::from(bytes), self.fixed_rate_bps) };
        Pending { start_ns: end_ns - service_ns, end_ns, bytes, piped: true }
    }

    /// `Link::derives` under the impairments in force (`set_impairment`): as `enqueue`'s
    /// branches go, a bucket serves (start = end) unless a rate collapse is in force on a tbf;
    /// without one, a plain link serialises at its constant rate if it has one.
    pub(super) fn derives_now(&self) -> bool {
        self.after_queue
            && if self.has_bucket {
                self.impairment.rate_limit_bps.is_none() || self.htb()
            } else {
                self.plain && self.fixed_rate_bps > 0
            }
    }

    /// Whether a piped entry arriving at `arrive_ns` is what its pipe entry gives back
    /// (`derived_get`): see `Link::derives`.
    #[inline(always)]
    fn derivable(&self, p: &Pending, arrive_ns: u64) -> bool {
        self.derives && arrive_ns == p.end_ns + self.delay_ns
    }

    /// The ring's first entry's end of service and bytes (what the packet path reads).
    #[inline(always)]
    pub(super) fn ring_front_end_bytes(&self) -> Option<(u64, u32)> {
        self.backlog.front().map(|q| (q.end_ns, q.bytes))
    }

    /// Whether the first entry (`settle`d to `now_ns`: it ends after `now_ns`) started its
    /// service by `now_ns`. A derived one did unless a bucket holds it: a FIFO transmitter
    /// starts a packet when the one before it ends or when the link accepted it, whichever is
    /// later, and both are by `now_ns` (the one before has ended: settled, forgotten with its
    /// arrival, or lost with the link going down, which frees the transmitter then); a
    /// bucket's packet starts when it leaves, at its end.
    #[inline(always)]
    pub(super) fn backlog_front_started(&self, now_ns: u64) -> bool {
        if self.derived > 0 {
            debug_assert_eq!(!self.has_bucket, self.derived_get(0).start_ns <= now_ns);
            return !self.has_bucket;
        }
        self.backlog_front().is_some_and(|p| p.start_ns <= now_ns)
    }

    #[inline(always)]
    pub(super) fn backlog_front(&self) -> Option<Pending> {
        if self.derived > 0 {
            return Some(self.derived_get(0));
        }
        let q = *self.backlog.front()?;
        if q.in_side() {
            return self.side.front().copied();
        }
        Some(q.unpack())
    }

    pub(super) fn backlog_get(&self, index: usize) -> Option<Pending> {
        if self.derived > 0 {
            return (index < self.derived as usize).then(|| self.derived_get(index));
        }
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

    /// The entries in order (double-ended: `rev` walks from the newest). Derived entries are
    /// read from the pipe; without side records (the common case) the ring's straight from it;
    /// otherwise side records pair with their marked entries by rank, collected first.
    pub(super) fn backlog_iter(&self) -> impl DoubleEndedIterator<Item = Pending> + '_ {
        let derived = (self.derived > 0).then(|| (0..self.derived as usize).map(|i| self.derived_get(i)));
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
        derived.into_iter().flatten().chain(plain.into_iter().flatten()).chain(paired.into_iter().flatten())
    }

    /// Drops the ring's first entry (with no derived entries).
    #[inline(always)]
    pub(super) fn ring_pop_front(&mut self) {
        debug_assert_eq!(self.derived, 0);
        if self.backlog.pop_front().is_some_and(|q| q.in_side()) {
            self.side.pop_front();
        }
    }

    /// Appends an entry that goes on into the pipe at `arrive_ns` (the caller pushes it there
    /// next). `BEFORE`: the link's impairments come before its queue (nothing is derived).
    #[inline(always)]
    pub(super) fn backlog_push_piped<const BEFORE: bool>(&mut self, p: Pending, arrive_ns: u64) {
        debug_assert!(p.piped);
        if !BEFORE && self.derivable(&p, arrive_ns) && self.backlog.is_empty() && !no_derive() {
            self.derived += 1;
            return;
        }
        self.backlog_push(p);
    }

    /// Appends an entry to the ring (after the derived entries, which go there first).
    #[inline(always)]
    pub(super) fn backlog_push(&mut self, p: Pending) {
        if self.derived > 0 {
            self.backlog_materialise();
        }
        self.ring_push(p);
    }

    /// Appends `p` to the ring as stored (its whole record to the side ring when it does not
    /// pack).
    #[inline(always)]
    fn ring_push(&mut self, p: Pending) {
        let q = Packed::pack(p);
        if q.in_side() {
            self.side.push_back(p);
        }
        self.backlog.push_back(q);
    }

    /// Moves the derived entries to the ring, in order: an entry that follows them cannot be
    /// derived, or the pipe entries they are read from are about to move (`backlog_set_times`).
    #[cold]
    #[inline(never)]
    pub(super) fn backlog_materialise(&mut self) {
        debug_assert!(self.derived > 0 && self.backlog.is_empty());
        for i in 0..self.derived as usize {
            let p = self.derived_get(i);
            self.ring_push(p);
        }
        self.derived = 0;
    }

    /// The pipe's head is about to leave (it reached the far end): if the backlog still holds
    /// it as a derived entry (every pipe entry is one), its service ended by then, and it
    /// leaves the backlog now, as `settle` would take it, while its record can still be read.
    /// (Only links whose impairments come after the queue derive: no served prefix, no queue
    /// times.)
    #[inline(always)]
    pub(super) fn backlog_forget_popped(&mut self) {
        if self.derived != 0 && self.derived as usize == self.pipe.len() {
            debug_assert!(self.after_queue && self.served == 0 && self.queued.is_empty());
            let (_, bytes) = self.derived_end_bytes(0);
            self.derived -= 1;
            self.backlog_bytes -= u64::from(bytes);
        }
    }

    /// Entry `index` takes new times (`retime_waiting`, which then moves the pipe's arrivals:
    /// the derived entries go to the ring first).
    pub(super) fn backlog_set_times(&mut self, index: usize, start_ns: u64, end_ns: u64) {
        if self.derived > 0 {
            self.backlog_materialise();
        }
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

    #[inline(always)]
    pub(super) fn backlog_clear(&mut self) {
        self.derived = 0;
        self.backlog.clear();
        if !self.side.is_empty() {
            self.side.clear();
        }
    }
}

#[cfg(test)]
thread_local! {
    /// Set: a link keeps every entry in its ring (the reference of `backlog_tests`).
    pub(super) static NO_DERIVE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[cfg(test)]
pub(super) fn no_derive() -> bool {
    NO_DERIVE.get()
}

#[cfg(not(test))]
#[inline(always)]
pub(super) const fn no_derive() -> bool {
    false
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
            Pending { start_ns: 2 * long + 10, end_ns: u64::MAX, bytes: 7, piped: false }, // stuck
            entry(u64::MAX - 10, 3, 40, false), // lost after the transmitter: side
        ];
        for &p in &stored {
            link.backlog_push(p);
        }
        assert_eq!(link.side.len(), 4);
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
            assert_eq!(link.ring_front_end_bytes(), Some((p.end_ns, p.bytes)));
            link.ring_pop_front();
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
