//! Three-way handshake of one subflow, with the MPTCP options it carries.
//!
//! Both sides start their sequence space at 0 (the SYN), so data starts at 1. The client
//! retransmits its SYN and the server its SYN-ACK after Linux's `TCP_TIMEOUT_INIT` (1 s),
//! doubling each time (RFC 6298 (5.5), RFC 9293 §3.8.1), except the client's first SYN
//! timeouts: in recent kernels, 6.18 included (`tcp_retransmit_timer`,
//! `net.ipv4.tcp_syn_linear_timeouts` = 4), a socket in SYN_SENT doubles its RTO only after
//! more than four timeouts, so SYNs go out at 0, 1, 2, 3, 4, 5, 7, 11, 19 s ... (an MP_JOIN's
//! too; the server's SYN-ACK timer is the request socket's and doubles from the first). The
//! client gives up at the timeout after its `tcp_syn_retries` (6) + `tcp_syn_linear_timeouts`
//! (4) = 10th retransmission (`tcp_write_timeout`: `icsk_retransmits >= max_retransmits`,
//! checked before each retransmission), 131 s after the first SYN (the time test,
//! `retransmits_timed_out` with `tcp_model_timeout(6, 1 s)` = 127 s, agrees): the socket is
//! closed (`tcp_write_err`), and for an MP_JOIN the path manager does not try that endpoint
//! again (see `crate::mptcp`'s `join_route`). Not modelled: the server's request socket giving
//! up after `tcp_synack_retries` (5). An MP_JOIN initiator is
//! "pre-established" until the responder's fourth ACK arrives (RFC 8684 §3.2): it may not
//! carry data before that, while the responder may as soon as it has the third ACK; the
//! initiator repeats its third ACK on the same 1 s timer until the fourth arrives.

use super::rtt::{INITIAL_RTO_NS, MAX_RTO_NS};
use super::segment::{flags, Segment};
use crate::PendingNs;

/// `net.ipv4.tcp_syn_linear_timeouts` default: SYN_SENT timeouts before the RTO doubles.
const SYN_LINEAR_TIMEOUTS: u64 = 4;
/// `net.ipv4.tcp_syn_retries` default (`TCP_SYN_RETRIES`, include/net/tcp.h).
const SYN_RETRIES: u64 = 6;

/// Who sends the SYN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Active opener.
    Client,
    /// Passive opener.
    Server,
}

