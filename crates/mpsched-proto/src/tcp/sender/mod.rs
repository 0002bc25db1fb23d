//! The data-sending side of a subflow.
//!
//! Inputs: [`Sender::queue`] (DSN mappings handed down by the connection), incoming ACKs
//! ([`Sender::handle_segment`]), timers ([`Sender::handle_timeout`]). Outputs:
//! [`Sender::poll_transmit`] (one segment per call, call until `None`) and
//! [`Sender::poll_timeout`]. Sequence numbers are assigned at first transmission, so unsent
//! mappings can be listed ([`Sender::unsent_mappings`]) and dropped once acknowledged through
//! another subflow ([`Sender::trim_unsent_below`]) without leaving a hole.
//!
//! This file holds the state, construction, the send queue, ACK intake (window growth and the
//! congestion-state transitions an ACK causes) and transmission. Loss marking, fast recovery
//! (RFC 6675 + PRR), RACK-TLP and the RTO live in `recovery.rs`; read-only views (scheduler
//! view, pacing rate, getters) in `view.rs`.

use super::fifo::InlineFifo;
use super::handshake::{Handshake, HsOption, Role};
use super::rtt::{timer_wheel_fire_after_jiffies, timer_wheel_fire_ns, RttEstimator};
use super::scoreboard::{CaRttSources, Scoreboard};
use super::segment::{flags, Segment};
use super::settings::SenderSettings;
use super::TcpConfig;
use crate::cc::{AckSample, AnyCc, CcState, CoupledView};
use crate::sched::{LossKind, ResendCounters, ResendKind};
use crate::PendingNs;

mod nagle;
mod recovery;
mod reuse;
mod undo;
mod unsent;
mod usage;
mod view;

use recovery::NO_PROBE;

/// `wrap(seg)` for a rare segment: inline, or with `OUT_OF_LINE` out of line ([`cold_wrap`]).
#[inline(always)]
fn rare_wrap<const OUT_OF_LINE: bool, R>(wrap: impl FnOnce(Segment) -> R, seg: Segment) -> R {
    if OUT_OF_LINE {
        cold_wrap(wrap, seg)
    } else {
        wrap(seg)
    }
}

/// `wrap(seg)` out of line: so that a large `wrap` (the simulator's store) is inlined once
/// into the send path, where new data leaves, and not at all four places.
#[inline(never)]
fn cold_wrap<R>(wrap: impl FnOnce(Segment) -> R, seg: Segment) -> R {
    wrap(seg)
}

/// Congestion state (Linux `icsk_ca_state`, collapsed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaState {
    /// Normal operation (Linux Open / Disorder).
    Open,
    /// Fast recovery (SACK-based).
    Recovery,
    /// After an RTO, until everything sent before it is acknowledged.
    Loss,
}

/// Counters for records.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SenderStats {
    /// Payload bytes transmitted (first transmissions and retransmissions).
    pub bytes_sent: u64,
    /// Payload bytes retransmitted by loss recovery.
    pub bytes_retransmitted: u64,
    /// Payload bytes cumulatively acknowledged.
    pub bytes_acked: u64,
    /// Data segments transmitted.
    pub segments_sent: u64,
    /// Retransmission timeouts.
    pub rto_count: u64,
    /// Fast-recovery episodes entered.
    pub fast_retransmits: u64,
    /// Tail-loss probes sent (RACK-TLP only).
    pub tail_loss_probes: u64,
    /// Probes that repaired a loss, with the window reduction that follows (Linux
    /// `TCPLossProbeRecovery`).
    pub tlp_recoveries: u64,
    /// Loss episodes undone as spurious by the timestamp test (Linux `TCPLossUndo` and
    /// `TCPFullUndo`).
    pub undos: u64,
    /// Payload bytes of connection-level resends ([`ResendKind`]) transmitted for the first
    /// time on this subflow, per kind. Counted at transmission, so a copy still queued (or
    /// dropped from the queue because the data was acknowledged through another subflow) does
    /// not count.
    pub resent: ResendCounters,
}

