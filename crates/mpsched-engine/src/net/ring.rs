//! The FIFO rings of a link (its backlog and its propagation pipe), and the record a pipe keeps
//! per packet.
//!
//! A link's rings reach their peak length early (a bottleneck queue fills in its first
//! seconds) and then cycle through their whole buffer, so every slot of the buffer is resident
//! for the rest of the run. `VecDeque` doubles its buffer when full, which leaves up to half of
//! it unused at the peak; [`Ring`] grows by a quarter instead (at least 4 slots), so at most a
//! fifth of a ring's buffer is slack. The extra reallocations happen only while a ring grows
//! towards its peak.

use super::Packet;
use std::collections::VecDeque;

/// A FIFO queue whose buffer grows by a quarter when full (see the module comment).
#[derive(Debug, Clone)]
pub(crate) struct Ring<T>(VecDeque<T>);

impl<T> Ring<T> {
    pub(crate) const fn new() -> Self {
        Self(VecDeque::new())
    }

    #[inline(always)]
    pub(crate) fn push_back(&mut self, value: T) {
        if self.0.len() == self.0.capacity() {
            self.grow();
        }
        self.0.push_back(value);
    }

    /// Room for a quarter more (at least 4): out of line, it runs only while the ring grows.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        self.0.reserve_exact((self.0.len() / 4).max(4));
    }

    /// Takes the front entry; a ring left empty starts again at the start of its buffer
    /// (`VecDeque::clear` resets its head), so a link whose queue and pipe drain between
    /// packets, as most of a FatTree's do, writes and reads the same first lines of its
    /// buffers each time instead of walking through the whole buffer (sized by its busiest
    /// moment), whose other lines have left the caches since the ring last passed them.
    #[inline(always)]
    pub(crate) fn pop_front(&mut self) -> Option<T> {
        let front = self.0.pop_front();
        if self.0.is_empty() {
            self.0.clear();
        }
        front
    }

    #[inline(always)]
    pub(crate) fn front(&self) -> Option<&T> {
        self.0.front()
    }

    #[inline(always)]
    pub(crate) fn get(&self, index: usize) -> Option<&T> {
        self.0.get(index)
    }

    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    #[inline(always)]
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Inserts at `index` (rare: a re-timed backlog entry, see `Link::backlog_set_times`).
    pub(crate) fn insert(&mut self, index: usize, value: T) {
        if self.0.len() == self.0.capacity() {
            self.grow();
        }
        self.0.insert(index, value);
    }

    /// Removes entry `index` (rare, as `insert`).
    pub(crate) fn remove(&mut self, index: usize) {
        self.0.remove(index);
    }

    pub(crate) fn clear(&mut self) {
        self.0.clear();
    }

    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = &T> {
        self.0.iter()
    }

    /// Address of the front entry (the buffer's start when empty, see `pop_front`): a hint for
    /// a prefetch, never read through.
    #[inline(always)]
    pub(crate) fn front_addr(&self) -> usize {
        self.0.as_slices().0.as_ptr() as usize
    }

    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.0.capacity()
    }
}

impl<T> std::ops::Index<usize> for Ring<T> {
    type Output = T;
    #[inline(always)]
    fn index(&self, index: usize) -> &T {
        &self.0[index]
    }
}

impl<T> std::ops::IndexMut<usize> for Ring<T> {
    #[inline(always)]
    fn index_mut(&mut self, index: usize) -> &mut T {
        &mut self.0[index]
    }
}

/// A packet propagating on a FIFO link, with its arrival time at the far end as a 32-bit offset
/// from the link's `pipe_base_ns` (see `Link::pipe_push`): 20 bytes with the simulator's 4-byte
/// payload, 24 with an 8-byte one (28 with a 64-bit time; a bottleneck's pipe holds every
/// queued and propagating packet, so this is per packet in the network). A pipe whose arrivals do not fit the offsets keeps them
/// whole beside the entries instead (`Link::pipe_times`); the offset is then unused. (Whether
/// the packet was on the link when it last went down is not kept per packet: see `Link::stale`.)
#[derive(Debug, Clone)]
pub(crate) struct PipeEntry<P> {
    pub(crate) arrive_off: u32,
    pub(crate) pkt: Packet<P>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pipe_entry_with_an_8_byte_payload_is_24_bytes() {
        assert_eq!(std::mem::size_of::<PipeEntry<[u32; 2]>>(), 24);
    }

    #[test]
    fn a_ring_left_empty_starts_again_at_the_start_of_its_buffer() {
        let mut r = Ring::new();
        for i in 0..10u64 {
            r.push_back(i);
        }
        // A fresh ring fills its buffer from the start.
        let start = r.front().unwrap() as *const u64;
        for round in 0..3u64 {
            while r.len() > 1 {
                r.pop_front();
            }
            // Not empty yet: the front is further into the buffer.
            assert_ne!(r.front().unwrap() as *const u64, start);
            r.pop_front();
            assert!(r.is_empty());
            r.push_back(100 + round);
            assert_eq!(r.front().unwrap() as *const u64, start, "round {round}");
            r.push_back(200 + round);
            assert!(r.iter().copied().eq([100 + round, 200 + round]));
        }
    }

    #[test]
    fn a_ring_keeps_fifo_order_and_grows_by_a_quarter() {
        let mut r = Ring::new();
        let (mut next_out, mut peak) = (0, 0);
        for i in 0..10_000u32 {
            r.push_back(i);
            peak = peak.max(r.len());
            if i % 3 == 0 {
                assert_eq!(r.pop_front(), Some(next_out));
                next_out += 1;
            }
            // A full ring grows by max(len / 4, 4): never more than a quarter above its peak
            // (doubling would leave up to the peak again).
            assert!(r.capacity() <= peak + (peak / 4).max(4), "capacity {} for a peak of {peak}", r.capacity());
        }
        assert_eq!(r.len(), 10_000 - next_out as usize);
        assert_eq!(r.front(), Some(&next_out));
        assert_eq!(r.get(1), Some(&(next_out + 1)));
        assert!(r.iter().copied().eq(next_out..10_000));
    }
}
