//! Counting outstanding segments shorter than a full one: in Linux each is an skb of its own,
//! so each costs an skb's overhead in `sk_wmem_queued`, which the `linux` scheduler compares.

use super::Scoreboard;

impl Scoreboard {
    /// Outstanding segments shorter than a full one: each ended the data its sender had, so
    /// each is an skb of its own in Linux's retransmission queue (`sk_wmem_queued` overhead).
    #[inline]
    pub fn short_segs(&self) -> u64 {
        u64::from(self.short_segs)
    }
    /// Sets a full segment's length (the MSS), below which a pushed segment counts as short.
    #[inline]
    pub fn set_full_len(&mut self, bytes: u64) {
        self.full_len = u16::try_from(bytes).unwrap_or(u16::MAX);
    }

    /// 1 when a segment of `len` bytes is short (below the full length), else 0.
    #[inline]
    pub(super) fn is_short(&self, len: u32) -> u32 {
        u32::from(len < u32::from(self.full_len))
    }
}
