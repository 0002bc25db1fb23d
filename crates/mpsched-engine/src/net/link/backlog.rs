//! A link's backlog (accepted packets not yet fully served) in 16 bytes an entry, kept apart
//! from `link.rs` (a child module: it reads the link's private rings).
//!
//! A bottleneck's backlog holds every queued packet (tens of thousands at a shared
//! bottleneck), and a ring cycles through its whole buffer, so its size per entry is resident
//! for the run. An entry keeps its end of service whole, its start as the service time back
//! from the end in 32 bits (up to 4.29 s to serialise one packet) and its bytes in 31 bits
//! beside the `piped` bit. An entry that does not fit (a packet served for 4.29 s or more: a
//! rate of a few kbit/s, a capacity that stops mid-packet or never resumes; 2 GiB in one
//! packet) moves the whole backlog to a ring of plain 24-byte entries (`Link::wide`) until it
//! empties, so what is read back is always what was stored.

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

/// The `piped` bit of `Packed::bytes_piped`; bytes stay below it.
const PIPED: u32 = 1 << 31;

/// A [`Pending`] in 16 bytes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Packed {
    end_ns: u64,
    /// `end_ns - start_ns`.
    service_ns: u32,
    bytes_piped: u32,
}

impl Packed {
    #[inline(always)]
    fn pack(p: Pending) -> Option<Self> {
        let service_ns = u32::try_from(p.end_ns.checked_sub(p.start_ns)?).ok()?;
        (p.bytes < PIPED).then_some(Self {
            end_ns: p.end_ns,
            service_ns,
            bytes_piped: p.bytes | if p.piped { PIPED } else { 0 },
        })
    }

    #[inline(always)]
    fn unpack(self) -> Pending {
        Pending {
            start_ns: self.end_ns - u64::from(self.service_ns),
            end_ns: self.end_ns,
            bytes: self.bytes_piped & !PIPED,
            piped: self.bytes_piped & PIPED != 0,
        }
    }
}

impl<P> Link<P> {
    #[inline(always)]
    pub(super) fn backlog_len(&self) -> usize {
        if self.wide_backlog {
            self.wide.len()
        } else {
            self.backlog.len()
        }
    }

    #[inline(always)]
    pub(super) fn backlog_get(&self, index: usize) -> Option<Pending> {
        if self.wide_backlog {
            return self.wide_get(index);
        }
        self.backlog.get(index).map(|p| p.unpack())
    }

    #[inline(always)]
    pub(super) fn backlog_front(&self) -> Option<Pending> {
        self.backlog_get(0)
    }

