//! Congestion control behind one trait: state apart from policy.
//!
//! The subflow owns the shared state ([`CcState`]: cwnd, ssthresh, MSS; ns-3's `tcb`) and the
//! loss-recovery machinery; a [`CongestionControl`] only decides how the window moves (ns-3
//! `TcpCongestionOps`, Linux `tcp_congestion_ops`). One algorithm per file; [`AnyCc`] gives
//! static dispatch and [`build`] builds one by name.
//!
//! Call order, per incoming ACK on a subflow: the subflow updates its RTT estimator and
//! scoreboard, calls [`CongestionControl::on_rtt_sample`] when the ACK brings an RTT sample
//! (in every state), then [`CongestionControl::on_ack`] (only outside fast recovery), or
//! [`CongestionControl::ssthresh_on_loss`] when the ACK starts a fast recovery. At the end of
//! recovery the subflow sets `cwnd = ssthresh` (Linux `tcp_end_cwnd_reduction`) and calls
//! [`CongestionControl::on_recovery_exit`]. On an RTO it calls [`CongestionControl::on_rto`]
//! (for the first timeout of an episode only, like Linux `tcp_enter_loss`) and sets cwnd to
//! one segment.
//!
//! Coupled algorithms (LIA, OLIA, BALIA; `reference/schedulers.md` §4) also read a
//! [`CoupledView`] of every subflow of the connection, passed down by the MPTCP connection.

mod balia;
mod cubic;
mod lia;
mod olia;
mod reno;

pub use balia::Balia;
pub use cubic::Cubic;
pub use lia::Lia;
pub use olia::Olia;
pub use reno::Reno;

/// RFC 3465 §2.2 slow-start limit L: at most 2 * SMSS of growth per ACK.
pub const ABC_LIMIT_SEGMENTS: u64 = 2;
/// Smallest ssthresh after a loss, segments (Linux `tcp_reno_ssthresh`: max(cwnd/2, 2)).
pub const MIN_SSTHRESH_SEGMENTS: u64 = 2;

/// Window state shared between the subflow and its congestion control.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CcState {
    /// Congestion window, bytes.
    pub cwnd_bytes: u64,
    /// Slow-start threshold, bytes (`u64::MAX` until the first loss).
    pub ssthresh_bytes: u64,
    /// Sender MSS, bytes.
    pub mss_bytes: u64,
}

impl CcState {
    /// In slow start (RFC 5681 §3.1: cwnd < ssthresh).
    #[inline]
    pub fn in_slow_start(&self) -> bool {
        self.cwnd_bytes < self.ssthresh_bytes
    }
}

/// What an ACK brought, as the congestion control sees it.
#[derive(Debug, Clone, Copy, Default)]
pub struct AckSample {
    /// Arrival time, ns.
    pub now_ns: u64,
    /// Bytes newly acknowledged (cumulatively or by SACK).
    pub acked_bytes: u64,
    /// RTT sample from this ACK, ns.
    pub rtt_sample_ns: Option<u64>,
    /// Minimum RTT seen on the subflow, ns.
    pub min_rtt_ns: u64,
    /// Smoothed RTT, ns.
    pub srtt_ns: u64,
    /// Cumulative ACK after this ACK.
    pub snd_una: u64,
    /// Next sequence number to send.
    pub snd_nxt: u64,
    /// The sender was limited by cwnd recently (Linux `tcp_is_cwnd_limited`); windows grow only
    /// then.
    pub cwnd_limited: bool,
    /// Current pacing rate, bit/s (HyStart's ACK-delay allowance), in slow start (cwnd below
    /// ssthresh when the sample is taken); 0 outside it, where no algorithm reads it (the
    /// sender skips computing it for the ACKs of congestion avoidance).
    pub pacing_rate_bps: u64,
}

/// One subflow, as a coupled congestion control sees it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CoupledSubflow {
    /// Can send and has an RTT sample (§4: aggregates are taken over these).
    pub active: bool,
    /// Congestion window, bytes (ssthresh during fast recovery, as the OOT code does).
    pub cwnd_bytes: u64,
    /// Smoothed RTT, ns.
    pub srtt_ns: u64,
    /// MSS, bytes.
    pub mss_bytes: u64,
    /// OLIA `l_r`: max(bytes acked between the last two losses, bytes acked since the last).
    pub loss_interval_bytes: u64,
}

