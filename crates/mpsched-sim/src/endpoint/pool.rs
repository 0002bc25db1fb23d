//! Finished flows' endpoints, kept to build the next flows in (issue 17: "per-flow endpoint
//! state pooled and reused for short flows"). A 64 KB flow otherwise allocates its two boxed
//! endpoints, their subflow vectors and its sender's scoreboard queue, regrows that queue 4
//! times as its window opens, and frees it all at its end: 11 allocations, 4 reallocations and
//! their copies, ~1 700 instructions a flow (callgrind, e2e scenario (2)).
//!
//! An endpoint built from the pool is field for field the one built afresh but for the
//! capacities of its vectors and queues (proto's `with_config_reusing`, which empties them and
//! drops what they held); the records cannot tell them apart (tests: `pool_tests.rs`).

use super::{Ep, ReceiverEp, SenderEp};
use mpsched_proto::mptcp::{ConnConfig, DataReceiver, DataSender};
use mpsched_proto::sched::Scheduler;

/// Endpoints of finished flows, for the next flows. Boxed: the boxes themselves are kept (a
/// flow holds each side as a box, [`Ep`]).
#[derive(Default)]
#[allow(clippy::vec_box)]
pub(crate) struct EndpointPool {
    senders: Vec<Box<SenderEp>>,
    receivers: Vec<Box<ReceiverEp>>,
    /// Endpoints built in a kept one (tests see that the pool is used).
    pub(crate) reused: u64,
    /// Keep nothing: every endpoint is built afresh (tests compare the two).
    #[cfg(test)]
    pub(crate) off: bool,
}

impl EndpointPool {
    /// A data sender of `cfg`, in a kept sender's room if there is one.
    pub(super) fn sender(&mut self, cfg: &ConnConfig, sched: Option<Box<dyn Scheduler>>) -> Box<SenderEp> {
        const CHECKED: &str = "checked by check_transport";
        match self.senders.pop() {
            Some(mut kept) => {
                let fresh = DataSender::with_config_reusing(cfg, sched, &mut kept.0).expect(CHECKED);
                kept.0 = fresh;
                self.reused += 1;
                kept
            }
            None => Box::new(SenderEp(DataSender::with_config(cfg, sched).expect(CHECKED))),
        }
    }

    /// A data receiver of `cfg`, in a kept receiver's room if there is one.
    pub(super) fn receiver(&mut self, cfg: &ConnConfig) -> Box<ReceiverEp> {
        match self.receivers.pop() {
            Some(mut kept) => {
                let fresh = DataReceiver::with_config_reusing(cfg, &mut kept.0);
                kept.0 = fresh;
                self.reused += 1;
                kept
            }
            None => Box::new(ReceiverEp(DataReceiver::with_config(cfg))),
        }
    }

    /// Keeps the endpoint of a finished flow while fewer than `limit` of its kind are kept
    /// (the caller's bound: see `Simulation::finish_flow`); drops it otherwise.
    pub(crate) fn keep(&mut self, ep: Ep, limit: usize) {
        #[cfg(test)]
        if self.off {
            return;
        }
        match ep {
            Ep::Sender(s) if self.senders.len() < limit => self.senders.push(s),
            Ep::Receiver(r) if self.receivers.len() < limit => self.receivers.push(r),
            _ => {}
        }
    }

    /// Endpoints kept now (senders, receivers).
    #[cfg(test)]
    pub(crate) fn kept(&self) -> (usize, usize) {
        (self.senders.len(), self.receivers.len())
    }
}
