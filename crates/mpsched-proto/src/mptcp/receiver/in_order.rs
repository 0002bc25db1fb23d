//! The data receiver's common case (issue 17): one subflow, a segment in order at the subflow
//! level whose data is also next at the connection level, nothing queued out of order at
//! either. Plain TCP and an MPTCP connection's only subflow receive almost every segment so.
//! The general path would release the payload into the subflow's release buffer, read it back,
//! search the connection's out-of-order set for what it now reaches, and ask every subflow to
//! ACK at read; here the payload is delivered straight from the segment, with the same state
//! changes in the same order (`tests::in_order` runs both paths on the same arrivals).

use super::DataReceiver;
use crate::tcp::{flags, Segment};
use crate::PendingNs;

impl DataReceiver {
    /// True when `seg`, arriving on `subflow`, may take [`DataReceiver::take_in_order`]: the
    /// kept state tests ([`DataReceiver::in_order_state`]), then the segment's.
    #[inline(always)]
    pub(crate) fn in_order_ready(&self, subflow: usize, seg: &Segment) -> bool {
        self.check_in_order_noted();
        match self.subflows.as_slice() {
            [s] => {
                subflow == 0
                    && self.in_order_open
                    && seg.dsn == self.rcv_nxt
                    && s.in_order_segment(seg)
            }
            _ => false,
        }
    }

    /// In test and debug builds, asserts that `in_order_open` is what
    /// [`DataReceiver::in_order_state`] says now (the short paths trust the kept flag).
    #[inline(always)]
    pub(super) fn check_in_order_noted(&self) {
        if cfg!(any(test, debug_assertions)) {
            assert_eq!(
                self.in_order_open,
                self.in_order_state(),
                "in-order state moved, not noted"
            );
        }
    }

    /// What `in_order_open` keeps: one subflow, in the state `Receiver::in_order_state`
    /// asks for, and nothing out of order at the connection level. Segments taken the general
    /// way change it (`handle_segment_general` notes it); the short path, timers, path changes
    /// and transmissions do not.
    pub(super) fn in_order_state(&self) -> bool {
        match self.subflows.as_slice() {
            [s] => self.ofo.is_empty() && s.in_order_state(),
            _ => false,
        }
    }

    /// [`DataReceiver::handle_segment`] for a segment [`DataReceiver::in_order_ready`] accepts:
    /// the subflow takes it and the application reads it (`Receiver::take_in_order`: no
    /// handshake step, so nothing becomes established, and the joins' trigger has been
    /// settled; `ack_at_read` with nothing left in the receive memory), the connection
    /// delivers all of it (`deliver` with DSN = `rcv_nxt` and an empty out-of-order set), and
    /// no hole was filled (no ACK requested for one). The read's ACK is decided before the
    /// buffer's measurement, not after as in the general path: it reads and writes only the
    /// subflow's ACK state, which the measurement (it reads the subflows' RTT and ratio) does
    /// not touch. Out of line: see [`DataReceiver::handle_segment_general`].
    #[inline(never)]
    pub(super) fn take_in_order(&mut self, now_ns: u64, seg: &Segment) {
        let window = self.rcv_wnd_bytes();
        // One bounds check: the subflow is borrowed through the connection's field steps.
        let s = &mut self.subflows[0];
        s.take_in_order(now_ns, seg, window);
        // The joins' trigger needs no test: the first data segment went the general way
        // (quickack mode was not armed yet) on an established subflow, so the trigger, which
        // asks nothing else of a segment without SYN, has fired there if it ever will.
        if cfg!(test) {
            assert!(self.joins_started || !self.cfg.triggers_joins(0, seg, true, false));
        }
        let len = u64::from(seg.len);
        self.data_fin_seen |= seg.has(flags::DATA_FIN);
        self.rcv_nxt += len;
        self.data_ack_untold = true;
        self.last_delivery_ns = PendingNs::at(now_ns);
        // The application reads it. `handle_segment_general` asks the connection's bit of the
        // path first; the subflow's own flag, which `read_in_order` tests, is set with it
        // (`set_path_up`), so that bit is not asked again.
        if cfg!(any(test, debug_assertions)) {
            assert_eq!(self.path_up & 1 != 0, s.is_path_up(), "path flags apart");
        }
        s.read_in_order();
        // `rcv_space_adjust`, whose test of data read is moot here (`len` > 0).
        if self.cfg.rcv_buf_autotuning {
            self.rcv_space_measure(len, now_ns);
        }
    }
}