/// What one incoming segment did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AckOutcome {
    /// Bytes newly acknowledged cumulatively.
    pub acked_bytes: u64,
    /// Bytes newly SACKed.
    pub sacked_bytes: u64,
    /// Segments newly acknowledged, cumulatively or by SACK (Linux counts the window's growth
    /// in these: `tcp_cong_control`'s `acked_sacked` is packets, whatever their size).
    pub delivered_segs: u64,
    /// RTT sample taken.
    pub rtt_sample_ns: Option<u64>,
    /// A loss was detected.
    pub loss: Option<LossKind>,
    /// The handshake completed with this segment.
    pub became_established: bool,
}

#[derive(Debug, Clone, Copy)]
struct Mapping {
    dsn: u64,
    len: u64,
    data_fin: bool,
    /// Data the connection sends again (`None`: new data).
    resend: Option<ResendKind>,
}

/// Sender state machine of one subflow.
#[derive(Debug, Clone)]
pub struct Sender {
    cfg: SenderSettings,
    hs: Handshake,
    snd_una: u64,
    snd_nxt: u64,
    /// The mappings not yet transmitted: almost always one (a writer's data merges into it),
    /// kept inline; more spill to the heap until they are sent (`tcp::fifo`).
    queue: InlineFifo<Mapping>,
    queued_bytes: u64,
    /// Segments the queue will leave as: the sum over its mappings of ceil(len / MSS), kept in
    /// step with every push, merge, trim and transmission (the scheduler's view reads it on
    /// every decision; walking the queue there cost a pass over it per view). 32 bits, in the
    /// padding beside `backoff` (the connection's fixed size is guarded by `tests::perf`);
    /// [`view::segs_of`] refuses a count that does not fit rather than wrapping it.
    queued_segs: u32,
    board: Scoreboard,
    rtt: RttEstimator,
    cc: AnyCc,
    tcb: CcState,
    state: CaState,
    /// Recovery point (RFC 6675 RecoveryPoint / Linux `high_seq`).
    high_seq: u64,
    /// PRR state in packets, as Linux keeps it (`prr_delivered`, `prr_out`, `prior_cwnd`).
    prr_delivered: u64,
    prr_out: u64,
    prior_cwnd: u64,
    /// Linux `prior_ssthresh`, in segments as Linux keeps it (0: nothing to restore;
    /// `u32::MAX`: slow start's unbounded ssthresh): what an undo brings back.
    prior_ssthresh_segs: u32,
    /// Linux `retrans_stamp`: the TCP timestamp (ms, 32 bits, as Linux's) of the episode's
    /// first (attempted) retransmission; 0 when none was. The Eifel test compares the echoed
    /// timestamp with it (`undo.rs`).
    retrans_stamp_ms: u32,
    /// Linux `undo_marker != 0`: the current loss episode may still be undone.
    undo_marker: bool,
    rto_deadline: PendingNs,
    backoff: u32,
    potentially_failed: bool,
    path_up: bool,
    // Linux `tcp_cwnd_validate` state.
    is_cwnd_limited: bool,
    /// Linux `max_packets_out`: segments outstanding at most in the current window round.
    max_out_segs: u64,
    cwnd_usage_seq: u64,
    // OLIA loss intervals.
    l1_bytes: u64,
    l2_bytes: u64,
    /// Time of the last data transmission (Linux `lsndtime`).
    last_send_ns: PendingNs,
    /// RACK reordering timer (RACK-TLP only).
    rack_timer_ns: PendingNs,
    /// Tail-loss probe timer (RACK-TLP only).
    tlp_deadline: PendingNs,
    /// `snd_nxt` when the outstanding probe went out (one probe at a time); [`NO_PROBE`]
    /// when none is out.
    tlp_high_seq: u64,
    /// The outstanding probe resent the last segment (Linux `tlp_retrans`) rather than new data.
    tlp_retrans: bool,
    /// A probe is due at the next `poll_transmit`.
    probe_due: bool,
    /// The time of the last noted probe schedule not yet computed, and whether an ACK
    /// noted one (`recovery.rs`, `schedule_tlp`); `NONE` when none is noted.
    tlp_pending_ns: PendingNs,
    tlp_pending_ack: bool,
    /// Compute every probe schedule when it is noted (tests: both ways must agree).
    #[cfg(test)]
    eager_tlp: bool,
    /// Linux `snd_sml` (Minshall's Nagle), kept as its distance below `snd_nxt` in 32 bits
    /// (the connection's fixed size is guarded by `tests::perf`): the end of the last partial
    /// segment sent; `u32::MAX` when there is none (or it is more than 4 GiB behind, which
    /// no flight spans).
    sml_behind: u32,
    /// DATA_ACK to put on outgoing segments (reverse direction; set by the connection).
    pub data_ack_out: u64,
    /// The counters of [`SenderStats`] that change per segment; the others (loss recovery,
    /// resends) are in `rare`, allocated at the first such event: 56 bytes kept out of every
    /// subflow that never has one.
    stats: HotStats,
    rare: Option<Box<SenderStats>>,
}

