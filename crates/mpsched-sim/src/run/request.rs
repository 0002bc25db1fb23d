//! The request half-connection of a flow whose client writes data to the server too (an
//! RPC's requests).
//!
//! The protocol crate's endpoints carry data one way (a `DataSender` and its peer's
//! `DataReceiver`), so a client that writes as well as reads gets a second pair on the same
//! paths: its own sequence space, subflows, congestion control, scheduler and timers, as each
//! direction of a real TCP / MPTCP connection has; its segments share the paths' queues and
//! losses with the data connection's. What the pair of halves does not share with a real
//! connection: each half runs its own handshake (two SYNs where one would do, both at the
//! flow's start), and an ACK that rides on data of the other direction is a separate packet
//! sent with it (`ack_rides_on_data`: the same subflow's delayed ACK leaves when the other
//! half sends data there, and for MPTCP the connection's DATA_ACK rides on data on any
//! subflow; the loop sends a side's writes before its ACKs).

use super::wire::{rearm_app, Wire};
use super::Simulation;
use crate::endpoint::Endpoint;

impl Simulation<'_> {
    /// After something happened to endpoint `client_side` of flow `fi`'s request half: the
    /// client writes what its requests allow, or the server learns which requests are whole
    /// and writes their responses on the data connection; then the half's output is drained.
    pub(super) fn request_activity(&mut self, fi: usize, client_side: bool) {
        let now = self.now_ns;
        let Some(f) = self.flows[fi].as_mut() else { return };
        let Some(r) = f.request.as_deref_mut() else { return };
        if client_side {
            f.app.feed_requests(now, &mut r.client.ep);
        } else if f.app.on_requests(&r.server.ep) {
            // The responses go out before the requests' ACK (which would ride on them).
            self.after_activity(fi, false);
        }
        let Some(f) = self.flows[fi].as_mut() else { return };
        let Some(r) = f.request.as_deref_mut() else { return };
        let side = if client_side { &mut r.client } else { &mut r.server };
        let data_subflows = wire!(self).transmit(side, fi, f.paths, client_side, true);
        rearm_app(f, &mut self.queue, fi, now);
        self.ack_rides_on_data(fi, client_side, true, data_subflows);
    }

    /// Data of one half (`request`: the request half) left side `client_side` of flow `fi` on
    /// the subflows of `data_subflows` (bit i: subflow i). In a real connection both
    /// directions share each subflow and every segment carries the current ACK, so the same
    /// host's endpoint of the other half has its delayed ACK on those subflows sent now; a
    /// subflow that carried no data keeps its delayed ACK (a response on another path leaves
    /// the request's ACK to the timer, or to the next data there).
    pub(super) fn ack_rides_on_data(&mut self, fi: usize, client_side: bool, request: bool, data_subflows: u64) {
        if data_subflows == 0 {
            return;
        }
        let now = self.now_ns;
        let Some(f) = self.flows[fi].as_mut() else { return };
        if f.request.is_none() {
            return;
        }
        let paths = f.paths;
        let other = f.side_mut(client_side, !request);
        let mut due = false;
        let mut bits = data_subflows;
        while bits != 0 {
            due |= other.ep.ack_rides_on_data(bits.trailing_zeros() as usize, now);
            bits &= bits - 1;
        }
        if due {
            wire!(self).transmit(other, fi, paths, client_side, !request);
        }
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

/// What a finished flow's request half carried (for the unit tests: the records describe the
/// data connection only, so that every other workload's records stay as they were).
#[cfg(test)]
#[derive(Debug)]
pub(super) struct RequestTally {
    pub flow: usize,
    /// Request bytes delivered in order to the server's application.
    pub delivered_bytes: u64,
    /// Request bytes DATA_ACKed at the client.
    pub acked_bytes: u64,
    /// Per subflow: request payload transmitted (retransmissions included) and retransmitted.
    pub sent_bytes: Vec<u64>,
    pub retransmitted_bytes: Vec<u64>,
}

#[cfg(test)]
impl RequestTally {
    pub(super) fn of(flow: usize, f: &super::Flow<'_>) -> Option<Self> {
        let r = f.request.as_deref()?;
        let views = r.client.ep.subflow_views();
        Some(Self {
            flow,
            delivered_bytes: r.server.ep.delivered_bytes(),
            acked_bytes: r.client.ep.acked_bytes(),
            sent_bytes: views.iter().map(|v| v.bytes_sent).collect(),
            retransmitted_bytes: views.iter().map(|v| v.bytes_retransmitted).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SimConfig;

    const MS: u64 = 1_000_000;

    /// `requests` RPCs of `request_bytes` / 10 kB, closed loop of 4, over one path (TCP) or two
    /// (MPTCP with `scheduler`), 20 Mbit/s and 20 / 30 ms one way; `up_loss` on each uplink.
    fn rpc_cfg(protocol: &str, scheduler: &str, request_bytes: u64, up_loss: f64) -> SimConfig {
        let link = |name: &str, delay_ms: u64, loss: f64| {
            let loss = if loss > 0.0 {
                serde_json::json!({"model": "bernoulli", "p": loss})
            } else {
                serde_json::json!({"model": "none"})
            };
            serde_json::json!({"name": name, "rate_bps": 20_000_000u64, "delay_ns": delay_ms * MS,
                               "queue_packets": 100, "loss": loss})
        };
        let n = if protocol == "tcp" { 1 } else { 2 };
        let mut links = Vec::new();
        let mut paths = Vec::new();
        for i in 0..n {
            links.push(link(&format!("d{i}"), 20 + 10 * i as u64, 0.0));
            links.push(link(&format!("u{i}"), 20 + 10 * i as u64, up_loss));
            paths.push(serde_json::json!({"name": format!("p{i}"), "down": [2 * i], "up": [2 * i + 1]}));
        }
        let v = serde_json::json!({
            "seed": 3, "duration_ns": 60_000 * MS, "links": links, "paths": paths,
            "transports": [{"protocol": protocol, "scheduler": scheduler, "cc": "cubic",
                            "rcv_buf_bytes": 6u64 << 20, "snd_buf_bytes": 4u64 << 20,
                            "paths": (0..n).collect::<Vec<_>>()}],
            "flows": [{"id": 0, "transport": 0, "start_ns": 0, "direction": "download",
                       "app": {"kind": "rpc", "requests": 60, "request_bytes": request_bytes,
                               "response_bytes": 10_000, "concurrency": 4}}],
        });
        serde_json::from_value(v).expect("a valid configuration")
    }

    fn tally(cfg: &SimConfig) -> RequestTally {
        cfg.validate().unwrap();
        let mut sim = Simulation::new(cfg, None);
        sim.run_to_end(None);
        assert_eq!(sim.request_tallies.len(), 1, "the flow completed");
        sim.request_tallies.pop().unwrap()
    }

    #[test]
    fn every_request_byte_reaches_the_server_once_and_lost_ones_are_retransmitted() {
        for (protocol, scheduler) in [("tcp", ""), ("mptcp", "minrtt"), ("mptcp", "linux"), ("mptcp", "redundant")] {
            for request_bytes in [300, 3_000] {
                let total = 60 * request_bytes;
                let clean = tally(&rpc_cfg(protocol, scheduler, request_bytes, 0.0));
                let lossy = tally(&rpc_cfg(protocol, scheduler, request_bytes, 0.1));
                let what = format!("{protocol} {scheduler} {request_bytes} B");
                for t in [&clean, &lossy] {
                    assert_eq!((t.flow, t.delivered_bytes, t.acked_bytes), (0, total, total), "{what}: {t:?}");
                }
                // Clean: each byte sent once; a redundant scheduler sends each on the first
                // subflow and a copy on the second from its join on.
                if scheduler == "redundant" {
                    assert_eq!(clean.sent_bytes[0], total, "{what}: {clean:?}");
                    assert!((1..=total).contains(&clean.sent_bytes[1]), "{what}: {clean:?}");
                } else {
                    assert_eq!(clean.sent_bytes.iter().sum::<u64>(), total, "{what}: {clean:?}");
                }
                assert_eq!(clean.retransmitted_bytes.iter().sum::<u64>(), 0, "{what}");
                // Lossy uplinks: TCP repaired lost requests, and sent them again to do so.
                if scheduler != "redundant" {
                    assert!(lossy.retransmitted_bytes.iter().sum::<u64>() > 0, "{what}: {lossy:?}");
                }
                assert!(lossy.sent_bytes.iter().sum::<u64>() > total, "{what}: {lossy:?}");
            }
        }
    }

    /// The RPC scenario (`scenarios/workloads/rpc.toml`): WLAN 20 Mbit/s 10 ms one way and LTE
    /// 10 Mbit/s 30 ms, queues of one BDP; `requests` of 300 B every 20 ms, 16 kB responses,
    /// MPTCP with `linux`.
    fn wlan_lte_rpc(requests: u64) -> SimConfig {
        let link = |name: &str, rate_bps: u64, delay_ms: u64| {
            // One BDP of queue: rate x round trip.
            serde_json::json!({"name": name, "rate_bps": rate_bps, "delay_ns": delay_ms * MS,
                               "queue_bytes": rate_bps / 8 * 2 * delay_ms / 1000, "loss": {"model": "none"}})
        };
        let v = serde_json::json!({
            "seed": 1, "duration_ns": 60_000 * MS,
            "links": [link("wd", 20_000_000, 10), link("wu", 20_000_000, 10),
                      link("ld", 10_000_000, 30), link("lu", 10_000_000, 30)],
            "paths": [{"name": "wlan", "down": [0], "up": [1]}, {"name": "lte", "down": [2], "up": [3]}],
            "transports": [{"protocol": "mptcp", "scheduler": "linux", "cc": "cubic", "paths": [0, 1],
                            "rcv_buf_bytes": 6u64 << 20, "snd_buf_bytes": 4u64 << 20}],
            "flows": [{"id": 0, "transport": 0, "start_ns": 0, "direction": "download",
                       "app": {"kind": "rpc", "requests": requests, "request_bytes": 300,
                               "response_bytes": 16_000, "interval_ns": 20 * MS}}],
        });
        serde_json::from_value(v).expect("a valid configuration")
    }

    #[test]
    fn linux_puts_one_request_and_one_response_in_five_on_lte_as_the_kernel_does() {
        // Kernel 6.18 on the testbed (docs/testbed.md, "Session 6: RPC latency"; tcpdump on the
        // client's interfaces, 1000 requests): 203 of 997 requests and 20.3-21.8 % of the
        // response bytes went over LTE, a period of five requests: a request whose ACK has not
        // come back when the next one is due (RTT = interval) pushes that one to idle LTE, whose
        // own ACK rides on the next LTE response 80 ms later; a response goes to LTE when WLAN
        // still holds unacknowledged data. Without the ACKs riding on the other half's data and
        // pingpong mode the simulator had a period of four (25 % of each).
        let cfg = wlan_lte_rpc(500);
        cfg.validate().unwrap();
        let mut sim = Simulation::new(&cfg, None);
        sim.run_to_end(None);
        let t = sim.request_tallies.pop().expect("the flow completed");
        let rec = sim.into_records();
        let sent = match rec.table("subflows").and_then(|t| t.column("bytes_sent")) {
            Some(crate::records::Column::U64(v)) => v.clone(),
            other => panic!("subflows.bytes_sent: {other:?}"),
        };
        let requests_lte = t.sent_bytes[1] as f64 / t.sent_bytes.iter().sum::<u64>() as f64;
        let responses_lte = sent[1] as f64 / sent.iter().sum::<u64>() as f64;
        // Tolerance: the kernel's 0.20-0.22, within 0.03 below and 0.02 above.
        for (what, share) in [("requests", requests_lte), ("responses", responses_lte)] {
            assert!((0.17..=0.24).contains(&share), "{what} on LTE: {share:.3} ({t:?}, {sent:?})");
        }
    }
}
