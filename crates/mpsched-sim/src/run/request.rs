//! The request half-connection of a flow whose client writes data to the server too (an
//! RPC's requests).
//!
//! The protocol crate's endpoints carry data one way (a `DataSender` and its peer's
//! `DataReceiver`), so a client that writes as well as reads gets a second pair on the same
//! paths: its own sequence space, subflows, congestion control, scheduler and timers, as each
//! direction of a real TCP / MPTCP connection has; its segments share the paths' queues and
//! losses with the data connection's. What the pair of halves does not share with a real
//! connection: each half runs its own handshake (two SYNs where one would do, both at the
//! flow's start), and ACKs do not ride on data of the other direction (they are separate
//! packets; the loop sends a side's writes before its ACKs, and the server's ACK of a request
//! is not delayed, as the response it would ride on leaves at once).

use super::Simulation;

impl Simulation<'_> {
    /// After something happened to endpoint `client_side` of flow `fi`'s request half: the
    /// client writes what its requests allow, or the server learns which requests are whole
    /// and writes their responses on the data connection; then the half's output is drained.
    pub(super) fn request_activity(&mut self, fi: usize, client_side: bool) {
        let now = self.now_ns;
        let Some(f) = self.flows[fi].as_mut() else { return };
        let Some(r) = f.request.as_deref_mut() else { return };
        if client_side {
            f.app.feed_requests(now, r.client.ep.as_mut());
        } else if f.app.on_requests(r.server.ep.as_ref()) {
            // The responses go out before the requests' ACK (which would ride on them).
            self.after_activity(fi, false);
        }
        self.transmit(fi, client_side, true);
        self.rearm_app(fi);
    }

    /// The client's interface of `subflow` of flow `fi` went down or came back: the request
    /// half's endpoints see it as the data connection's do (`up_route`: only its route, for
    /// the upstream kernel).
    pub(super) fn request_path_up(&mut self, fi: usize, subflow: usize, up: bool, route_only: bool) {
        let now = self.now_ns;
        let Some(r) = self.flows[fi].as_mut().and_then(|f| f.request.as_deref_mut()) else { return };
        if route_only {
            r.client.ep.set_route_up(subflow, up);
        } else {
            r.client.ep.set_path_up(subflow, up, now);
            r.server.ep.set_path_up(subflow, up, now);
        }
    }
}
