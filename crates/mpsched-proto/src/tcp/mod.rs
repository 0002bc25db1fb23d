//! One TCP subflow, sans-IO: the data sender and the data receiver state machines.
//!
//! Heads up: read RFC 9293 (TCP), RFC 5681 (congestion control), RFC 6298 (RTO), RFC 2018 and
//! RFC 6675 (SACK and loss recovery), RFC 6937 (PRR, as Linux uses), RFC 3465 (byte
//! counting), RFC 7323 (timestamps) before changing these files. Where Linux deviates from the
//! RFCs we follow Linux (the testbed runs it) and say so beside the code.
//!
//! Scope and simplifications (simulation): sequence numbers are `u64` and never wrap; both
//! sides start at 0 (the SYN), so data starts at sequence number 1; payload bytes are not
//! carried; segments never exceed a DSN mapping; Nagle only when `TcpConfig::nagle`, no TSO, no pacing (Linux paces only
//! with the fq qdisc or BBR). Loss detection is Linux's default RACK-TLP (RFC 8985: time-based
//! marking, reordering timer, tail-loss probe); [`LossRecovery::Rfc6675`] selects RFC 6675
//! DupThresh instead (plus RACK's rule for lost retransmissions), where a lost tail waits for
//! the RTO. Reordering is detected from SACKs (Linux `reord_seen`: RACK then keeps its window in
//! recovery). A loss episode whose ACK echoes a timestamp from before its first retransmission
//! is undone (Linux's Eifel test, `sender/undo.rs`); no F-RTO, no D-SACK (so RACK's reordering
//! window never grows past min RTT / 4, and only timestamps undo).
//!
//! * [`Sender`]: handshake, send queue of DSN mappings, SACK scoreboard, RFC 6675 / PRR fast
//!   recovery, RTO with backoff, a pluggable [`crate::cc`] policy.
//! * [`Receiver`]: in-order and out-of-order reassembly, SACK generation, delayed ACKs with
//!   Linux's quickack start, the advertised window.

mod fifo;
mod handshake;
mod ofo;
mod rangeset;
mod receiver;
mod rtt;
mod scoreboard;
mod segment;
mod sender;
mod settings;

pub use handshake::{HsOption, Role};
pub use rangeset::RangeSet;
pub use receiver::{
    fixed_buffer_window_cap_bytes, Receiver, ReceiverStats, Released, SCALING_RATIO_DEFAULT,
};
pub use rtt::{
    timer_wheel_fire_ns, RttEstimator, INITIAL_RTO_NS, JIFFY_NS, MAX_RTO_NS, MIN_RTO_NS,
};
pub use scoreboard::DUP_THRESH;
pub use segment::{
    flags, Segment, DSS_ACK_BYTES, DSS_MAP_ACK_BYTES, HEADER_BYTES, MAX_OPTION_BYTES,
    MAX_SACK_BLOCKS,
};

/// Payload of a full MPTCP data segment on a 1500-byte MTU path: the TCP MSS with timestamps
/// (1448) minus the DSS option Linux reserves (see [`TcpConfig::mptcp`]).
pub const MPTCP_DATA_MSS_BYTES_FOR_1500: u64 = 1448 - DSS_MAP_ACK_BYTES;
pub use sender::{AckOutcome, CaState, Sender, SenderStats};

/// Makes room for one more entry in a full queue by a quarter of its length (at least 4), not
/// by doubling. A per-flow queue that cycles through its buffer (the scoreboard's sent
/// segments, the receiver's out-of-order queue) touches all of it, so a doubled buffer's slack
/// stays resident for as long as the queue is long: with a quarter, at most a fifth of the
/// buffer is slack at its peak. Capacity only: the queue's contents and order are unchanged.
#[inline(never)]
#[cold]
pub(crate) fn grow_by_a_quarter<T>(queue: &mut std::collections::VecDeque<T>) {
    queue.reserve_exact((queue.len() / 4).max(4));
}

/// Gives back a queue's room down to `keep` entries (at least its length) by moving its
/// entries, in order, to a fresh buffer of exactly that room and freeing the old one. Not
/// `shrink_to`: that reallocates, and mimalloc (the programs' global allocator) keeps the same
/// block for a realloc that shrinks it by less than half (`_mi_heap_realloc_zero`: "not more
/// than 50% waste"), so a queue shrunk to 3/4 of its room kept all of it.
#[inline(never)]
#[cold]
pub(crate) fn give_back_room<T: Copy>(queue: &mut std::collections::VecDeque<T>, keep: usize) {
    let mut fresh = std::collections::VecDeque::with_capacity(keep.max(queue.len()));
    fresh.extend(queue.iter().copied());
    *queue = fresh;
}