    /// The entries in order (double-ended: `rev` walks from the newest).
    pub(super) fn backlog_iter(&self) -> impl DoubleEndedIterator<Item = Pending> + '_ {
        (0..self.backlog_len()).map(|i| self.backlog_get(i).expect("index below the length"))
    }

    #[inline(always)]
    pub(super) fn backlog_pop_front(&mut self) {
        if self.wide_backlog {
            self.wide.pop_front();
            // Empty: the next entries are packed again.
            self.wide_backlog = !self.wide.is_empty();
        } else {
            self.backlog.pop_front();
        }
    }

    #[inline(always)]
    pub(super) fn backlog_push(&mut self, p: Pending) {
        match Packed::pack(p) {
            Some(q) if !self.wide_backlog => self.backlog.push_back(q),
            _ => self.push_wide(p),
        }
    }

    /// Entry `index` takes new times (`retime_waiting`).
    pub(super) fn backlog_set_times(&mut self, index: usize, start_ns: u64, end_ns: u64) {
        let p = Pending { start_ns, end_ns, ..self.backlog_get(index).expect("index below the length") };
        if !self.wide_backlog {
            if let Some(q) = Packed::pack(p) {
                self.backlog[index] = q;
                return;
            }
            self.widen();
        }
        self.wide[index] = p;
    }

    /// The newest entry does not go into the pipe (lost after the transmitter, or reordered).
    pub(super) fn backlog_unpipe_last(&mut self) {
        if self.wide_backlog {
            if let Some(p) = self.wide.back_mut() {
                p.piped = false;
            }
        } else if let Some(p) = self.backlog.back_mut() {
            p.bytes_piped &= !PIPED;
        }
    }

    pub(super) fn backlog_clear(&mut self) {
        self.backlog.clear();
        self.wide.clear();
        self.wide_backlog = false;
    }

    #[cold]
    #[inline(never)]
    fn wide_get(&self, index: usize) -> Option<Pending> {
        self.wide.get(index).copied()
    }

    /// `p` does not fit a packed entry, or the backlog is already wide.
    #[cold]
    #[inline(never)]
    fn push_wide(&mut self, p: Pending) {
        self.widen();
        self.wide.push_back(p);
    }

    /// Moves the packed entries to the wide ring (kept in it until the backlog empties).
    #[cold]
    #[inline(never)]
    fn widen(&mut self) {
        if !self.wide_backlog {
            while let Some(q) = self.backlog.pop_front() {
                self.wide.push_back(q.unpack());
            }
            self.wide_backlog = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packed_entry_is_16_bytes_and_reads_back_what_fits() {
        assert_eq!(std::mem::size_of::<Packed>(), 16);
        let max_service = u64::from(u32::MAX);
        for (start_ns, end_ns) in [(0, 0), (0, max_service), (u64::MAX - max_service, u64::MAX), (5 << 40, 5 << 40 | 7)]
        {
            for (bytes, piped) in [(0, false), (1514, true), (PIPED - 1, true)] {
                let p = Pending { start_ns, end_ns, bytes, piped };
                assert_eq!(Packed::pack(p).expect("fits").unpack(), p);
            }
        }
        let plain = Pending { start_ns: 1, end_ns: 2, bytes: 3, piped: true };
        for p in [
            Pending { end_ns: 1 + max_service + 1, ..plain },
            Pending { end_ns: u64::MAX, ..plain },
            Pending { start_ns: 3, ..plain },
            Pending { bytes: PIPED, ..plain },
            Pending { bytes: u32::MAX, ..plain },
        ] {
            assert!(Packed::pack(p).is_none(), "{p:?} cannot be packed");
        }
    }

    #[test]
    fn an_entry_that_does_not_fit_widens_the_backlog_until_it_empties() {
        let spec = crate::net::LinkSpec {
            name: "l".into(),
            rate_bps: 1_000_000,
            delay_ns: 0,
            queue_bytes: None,
            queue_packets: None,
            loss: Default::default(),
            jitter: Default::default(),
            capacity: Default::default(),
            burst_bytes: None,
            overhead_bytes: 0,
            impairments: Default::default(),
        };
        let mut link = Link::<u64>::new(spec, crate::rng::Rng::stream(0, 0));
        let entry = |i: u64, bytes: u32| Pending { start_ns: i, end_ns: i + 1, bytes, piped: i % 2 == 0 };
        let mut stored: Vec<Pending> = (0..5).map(|i| entry(i, 1500)).collect();
        stored.push(entry(5, PIPED)); // 2 GiB: no room for the piped bit
        stored.extend((6..9).map(|i| entry(i, 1500)));
        for &p in &stored {
            link.backlog_push(p);
        }
        assert!(link.wide_backlog);
        link.backlog_unpipe_last();
        stored.last_mut().unwrap().piped = false;
        link.backlog_set_times(2, 40, 50);
        (stored[2].start_ns, stored[2].end_ns) = (40, 50);
        assert_eq!(link.backlog_iter().collect::<Vec<_>>(), stored);
        for _ in 0..stored.len() {
            link.backlog_pop_front();
        }
        assert!(!link.wide_backlog && link.backlog_len() == 0);
        link.backlog_push(entry(10, 1500));
        link.backlog_set_times(0, 20, u64::MAX); // widens the packed backlog in place
        assert!(link.wide_backlog);
        assert_eq!(link.backlog_front(), Some(Pending { start_ns: 20, end_ns: u64::MAX, ..entry(10, 1500) }));
    }
}