/// The connection's subflows, for coupled algorithms; `me` is the caller's index.
#[derive(Debug, Clone, Copy)]
pub struct CoupledView<'a> {
    /// Every subflow of the connection.
    pub subflows: &'a [CoupledSubflow],
    /// Index of the subflow being updated.
    pub me: usize,
}

impl CoupledView<'_> {
    /// A view with no other subflow (plain TCP): coupled algorithms fall back to Reno.
    pub const SINGLE: CoupledView<'static> = CoupledView {
        subflows: &[],
        me: 0,
    };

    /// Number of active subflows.
    pub fn active_count(&self) -> usize {
        self.subflows.iter().filter(|s| s.active).count()
    }
}

/// A congestion-control policy. Every hook but the name has a Reno-like default.
pub trait CongestionControl: std::fmt::Debug + Send {
    /// Registry name.
    fn name(&self) -> &'static str;

    /// An ACK arrived outside fast recovery: grow the window.
    fn on_ack(&mut self, tcb: &mut CcState, ack: &AckSample, view: &CoupledView<'_>);

    /// Every ACK with an RTT sample (`ack.rtt_sample_ns`: Linux `ca_rtt_us`, from the send
    /// time of the latest segment it newly acknowledged or SACKed), in any congestion state,
    /// before loss detection and [`CongestionControl::on_ack`] (Linux `pkts_acked`, called
    /// from `tcp_clean_rtx_queue` for every ACK). Cubic's HyStart runs here, so it also runs
    /// in fast recovery whenever PRR has taken cwnd below ssthresh.
    #[allow(unused_variables)]
    fn on_rtt_sample(&mut self, tcb: &mut CcState, ack: &AckSample) {}

    /// A loss was detected (fast retransmit): return the new ssthresh, bytes. Must not change
    /// `tcb` (ns-3 `GetSsThresh` contract); the subflow applies it.
    fn ssthresh_on_loss(&mut self, tcb: &CcState, now_ns: u64, view: &CoupledView<'_>) -> u64;

    /// First RTO of a loss episode: return the new ssthresh, bytes.
    fn on_rto(&mut self, tcb: &CcState, now_ns: u64, view: &CoupledView<'_>) -> u64 {
        self.ssthresh_on_loss(tcb, now_ns, view)
    }

    /// Fast recovery ended (cwnd already set to ssthresh).
    #[allow(unused_variables)]
    fn on_recovery_exit(&mut self, tcb: &mut CcState, now_ns: u64) {}

    /// Transmission resumes with nothing in flight after `idle_ns` of silence (Linux
    /// `CA_EVENT_TX_START`).
    #[allow(unused_variables)]
    fn on_tx_start(&mut self, now_ns: u64, idle_ns: u64) {}
}

/// What every algorithm does with an ACK before congestion avoidance: nothing grows unless the
/// window limited the sender (Linux `tcp_is_cwnd_limited`, RFC 7661), and slow start takes what
/// it can. Returns the acked bytes left for congestion avoidance, or `None` when nothing is
/// left to do (not window-limited, or slow start used them all).
pub fn acked_for_avoidance(tcb: &mut CcState, ack: &AckSample) -> Option<u64> {
    if !ack.cwnd_limited {
        return None;
    }
    if !tcb.in_slow_start() {
        return Some(ack.acked_bytes);
    }
    let left = slow_start(tcb, ack.acked_bytes);
    (left > 0).then_some(left)
}

/// Standard slow start with appropriate byte counting (RFC 3465 §2.2, L = 2): grows cwnd by
/// min(acked, L * SMSS), not beyond ssthresh. Returns the acked bytes left over for
/// congestion avoidance (Linux `tcp_slow_start` return value).
pub fn slow_start(tcb: &mut CcState, acked_bytes: u64) -> u64 {
    let room = tcb.ssthresh_bytes.saturating_sub(tcb.cwnd_bytes);
    let inc = acked_bytes
        .min(ABC_LIMIT_SEGMENTS * tcb.mss_bytes)
        .min(room);
    tcb.cwnd_bytes += inc;
    acked_bytes - inc.min(acked_bytes)
}

/// Reno congestion avoidance with byte counting (RFC 5681 §3.1 / RFC 3465 §2.1): one SMSS
/// per window of acknowledged bytes. `acc_bytes` is the caller's byte counter.
pub fn reno_avoidance(tcb: &mut CcState, acc_bytes: &mut u64, acked_bytes: u64) {
    *acc_bytes += acked_bytes;
    if *acc_bytes >= tcb.cwnd_bytes {
        *acc_bytes -= tcb.cwnd_bytes;
        tcb.cwnd_bytes += tcb.mss_bytes;
    }
}

/// Reno ssthresh: max(cwnd / 2, 2 * MSS) (RFC 5681 (4) uses FlightSize; Linux uses cwnd).
pub fn reno_ssthresh(tcb: &CcState) -> u64 {
    (tcb.cwnd_bytes / 2).max(MIN_SSTHRESH_SEGMENTS * tcb.mss_bytes)
}

/// Static-dispatch wrapper over every algorithm.
#[derive(Debug, Clone)]
pub enum AnyCc {
    /// [`Reno`].
    Reno(Reno),
    /// [`Cubic`].
    Cubic(Cubic),
    /// [`Lia`].
    Lia(Lia),
    /// [`Olia`].
    Olia(Olia),
    /// [`Balia`].
    Balia(Balia),
}

/// Valid congestion-control names.
pub const NAMES: [&str; 5] = ["reno", "cubic", "lia", "olia", "balia"];

/// Unknown congestion-control name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownCc(pub String);

impl std::fmt::Display for UnknownCc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "unknown congestion control {:?}; valid names: {}",
            self.0,
            NAMES.join(", ")
        )
    }
}
impl std::error::Error for UnknownCc {}

