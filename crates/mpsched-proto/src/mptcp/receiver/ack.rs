//! The data receiver's transmissions: ACKs and handshake segments, each announcing the
//! connection's DATA_ACK and window.
//!
//! A connection with one subflow (plain TCP, or MPTCP over one path) in the short receive
//! path's state (`in_order_open`) whose ACK is a pure one (`DataReceiver::plain_ack_due`)
//! builds it without the subflow loop, the subflow's handshake segment, the second path test
//! and the SACK gathering (issue 17: most transmissions of a data receiver). The loop is a function of its own, unchanged: built into the same function, the
//! one-subflow ACK made LLVM stop hoisting the window's connection terms out of the loop on
//! the FatTree's eight subflows (benches/RESULTS.md, Session 16, perf17d).
//! `tests::plain_ack` runs both ways on the same arrivals.

use super::{DataReceiver, NO_OFFER_CAP};
use crate::tcp::Segment;

impl DataReceiver {
    /// The (DATA_ACK, window) subflow `i` advertises now. Linux `__tcp_select_window` offers
    /// the free buffer capped by that subflow's `rcv_ssthresh` (which grows by twice each
    /// in-order skb, `tcp_grow_window`), and `mptcp_set_rwin` places it at the connection's
    /// DATA_ACK, never left of the right edge any subflow announced (`msk->rcv_wnd_sent`).
    /// So while DATA_ACK is held back by another subflow's hole, the edge advances only as
    /// fast as a subflow's `rcv_ssthresh` grows, not by the whole autotuned buffer.
    /// No offer is larger than the window scale allows (`tcp_select_window`, `mptcp_set_rwin`:
    /// `65535 << rcv_wscale`), even one that only keeps an earlier right edge.
    #[inline(always)]
    fn advertise(&self, subflow: usize) -> (u64, u64) {
        let free = self.rcv_wnd_bytes().saturating_sub(self.ofo.total_bytes());
        let offer = free.min(self.subflows[subflow].rcv_ssthresh());
        let edge = self.right_edge.max(self.rcv_nxt + offer);
        (self.rcv_nxt, (edge - self.rcv_nxt).min(self.offer_cap()))
    }

    /// The largest offer the window scale allows (`offer_cap_bytes`).
    #[inline(always)]
    fn offer_cap(&self) -> u64 {
        match self.offer_cap_scale {
            NO_OFFER_CAP => u64::MAX,
            scale => 65_535 << scale,
        }
    }

    /// Next segment to send (ACKs, handshake) and its subflow.
    ///
    /// Most calls find nothing to send (a delayed ACK waits, and the loop asks once more after
    /// each segment): that test is inline in the caller, the rest a call. The window is
    /// computed only for a segment that goes out, as Linux's `tcp_select_window` does at
    /// transmission.
    #[inline(always)]
    pub fn poll_transmit(&mut self, now_ns: u64) -> Option<(usize, Segment)> {
        if !self.any_pending() {
            return None;
        }
        self.poll_transmit_pending(now_ns)
    }

    /// Some subflow whose path is up has an ACK or a handshake segment due.
    #[inline(always)]
    fn any_pending(&self) -> bool {
        // One subflow (plain TCP, most MPTCP flows' start): no iterator.
        match self.subflows.as_slice() {
            [s] => self.is_path_up(0) && s.ack_pending(),
            subflows => subflows
                .iter()
                .enumerate()
                .any(|(i, s)| self.is_path_up(i) && s.ack_pending()),
        }
    }

    /// [`DataReceiver::poll_transmit`] once some subflow has an ACK or handshake segment due:
    /// a one-subflow connection's pure ACK here, anything else in
    /// [`DataReceiver::poll_transmit_each`].
    #[inline(never)]
    fn poll_transmit_pending(&mut self, now_ns: u64) -> Option<(usize, Segment)> {
        if self.plain_ack_due() {
            return Some((0, self.take_plain_ack(now_ns)));
        }
        self.poll_transmit_each(now_ns)
    }

    /// True when [`DataReceiver::poll_transmit_each`] would send a pure ACK on the only
    /// subflow, asked of a connection in the short receive path's state (`in_order_open`: one
    /// subflow, established, nothing queued out of order at either level): an ACK due, the
    /// path up, no handshake segment waiting (`Receiver::plain_ack_due_in_order`). Any other
    /// connection goes the general way, which sends the same segment. Its path is asked at
    /// the subflow only: `set_path_up` sets the subflow's flag with the connection's bit.
    #[inline(always)]
    pub(crate) fn plain_ack_due(&self) -> bool {
        self.check_in_order_noted();
        match self.subflows.as_slice() {
            [s] => {
                if cfg!(any(test, debug_assertions)) {
                    assert_eq!(self.is_path_up(0), s.is_path_up(), "path flags apart");
                }
                self.in_order_open && s.plain_ack_due_in_order()
            }
            _ => false,
        }
    }

    /// What [`DataReceiver::poll_transmit_each`] does for a one-subflow connection when
    /// [`DataReceiver::plain_ack_due`]: subflow 0's window and ACK, the right edge kept, the
    /// DATA_ACK told. The window is [`DataReceiver::advertise`]'s with no out-of-order bytes
    /// to take off (`in_order_open`).
    #[inline(always)]
    fn take_plain_ack(&mut self, now_ns: u64) -> Segment {
        let s = &self.subflows[0];
        let offer = self.rcv_wnd_bytes().min(s.rcv_ssthresh());
        let edge = self.right_edge.max(self.rcv_nxt + offer);
        let (data_ack, wnd) = (self.rcv_nxt, (edge - self.rcv_nxt).min(self.offer_cap()));
        if cfg!(any(test, debug_assertions)) {
            assert_eq!((data_ack, wnd), self.advertise(0));
        }
        let seg = self.subflows[0].take_plain_ack(now_ns, data_ack, wnd);
        self.told(data_ack, wnd);
        seg
    }

    /// A segment announcing `data_ack` and `wnd` went out: the right edge it announced is kept
    /// (none later goes left of it) and the DATA_ACK is known to the peer.
    #[inline(always)]
    fn told(&mut self, data_ack: u64, wnd: u64) {
        self.right_edge = self.right_edge.max(data_ack + wnd);
        self.data_ack_untold = false;
    }

    /// Every subflow in turn, the first with a segment to send sends it. Out of line (the
    /// pending call jumps here): its code is what it was before the one-subflow ACK.
    #[inline(never)]
    pub(crate) fn poll_transmit_each(&mut self, now_ns: u64) -> Option<(usize, Segment)> {
        for i in 0..self.subflows.len() {
            if !self.is_path_up(i) {
                continue;
            }
            let (data_ack, wnd) = self.advertise(i);
            self.subflows[i].set_conn_window(data_ack, wnd);
            // Built in place as the returned pair (`Receiver::poll_transmit_with`).
            let out = self.subflows[i].poll_transmit_with(now_ns, |seg| (i, seg));
            if out.is_some() {
                self.told(data_ack, wnd);
                return out;
            }
        }
        None
    }

    /// [`DataReceiver::poll_transmit`] that never takes the one-subflow ACK (tests: both ways
    /// must agree).
    #[cfg(test)]
    pub(crate) fn poll_transmit_general(&mut self, now_ns: u64) -> Option<(usize, Segment)> {
        if !self.any_pending() {
            return None;
        }
        self.poll_transmit_each(now_ns)
    }
}
