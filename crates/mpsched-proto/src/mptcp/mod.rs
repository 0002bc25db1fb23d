//! The MPTCP connection (also plain TCP): the data sender and the data receiver endpoints.
//!
//! Heads up: read RFC 8684 §3.1-3.3 (MP_CAPABLE, MP_JOIN, DSS, DATA_ACK, the connection-level
//! window) and `reference/schedulers.md` §0 and §3 before changing these files.
//!
//! Data sequence numbers (DSN) start at 0 for the first application byte. Each subflow
//! carries DSN mappings (every segment holds the DSN of its first byte; a retransmission on
//! the same subflow carries the same DSN). The receiver reassembles by DSN in one shared
//! connection-level buffer and acknowledges with DATA_ACK; every subflow advertises the
//! connection window relative to DATA_ACK (RFC 8684 §3.3.4). The sender hands data to
//! subflows only through the scheduler ([`crate::sched`]), applying its actions in order and
//! counting every rejection.
//!
//! Establishment as the kernel does it: the client opens subflow 0 (MP_CAPABLE); when its
//! SYN-ACK arrives (out-of-tree kernel; or once the connection is fully established, as
//! upstream Linux does, see [`JoinTiming`]) it opens subflow i on path i with MP_JOIN. A join initiator may carry
//! data only after the fourth ACK, the responder after the third (RFC 8684 §3.2).
//!
//! Plain TCP ([`Mode::Tcp`]) is the same machinery with one subflow, no MPTCP options on the
//! wire and no scheduler (all data goes to subflow 0).
//!
//! # Call contract (both endpoints)
//! Build with a [`ConnConfig`] (the sender also takes the scheduler); the client calls
//! `connect(now)`. Then, with `now` never decreasing:
//! * inputs: `handle_segment(now, subflow, &seg)` for every arriving segment,
//!   `handle_timeout(now)` when `now >= poll_timeout()`, and on the sender `write(bytes, now)`
//!   / `close()`, on both `set_path_up(subflow, up, ..)`;
//! * after any input, call `poll_transmit(now)` until it returns `None` (each call yields one
//!   segment and the subflow = path index it goes out on), then `poll_timeout()` for the next
//!   wake-up (absolute ns; it may change after every input).
//!
//! The scheduler runs lazily inside the sender's `poll_transmit`, once per batch of inputs.
//!
//! Simplifications: no subflow or connection teardown (FIN / DATA_FIN exchange: the
//! DATA_FIN flag marks the last mapping only), no ADD_ADDR / path manager beyond "one subflow
//! per path", no checksum, no fallback.

mod chunks;
mod join_route;
mod receiver;
mod sender;
pub mod stale;

pub use crate::sched::ResendCounters;
pub use receiver::DataReceiver;
pub use sender::DataSender;

use crate::tcp::TcpConfig;

/// Plain TCP or MPTCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// One subflow, no MPTCP options, no scheduler.
    Tcp,
    /// One subflow per path, MP_CAPABLE then MP_JOIN.
    Mptcp,
}

/// When the client opens the additional subflows (MP_JOIN).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum JoinTiming {
    /// As soon as the MP_CAPABLE SYN-ACK arrives (out-of-tree kernel, full-mesh path
    /// manager). The default.
    #[default]
    AfterSynAck,
    /// Once the connection is fully established: the first segment from the server after
    /// the MP_CAPABLE handshake (upstream Linux, the testbed's kernel: the in-kernel path
    /// manager acts on `mptcp_pm_fully_established`, and the client is fully established by
    /// the first additional ACK or data from the server). About one RTT of the first path
    /// later than [`JoinTiming::AfterSynAck`]; on a connection where the server never sends,
    /// no subflow is ever added.
    FullyEstablished,
}

