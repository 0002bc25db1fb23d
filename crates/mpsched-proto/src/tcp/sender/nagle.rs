//! Nagle's algorithm with Minshall's check (Linux `tcp_nagle_test`, `tcp_minshall_check`):
//! for writers without TCP_NODELAY, a last partial segment waits while a partial one is
//! outstanding.

use super::Sender;

impl Sender {
    /// Linux `tcp_nagle_test` on new data: with Nagle on, the queue's last, partial segment
    /// (`len` of the `front_len` bytes left, the only mapping queued) waits while segments
    /// are outstanding and the last partial segment sent is among them (`tcp_minshall_check`:
    /// `snd_sml` after `snd_una`). A TCP FIN is never held; MPTCP's DATA_FIN rides in an
    /// option, so it is (a Linux subflow tests the skb's TCP FIN flag only). Always inlined:
    /// with the simulator's store inlined into the send path, LLVM made it a call (+11
    /// instructions a packet).
    #[inline(always)]
    pub(super) fn nagle_holds(&self, len: u64, front_len: u64, data_fin: bool) -> bool {
        if !self.cfg.nagle || len >= self.tcb.mss_bytes || len < front_len || self.queue.len() != 1
        {
            return false;
        }
        if data_fin && !self.cfg.mptcp {
            return false;
        }
        let outstanding = self.snd_nxt - self.snd_una;
        !self.board.is_empty() && u64::from(self.sml_behind) < outstanding
    }

    /// Linux `tcp_minshall_update`: a partial segment of `len` bytes just sent marks `snd_sml`
    /// at its end; a full one moves the mark `len` further behind `snd_nxt`.
    pub(super) fn minshall_update(&mut self, len: u64) {
        self.sml_behind = if len < self.tcb.mss_bytes {
            0
        } else if self.sml_behind == u32::MAX {
            u32::MAX
        } else {
            u32::try_from(u64::from(self.sml_behind) + len).unwrap_or(u32::MAX)
        };
    }
}