/// See [`Sender`]'s `stats`.
#[derive(Debug, Clone, Copy, Default)]
struct HotStats {
    bytes_sent: u64,
    bytes_acked: u64,
    segments_sent: u64,
}

impl Sender {
    /// A sender with the handshake `role` / `opt`, window policy `cc`.
    pub fn new(cfg: TcpConfig, role: Role, opt: HsOption, cc: AnyCc) -> Self {
        Self::with_handshake(cfg, Handshake::new(role, opt), cc)
    }

    /// A sender whose handshake is already complete (unit tests).
    pub fn established(cfg: TcpConfig, cc: AnyCc) -> Self {
        Self::with_handshake(cfg, Handshake::established(Role::Client), cc)
    }

    fn with_handshake(cfg: TcpConfig, hs: Handshake, cc: AnyCc) -> Self {
        let tcb = CcState {
            cwnd_bytes: cfg.init_cwnd_segments.max(1) * cfg.mss_bytes,
            ssthresh_bytes: u64::MAX,
            mss_bytes: cfg.mss_bytes,
        };
        // The MSS never changes after this (nothing writes `tcb.mss_bytes`), so the board
        // learns a full segment's length once, not at every push.
        let mut board = Scoreboard::default();
        board.set_full_len(tcb.mss_bytes);
        Self {
            cfg: SenderSettings::of(&cfg),
            hs,
            snd_una: 1,
            snd_nxt: 1,
            queue: InlineFifo::new(),
            queued_bytes: 0,
            queued_segs: 0,
            board,
            rtt: RttEstimator::default(),
            cc,
            tcb,
            state: CaState::Open,
            high_seq: 1,
            prr_delivered: 0,
            prr_out: 0,
            prior_cwnd: 0,
            prior_ssthresh_segs: 0,
            retrans_stamp_ms: 0,
            undo_marker: false,
            rto_deadline: PendingNs::NONE,
            backoff: 0,
            potentially_failed: false,
            path_up: true,
            is_cwnd_limited: false,
            max_out_segs: 0,
            cwnd_usage_seq: 1,
            l1_bytes: 0,
            l2_bytes: 0,
            last_send_ns: PendingNs::NONE,
            rack_timer_ns: PendingNs::NONE,
            tlp_deadline: PendingNs::NONE,
            tlp_high_seq: NO_PROBE,
            tlp_retrans: false,
            probe_due: false,
            tlp_pending_ns: PendingNs::NONE,
            tlp_pending_ack: false,
            #[cfg(test)]
            eager_tlp: false,
            sml_behind: u32::MAX,
            data_ack_out: 0,
            stats: HotStats::default(),
            rare: None,
        }
    }

    /// Client: start the handshake.
    pub fn connect(&mut self, now_ns: u64) {
        self.hs.connect(now_ns);
    }

    /// Feeds an incoming segment (uncoupled congestion control).
    pub fn handle_segment(&mut self, now_ns: u64, seg: &Segment) -> AckOutcome {
        self.handle_segment_coupled(now_ns, seg, &CoupledView::SINGLE)
    }

    /// Feeds an incoming segment; coupled algorithms read `view`.
    pub fn handle_segment_coupled(
        &mut self,
        now_ns: u64,
        seg: &Segment,
        view: &CoupledView<'_>,
    ) -> AckOutcome {
        self.resolve_tlp();
        let mut out = AckOutcome::default();
        if !self.hs.is_established() || seg.has(flags::SYN) || seg.has(flags::MP_JOIN) {
            let (consumed, established) = self.handshake_segment(now_ns, seg);
            out.became_established = established;
            if consumed || !self.hs.is_established() {
                return out;
            }
        }
        if seg.has(flags::ACK) {
            self.on_ack(now_ns, seg, view, &mut out);
        }
        out
    }