/// MPTCP option carried by the handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HsOption {
    /// Plain TCP.
    None,
    /// First subflow of an MPTCP connection (MP_CAPABLE).
    Capable,
    /// Additional subflow (MP_JOIN), possibly as a backup.
    Join {
        /// B bit.
        backup: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Client before `connect`.
    Idle,
    SynSent,
    Listen,
    SynRcvd,
    /// MP_JOIN initiator waiting for the fourth ACK.
    PreEstablished,
    Established,
    /// Client that gave up its SYN after the retry limit (`tcp_write_err`).
    GaveUp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pending {
    Syn,
    SynAck,
    Ack3,
    Ack4,
}

/// Result of feeding a segment to the handshake.
#[derive(Debug, Clone, Copy, Default)]
pub struct HsOutcome {
    /// The subflow became usable for data with this segment.
    pub became_established: bool,
    /// RTT measured by the SYN / SYN-ACK exchange (Linux seeds SRTT with it).
    pub rtt_sample_ns: Option<u64>,
    /// The segment belongs to the handshake only and must not be processed further.
    pub consumed: bool,
}

/// Handshake state machine.
#[derive(Debug, Clone)]
pub struct Handshake {
    role: Role,
    opt: HsOption,
    state: State,
    pending: Option<Pending>,
    timer_ns: PendingNs,
    backoff: u32,
    /// Last TSval received from the peer (echoed in TSecr).
    pub ts_recent: u64,
    /// SYN / SYN-ACK retransmissions so far.
    pub retransmits: u64,
}

impl Handshake {
    /// New handshake; a server starts listening at once, a client waits for `connect`.
    pub fn new(role: Role, opt: HsOption) -> Self {
        let state = match role {
            Role::Client => State::Idle,
            Role::Server => State::Listen,
        };
        Self {
            role,
            opt,
            state,
            pending: None,
            timer_ns: PendingNs::NONE,
            backoff: 0,
            ts_recent: 0,
            retransmits: 0,
        }
    }

    /// Plain TCP connection whose handshake is considered done (for unit tests of data
    /// transfer).
    pub fn established(role: Role) -> Self {
        let mut h = Self::new(role, HsOption::None);
        h.state = State::Established;
        h
    }

    /// Client: start the handshake at `now_ns` (sends the SYN at the next poll).
    pub fn connect(&mut self, now_ns: u64) {
        if self.role == Role::Client && self.state == State::Idle {
            self.state = State::SynSent;
            self.pending = Some(Pending::Syn);
            self.timer_ns = PendingNs::at(now_ns + INITIAL_RTO_NS);
        }
    }

    /// Data may flow on this side.
    #[inline]
    pub fn is_established(&self) -> bool {
        self.state == State::Established
    }

    /// The subflow exists on this side: a client sent its SYN, a server received one (Linux
    /// lists a client's joining subflow in the msk's `conn_list` from its `connect()`).
    pub fn is_started(&self) -> bool {
        !matches!(self.state, State::Idle | State::Listen | State::GaveUp)
    }

    /// The MPTCP option of this subflow's handshake.
    pub fn option(&self) -> HsOption {
        self.opt
    }

    /// Feeds an incoming segment.
    pub fn handle_segment(&mut self, now_ns: u64, seg: &Segment) -> HsOutcome {
        let mut out = HsOutcome::default();
        let syn = seg.has(flags::SYN);
        let ack = seg.has(flags::ACK);
        if syn || self.state != State::Established {
            self.ts_recent = self.ts_recent.max(seg.ts_val);
        }
        match (self.state, syn, ack) {
            (State::SynSent, true, true) => {
                out.rtt_sample_ns = (seg.ts_ecr > 0).then(|| now_ns.saturating_sub(seg.ts_ecr));
                self.timer_ns = PendingNs::NONE;
                self.pending = Some(Pending::Ack3);
                out.consumed = true;
                if matches!(self.opt, HsOption::Join { .. }) {
                    // RFC 8684 §3.2: the third ACK is repeated until the fourth arrives.
                    self.state = State::PreEstablished;
                    self.backoff = 0;
                    self.timer_ns = PendingNs::at(now_ns + INITIAL_RTO_NS);
                } else {
                    self.state = State::Established;
                    out.became_established = true;
                }
            }
            (State::PreEstablished | State::Established, true, true) => {
                // Our third ACK was lost and the server repeated its SYN-ACK.
                self.pending = Some(Pending::Ack3);
                out.consumed = true;
            }
            (State::PreEstablished, false, true) => {
                self.timer_ns = PendingNs::NONE;
                self.state = State::Established;
                out.became_established = true;
                // The fourth ACK carries nothing else.
                out.consumed = seg.len == 0;
            }
            (State::Listen, true, false) | (State::SynRcvd, true, false) => {
                // A repeated SYN is answered again without touching the timer.
                if self.state == State::Listen {
                    self.timer_ns = PendingNs::at(now_ns + INITIAL_RTO_NS);
                }
                self.state = State::SynRcvd;
                self.pending = Some(Pending::SynAck);
                out.consumed = true;
            }
            (State::SynRcvd, false, true) => {
                out.rtt_sample_ns = (seg.ts_ecr > 0).then(|| now_ns.saturating_sub(seg.ts_ecr));
                self.timer_ns = PendingNs::NONE;
                self.state = State::Established;
                out.became_established = true;
                if matches!(self.opt, HsOption::Join { .. }) {
                    self.pending = Some(Pending::Ack4);
                }
                // A data segment may complete the handshake; let the owner process it.
                out.consumed = seg.len == 0;
            }
            (State::Established, false, true)
                if self.role == Role::Server
                    && seg.has(flags::MP_JOIN)
                    && matches!(self.opt, HsOption::Join { .. }) =>
            {
                // A repeated MP_JOIN third ACK: our fourth ACK was lost.
                self.pending = Some(Pending::Ack4);
                out.consumed = seg.len == 0;
            }
            (State::Established, false, _) => {}
            _ => out.consumed = true,
        }
        out
    }

    /// Next handshake segment to send, if any.
    pub fn poll_transmit(&mut self, now_ns: u64) -> Option<Segment> {
        let p = self.pending.take()?;
        let mut f = match p {
            Pending::Syn => flags::SYN,
            Pending::SynAck => flags::SYN | flags::ACK,
            Pending::Ack3 | Pending::Ack4 => flags::ACK,
        };
        match (self.opt, p) {
            (HsOption::Capable, Pending::Syn | Pending::SynAck | Pending::Ack3) => {
                f |= flags::MP_CAPABLE
            }
            (HsOption::Join { backup }, Pending::Syn | Pending::SynAck | Pending::Ack3) => {
                f |= flags::MP_JOIN;
                if backup {
                    f |= flags::BACKUP;
                }
            }
            _ => {}
        }
        let (seq, ack) = match p {
            Pending::Syn => (0, 0),
            Pending::SynAck => (0, 1),
            Pending::Ack3 | Pending::Ack4 => (1, 1),
        };
        Some(Segment {
            flags: f,
            seq,
            ack,
            ts_val: now_ns.max(1),
            ts_ecr: self.ts_recent,
            ..Default::default()
        })
    }

    /// True when a handshake segment is waiting to be sent.
    pub fn has_pending(&self) -> bool {
        self.pending.is_some()
    }

    /// SYN / SYN-ACK retransmission deadline (a [`PendingNs`]: the subflow's timers take the
    /// earliest with plain `min`s).
    #[inline]
    pub fn pending_timeout(&self) -> PendingNs {
        self.timer_ns
    }

    /// Fires the SYN / SYN-ACK retransmission timer if due.
    pub fn handle_timeout(&mut self, now_ns: u64) {
        let Some(t) = self.timer_ns.get() else { return };
        if now_ns < t {
            return;
        }
        if self.state == State::SynSent && self.retransmits >= SYN_RETRIES + SYN_LINEAR_TIMEOUTS {
            self.state = State::GaveUp;
            self.timer_ns = PendingNs::NONE;
            self.pending = None;
            return;
        }
        self.pending = Some(match self.state {
            State::SynSent => Pending::Syn,
            State::SynRcvd => Pending::SynAck,
            State::PreEstablished => Pending::Ack3,
            _ => {
                self.timer_ns = PendingNs::NONE;
                return;
            }
        });
        self.retransmits += 1;
        // Linux: `tp->total_rto > tcp_syn_linear_timeouts` or not in SYN_SENT.
        if self.state != State::SynSent || self.retransmits > SYN_LINEAR_TIMEOUTS {
            self.backoff += 1;
        }
        self.timer_ns =
            PendingNs::at(now_ns + (INITIAL_RTO_NS << self.backoff.min(7)).min(MAX_RTO_NS));
    }
}
