//! Path events in the event loop: a path going down or coming back (links and hosts), and
//! impairments set on and lifted from its links (hosts see nothing).

use super::wire::Sink;
use super::Simulation;
use crate::config::{LinkDirection, PathEvent};
use crate::endpoint::Endpoint;
use crate::path_events::PathAction;
use mpsched_engine::net::{LinkId, LinkState};

impl Simulation<'_> {
    /// Path event `e` starts (`start`) or ends.
    pub(super) fn path_event(&mut self, e: PathEvent, start: bool) {
        let p = &self.cfg.paths[e.path()];
        match e.action(start) {
            PathAction::SetUp(up) => self.set_path_up(e.path(), up),
            PathAction::Impair { direction, on } => {
                let chains: [&[usize]; 2] = match direction {
                    LinkDirection::Both => [&p.down, &p.up],
                    LinkDirection::Down => [&p.down, &[]],
                    LinkDirection::Up => [&[], &p.up],
                };
                // The hosts see nothing: only the links change.
                let mut sink = Sink { queue: &mut self.queue, segments: &mut self.segments };
                for &l in chains.into_iter().flatten() {
                    let mut imp = *self.net.impairment(l as LinkId);
                    e.apply(&mut imp, on);
                    self.net.set_impairment(self.now_ns, l as LinkId, imp, &mut sink);
                }
            }
        }
    }

    /// A path goes down or comes back: its links, and the hosts' interfaces.
    fn set_path_up(&mut self, path: usize, up: bool) {
        let p = &self.cfg.paths[path];
        let now = self.now_ns;
        // The client's interface goes down (the kernel engine's `ip link set DEV down`). What
        // its downlinks hold is lost: the router's egress qdisc toward it is reset with the
        // peer's carrier (`dev_deactivate`) and what the delayer still holds is dropped at the
        // veth (`is_skb_forwardable`: the peer is not up). What the client sent before has
        // left it: already in the router's delay line and queue, it reaches the server, so
        // the uplinks only stop taking packets.
        let (down, uplink) = if up { (LinkState::Up, LinkState::Up) } else { (LinkState::Down, LinkState::Closed) };
        for &l in &p.down {
            self.net.set_link_state(now, l as LinkId, down);
        }
        for &l in &p.up {
            self.net.set_link_state(now, l as LinkId, uplink);
        }
        // The hosts see their interface change at once (the out-of-tree kernel's path manager
        // closes the subflow). The upstream kernel does not: neither TCP nor the in-kernel path
        // manager watches interfaces (pm_kernel.c registers no netdevice notifier), the
        // subflow's sends fail at the route lookup (`__ip_queue_xmit` -> -EHOSTUNREACH) and it
        // stays `__mptcp_subflow_active` (TCP state only), so it is found stale by
        // `mptcp_pm_subflow_chk_stale` and recovers on its next backed-off RTO, as through a
        // blackhole. Its packets are lost on the links here instead of before them. A join
        // created meanwhile fails (see proto's `mptcp::join_route`).
        for fi in 0..self.flows.len() {
            let Some(f) = self.flows[fi].as_mut() else { continue };
            let upstream = f.client.ep.upstream_kernel() || f.server.ep.upstream_kernel();
            for (sf, &fp) in f.paths.iter().enumerate() {
                if fp != path {
                    continue;
                }
                let f = self.flows[fi].as_mut().expect("running");
                if upstream {
                    // Only a join its path manager creates meanwhile notices: `connect()` fails
                    // at the route lookup of the client's interface (the kernel engine's `down`).
                    f.client.ep.set_route_up(sf, up);
                } else {
                    f.client.ep.set_path_up(sf, up, now);
                    f.server.ep.set_path_up(sf, up, now);
                }
                self.request_path_up(fi, sf, up, upstream);
            }
            if upstream {
                continue;
            }
            self.after_activity(fi, true);
            self.after_activity(fi, false);
            // (The client's half of the requests acted in the data receiver's activity.)
            self.request_activity(fi, false);
        }
    }
}