    /// A handshake segment (once per connection and subflow: out of the ACK path). Returns
    /// (consumed by the handshake, the handshake completed with it).
    #[cold]
    #[inline(never)]
    fn handshake_segment(&mut self, now_ns: u64, seg: &Segment) -> (bool, bool) {
        let h = self.hs.handle_segment(now_ns, seg);
        if let Some(r) = h.rtt_sample_ns {
            self.rtt.on_sample(r);
        }
        (h.consumed, h.became_established)
    }

    fn on_ack(&mut self, now_ns: u64, seg: &Segment, view: &CoupledView<'_>, out: &mut AckOutcome) {
        // RFC 7323 §4.3: keep TS.Recent current, so the peer's receiver-side RTT estimate
        // (Linux `tcp_rcv_rtt_measure_ts`) sees its latest timestamp echoed.
        self.hs.ts_recent = self.hs.ts_recent.max(seg.ts_val);
        let ack = seg.ack.min(self.snd_nxt);
        let una_advanced = ack > self.snd_una;
        self.board.set_min_rtt(self.rtt.min_rtt_ns);
        let (segs_before, sacked_before) = (self.board.segs_out() as u64, self.board.sacked_segs());
        let mut ca_src = CaRttSources::default();
        // RFC 7323 §4.1: TSecr of an ACK of new data gives an unambiguous sample.
        let ts_rtt =
            (una_advanced && seg.ts_ecr > 0 && now_ns >= seg.ts_ecr).then(|| now_ns - seg.ts_ecr);
        if una_advanced {
            out.acked_bytes = self.board.advance_una_noting(ack, now_ns, &mut ca_src);
            self.snd_una = ack;
            self.stats.bytes_acked += out.acked_bytes;
            self.l2_bytes += out.acked_bytes;
            self.potentially_failed = false;
        }
        // No SACK blocks (most ACKs): nothing newly SACKed, and the scoreboard need not look.
        out.sacked_bytes = if seg.sack_len > 0 {
            self.board
                .apply_sack_noting(seg.sack_blocks(), now_ns, &mut ca_src)
        } else {
            0
        };
        // Linux `pkts_acked`: the congestion control's sample is the send time of the latest
        // segment this ACK newly acknowledged or SACKed, else the echo of an ACK of new data.
        let ca_rtt = ca_src.ca_rtt(now_ns).or(ts_rtt);
        // The estimator's sample: the echo of an ACK of new data. (Linux `tcp_ack_update_rtt`
        // takes the first transmission's age of the earliest segment newly acknowledged, else
        // SACKed, before the echo; measured on this branch, it flips two bimodal grid cells out,
        // docs/testbed.md Session 12 (lr15).) The min-RTT filter takes `ca_rtt`, as Linux's
        // `tcp_update_rtt_min`; a sample ends the RTO backoff.
        out.rtt_sample_ns = ts_rtt;
        if let Some(r) = out.rtt_sample_ns {
            self.rtt.on_sample_at(r, self.snd_una, self.snd_nxt);
            self.rtt.note_min_rtt(ca_rtt.unwrap_or(r));
            self.backoff = 0;
        }
        // RFC 6298 (5.3): restart the timer on an ACK of new data; (5.2) stop it when idle.
        if una_advanced {
            let at = (!self.board.is_empty()).then(|| {
                timer_wheel_fire_after_jiffies(
                    now_ns,
                    self.rtt.backed_off_rto_jiffies(self.backoff),
                )
            });
            self.rto_deadline = PendingNs::from_option(at);
        }
        // Segments that left the board plus the change in SACKed ones (a SACKed segment that
        // is then cumulatively acknowledged leaves both counts: it is not counted twice).
        out.delivered_segs = (segs_before - self.board.segs_out() as u64
            + self.board.sacked_segs())
        .saturating_sub(sacked_before);
        // The congestion control sees `ca_rtt` in every state, before loss detection; one
        // sample per ACK serves both hooks (`on_rtt_sample` here, `on_ack` in `grow`).
        let mut sample = self.ack_sample(now_ns, out.delivered_segs, ca_rtt);
        if ca_rtt.is_some() {
            self.cc.on_rtt_sample(&mut self.tcb, &sample);
        }
        if self.tlp_high_seq != NO_PROBE {
            self.process_tlp_ack(now_ns, ack, una_advanced, out.sacked_bytes, view);
        }
        let newly_lost = self.mark_lost(now_ns);
        let delivered = out.acked_bytes + out.sacked_bytes;
        if self.state == CaState::Open && self.board.lost_bytes() == 0 {
            if delivered > 0 {
                self.grow(&mut sample, view);
            }
        } else {
            self.on_ack_with_loss(
                now_ns,
                delivered,
                una_advanced,
                newly_lost,
                seg.ts_ecr,
                out,
                &mut sample,
                view,
            );
        }
        if una_advanced {
            // Linux `tcp_set_xmit_timer`: an ACK of new data re-arms the probe (or, when none
            // can be scheduled, leaves only the RTO).
            self.schedule_tlp(now_ns, true);
        }
    }