/// Builds a congestion control by name (`"reno"`, `"cubic"`, `"lia"`, `"olia"`, `"balia"`).
pub fn build(name: &str) -> Result<AnyCc, UnknownCc> {
    Ok(match name {
        "reno" => AnyCc::Reno(Reno::default()),
        "cubic" => AnyCc::Cubic(Cubic::default()),
        "lia" => AnyCc::Lia(Lia::default()),
        "olia" => AnyCc::Olia(Olia::default()),
        "balia" => AnyCc::Balia(Balia::default()),
        _ => return Err(UnknownCc(name.to_string())),
    })
}

impl AnyCc {
    /// The algorithm as a trait object (the single `match`).
    #[inline]
    pub fn inner_mut(&mut self) -> &mut dyn CongestionControl {
        match self {
            AnyCc::Reno(c) => c,
            AnyCc::Cubic(c) => c,
            AnyCc::Lia(c) => c,
            AnyCc::Olia(c) => c,
            AnyCc::Balia(c) => c,
        }
    }

    /// [`CongestionControl::on_rtt_sample`] (every ACK with a sample): CUBIC, the default,
    /// called directly, the others through the trait object. The trait object's call picks
    /// its table by the variant on every call (~10 instructions, twice an ACK).
    #[inline(always)]
    pub fn on_rtt_sample(&mut self, tcb: &mut CcState, ack: &AckSample) {
        match self {
            AnyCc::Cubic(c) => c.on_rtt_sample(tcb, ack),
            other => other.inner_mut().on_rtt_sample(tcb, ack),
        }
    }

    /// [`CongestionControl::on_ack`], dispatched as [`AnyCc::on_rtt_sample`].
    #[inline(always)]
    pub fn on_ack(&mut self, tcb: &mut CcState, ack: &AckSample, view: &CoupledView<'_>) {
        match self {
            AnyCc::Cubic(c) => c.on_ack(tcb, ack, view),
            other => other.inner_mut().on_ack(tcb, ack, view),
        }
    }

    /// A coupled algorithm: it reads the other subflows ([`CoupledView`]); the others ignore
    /// the view, so the connection need not keep it up to date for them.
    pub fn is_coupled(&self) -> bool {
        matches!(self, AnyCc::Lia(_) | AnyCc::Olia(_) | AnyCc::Balia(_))
    }

    /// Registry name.
    pub fn name(&self) -> &'static str {
        match self {
            AnyCc::Reno(_) => "reno",
            AnyCc::Cubic(_) => "cubic",
            AnyCc::Lia(_) => "lia",
            AnyCc::Olia(_) => "olia",
            AnyCc::Balia(_) => "balia",
        }
    }
}

#[cfg(test)]
mod conformance;
#[cfg(test)]
mod cubic_hold_tests;
#[cfg(test)]
mod tests;
