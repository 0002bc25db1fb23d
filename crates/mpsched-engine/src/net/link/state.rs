//! Whether a link takes packets and delivers what it holds: up, its entrance closed, or down
//! (a child module of `link.rs`: it resets the link's private queue state).

use super::Link;

/// What a link does with packets. A path's interface going down acts on its links in two
/// ways: the links behind the interface lose what they hold (`Down`), and the links whose
/// packets had already left it deliver them (`Closed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkState {
    /// Takes packets and delivers them.
    Up,
    /// Takes no packet (each one offered is lost), but what it holds (queued, being
    /// serialised, propagating) still reaches the far end: the packets a host sent before its
    /// interface went down, already in a router's delay line and queue.
    Closed,
    /// Takes no packet and loses what it holds (dropped when it would have arrived).
    Down,
}

impl<P> Link<P> {
    /// The link's state.
    pub(crate) fn state(&self) -> LinkState {
        match (self.up, self.open) {
            (true, true) => LinkState::Up,
            (true, false) => LinkState::Closed,
            _ => LinkState::Down,
        }
    }

    /// Puts the link in `state` at `now_ns`. Going `Down` loses what it holds; `Closed` and
    /// back `Up` change only what it takes from now on.
    pub(crate) fn set_state(&mut self, now_ns: u64, state: LinkState) {
        if self.state() == state {
            return;
        }
        if state == LinkState::Down {
            self.lose_held(now_ns);
        }
        self.up = state != LinkState::Down;
        self.open = state == LinkState::Up;
        self.short = self.short_now();
    }

    /// An interface going down loses what its link holds: the queue, the packet being
    /// serialised and the packets propagating (dropped when they would arrive). They are all
    /// in the pipe (or the propagation slab) and are counted as lost when they would have
    /// arrived.
    fn lose_held(&mut self, now_ns: u64) {
        self.backlog_clear();
        self.queued.clear();
        self.backlog_bytes = 0;
        self.served = 0;
        self.served_bytes = 0;
        self.queue_clock_ns = now_ns;
        self.free_at_ns = now_ns;
        if let Some(bucket) = &mut self.bucket {
            bucket.reset(now_ns); // the qdisc is reset with the device (tbf_reset)
        }
        self.epoch = self.epoch.wrapping_add(1);
        self.stale = self.pipe.len() as u32;
    }
}
