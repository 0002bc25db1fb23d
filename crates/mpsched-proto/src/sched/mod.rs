//! The scheduler interface: a read-only view in, actions out.
//!
//! Modelled on the pluggable frameworks it descends from (out-of-tree Linux `get_subflow` /
//! `next_segment`, upstream `mptcp_sched_ops` with "scheduled" marks, ProgMP's queue view); see
//! `reference/schedulers.md` §1.
//!
//! # Call contract
//! The connection calls [`Scheduler::schedule`] whenever something may be sent: the application
//! wrote data, an ACK or DATA_ACK arrived (a window may have opened), a subflow became
//! established, or a timer fired. The scheduler pushes zero or more [`Action`]s into `out`.
//! The connection applies them in order, re-checking each against the receive window and the
//! subflow state; every action it cannot apply is counted and reported back through
//! [`Scheduler::on_rejected`], never silently dropped. If at least one action was applied, the
//! connection builds a fresh view and calls `schedule` again, until a call yields no applied
//! action (an empty `out` means "wait"). So a scheduler may answer with one burst per call (OOT
//! per-segment style) or with everything it wants at once (upstream per-burst style).
//!
//! `SendNew` hands new bytes to a subflow's send queue; the subflow transmits them as its own
//! congestion window allows. Schedulers that respect the window (most) size the burst with
//! [`SubflowView::free_cwnd_bytes`]; those that queue beyond it on purpose (OTIAS, DAPS, STTF)
//! may ask for more.
//!
//! # Adding a scheduler
//! One file `sched/<name>.rs` with a `//!` header (source, summary, decisions), a `Config`
//! (serde, documented defaults), the state struct and its `Scheduler` impl and tests, plus one
//! line in [`registry`].

pub mod registry;

mod common;
#[cfg(test)]
mod conformance;
#[cfg(test)]
mod scenarios;
#[cfg(test)]
mod toy_model;

pub mod blest;
pub mod bm;
pub mod bwm;
pub mod cfs;
pub mod daps;
pub mod ecf;
pub mod freeze;
pub mod linux;
pub mod minrtt;
pub mod otias;
pub mod redundant;
pub mod roundrobin;
pub mod rp;
pub mod sttf;

/// Index of a subflow within its connection (0 = the initial subflow).
pub type SubflowId = usize;

