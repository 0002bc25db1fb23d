//! The bridge between the event loop and the sans-IO protocol endpoints of `mpsched-proto`.
//!
//! The loop sees every endpoint (client or server side of a flow, TCP or MPTCP, sending or
//! receiving) through one small trait, so it has a single code path for all of them.

use crate::config::{Direction, TransportConfig};
use mpsched_proto::sched::SubflowView;

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
    let _ = t;
    Err("the protocol layer is not wired in yet".into())
}

/// Builds the (client, server) endpoints of a flow.
pub(crate) fn build_endpoints(
    t: &TransportConfig,
    paths: &[usize],
    direction: Direction,
    now_ns: u64,
) -> (Box<dyn Endpoint>, Box<dyn Endpoint>) {
    let _ = (t, paths, direction, now_ns);
    unreachable!("check_transport refuses every transport until the protocol layer is wired in")
}
