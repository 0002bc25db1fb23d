//! Sent-but-unacked data with the subflows each piece went out on, and the reinjection queue.

use crate::sched::UnackedChunk;
use crate::tcp::RangeSet;
use std::collections::VecDeque;

/// Unacked chunks in DSN order (contiguous from DATA_ACK to `next_dsn`) plus the reinjection
/// set.
#[derive(Debug, Clone, Default)]
pub(crate) struct Chunks {
    unacked: VecDeque<UnackedChunk>,
    reinject: RangeSet,
    reinject_view: Vec<UnackedChunk>,
    reinject_dirty: bool,
}

impl Chunks {
    /// Records new data `[dsn, dsn + len)` handed to the subflows in `mask`.
    pub(crate) fn push(&mut self, dsn: u64, len: u64, mask: u64) {
        if let Some(last) = self.unacked.back_mut() {
            if last.sent_on_mask == mask && last.dsn + last.len == dsn {
                last.len += len;
                return;
            }
        }
        self.unacked.push_back(UnackedChunk {
            dsn,
            len,
            sent_on_mask: mask,
        });
    }

    /// Sets bit `sf` on every chunk in `[s, e)`, splitting chunks at the edges.
    pub(crate) fn mark_sent_on(&mut self, s: u64, e: u64, sf: usize) {
        let bit = 1u64 << sf.min(63);
        let mut i = self.unacked.partition_point(|c| c.dsn + c.len <= s);
        while i < self.unacked.len() {
            let c = self.unacked[i];
            if c.dsn >= e {
                break;
            }
            if c.sent_on_mask & bit != 0 {
                i += 1;
                continue;
            }
            if c.dsn < s {
                self.unacked[i].len = s - c.dsn;
                self.unacked.insert(
                    i + 1,
                    UnackedChunk {
                        dsn: s,
                        len: c.dsn + c.len - s,
                        ..c
                    },
                );
                i += 1;
                continue;
            }
            if c.dsn + c.len > e {
                self.unacked[i].len = e - c.dsn;
                self.unacked.insert(
                    i + 1,
                    UnackedChunk {
                        dsn: e,
                        len: c.dsn + c.len - e,
                        ..c
                    },
                );
            }
            self.unacked[i].sent_on_mask |= bit;
            i += 1;
        }
    }

    /// Drops everything below `data_acked`.
    pub(crate) fn trim(&mut self, data_acked: u64) {
        while let Some(c) = self.unacked.front_mut() {
            if c.dsn + c.len <= data_acked {
                self.unacked.pop_front();
            } else {
                if c.dsn < data_acked {
                    c.len -= data_acked - c.dsn;
                    c.dsn = data_acked;
                }
                break;
            }
        }
        if !self.reinject.is_empty() {
            self.reinject.remove_below(data_acked);
            self.reinject_dirty = true;
        }
    }

    /// Queues `[s, e)` for reinjection.
    pub(crate) fn add_reinject(&mut self, s: u64, e: u64) {
        if s < e {
            self.reinject.insert(s, e);
            self.reinject_dirty = true;
        }
    }

    /// Removes `[s, e)` from the reinjection queue (it was sent again).
    pub(crate) fn remove_reinject(&mut self, s: u64, e: u64) {
        if !self.reinject.is_empty() {
            self.reinject.remove(s, e);
            self.reinject_dirty = true;
        }
    }

    /// Unacked chunks as a slice.
    #[cfg(test)]
    pub(crate) fn unacked(&mut self) -> &[UnackedChunk] {
        self.unacked.make_contiguous()
    }

    /// Bytes held in the reinjection queue.
    pub(crate) fn reinject_bytes(&self) -> u64 {
        self.reinject.total_bytes()
    }

    /// (unacked chunks, reinjection queue with the masks of the unacked chunks they cover).
    pub(crate) fn views(&mut self) -> (&[UnackedChunk], &[UnackedChunk]) {
        if self.reinject_dirty {
            self.reinject_dirty = false;
            self.reinject_view.clear();
            let un = self.unacked.make_contiguous();
            for (s, e) in self.reinject.iter() {
                let mut i = un.partition_point(|c| c.dsn + c.len <= s);
                while i < un.len() && un[i].dsn < e {
                    let c = un[i];
                    let a = c.dsn.max(s);
                    let b = (c.dsn + c.len).min(e);
                    self.reinject_view.push(UnackedChunk {
                        dsn: a,
                        len: b - a,
                        sent_on_mask: c.sent_on_mask,
                    });
                    i += 1;
                }
            }
        }
        (self.unacked.make_contiguous(), &self.reinject_view)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_split_chunks_and_trim_keeps_the_tail() {
        let mut c = Chunks::default();
        c.push(0, 100, 0b01);
        c.push(100, 50, 0b01);
        assert_eq!(c.unacked().len(), 1, "contiguous, same mask: merged");
        c.mark_sent_on(40, 60, 1);
        let u = c.unacked().to_vec();
        assert_eq!(
            u,
            vec![
                UnackedChunk {
                    dsn: 0,
                    len: 40,
                    sent_on_mask: 1
                },
                UnackedChunk {
                    dsn: 40,
                    len: 20,
                    sent_on_mask: 3
                },
                UnackedChunk {
                    dsn: 60,
                    len: 90,
                    sent_on_mask: 1
                },
            ]
        );
        c.add_reinject(30, 70);
        let (_, r) = c.views();
        assert_eq!(
            r.iter()
                .map(|x| (x.dsn, x.len, x.sent_on_mask))
                .collect::<Vec<_>>(),
            vec![(30, 10, 1), (40, 20, 3), (60, 10, 1)]
        );
        c.remove_reinject(30, 45);
        c.trim(50);
        let (u, r) = c.views();
        assert_eq!(
            u[0],
            UnackedChunk {
                dsn: 50,
                len: 10,
                sent_on_mask: 3
            }
        );
        assert_eq!(
            r.iter().map(|x| (x.dsn, x.len)).collect::<Vec<_>>(),
            vec![(50, 10), (60, 10)]
        );
    }
}
