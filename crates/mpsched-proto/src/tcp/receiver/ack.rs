//! A pure ACK: the state an ACK changes and the segment it is, in one place for the general
//! transmit path (`Receiver::poll_transmit_with`) and the one-subflow builder of the data
//! receiver (`DataReceiver::poll_transmit_pending`, issue 17), which asks
//! [`Receiver::plain_ack_due_in_order`] first and then skips the handshake's and the path's
//! tests.

use super::super::segment::{flags, Segment, MAX_SACK_BLOCKS};
use super::Receiver;
use crate::PendingNs;

impl Receiver {
    /// True when [`Receiver::poll_transmit_with`] would send a pure ACK without SACK blocks:
    /// the path is up, no handshake segment waits, the handshake is complete, an ACK is due
    /// and nothing is queued out of order. `Receiver::take_ack` then builds that ACK. (The
    /// last test is not needed for the right ACK, `take_ack` gathers blocks; it keeps that
    /// call, and the registers it saves, out of the one-subflow builder.)
    #[inline(always)]
    pub fn plain_ack_due(&self) -> bool {
        self.ack_now
            && self.path_up
            && self.ofo_ranges.is_empty()
            && !self.hs.has_pending()
            && self.hs.is_established()
    }

    /// [`Receiver::plain_ack_due`] of a receiver in the short receive path's state
    /// ([`Receiver::in_order_state`]: established, nothing queued out of order): the tests
    /// that state leaves open.
    #[inline(always)]
    pub fn plain_ack_due_in_order(&self) -> bool {
        if cfg!(any(test, debug_assertions)) {
            assert!(self.in_order_state());
        }
        self.ack_now && self.path_up && !self.hs.has_pending()
    }

    /// Sends the ACK due (the delayed one, if any, leaves with it) announcing `data_ack` and
    /// `window` (see [`Receiver::window`]); `poll_transmit_with` once it has found that no
    /// handshake segment waits and an ACK is due on an established subflow.
    #[inline(always)]
    /// `no_queue`: the caller knows nothing is queued out of order (no SACK blocks to gather:
    /// inline with a constant, the gathering call and the registers it needs go).
    pub(super) fn take_ack(
        &mut self,
        now_ns: u64,
        data_ack: u64,
        window: u64,
        no_queue: bool,
    ) -> Segment {
        if cfg!(any(test, debug_assertions)) {
            assert!(!no_queue || self.ofo_ranges.is_empty());
        }
        self.ack_now = false;
        self.delack_deadline = PendingNs::NONE;
        self.pushed = 0;
        self.last_ack_sent = self.rcv_nxt;
        if self.conn_window.is_none() {
            self.right_edge = self.rcv_nxt + window;
        }
        self.quickacks_left = self.quickacks_left.saturating_sub(1);
        self.stats.acks_sent += 1;
        // Without out-of-order data (most ACKs) there are no SACK blocks (one noted earlier is
        // below rcv_nxt by now), and the gathering loop is not entered at all; it is out of
        // line. (Writing the empty blocks straight into the segment, not through this array,
        // saved 3-5 instructions more but measured slower: benches/RESULTS.md, Session 14.)
        let (sack, sack_len) = if no_queue || self.ofo_ranges.is_empty() {
            ([(0, 0); MAX_SACK_BLOCKS], 0)
        } else {
            self.sack_blocks()
        };
        Segment {
            flags: flags::ACK | if self.cfg.mptcp { flags::DATA_ACK } else { 0 },
            seq: 1,
            ack: self.rcv_nxt,
            window,
            ts_val: now_ns.max(1),
            ts_ecr: self.ts_recent,
            data_ack,
            sack,
            sack_len,
            ..Default::default()
        }
    }

    /// [`Receiver::poll_transmit_with`] when [`Receiver::plain_ack_due`], the connection's
    /// `data_ack` and `window` set as [`Receiver::set_conn_window`] sets them: the same ACK and
    /// the same state.
    #[inline(always)]
    pub fn take_plain_ack(&mut self, now_ns: u64, data_ack: u64, window: u64) -> Segment {
        if cfg!(test) {
            assert!(self.plain_ack_due());
        }
        self.set_conn_window(data_ack, window);
        self.take_ack(now_ns, data_ack, window, true)
    }
}
