//! A data sender built in the heap room of a finished one (short flows: the simulation keeps
//! finished flows' endpoints to build the next ones in, issue 17).

use super::{
    Action, ConnConfig, CoupledSubflow, DataSender, Scheduler, Sender, SubflowView, UnknownCc,
};

/// The vectors a [`DataSender`] is built in: a finished one's, emptied, or new ones.
#[derive(Default)]
pub(super) struct Room {
    pub(super) subflows: Vec<Sender>,
    pub(super) views: Vec<SubflowView>,
    pub(super) coupled: Vec<CoupledSubflow>,
    pub(super) actions: Vec<Action>,
    pub(super) max_cwnd_segments: Vec<u64>,
}

impl Room {
    /// `old`'s vectors (it keeps none), emptied but for its first `n` subflows, which the new
    /// subflows of their index replace (`Sender::new_reusing`: only their scoreboard's room is
    /// kept).
    fn emptied_from(old: &mut DataSender, n: usize) -> Self {
        let mut room = Room {
            subflows: std::mem::take(&mut old.subflows),
            views: std::mem::take(&mut old.views),
            coupled: std::mem::take(&mut old.coupled),
            actions: std::mem::take(&mut old.actions),
            max_cwnd_segments: std::mem::take(&mut old.max_cwnd_segments),
        };
        room.subflows.truncate(n);
        room.views.clear();
        room.coupled.clear();
        room.actions.clear();
        room.max_cwnd_segments.clear();
        room
    }
}

/// `v` (empty) holding `n` copies of `value`; a new vector's room is exactly `n`, as `vec!`'s.
pub(super) fn filled<T: Clone>(mut v: Vec<T>, n: usize, value: T) -> Vec<T> {
    v.reserve_exact(n);
    v.resize(n, value);
    v
}

impl DataSender {
    /// [`DataSender::with_config`], built in the heap room of `old`, a finished connection's
    /// sender: its vectors, emptied, and its subflows' scoreboard queues (subflow `i`'s for
    /// the new subflow `i`); what they held is dropped (`old` keeps neither). Field for field
    /// the sender `with_config` builds, but for capacities: a short flow allocates nothing
    /// there, nor regrows a queue as its window opens.
    pub fn with_config_reusing(
        cfg: &ConnConfig,
        sched: Option<Box<dyn Scheduler>>,
        old: &mut DataSender,
    ) -> Result<Self, UnknownCc> {
        Self::build(cfg, sched, Room::emptied_from(old, cfg.subflow_count()))
    }
}
