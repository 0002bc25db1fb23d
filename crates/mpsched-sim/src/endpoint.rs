//! The bridge between the event loop and the sans-IO protocol endpoints of `mpsched-proto`.
//!
//! The loop sees every endpoint (client or server side of a flow, TCP or MPTCP, sending or
//! receiving) through one small trait, so it has a single code path for all of them.

use crate::config::{Direction, Protocol, TransportConfig};
use mpsched_proto::cc;
use mpsched_proto::sched::{self, SubflowView};
use mpsched_proto::tcp::{HsOption, Receiver, Role, Sender, TcpConfig};

pub(crate) use mpsched_proto::tcp::Segment;

/// One side of a connection as the event loop drives it.
pub(crate) trait Endpoint {
    /// A segment arrived on `subflow`.
    fn handle_segment(&mut self, now_ns: u64, subflow: usize, seg: &Segment);
    /// Next segment to send, with its subflow.
    fn poll_transmit(&mut self, now_ns: u64) -> Option<(usize, Segment)>;
    /// Absolute time of the next timer, if any.
    fn poll_timeout(&self) -> Option<u64>;
    /// The timer fired.
    fn handle_timeout(&mut self, now_ns: u64);

    /// Bytes the application may write now (data senders; 0 otherwise).
    fn send_buffer_free(&self) -> u64;
    /// The application writes `bytes`.
    fn write(&mut self, now_ns: u64, bytes: u64);
    /// The application will write no more.
    fn close(&mut self, now_ns: u64);
    /// Everything written has been acknowledged at the connection level.
    fn all_acked(&self) -> bool;
    /// Snapshots of the subflows (data senders; empty otherwise).
    fn subflow_views(&self) -> Vec<SubflowView>;
    /// Payload bytes sent again at the connection level (reinjection and redundancy).
    fn redundant_bytes(&self) -> u64;

    /// Bytes delivered in order to the application (data receivers).
    fn delivered_bytes(&self) -> u64;
    /// Time the last in-order byte was delivered.
    fn last_delivery_ns(&self) -> Option<u64>;
    /// (out-of-order bytes, receive-buffer bytes in use) at the connection level.
    fn receive_buffer(&self) -> (u64, u64);
}

/// Checks that a transport can be built (scheduler and congestion-control names and
/// parameters); returns a message naming what is wrong.
pub(crate) fn check_transport(t: &TransportConfig) -> Result<(), String> {
    cc::build(&t.cc).map_err(|e| format!("cc: {e}"))?;
    match t.protocol {
        Protocol::Tcp => Ok(()),
        Protocol::Mptcp => {
            sched::registry::build(&t.scheduler, &t.scheduler_params).map_err(|e| format!("scheduler: {e}"))?;
            Err("protocol: the MPTCP connection is not wired into the simulator yet".into())
        }
    }
}

/// Builds the (client, server) endpoints of a flow. The transport passed `check_transport`.
pub(crate) fn build_endpoints(
    t: &TransportConfig,
    paths: &[usize],
    direction: Direction,
    now_ns: u64,
) -> (Box<dyn Endpoint>, Box<dyn Endpoint>) {
    let _ = paths;
    let tcp = TcpConfig {
        mss_bytes: t.mss_bytes,
        init_cwnd_segments: t.init_cwnd_segments,
        rcv_buf_bytes: t.rcv_buf_bytes,
        ..TcpConfig::default()
    };
    let cc = cc::build(&t.cc).expect("checked by check_transport");
    let (sender_role, receiver_role) = match direction {
        Direction::Download => (Role::Server, Role::Client),
        Direction::Upload => (Role::Client, Role::Server),
    };
    let mut sender = Sender::new(tcp.clone(), sender_role, HsOption::None, cc);
    let mut receiver = Receiver::new(tcp, receiver_role, HsOption::None);
    if sender_role == Role::Client {
        sender.connect(now_ns);
    } else {
        receiver.connect(now_ns);
    }
    let sender: Box<dyn Endpoint> = Box::new(TcpSender { tx: sender, snd_buf_bytes: t.snd_buf_bytes, written_bytes: 0 });
    let receiver: Box<dyn Endpoint> = Box::new(TcpReceiver { rx: receiver, delivered_bytes: 0, last_delivery_ns: None });
    match direction {
        Direction::Download => (receiver, sender),
        Direction::Upload => (sender, receiver),
    }
}