    /// Window growth for `delivered_segs` segments acknowledged. Linux counts cwnd, the
    /// segments acknowledged and the window's use in packets (`tcp_cong_avoid(sk, ack,
    /// acked_sacked)`, `tcp_is_cwnd_limited`), so a small segment (an RPC request, a message)
    /// grows the window by as much as a full one; in bytes here, one MSS a segment. `ack` is
    /// the sample `on_rtt_sample` saw, updated in place (a copy is ~11 stores an ACK): whether
    /// cwnd limited the sender is read again, as HyStart or recovery may have moved cwnd.
    fn grow(&mut self, ack: &mut AckSample, view: &CoupledView<'_>) {
        ack.cwnd_limited = self.cwnd_limited();
        self.cc.on_ack(&mut self.tcb, ack, view);
        self.tcb.cwnd_bytes = self.tcb.cwnd_bytes.max(self.tcb.mss_bytes);
    }

    /// Next segment to send, if any (call until `None`).
    #[inline]
    pub fn poll_transmit(&mut self, now_ns: u64) -> Option<Segment> {
        self.poll_transmit_with(now_ns, |seg| seg)
    }

    /// Like [`Sender::poll_transmit`], handing the segment to `wrap`: the caller's value (the
    /// connection's `(subflow, segment)`) is then built where the segment is, not copied
    /// from it (a segment is 128 bytes, and this runs for every segment sent).
    #[inline]
    pub fn poll_transmit_with<R>(
        &mut self,
        now_ns: u64,
        wrap: impl FnOnce(Segment) -> R,
    ) -> Option<R> {
        self.poll_transmit_by::<false, R>(now_ns, wrap)
    }

    /// [`Sender::poll_transmit_with`] for a large `wrap` (the simulator's store, inlined): it
    /// is inlined where new data leaves only, and called out of line ([`cold_wrap`]) for the
    /// rare segments (handshake, probe, retransmission).
    #[inline]
    pub fn poll_transmit_with_large<R>(
        &mut self,
        now_ns: u64,
        wrap: impl FnOnce(Segment) -> R,
    ) -> Option<R> {
        self.poll_transmit_by::<true, R>(now_ns, wrap)
    }