/// Settings of one endpoint of a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnConfig {
    /// TCP or MPTCP.
    pub mode: Mode,
    /// This endpoint opens the subflows (sends the SYNs).
    pub is_client: bool,
    /// Number of subflows (one per path; forced to 1 in TCP mode).
    pub num_subflows: usize,
    /// Per subflow: a backup subflow (MP_JOIN B bit). Missing entries mean "not backup".
    pub backup: Vec<bool>,
    /// Subflow settings (MSS, initial window, delayed ACKs...).
    pub tcp: TcpConfig,
    /// Connection-level receive buffer, bytes (data receiver).
    pub rcv_buf_bytes: u64,
    /// Send buffer, bytes: the most bytes written and not yet DATA_ACKed, and the most bytes
    /// queued on one subflow (data sender).
    pub snd_buf_bytes: u64,
    /// Congestion control name (see [`crate::cc::NAMES`]).
    pub cc: String,
    /// When the client opens subflows 1.. (default: at the SYN-ACK, out-of-tree Linux).
    pub join_timing: JoinTiming,
    /// Linux receive-buffer autotuning (dynamic right-sizing, `tcp_moderate_rcvbuf` = 1, as
    /// the testbed runs it): the advertised window starts at half of `tcp_rmem[1]` (64 KiB)
    /// and grows once per receiver RTT to twice the bytes the application read in the last
    /// one, never beyond `rcv_buf_bytes` (see `receiver.rs`). Off: the window is the whole
    /// `rcv_buf_bytes` from the start (an application that set `SO_RCVBUF`).
    pub rcv_buf_autotuning: bool,
    /// Linux send-buffer autotuning (what the kernel does unless the application sets
    /// `SO_SNDBUF`; the testbed never does): each subflow's `sk_sndbuf` is what
    /// `tcp_sndbuf_expand` makes it ([`subflow_sndbuf_bytes`] of the largest congestion window
    /// so far: it follows cwnd up and never shrinks), and the connection's send buffer is
    /// `tcp_wmem[0]` plus their sum (`__mptcp_sync_sndbuf`, Linux 6.7+), at most
    /// `snd_buf_bytes`. The application writes while the bytes it wrote and the peer has not
    /// DATA_ACKed are below that (`mptcp_send_limit`), so data held up behind a slow
    /// subflow's head-of-line blocks the writer. Off: the send buffer is `snd_buf_bytes`.
    pub snd_buf_autotuning: bool,
    /// `net.mptcp.stale_loss_cnt` (default 4; 0 never marks a subflow stale): a busy subflow
    /// that received no ACK for more than this many MPTCP-level retransmission-timer periods
    /// is marked stale while another subflow is active. Used only with a scheduler that runs
    /// on the upstream kernel's machinery (see [`stale`]).
    pub stale_loss_cnt: u8,
}

/// `per_mss` of Linux `tcp_sndbuf_expand` for a 1460-byte MSS clamp, bytes: the truesize the
/// kernel budgets per segment, `roundup_pow_of_two(1460 + MAX_TCP_HEADER +
/// SKB_DATA_ALIGN(sizeof(skb_shared_info))) + SKB_DATA_ALIGN(sizeof(sk_buff))`. It depends on
/// the kernel build: 2048 + 256 = 2304 on the testbed's 6.18 kernel (measured: `ss -tm` shows
/// `tb` = 2 × cwnd × 2304 on every subflow), 4096 + 256 = 4352 on a distribution kernel whose
/// `MAX_TCP_HEADER` is 320.
pub const SNDBUF_PER_MSS_BYTES: u64 = 2304;
/// `TCP_INIT_CWND` (include/net/tcp.h): `tcp_sndbuf_expand` budgets at least this many segments.
const SNDBUF_MIN_SEGMENTS: u64 = 10;
/// `tcp_wmem[0]` default: the base of the MPTCP socket's send buffer (`__mptcp_sync_sndbuf`).
pub const TCP_WMEM0_BYTES: u64 = 4096;
/// `mptcp_sendmsg` copies into 32 KiB page frags (`SKB_FRAG_PAGE_ORDER`) and checks the send
/// buffer only between them, so a write may overshoot the limit by the rest of a frag.
pub const PAGE_FRAG_BYTES: u64 = 32_768;

/// A subflow's send buffer as Linux `tcp_sndbuf_expand` sizes it, in truesize bytes:
/// `2 × max(TCP_INIT_CWND, cwnd) × per_mss` (factor 2: "Fast Recovery (RFC 5681 3.2): Cubic
/// needs 1.7 factor, rounded to 2").
pub fn subflow_sndbuf_bytes(max_cwnd_segments: u64, per_mss_bytes: u64) -> u64 {
    2u64.saturating_mul(max_cwnd_segments.max(SNDBUF_MIN_SEGMENTS))
        .saturating_mul(per_mss_bytes)
}

