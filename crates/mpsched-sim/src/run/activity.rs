//! What the loop does after something happened to one side of a flow
//! ([`Simulation::after_activity`]), and the same body as a macro for `deliver`, which already
//! holds the flow's slot.

use super::wire::{rearm_app, Sink, Wire};
use super::{wire, Simulation};
use crate::endpoint::Endpoint;
use mpsched_proto::PendingNs;

/// The body of [`Simulation::after_activity`] for flow `fi` whose slot `$flow` (a `&mut
/// Flow` borrowed from `$sim.flows`, a local of the caller) is already looked up: `deliver`
/// passes the one it handed the segments with, so a delivered packet indexes the flow table
/// and tests its `Option` once, not twice (a macro, not a method: the body borrows the
/// simulation field by field beside the flow). It may `return` from the caller, which must end
/// with it.
macro_rules! after_activity_body {
    ($sim:ident, $flow:ident, $fi:ident, $client_side:ident) => {{
        let (fi, client_side, now) = ($fi, $client_side, $sim.now_ns);
        let mut f = $flow;
        let sender_is_client = f.sender_is_client();
        let side = if client_side { &mut f.client } else { &mut f.server };
        if client_side == sender_is_client {
            f.app.feed(now, &mut side.ep);
        } else {
            f.app.on_receive(now, &side.ep);
            // The receiving application's messages go back up the flow's first path (out of
            // line: only unit applications send any).
            if let Some(first) = f.app.poll_message() {
                let route = $sim.path_routes[f.paths[0]];
                let mut sink = Sink { queue: &mut $sim.queue, segments: &mut $sim.segments };
                wire::send_app_messages(
                    &mut f.app,
                    first,
                    fi,
                    client_side,
                    route,
                    now,
                    &mut $sim.net,
                    &mut sink,
                    &mut $sim.stats,
                );
            }
            // An RPC client writes the requests this allows before this side's ACK leaves (in
            // a real connection that ACK rides on them).
            if f.request.is_some() {
                $sim.request_activity(fi, client_side);
                let Some(again) = $sim.flows[fi].as_mut() else { return };
                f = again;
            }
        }
        let paths = f.paths;
        let side = if client_side { &mut f.client } else { &mut f.server };
        let data_subflows = wire!($sim).transmit(side, fi, paths, client_side, false);
        if data_subflows != 0 && f.request.is_some() {
            $sim.ack_rides_on_data(fi, client_side, false, data_subflows);
            let Some(again) = $sim.flows[fi].as_mut() else { return };
            f = again;
        }
        rearm_app(f, &mut $sim.queue, fi, now);
        let (sender, receiver) = f.roles();
        if let Some(end_ns) = f.app.completion_ns(now, &sender.ep, &receiver.ep) {
            // Records are taken once the sender has also seen the (DATA_)ACK of everything
            // delivered, so its counters (subflow `bytes_acked`) are final; the completion
            // time stays the receiver's.
            if sender.ep.acked_bytes() >= receiver.ep.delivered_bytes() {
                $sim.finish_flow(fi, Some(end_ns));
            } else {
                f.completed_ns = PendingNs::at(end_ns);
            }
        }
    }};
}

impl Simulation<'_> {
    /// After something happened to one side of a flow: lets the application act on that side,
    /// drains that side's output, re-arms its timer and the application's, and finishes the
    /// flow when it is complete. Only the side that saw the event can have changed.
    #[inline(never)]
    pub(super) fn after_activity(&mut self, fi: usize, client_side: bool) {
        let Some(f) = self.flows[fi].as_mut() else { return };
        after_activity_body!(self, f, fi, client_side);
    }
}