    /// [`Sender::poll_transmit_with`] (a small `wrap`, inlined everywhere) and, with
    /// `RARE_OUT_OF_LINE`, [`Sender::poll_transmit_with_large`].
    #[inline(always)]
    fn poll_transmit_by<const RARE_OUT_OF_LINE: bool, R>(
        &mut self,
        now_ns: u64,
        wrap: impl FnOnce(Segment) -> R,
    ) -> Option<R> {
        // Each `None` below ends a drain: the probe is scheduled there, once for all the
        // drain sent (`resolve_tlp`; a wrapper testing the result copied every segment).
        if !self.path_up {
            self.resolve_tlp();
            return None;
        }
        // Tested before it is taken: `take` stores the emptied option and matches the taken
        // one through a jump table on every call, and almost every call finds none.
        if self.hs.has_pending() {
            if let Some(mut s) = self.hs.poll_transmit(now_ns) {
                s.window = self.cfg.rcv_buf_bytes;
                return Some(rare_wrap::<RARE_OUT_OF_LINE, R>(wrap, s));
            }
        }
        if !self.hs.is_established() {
            return None;
        }
        let mut ignore_cwnd = false;
        if self.probe_due {
            match self.take_probe(now_ns) {
                Some(s) => {
                    let seg = self.build(now_ns, s.seq, s.len, s.dsn, s.data_fin);
                    return Some(rare_wrap::<RARE_OUT_OF_LINE, R>(wrap, seg));
                }
                None => ignore_cwnd = !self.queue.is_empty(),
            }
        }
        if self.state != CaState::Open || self.board.lost_bytes() > 0 {
            match self.next_retransmission(now_ns) {
                Some(Some(s)) => {
                    let seg = self.build(now_ns, s.seq, s.len, s.dsn, s.data_fin);
                    return Some(rare_wrap::<RARE_OUT_OF_LINE, R>(wrap, seg));
                }
                Some(None) => {
                    self.resolve_tlp();
                    return None;
                }
                None => {}
            }
        }
        let Some(&front) = self.queue.front() else {
            // Linux's test is in packets (`tcp_write_xmit`: no cwnd quota left, i.e. packets
            // in flight >= snd_cwnd): the window is the limit when it has no room for one
            // more segment, whatever the size of those in flight.
            let limited = !self.cwnd_has_room(self.board.pipe_segs());
            self.cwnd_validate(limited);
            self.resolve_tlp();
            return None;
        };
        if self.board.is_empty() {
            self.on_tx_start(now_ns);
            // A flight starts from nothing outstanding: room for a window's worth of segments
            // at once, instead of the queue doubling from 4 (a reallocation and copy each).
            // Idle subflows allocate nothing; a window never needs more than it reserves.
            let window_segs = self.tcb.cwnd_bytes / self.tcb.mss_bytes.max(1) + 1;
            self.board.reserve(window_segs.min(1 << 16) as usize);
        }
        let len = front.len.min(self.tcb.mss_bytes);
        if !ignore_cwnd && self.nagle_holds(len, front.len, front.data_fin) {
            self.resolve_tlp();
            return None;
        }
        if !ignore_cwnd && !self.can_send_new(len) {
            self.cwnd_validate(true);
            self.resolve_tlp();
            return None;
        }
        let head = self.queue.front_mut().expect("checked above");
        let dsn = head.dsn;
        let fin = head.data_fin && len == head.len;
        if let Some(kind) = head.resend {
            self.rare
                .get_or_insert_with(Default::default)
                .resent
                .add(kind, len);
        }
        head.dsn += len;
        head.len -= len;
        if head.len == 0 {
            self.queue.pop_front();
        }
        self.queued_bytes -= len;
        // The head gave up min(len, MSS) bytes, 0 < len: exactly one of its segments.
        self.queued_segs -= 1;
        let seq = self.snd_nxt;
        self.board.push(seq, len as u32, dsn, fin, now_ns);
        self.snd_nxt += len;
        self.minshall_update(len);
        self.on_sent(now_ns, len);
        if ignore_cwnd {
            self.tlp_high_seq = self.snd_nxt;
            self.tlp_retrans = false;
        }
        if !ignore_cwnd {
            // Linux `tcp_write_xmit`: one probe per tail-loss episode (not after a probe).
            self.schedule_tlp(now_ns, false);
        }
        Some(wrap(self.build(now_ns, seq, len as u32, dsn, fin)))
    }

    fn on_sent(&mut self, now_ns: u64, len: u64) {
        self.last_send_ns = PendingNs::at(now_ns);
        self.stats.bytes_sent += len;
        self.stats.segments_sent += 1;
        if self.state == CaState::Recovery {
            // Linux `prr_out`: packets sent in recovery, whatever their size.
            self.prr_out += 1;
        }
        // RFC 6298 (5.1): start the timer if it is not running.
        if self.rto_deadline.is_none() {
            self.rto_deadline = PendingNs::at(timer_wheel_fire_ns(
                now_ns,
                self.rtt.backed_off_rto_ns(self.backoff),
            ));
        }
    }

    fn build(&self, now_ns: u64, seq: u64, len: u32, dsn: u64, data_fin: bool) -> Segment {
        let mut f = flags::ACK;
        if self.cfg.mptcp {
            f |= flags::DSS_MAP | flags::DATA_ACK;
            if data_fin {
                f |= flags::DATA_FIN;
            }
        }
        Segment {
            flags: f,
            seq,
            len,
            ack: 1,
            window: self.cfg.rcv_buf_bytes,
            ts_val: now_ns.max(1),
            ts_ecr: self.hs.ts_recent,
            dsn,
            data_ack: self.data_ack_out,
            ..Default::default()
        }
    }
}
