//! The connection's send buffer: its size (fixed, or autotuned from the subflows as
//! `__mptcp_sync_sndbuf` sums them), the room a writer gets, and when Linux calls the socket
//! writable.

use super::DataSender;
use crate::mptcp::{
    subflow_sndbuf_bytes, Mode, PAGE_FRAG_BYTES, SNDBUF_PER_MSS_BYTES, TCP_WMEM0_BYTES,
};

impl DataSender {
    pub(super) fn unacked_written(&self) -> u64 {
        self.app_written - self.data_acked
    }

    /// Linux reports the socket writable only while a third of the send buffer is free
    /// (`mptcp_poll` -> `__mptcp_stream_is_writeable` / `sk_stream_write_space`:
    /// `sk_stream_wspace >= sk_stream_min_wspace`, i.e. free >= queued / 2), whether the writer
    /// polls (the testbed's `mpxfer`: `poll` for `POLLOUT`, then one non-blocking `send`) or
    /// sleeps in `sk_stream_wait_memory` after filling the buffer: a writer that stopped waits
    /// for a third of the buffer, and a polling writer's chunks stop at that threshold.
    pub(super) fn stream_writeable(&self) -> bool {
        let used = self.unacked_written();
        let free = self.send_buffer_bytes().saturating_sub(used);
        free > 0 && free >= used / 2
    }

    /// Room in the send buffer: what the application may write now. The buffer holds the
    /// bytes written and not DATA_ACKed; its size is `snd_buf_bytes`, or with
    /// [`ConnConfig::snd_buf_autotuning`] the autotuned [`DataSender::send_buffer_bytes`]
    /// (a write goes on while the buffer is below it, a page frag at a time, and only while
    /// the socket is writable: a third of the buffer free).
    pub fn send_buffer_free(&self) -> u64 {
        let used = self.unacked_written();
        let hard = self.cfg.snd_buf_bytes.saturating_sub(used);
        if !self.cfg.snd_buf_autotuning {
            return hard;
        }
        if !self.stream_writeable() {
            return 0;
        }
        let room = self.send_buffer_bytes().saturating_sub(used);
        (room.div_ceil(PAGE_FRAG_BYTES) * PAGE_FRAG_BYTES).min(hard)
    }

    /// Size of the send buffer, bytes: `snd_buf_bytes`, or with send-buffer autotuning
    /// `tcp_wmem[0]` plus every subflow's `tcp_sndbuf_expand` size (`__mptcp_sync_sndbuf`;
    /// a join counts once established, as `__mptcp_finish_join` adds it), capped by
    /// `snd_buf_bytes`.
    pub fn send_buffer_bytes(&self) -> u64 {
        if !self.cfg.snd_buf_autotuning {
            return self.cfg.snd_buf_bytes;
        }
        let subflows: u64 = (0..self.subflows.len())
            .filter(|&i| i == 0 || self.subflows[i].is_established())
            .map(|i| subflow_sndbuf_bytes(self.max_cwnd_segments[i], SNDBUF_PER_MSS_BYTES))
            .sum();
        // Plain TCP: the socket's own `sk_sndbuf`; MPTCP: `tcp_wmem[0]` plus the subflows'.
        let base = if self.cfg.mode == Mode::Mptcp {
            TCP_WMEM0_BYTES
        } else {
            0
        };
        (base + subflows).min(self.cfg.snd_buf_bytes)
    }
}