impl ConnConfig {
    /// Linux-like defaults for `mode` with `num_subflows` subflows.
    pub fn new(mode: Mode, is_client: bool, num_subflows: usize) -> Self {
        Self {
            mode,
            is_client,
            num_subflows: if mode == Mode::Tcp {
                1
            } else {
                num_subflows.max(1)
            },
            backup: Vec::new(),
            tcp: TcpConfig::default(),
            rcv_buf_bytes: 6 * 1024 * 1024,
            snd_buf_bytes: 4 * 1024 * 1024,
            cc: "cubic".to_string(),
            join_timing: JoinTiming::default(),
            rcv_buf_autotuning: false,
            snd_buf_autotuning: false,
            stale_loss_cnt: stale::DEFAULT_STALE_LOSS_CNT,
        }
    }

    /// What an endpoint keeps of this after building its subflows.
    fn params(&self) -> ConnParams {
        ConnParams {
            mode: self.mode,
            is_client: self.is_client,
            join_timing: self.join_timing,
            rcv_buf_autotuning: self.rcv_buf_autotuning,
            snd_buf_autotuning: self.snd_buf_autotuning,
            rcv_buf_bytes: self.rcv_buf_bytes,
            snd_buf_bytes: self.snd_buf_bytes,
        }
    }

    fn subflow_count(&self) -> usize {
        if self.mode == Mode::Tcp {
            1
        } else {
            self.num_subflows.clamp(1, 64)
        }
    }

    fn tcp_config(&self) -> TcpConfig {
        let mut t = self.tcp.clone();
        t.mptcp = self.mode == Mode::Mptcp;
        if t.mptcp {
            // Linux `tcp_current_mss` takes the options of an established segment off the
            // MSS; for MPTCP that includes the DSS option with a 64-bit mapping and DATA_ACK
            // (28 bytes): 1448 - 28 = 1420 bytes of payload on a 1500-byte MTU.
            t.mss_bytes = t
                .mss_bytes
                .saturating_sub(crate::tcp::DSS_MAP_ACK_BYTES)
                .max(1);
            // 40 option bytes - 12 (timestamps) - 12 (DSS with a 64-bit DATA_ACK) leave 16:
            // room for one SACK block (Linux `tcp_established_options`: (16 - 4) / 8).
            t.max_sack_blocks = t.max_sack_blocks.min(1);
        }
        t.rcv_buf_bytes = self.rcv_buf_bytes;
        t
    }

    fn handshake_option(&self, sf: usize) -> crate::tcp::HsOption {
        use crate::tcp::HsOption;
        match (self.mode, sf) {
            (Mode::Tcp, _) => HsOption::None,
            (Mode::Mptcp, 0) => HsOption::Capable,
            (Mode::Mptcp, i) => HsOption::Join {
                backup: self.backup.get(i).copied().unwrap_or(false),
            },
        }
    }
}

/// The part of a [`ConnConfig`] an endpoint reads after construction (the rest builds its
/// subflows), kept by value: 24 bytes instead of the whole config with its `String` and `Vec`
/// (two heap blocks) on both sides of every connection.
#[derive(Debug, Clone, Copy)]
struct ConnParams {
    mode: Mode,
    is_client: bool,
    join_timing: JoinTiming,
    rcv_buf_autotuning: bool,
    snd_buf_autotuning: bool,
    rcv_buf_bytes: u64,
    snd_buf_bytes: u64,
}

impl ConnParams {
    /// Client side: does this segment on subflow `sf` (whose handshake state is
    /// `established` after it, `became_established` by it) trigger the joins?
    fn triggers_joins(
        &self,
        sf: usize,
        seg: &crate::tcp::Segment,
        established: bool,
        became_established: bool,
    ) -> bool {
        if !self.is_client || self.mode != Mode::Mptcp || sf != 0 || !established {
            return false;
        }
        match self.join_timing {
            JoinTiming::AfterSynAck => true,
            JoinTiming::FullyEstablished => !became_established && !seg.has(crate::tcp::flags::SYN),
        }
    }
}