/// Read-only snapshot of one subflow, as a scheduler sees it (`reference/schedulers.md` §0.2).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SubflowView {
    /// Index of this subflow in the connection.
    pub id: SubflowId,
    /// Index of the network path this subflow runs over (0-based).
    pub path_index: usize,
    /// Handshake (MP_CAPABLE / MP_JOIN) complete: only established subflows can carry data.
    pub established: bool,
    /// A backup subflow (MP_PRIO / MP_JOIN B bit): used only when no active one is usable.
    pub backup: bool,
    /// "Potentially failed": an RTO fired and no progress has been made since.
    pub potentially_failed: bool,
    /// Upstream Linux `stale`: the subflow received no ACK for more than `stale_loss_cnt`
    /// MPTCP-level retransmission periods while holding data (see `mptcp::stale`); it is
    /// active again once it receives an ACK. Always false unless the scheduler declares
    /// [`Scheduler::upstream_stale_detection`].
    pub stale: bool,
    /// Upstream Linux `stale_count`: MPTCP-level retransmission periods without an ACK on
    /// this busy subflow (0 unless [`Scheduler::upstream_stale_detection`]).
    pub stale_count: u64,
    /// In RTO (Loss) recovery.
    pub in_loss_recovery: bool,
    /// In fast recovery (SACK / RFC 6675).
    pub in_fast_recovery: bool,
    /// True once at least one RTT sample has been taken; before that `srtt_ns` is 0.
    pub has_rtt_sample: bool,
    /// Smoothed RTT (RFC 6298, gain 1/8), ns. 0 before the first sample.
    pub srtt_ns: u64,
    /// RTT variation (RFC 6298 RTTVAR, gain 1/4), ns.
    pub rttvar_ns: u64,
    /// Minimum RTT seen, ns (0 before the first sample).
    pub min_rtt_ns: u64,
    /// Most recent raw RTT sample, ns.
    pub last_rtt_ns: u64,
    /// Retransmission timeout currently in force, ns.
    pub rto_ns: u64,
    /// Maximum segment size, bytes.
    pub mss_bytes: u64,
    /// Congestion window, bytes.
    pub cwnd_bytes: u64,
    /// Slow-start threshold, bytes (`u64::MAX` before the first loss).
    pub ssthresh_bytes: u64,
    /// Bytes in flight (RFC 6675 "pipe": sent, not cumulatively or selectively acked, not
    /// deemed lost, plus retransmissions in flight).
    pub in_flight_bytes: u64,
    /// Bytes sent and not cumulatively acknowledged, counted once each, SACKed and
    /// deemed-lost ones included (`snd_nxt - snd_una`: what the kernel's retransmission
    /// queue still holds and charges to `sk_wmem_queued`).
    pub outstanding_bytes: u64,
    /// Segments sent, shorter than the MSS and not cumulatively acknowledged. Each ended the
    /// data the subflow had, so Linux holds each in an skb of its own (a frame written alone).
    pub short_segs_out: u64,
    /// Bytes assigned to this subflow's send queue but not transmitted yet.
    pub queued_bytes: u64,
    /// Segments in flight (Linux `tcp_packets_in_flight`) plus the segments the queued bytes
    /// will leave as, whatever their sizes: the sender's window counts these. 0 where a view
    /// is built by hand: the room is then reckoned from the byte counts alone.
    pub segs_in_use: u64,
    /// Linux-style pacing rate, bit/s: ratio * cwnd / srtt, ratio 2.0 in slow start below
    /// ssthresh/2, else 1.2 (0 before the first RTT sample).
    pub pacing_rate_bps: u64,
    /// Bytes of payload cumulatively acknowledged on this subflow so far.
    pub bytes_acked: u64,
    /// Bytes of payload transmitted (first transmissions and retransmissions).
    pub bytes_sent: u64,
    /// Bytes of payload retransmitted by this subflow's own loss recovery.
    pub bytes_retransmitted: u64,
    /// Number of retransmission timeouts so far.
    pub rto_count: u64,
}

impl SubflowView {
    /// Room in the congestion window after what is in flight and already queued, bytes, in
    /// whole segments: Linux counts cwnd in packets (`tcp_cwnd_test`: `snd_cwnd` minus
    /// `tcp_packets_in_flight`), so the room is floor(cwnd / MSS) packets minus the packets
    /// in flight or queued (a partial segment counts as one; [`Self::segs_in_use`] where it
    /// counts more), times the MSS.
    #[inline]
    pub fn free_cwnd_bytes(&self) -> u64 {
        let used = self.in_flight_bytes + self.queued_bytes;
        if self.mss_bytes == 0 {
            return self.cwnd_bytes.saturating_sub(used);
        }
        let cwnd_pkts = self.cwnd_bytes / self.mss_bytes;
        // Small segments (messages, requests) fill the window by count, not by bytes.
        let used_pkts = used.div_ceil(self.mss_bytes).max(self.segs_in_use);
        cwnd_pkts.saturating_sub(used_pkts) * self.mss_bytes
    }

    /// Can carry data at all (established, not potentially failed): the OOT
    /// `!def_unavailable`.
    #[inline]
    pub fn usable(&self) -> bool {
        self.established && !self.potentially_failed
    }

    /// Usable and has window room for at least one more byte now: OOT `available()`.
    #[inline]
    pub fn available(&self) -> bool {
        self.usable() && !self.in_loss_recovery && self.free_cwnd_bytes() > 0
    }
}

/// A piece of data sent but not yet DATA_ACKed, with the subflows it went out on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnackedChunk {
    /// First data sequence number of the chunk.
    pub dsn: u64,
    /// Length in bytes.
    pub len: u64,
    /// Bit `i` set: the chunk was (at least partly) sent on subflow `i`.
    pub sent_on_mask: u64,
}

impl UnackedChunk {
    /// True when the chunk was sent on subflow `id`.
    #[inline]
    pub fn sent_on(&self, id: SubflowId) -> bool {
        id < 64 && self.sent_on_mask & (1 << id) != 0
    }
}

