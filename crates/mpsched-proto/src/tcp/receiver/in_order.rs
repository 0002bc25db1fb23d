//! The receiver's common case, a segment that starts exactly at `rcv_nxt` with nothing queued
//! out of order (issue 17: most data segments of a transfer), taken without the general
//! path's release buffer: the owner delivers the segment's payload itself
//! (`DataReceiver::handle_segment`). The steps that decide state (TS.Recent, `rcv_mss`,
//! `tcp_grow_window`, the ACK decision) are the general path's own, shared with it here, so the
//! two cannot drift apart; `tests::in_order` runs both on the same arrivals.

use super::super::rtt::timer_wheel_fire_ns;
use super::super::segment::{flags, Segment};
use super::super::DELAYED_ACK_NS;
use super::Receiver;
use crate::PendingNs;

impl Receiver {
    /// True when `seg` may take [`Receiver::take_in_order`]: data starting at `rcv_nxt` on an
    /// established subflow (no SYN, no MP_JOIN), quickack mode armed by earlier data, nothing
    /// queued out of order. [`Receiver::handle_segment`] would then release the whole payload
    /// at once, and reach no other branch.
    /// (The out-of-order byte ranges, `ofo_ranges`, are empty exactly when the queue is: a
    /// queued segment's bytes go in with it and leave when `rcv_nxt` passes them, which is when
    /// it is released; so the queue alone is asked, and the test build checks the pair.)
    #[inline(always)]
    pub fn in_order_ready(&self, seg: &Segment) -> bool {
        self.in_order_segment(seg) && self.in_order_state()
    }

    /// [`Receiver::in_order_ready`]'s tests of the segment: data, no SYN nor MP_JOIN, starting
    /// at `rcv_nxt`.
    #[inline(always)]
    pub fn in_order_segment(&self, seg: &Segment) -> bool {
        seg.seq == self.rcv_nxt && seg.len > 0 && seg.flags & (flags::SYN | flags::MP_JOIN) == 0
    }

    /// [`Receiver::in_order_ready`]'s tests of the receiver: established, quickack mode armed,
    /// nothing queued out of order. Only a segment taken the general way changes them (the
    /// data receiver keeps the answer: `DataReceiver::in_order_open`).
    #[inline(always)]
    pub fn in_order_state(&self) -> bool {
        // The byte ranges are empty exactly when the queue is (perf17s5): one test.
        if cfg!(any(test, debug_assertions)) {
            assert_eq!(self.ofo_ranges.is_empty(), self.ofo.is_empty());
        }
        self.quickack_armed && self.ofo.is_empty() && self.hs.is_established()
    }

    /// [`Receiver::handle_segment`] for a segment [`Receiver::in_order_ready`] accepts,
    /// except that nothing goes to the release buffer: the caller takes the payload
    /// (`seg.dsn`, `seg.len`, DATA_FIN) from the segment, and then calls
    /// [`Receiver::read_in_order`] for the application's read. `window_clamp_bytes`: the
    /// connection's window ([`Receiver::set_window_clamp`] after data only stores it). The
    /// state left is the general path's (`tests::in_order` compares the two).
    #[inline(always)]
    pub fn take_in_order(&mut self, now_ns: u64, seg: &Segment, window_clamp_bytes: u64) {
        if cfg!(test) {
            assert!(self.in_order_ready(seg) && self.stats.bytes_received > 0);
        }
        self.window_clamp = window_clamp_bytes;
        let len = u64::from(seg.len);
        self.stats.bytes_received += len;
        self.rcv_rtt_measure_ts(now_ns, seg.ts_ecr, len);
        // `note_ts_recent` for a segment that starts at `rcv_nxt`: never left of the last ACK
        // sent (an ACK sends `rcv_nxt`, which only grows), so it covers that ACK's point
        // exactly when it starts there, nothing having arrived since.
        if cfg!(any(test, debug_assertions)) {
            assert!(seg.seq == self.rcv_nxt && self.rcv_nxt >= self.last_ack_sent);
        }
        if self.rcv_nxt == self.last_ack_sent {
            self.ts_recent = self.ts_recent.max(seg.ts_val);
        }
        self.accept_in_order(now_ns, len);
        self.rcv_nxt += len;
        self.ack_in_order(now_ns, false);
    }

    /// [`Receiver::ack_at_read`] after [`Receiver::take_in_order`], when the connection has
    /// the path up (`DataReceiver::handle_segment_general` asks only then): nothing is left
    /// unread (`rx_empty`, and no queue here) and the handshake is complete (the short path's
    /// state test), so only the path, the scheduled ACK and the bytes waiting are asked.
    #[inline(always)]
    pub fn read_in_order(&mut self) {
        if cfg!(test) {
            assert!(self.in_order_state());
        }
        if self.delack_deadline.is_none() || !self.path_up {
            return;
        }
        if self.pushed_waiting() || self.rcv_nxt - self.last_ack_sent > u64::from(self.rcv_mss) {
            self.delack_deadline = PendingNs::NONE;
            self.ack_now = true;
        }
    }

    /// RFC 7323 §4.3 TS.Recent update (Linux `tcp_replace_ts_recent`, `rcv_wup` being the last
    /// ACK sent). A segment wholly below it is refused before (`tcp_sequence`: old sequence,
    /// answered with a dupack) and leaves TS.Recent alone, so the ACK to a retransmission whose
    /// original arrived echoes the original's time: after lost ACKs the sender's sample is the
    /// original's age.
    #[inline(always)]
    pub(super) fn note_ts_recent(&mut self, seg: &Segment) {
        if seg.seq <= self.last_ack_sent && seg.seq + u64::from(seg.len) >= self.last_ack_sent {
            self.ts_recent = self.ts_recent.max(seg.ts_val);
        }
    }

    /// `new_bytes` of in-order data arrived (Linux `tcp_event_data_recv`): the receive time,
    /// `rcv_mss`, `rcv_ssthresh`, the in-order count.
    #[inline(always)]
    pub(super) fn accept_in_order(&mut self, now_ns: u64, new_bytes: u64) {
        self.last_data_rcv_ns = now_ns.max(1);
        self.measure_rcv_mss(new_bytes);
        self.grow_window(new_bytes);
        self.stats.bytes_in_order += new_bytes;
    }

    /// The ACK decision after in-order data (Linux `__tcp_ack_snd_check`): at once when `hole`
    /// (a hole was filled or remains), delayed ACKs are off, in quickack mode (never in
    /// pingpong mode: `tcp_in_quickack_mode`) or more than one MSS is unacknowledged; else a
    /// delayed ACK, unless one is already scheduled.
    #[inline(always)]
    pub(super) fn ack_in_order(&mut self, now_ns: u64, hole: bool) {
        if hole
            || !self.cfg.delayed_ack
            || (self.quickacks_left > 0 && !self.pingpong)
            || self.rcv_nxt - self.last_ack_sent > self.cfg.mss_bytes
        {
            self.ack_now = true;
        } else if self.delack_deadline.is_none() {
            // Linux `tcp_send_delayed_ack`: `sk_reset_timer(jiffies + ato)` on the wheel.
            self.delack_deadline = PendingNs::at(timer_wheel_fire_ns(now_ns, DELAYED_ACK_NS));
        }
    }
}
