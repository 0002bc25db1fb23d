//! The ACK sent when the application reads (Linux `tcp_cleanup_rbuf`, 6.18 net/ipv4/tcp.c).
//!
//! A segment shorter than `rcv_mss` (the end of a write: PSH) that does not trigger an
//! immediate ACK (no quickack, at most one MSS unacknowledged) gets a delayed ACK and marks
//! the subflow `ICSK_ACK_PUSHED` (a second one before any ACK: `ICSK_ACK_PUSHED2`;
//! `tcp_measure_rcv_mss`). The ACK then leaves early only from the application's read:
//! `tcp_recvmsg` (or, for MPTCP, `mptcp_recvmsg` -> `mptcp_cleanup_rbuf` ->
//! `mptcp_subflow_could_cleanup`, for every subflow) calls `tcp_cleanup_rbuf`, which sends a
//! scheduled ACK when the read left nothing in the receive memory (`rx_empty`: for MPTCP the
//! msk's, which holds its out-of-order queue) and a pushed segment is waiting (`PUSHED2`, or
//! `PUSHED` outside pingpong mode), or when more than `rcv_mss` is unacknowledged. So a small
//! frame read at once is acknowledged at once, while one that waits in the connection-level
//! out-of-order queue (it overtook a frame on a slower subflow) is acknowledged when the hole
//! fills and the read empties that queue, or at the delayed-ACK timer.
//!
//! Simplification: Linux also leaves `PUSHED` unset for a segment of at least 536 bytes that
//! repeats the previous segment's size (`last_seg_size`, then taken as `rcv_mss`); here every
//! in-order segment shorter than `rcv_mss` is pushed.

use super::Receiver;
use crate::PendingNs;

/// Linux `TCP_MSS_DEFAULT`: `tcp_initialize_rcv_mss` starts `rcv_mss` at most there.
const RCV_MSS_INITIAL_BYTES: u64 = 536;

/// Linux `tcp_initialize_rcv_mss`: min(MSS, 536) before any segment was measured.
pub(super) fn initial_rcv_mss(mss_bytes: u64) -> u16 {
    mss_bytes.clamp(1, RCV_MSS_INITIAL_BYTES) as u16
}

impl Receiver {
    /// Linux `tcp_measure_rcv_mss` for an in-order segment of `len` bytes: a full one raises
    /// `rcv_mss` (at most to the MSS); a shorter one marks the ACK pushed.
    #[inline(always)]
    pub(super) fn measure_rcv_mss(&mut self, len: u64) {
        // A segment as long as `rcv_mss` (most of a bulk transfer's) changes nothing: `rcv_mss`
        // is never above the MSS, so the update below would store it again.
        if len == u64::from(self.rcv_mss) {
            return;
        }
        if len > u64::from(self.rcv_mss) {
            // Linux re-measures the scaling ratio when `rcv_mss` changes; the first full
            // skb's ratio raises a fixed buffer's clamp (see `grow.rs`).
            self.ratio_measured = true;
            self.rcv_mss = len.min(self.cfg.mss_bytes).min(u64::from(u16::MAX)) as u16;
        } else {
            self.pushed = (self.pushed + 1).min(2);
        }
    }

    /// The application read in-order data of the connection; `rx_empty`: the read left
    /// nothing in the connection's receive memory (for MPTCP, no out-of-order data at the
    /// connection level). Sends this subflow's scheduled (delayed) ACK now if Linux's
    /// `tcp_cleanup_rbuf` would: more than `rcv_mss` unacknowledged, or a pushed segment
    /// waiting and nothing left unread, here or at the connection level. Returns true when an
    /// ACK was made due.
    pub fn ack_at_read(&mut self, rx_empty: bool) -> bool {
        if self.delack_deadline.is_none() || !self.path_up || !self.hs.is_established() {
            return false;
        }
        let drained = rx_empty && self.ofo.is_empty();
        if !(self.pushed_waiting() && drained)
            && self.rcv_nxt - self.last_ack_sent <= u64::from(self.rcv_mss)
        {
            return false;
        }
        self.delack_deadline = PendingNs::NONE;
        self.ack_now = true;
        true
    }

    /// A pushed segment waits for the read (`ICSK_ACK_PUSHED2`, or `ICSK_ACK_PUSHED` outside
    /// pingpong mode: `tcp_cleanup_rbuf`).
    #[inline(always)]
    pub(super) fn pushed_waiting(&self) -> bool {
        self.pushed >= 2 || (self.pushed == 1 && !self.pingpong)
    }
}