/// The data-sending side of a plain TCP connection.
struct TcpSender {
    tx: Sender,
    snd_buf_bytes: u64,
    written_bytes: u64,
}

impl Endpoint for TcpSender {
    fn handle_segment(&mut self, now_ns: u64, _subflow: usize, seg: &Segment) {
        self.tx.handle_segment(now_ns, seg);
    }
    fn poll_transmit(&mut self, now_ns: u64) -> Option<(usize, Segment)> {
        self.tx.poll_transmit(now_ns).map(|s| (0, s))
    }
    fn poll_timeout(&self) -> Option<u64> {
        self.tx.poll_timeout()
    }
    fn handle_timeout(&mut self, now_ns: u64) {
        self.tx.handle_timeout(now_ns);
    }
    fn send_buffer_free(&self) -> u64 {
        self.snd_buf_bytes.saturating_sub(self.tx.outstanding_bytes() + self.tx.queued_bytes())
    }
    fn write(&mut self, _now_ns: u64, bytes: u64) {
        // Plain TCP numbers its data from 0 in the (internal) DSN space.
        self.tx.queue(self.written_bytes, bytes, false);
        self.written_bytes += bytes;
    }
    fn close(&mut self, _now_ns: u64) {}
    fn all_acked(&self) -> bool {
        self.tx.stats().bytes_acked >= self.written_bytes
    }
    fn subflow_views(&self) -> Vec<SubflowView> {
        let mut v = SubflowView::default();
        self.tx.fill_view(&mut v);
        v.id = 0;
        vec![v]
    }
    fn redundant_bytes(&self) -> u64 {
        0
    }
    fn delivered_bytes(&self) -> u64 {
        0
    }
    fn last_delivery_ns(&self) -> Option<u64> {
        None
    }
    fn receive_buffer(&self) -> (u64, u64) {
        (0, 0)
    }
}

/// The data-receiving side of a plain TCP connection; its application reads at once.
struct TcpReceiver {
    rx: Receiver,
    delivered_bytes: u64,
    last_delivery_ns: Option<u64>,
}

impl Endpoint for TcpReceiver {
    fn handle_segment(&mut self, now_ns: u64, _subflow: usize, seg: &Segment) {
        self.rx.handle_segment(now_ns, seg);
        for r in self.rx.drain_released() {
            debug_assert_eq!(r.dsn, self.delivered_bytes, "in order, exactly once");
            self.delivered_bytes += r.len;
            self.last_delivery_ns = Some(now_ns);
        }
    }
    fn poll_transmit(&mut self, now_ns: u64) -> Option<(usize, Segment)> {
        self.rx.poll_transmit(now_ns).map(|s| (0, s))
    }
    fn poll_timeout(&self) -> Option<u64> {
        self.rx.poll_timeout()
    }
    fn handle_timeout(&mut self, now_ns: u64) {
        self.rx.handle_timeout(now_ns);
    }
    fn send_buffer_free(&self) -> u64 {
        0
    }
    fn write(&mut self, _now_ns: u64, _bytes: u64) {}
    fn close(&mut self, _now_ns: u64) {}
    fn all_acked(&self) -> bool {
        true
    }
    fn subflow_views(&self) -> Vec<SubflowView> {
        Vec::new()
    }
    fn redundant_bytes(&self) -> u64 {
        0
    }
    fn delivered_bytes(&self) -> u64 {
        self.delivered_bytes
    }
    fn last_delivery_ns(&self) -> Option<u64> {
        self.last_delivery_ns
    }
    fn receive_buffer(&self) -> (u64, u64) {
        let ofo = self.rx.ofo_bytes();
        (ofo, ofo)
    }
}