/// Read-only snapshot of the connection, handed to [`Scheduler::schedule`].
#[derive(Debug, Clone, Copy)]
pub struct ConnView<'a> {
    /// Current time, ns.
    pub now_ns: u64,
    /// Every subflow of the connection, in creation order (index = [`SubflowId`]).
    pub subflows: &'a [SubflowView],
    /// Application bytes written but not yet given to any subflow.
    pub unsent_bytes: u64,
    /// True when the application has written everything it will write (the end of the flow is
    /// known, so `unsent_bytes` is the whole remaining tail: CFS uses this).
    pub app_done: bool,
    /// Data sequence number of the next new byte.
    pub next_dsn: u64,
    /// Cumulative DATA_ACK: every byte below this has reached the peer's connection level.
    pub data_acked: u64,
    /// Sent but not DATA_ACKed data, in DSN order.
    pub unacked: &'a [UnackedChunk],
    /// Chunks waiting to be re-sent on another subflow (after a subflow RTO or failure), served
    /// before new data by most schedulers.
    pub reinject_queue: &'a [UnackedChunk],
    /// Last receive window announced by the peer, bytes (relative to `data_acked`).
    pub peer_rwnd_bytes: u64,
}

impl ConnView<'_> {
    /// Highest DSN (exclusive) the peer's window allows: `data_acked + peer_rwnd_bytes`.
    #[inline]
    pub fn wnd_end(&self) -> u64 {
        self.data_acked + self.peer_rwnd_bytes
    }

    /// New bytes the receive window still allows beyond `next_dsn`.
    #[inline]
    pub fn rwnd_room_bytes(&self) -> u64 {
        self.wnd_end().saturating_sub(self.next_dsn)
    }
}

/// What a scheduler asks the connection to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Hand up to `max_bytes` new bytes (from `next_dsn` on) to `subflow`'s send queue.
    SendNew {
        /// Target subflow.
        subflow: SubflowId,
        /// Upper bound on bytes; the connection may hand fewer (less data, receive window).
        max_bytes: u64,
    },
    /// Send again on `subflow` a copy of already-sent data `[dsn, dsn + len)`: redundancy,
    /// reinjection or opportunistic retransmission. Parts already DATA_ACKed are skipped.
    Resend {
        /// Target subflow.
        subflow: SubflowId,
        /// First DSN to copy.
        dsn: u64,
        /// Length in bytes.
        len: u64,
        /// Why (recorded in metrics).
        kind: ResendKind,
    },
    /// Halve `subflow`'s congestion window (RP penalisation, `reference/schedulers.md` §2.2).
    /// Applied every time it is asked for: how often is the scheduler's rule.
    Penalize {
        /// Subflow to penalise.
        subflow: SubflowId,
    },
}

impl Action {
    /// The kinds of action, in the order of [`Action::kind_index`], as the `actions` table
    /// spells them.
    pub const KINDS: [&'static str; 3] = ["new", "resend", "penalize"];

    /// Position of this action's kind in [`Action::KINDS`].
    pub fn kind_index(&self) -> usize {
        match self {
            Action::SendNew { .. } => 0,
            Action::Resend { .. } => 1,
            Action::Penalize { .. } => 2,
        }
    }
}

/// Why data is sent again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResendKind {
    /// Served from the reinjection queue (after a subflow RTO or failure).
    Reinject,
    /// Opportunistic retransmission of the receive-window-blocking head (RP).
    Opportunistic,
    /// A deliberate redundant copy (redundant, CFS tail).
    Redundant,
}

/// Bytes sent again at the connection level, per [`ResendKind`], counted when a subflow
/// transmits them (a copy still queued, or dropped because the data was acknowledged through
/// another subflow, does not count).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResendCounters {
    /// Reinjection-queue bytes.
    pub reinject_bytes: u64,
    /// Opportunistic retransmissions (RP).
    pub opportunistic_bytes: u64,
    /// Redundant copies.
    pub redundant_bytes: u64,
}

impl ResendCounters {
    /// Counts `bytes` sent again for reason `kind`.
    pub fn add(&mut self, kind: ResendKind, bytes: u64) {
        match kind {
            ResendKind::Reinject => self.reinject_bytes += bytes,
            ResendKind::Opportunistic => self.opportunistic_bytes += bytes,
            ResendKind::Redundant => self.redundant_bytes += bytes,
        }
    }

