//! The hand-over of application data to the send queue, the queue's head trimmed when data is
//! acknowledged at the connection level, and the DSN ranges queued or outstanding.

use super::view::{add_segs, segs_of};
use super::{Mapping, Sender};
use crate::sched::ResendKind;

/// The segments a queued mapping of `len` bytes gains when `more` bytes merge into it:
/// `segs_of(len + more, mss) - segs_of(len, mss)` with one division of `more` where the two
/// counts took two. With `more = q mss + r`: `q` segments, plus one if `r > 0` and `r` does not
/// fit the room left in `len`'s last segment (none when `len` ends on a segment boundary). The
/// plain-TCP hand-over is whole segments (`room / mss * mss`), so `r == 0` there and `len % mss`
/// is not taken. Refused like [`segs_of`] beyond 32 bits (the sum's check is the caller's).
#[inline(always)]
pub(super) fn segs_added(len: u64, more: u64, mss: u64) -> u32 {
    let mss = mss.max(1);
    let (whole, part) = (more / mss, more % mss);
    let extra = if part == 0 {
        0
    } else {
        let tail = len % mss;
        // `tail + part > mss`, without the sum's overflow (`part < mss`).
        u64::from(tail == 0 || tail > mss - part)
    };
    u32::try_from(whole + extra).expect("a subflow's send queue holds fewer than 2^32 segments")
}

impl Sender {
    /// Hands `len` bytes starting at data sequence number `dsn` to the send queue.
    /// `data_fin`: the mapping ends the data stream.
    pub fn queue(&mut self, dsn: u64, len: u64, data_fin: bool) {
        self.enqueue(dsn, len, data_fin, None, 0);
    }

    /// [`Sender::queue`] of `len` bytes known to be `whole_segs` full segments (`len ==
    /// whole_segs * mss`; plain TCP's window-limited hand-over divided for it), or of any `len`
    /// with `whole_segs` 0. Whole segments add exactly their number to the queue's count,
    /// whatever the mapping they merge into (`ceil((a + k mss) / mss) = ceil(a / mss) + k`), so
    /// the count needs no second division.
    pub(crate) fn queue_counted(&mut self, dsn: u64, len: u64, data_fin: bool, whole_segs: u64) {
        if cfg!(test) && whole_segs > 0 {
            assert_eq!(len, whole_segs * self.tcb.mss_bytes);
        }
        self.enqueue(dsn, len, data_fin, None, whole_segs);
        if cfg!(test) {
            assert_eq!(u64::from(self.queued_segs), self.queued_segs_by_walk());
        }
    }

    /// Like [`Sender::queue`] for data the connection sends again (`kind` says why); its
    /// bytes are counted in [`SenderStats`] when they are transmitted.
    pub fn queue_resend(&mut self, dsn: u64, len: u64, data_fin: bool, kind: ResendKind) {
        self.enqueue(dsn, len, data_fin, Some(kind), 0);
    }

    /// The hand-over: merged into the last mapping when it continues it (a writer's data, every
    /// hand-over of a bulk transfer after the first), inline where the connection hands data
    /// down; a new mapping is pushed out of line.
    #[inline(always)]
    fn enqueue(
        &mut self,
        dsn: u64,
        len: u64,
        data_fin: bool,
        resend: Option<ResendKind>,
        whole_segs: u64,
    ) {
        if len == 0 {
            return;
        }
        let mss = self.tcb.mss_bytes;
        if let Some(last) = self.queue.back_mut() {
            if last.dsn + last.len == dsn && !last.data_fin && last.resend == resend {
                let added = if whole_segs > 0 {
                    u32::try_from(whole_segs)
                        .expect("a subflow's send queue holds fewer than 2^32 segments")
                } else {
                    segs_added(last.len, len, mss)
                };
                last.len += len;
                last.data_fin = data_fin;
                self.queued_bytes += len;
                self.queued_segs = add_segs(self.queued_segs, added);
                return;
            }
        }
        self.enqueue_new(dsn, len, data_fin, resend);
    }

    #[inline(never)]
    fn enqueue_new(&mut self, dsn: u64, len: u64, data_fin: bool, resend: Option<ResendKind>) {
        self.queued_bytes += len;
        self.queued_segs = add_segs(self.queued_segs, segs_of(len, self.tcb.mss_bytes));
        self.queue.push_back(Mapping {
            dsn,
            len,
            data_fin,
            resend,
        });
    }

    /// DSN ranges `(dsn, len)` queued and not transmitted yet.
    pub fn unsent_mappings(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.queue.iter().map(|m| (m.dsn, m.len))
    }

    /// DSN ranges of the outstanding, un-SACKed segments.
    pub fn unacked_mappings(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.board.unsacked_mappings()
    }

    /// Drops queued (untransmitted) data below `dsn`: it was acknowledged at the connection
    /// level through another subflow. Sequence numbers are assigned at transmission, so this
    /// leaves no hole. Looks at the queue head only: O(1) when there is nothing to drop. The
    /// MPTCP sender asks on every DATA_ACK, and the head is almost always at or above `dsn`:
    /// that test is inline, the trim a call (set up in the caller, it loaded the MSS and the
    /// counts first, ~20 instructions an ACK for nothing).
    #[inline(always)]
    pub fn trim_unsent_below(&mut self, dsn: u64) {
        if self.queue.front().is_some_and(|m| m.dsn < dsn) {
            self.trim_unsent_from_head(dsn);
        }
    }

    #[inline(never)]
    fn trim_unsent_from_head(&mut self, dsn: u64) {
        let mss = self.tcb.mss_bytes;
        while let Some(m) = self.queue.front_mut() {
            if m.dsn >= dsn {
                break;
            }
            let cut = (dsn - m.dsn).min(m.len);
            self.queued_segs -= segs_of(m.len, mss);
            m.dsn += cut;
            m.len -= cut;
            self.queued_segs += segs_of(m.len, mss);
            self.queued_bytes -= cut;
            if m.len > 0 {
                break;
            }
            self.queue.pop_front();
        }
    }

    /// Entries of heap room the send queue holds (tests of `tcp::fifo`).
    #[cfg(test)]
    pub(crate) fn queue_heap_entries(&self) -> usize {
        self.queue.heap_capacity()
    }

    /// Entries of heap room the scoreboard's DSN runs hold (tests of `tcp::fifo`).
    #[cfg(test)]
    pub(crate) fn dsn_runs_heap_entries(&self) -> usize {
        self.board.dsn_runs_heap_entries()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segs_added_is_the_difference_of_the_counts() {
        let both = |len: u64, more: u64, mss: u64| {
            u64::from(segs_added(len, more, mss))
                == u64::from(segs_of(len + more, mss)) - u64::from(segs_of(len, mss))
        };
        for mss in [0u64, 1, 2, 3, 7, 536, 1448, 1460, 9000] {
            let m = mss.max(1);
            // Every residue of small segments; around each boundary and inside large ones.
            let mut sizes: Vec<u64> = (0..(4 * m + 3).min(40)).collect();
            for k in 0..5 {
                for off in [0, 1, 2, m / 3, m / 2, m, m + 1, m + 3] {
                    sizes.push((k * m + off).saturating_sub(2));
                }
            }
            sizes.extend([10 * m - 1, 10 * m, 10 * m + 1, 1 << 20, (1 << 30) + 5]);
            for &len in &sizes {
                for &more in &sizes {
                    assert!(both(len, more, mss), "{len} + {more} at {mss}");
                }
            }
        }
    }
}