/// The largest skb TCP builds (`tcp_xmit_size_goal`: `GSO_LEGACY_MAX_SIZE`), bytes.
pub const GSO_MAX_BYTES: u64 = 65_536;
/// `tcp_min_tso_segs`: the fewest segments `tcp_tso_autosize` puts in an skb.
pub const MIN_TSO_SEGMENTS: u64 = 2;

/// Linux `tcp_tso_autosize`: a transmitted skb carries the data of about 1 ms at the pacing
/// rate (`sk_pacing_rate >> sk_pacing_shift`, shift 10), at least [`MIN_TSO_SEGMENTS`] and at
/// most a GSO packet ([`GSO_MAX_BYTES`]). Segments per skb.
pub fn tso_autosize_segments(pacing_rate_bps: u64, mss_bytes: u64) -> u64 {
    let mss = mss_bytes.max(1);
    (((pacing_rate_bps / 8) >> 10) / mss).clamp(
        MIN_TSO_SEGMENTS,
        (GSO_MAX_BYTES / mss).max(MIN_TSO_SEGMENTS),
    )
}

/// Linux `TCP_DELACK_MIN` (HZ / 25 = 40 ms): delayed-ACK timeout.
pub const DELAYED_ACK_NS: u64 = 40_000_000;
/// Linux `TCP_MAX_QUICKACKS`: ACK every segment for the first 16 ACKs of a connection.
pub const QUICKACKS: u32 = 16;

/// Settings of one subflow (Linux defaults).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpConfig {
    /// Maximum segment size, bytes (1448 = 1500 - 52 bytes of headers with timestamps).
    pub mss_bytes: u64,
    /// Initial window, segments (RFC 6928 / Linux `TCP_INIT_CWND` = 10).
    pub init_cwnd_segments: u64,
    /// SACK blocks per ACK: 3 beside timestamps (RFC 2018 §3); 1 when MPTCP's DSS option
    /// with a 64-bit DATA_ACK also needs room in the 40 option bytes.
    pub max_sack_blocks: usize,
    /// Receive buffer of a standalone receiver, bytes (an MPTCP connection overrides the
    /// window with its own).
    pub rcv_buf_bytes: u64,
    /// Delay ACKs (every second full segment or after [`DELAYED_ACK_NS`]).
    pub delayed_ack: bool,
    /// Quickack ACKs at the start of the connection (Linux: [`QUICKACKS`]; 0 disables).
    pub quickack_segments: u32,
    /// Segments carry MPTCP DSS options (counted in wire size). An MPTCP connection then
    /// sends `mss_bytes` minus [`DSS_MAP_ACK_BYTES`] of payload per segment, as Linux's
    /// `tcp_current_mss` reserves the DSS option's room, so a full segment still fits the MTU.
    pub mptcp: bool,
    /// Restart the window after an idle period longer than the RTO (Linux
    /// `net.ipv4.tcp_slow_start_after_idle`, default 1).
    pub slow_start_after_idle: bool,
    /// How losses are detected ([`LossRecovery::RackTlp`], Linux's default, unless set).
    pub loss_recovery: LossRecovery,
    /// Nagle's test with Minshall's variant (Linux without `TCP_NODELAY`): a partial segment
    /// at the queue's tail waits while a partial segment sent earlier is unacknowledged.
    pub nagle: bool,
}

/// Loss detection of a subflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LossRecovery {
    /// Linux's default (`net.ipv4.tcp_recovery` = 1, `tcp_early_retrans` = 3): RACK (RFC 8985,
    /// `net/ipv4/tcp_recovery.c`) marks a segment lost once a segment sent after it was
    /// delivered and RACK.rtt + reo_wnd has passed since it was sent, with a reordering timer
    /// for the rest; a tail-loss probe (`tcp_schedule_loss_probe`) goes out ~2 SRTT after the
    /// last transmission or ACK.
    #[default]
    RackTlp,
    /// RFC 6675 DupThresh for first transmissions (plus RACK's rule for lost
    /// retransmissions), no probe: a lost tail waits for the RTO.
    Rfc6675,
}

impl TcpConfig {
    /// RACK-TLP is on.
    pub fn rack_tlp(&self) -> bool {
        self.loss_recovery == LossRecovery::RackTlp
    }
}

impl Default for TcpConfig {
    fn default() -> Self {
        Self {
            mss_bytes: 1448,
            init_cwnd_segments: 10,
            max_sack_blocks: 3,
            rcv_buf_bytes: 6 * 1024 * 1024,
            delayed_ack: true,
            quickack_segments: QUICKACKS,
            mptcp: false,
            slow_start_after_idle: true,
            loss_recovery: LossRecovery::RackTlp,
            nagle: false,
        }
    }
}
