//! Sent-but-unacked data with the subflows each piece went out on, and the reinjection queue.

use crate::sched::UnackedChunk;
use crate::tcp::RangeSet;
use std::collections::VecDeque;

/// Unacked chunks in DSN order (contiguous from DATA_ACK to `next_dsn`) plus the reinjection
/// set.
#[derive(Debug, Clone, Default)]
pub(crate) struct Chunks {
    unacked: VecDeque<UnackedChunk>,
    /// Allocated at the first reinjection: most connections never reinject, and the data
    /// sender every concurrent flow keeps is 56 bytes smaller without it (issue 17).
    reinject: Option<Box<Reinject>>,
}

/// The reinjection set and its view as chunks.
#[derive(Debug, Clone, Default)]
struct Reinject {
    ranges: RangeSet,
    view: Vec<UnackedChunk>,
    dirty: bool,
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
        if let Some(r) = self
            .reinject
            .as_deref_mut()
            .filter(|r| !r.ranges.is_empty())
        {
            r.ranges.remove_below(data_acked);
            r.dirty = true;
        }
    }

    /// Queues `[s, e)` for reinjection.
    pub(crate) fn add_reinject(&mut self, s: u64, e: u64) {
        if s < e {
            let r = self.reinject.get_or_insert_with(Box::default);
            r.ranges.insert(s, e);
            r.dirty = true;
        }
    }

    /// Removes `[s, e)` from the reinjection queue (it was sent again).
    pub(crate) fn remove_reinject(&mut self, s: u64, e: u64) {
        if let Some(r) = self
            .reinject
            .as_deref_mut()
            .filter(|r| !r.ranges.is_empty())
        {
            r.ranges.remove(s, e);
            r.dirty = true;
        }
    }

    /// Unacked chunks as a slice.
    #[cfg(test)]
    pub(crate) fn unacked(&mut self) -> &[UnackedChunk] {
        self.unacked.make_contiguous()
    }

    /// Bytes held in the reinjection queue.
    pub(crate) fn reinject_bytes(&self) -> u64 {
        self.reinject.as_ref().map_or(0, |r| r.ranges.total_bytes())
    }

    /// (unacked chunks, reinjection queue with the masks of the unacked chunks they cover).
    pub(crate) fn views(&mut self) -> (&[UnackedChunk], &[UnackedChunk]) {
        let Some(r) = self.reinject.as_deref_mut() else {
            return (self.unacked.make_contiguous(), &[]);
        };
        if r.dirty {
            r.dirty = false;
            r.view.clear();
            let un = self.unacked.make_contiguous();
            for (s, e) in r.ranges.iter() {
                let mut i = un.partition_point(|c| c.dsn + c.len <= s);
                while i < un.len() && un[i].dsn < e {
                    let c = un[i];
                    let a = c.dsn.max(s);
                    let b = (c.dsn + c.len).min(e);
                    r.view.push(UnackedChunk {
                        dsn: a,
                        len: b - a,
                        sent_on_mask: c.sent_on_mask,
                    });
                    i += 1;
                }
            }
        }
        (self.unacked.make_contiguous(), &r.view)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reinjection state is allocated by the first reinjection only: trimming, removing
    /// and viewing leave a connection that never reinjects without it.
    #[test]
    fn no_reinjection_allocates_nothing() {
        let mut c = Chunks::default();
        c.push(0, 100, 0b01);
        c.trim(10);
        c.remove_reinject(20, 30);
        assert_eq!(c.reinject_bytes(), 0);
        assert!(c.views().1.is_empty());
        assert!(c.reinject.is_none());
        c.add_reinject(30, 30);
        assert!(c.reinject.is_none(), "an empty range is no reinjection");
        c.add_reinject(30, 40);
        assert_eq!(c.reinject_bytes(), 10);
        assert_eq!(c.views().1.len(), 1);
    }

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