    /// Adds another set of counters (e.g. a subflow's to the connection's).
    pub fn merge(&mut self, other: &ResendCounters) {
        self.reinject_bytes += other.reinject_bytes;
        self.opportunistic_bytes += other.opportunistic_bytes;
        self.redundant_bytes += other.redundant_bytes;
    }
}

/// Why the connection could not apply an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rejection {
    /// No such subflow.
    UnknownSubflow,
    /// The subflow's handshake is not complete, or it is closed / failed.
    SubflowNotUsable,
    /// Nothing to send: no unsent bytes (SendNew) or the range is already acknowledged (Resend).
    NothingToSend,
    /// The peer's receive window does not allow a new byte.
    ReceiveWindowFull,
    /// The subflow's send queue is at its limit.
    SubflowQueueFull,
}

impl Rejection {
    /// Every reason, in the order of [`Rejection::index`].
    pub const ALL: [Rejection; 5] = [
        Rejection::UnknownSubflow,
        Rejection::SubflowNotUsable,
        Rejection::NothingToSend,
        Rejection::ReceiveWindowFull,
        Rejection::SubflowQueueFull,
    ];

    /// Position in [`Rejection::ALL`] (for per-reason counters).
    pub fn index(self) -> usize {
        self as usize
    }

    /// The reason as the `actions` table spells it.
    pub fn name(self) -> &'static str {
        match self {
            Rejection::UnknownSubflow => "unknown_subflow",
            Rejection::SubflowNotUsable => "subflow_not_usable",
            Rejection::NothingToSend => "nothing_to_send",
            Rejection::ReceiveWindowFull => "receive_window_full",
            Rejection::SubflowQueueFull => "subflow_queue_full",
        }
    }
}

/// Kind of loss signal reported to [`Scheduler::on_loss`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LossKind {
    /// Entered fast recovery (duplicate ACKs / SACK).
    FastRetransmit,
    /// Retransmission timeout.
    Timeout,
}

/// A packet scheduler. One value per connection; it may keep any private state.
///
/// Every hook but [`Scheduler::schedule`] has a no-op default.
pub trait Scheduler: std::fmt::Debug + Send {
    /// Registry name of this scheduler (recorded in results).
    fn name(&self) -> &'static str;

    /// Decide what to send now; push actions into `out` (empty = wait). See the module docs for
    /// when it is called and how the actions are applied.
    fn schedule(&mut self, view: &ConnView<'_>, out: &mut Vec<Action>);

    /// A subflow was created (before its handshake completes).
    #[allow(unused_variables)]
    fn on_subflow_added(&mut self, id: SubflowId, now_ns: u64) {}

    /// A subflow ACK acknowledged `acked_bytes` new bytes; `rtt_sample_ns` is the RTT sample it
    /// produced, if any.
    #[allow(unused_variables)]
    fn on_ack(&mut self, id: SubflowId, acked_bytes: u64, rtt_sample_ns: Option<u64>, now_ns: u64) {
    }

    /// The connection-level DATA_ACK advanced to `data_acked`.
    #[allow(unused_variables)]
    fn on_data_ack(&mut self, data_acked: u64, now_ns: u64) {}

    /// A subflow detected a loss.
    #[allow(unused_variables)]
    fn on_loss(&mut self, id: SubflowId, kind: LossKind, now_ns: u64) {}

    /// The connection could not apply `action`.
    #[allow(unused_variables)]
    fn on_rejected(&mut self, action: Action, why: Rejection, now_ns: u64) {}

    /// The connection's send buffer is fixed at `snd_buf_bytes` (no autotuning: `SO_SNDBUF`).
    /// Called once, before the first [`Scheduler::schedule`]. Linux copies the MPTCP socket's
    /// `sk_sndbuf` and its lock to every subflow (`sync_socket_options`), so each subflow's
    /// send buffer is this size too, not what `tcp_sndbuf_expand` would make it.
    #[allow(unused_variables)]
    fn on_send_buffer_fixed(&mut self, snd_buf_bytes: u64) {}

    /// True when the scheduler runs on the upstream kernel's connection machinery: the
    /// MPTCP-level retransmission timer with stale-subflow detection (`mptcp::stale`), whose
    /// result the views carry (`stale`, `stale_count`). False (the default): the
    /// out-of-tree kernel's machinery, where `potentially_failed` plays that role.
    fn upstream_stale_detection(&self) -> bool {
        false
    }
}
