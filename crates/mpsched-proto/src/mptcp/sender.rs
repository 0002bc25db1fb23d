//! The data sender: application send buffer, DSN assignment, scheduler loop, DATA_ACK
//! processing, reinjection, subflows.

use super::chunks::Chunks;
use super::stale::StaleTracker;

mod msk_timer;
mod poll;
mod room;
mod rounds;
mod send_buffer;
mod views;
use super::{ConnConfig, ConnParams, Mode};
use crate::cc::{self, CoupledSubflow, CoupledView, UnknownCc};
use crate::sched::{Action, LossKind, Rejection, Scheduler, SubflowView};
use crate::tcp::{flags, AckOutcome, Role, Segment, Sender};
use room::{filled, Room};

/// Refused actions by action kind and reason.
type RejectionCounts = [[u64; Rejection::ALL.len()]; Action::KINDS.len()];

/// Most scheduler calls per trigger: a guard against a scheduler whose actions always apply.
const MAX_SCHEDULE_ROUNDS: usize = 64;

/// The sending endpoint of a connection.
#[derive(Debug)]
pub struct DataSender {
    cfg: ConnParams,
    subflows: Vec<Sender>,
    /// Subflow masks (bit `i` = subflow `i`; at most 64 subflows): announced to the scheduler,
    /// path up.
    added: u64,
    path_up: u64,
    /// The scheduler's views, rebuilt for the subflows in `views_dirty` only (`views.rs`).
    views: Vec<SubflowView>,
    views_dirty: u64,
    /// Coupled-CC summaries (empty unless `coupled_cc`), rebuilt for `coupled_dirty` only.
    coupled: Vec<CoupledSubflow>,
    coupled_dirty: u64,
    coupled_cc: bool,
    sched: Option<Box<dyn Scheduler>>,
    /// `sched` is set (it is taken out while the scheduler runs).
    has_scheduler: bool,
    /// One subflow, no scheduler, no stale tracker, no coupled congestion control (plain TCP):
    /// `poll_transmit` takes its short path (`poll_transmit_single`).
    single: bool,
    actions: Vec<Action>,
    /// Sent-but-unacked chunks with their subflow masks, and the reinjection queue.
    chunks: Chunks,
    /// Bytes written by the application: DSNs `[0, app_written)`.
    app_written: u64,
    closed: bool,
    /// DSN of the next byte never handed to a subflow (`data_acked <= next_dsn <= app_written`).
    next_dsn: u64,
    /// Cumulative DATA_ACK from the peer.
    data_acked: u64,
    /// Right edge of the peer's connection window (never moves left).
    wnd_end: u64,
    /// An input happened since the scheduler last ran.
    need_schedule: bool,
    joins_started: bool,
    /// Subflows whose local interface has no route now (bit per subflow); joins that failed.
    route_down: u64,
    failed_joins: u64,
    /// Refused actions, by action kind ([`Action::kind_index`]) and reason; allocated at the
    /// first refusal (most connections have none: 120 bytes kept out of every sender).
    rejections: Option<Box<RejectionCounts>>,
    schedule_calls: u64,
    /// Per subflow: the largest congestion window so far, segments (send-buffer autotuning).
    max_cwnd_segments: Vec<u64>,
    /// Upstream stale-subflow detection and its MPTCP-level timer, when the scheduler runs on
    /// the upstream kernel's machinery. Boxed: ~120 bytes that most connections (every other
    /// scheduler, plain TCP) never use, out of the sender every concurrent flow keeps.
    stale: Option<Box<StaleTracker>>,
}

impl DataSender {
    /// A data sender. `sched` drives MPTCP (with `None`, all data goes to subflow 0); it is
    /// ignored in TCP mode. Fails on an unknown congestion-control name.
    pub fn new(cfg: ConnConfig, sched: Option<Box<dyn Scheduler>>) -> Result<Self, UnknownCc> {
        Self::with_config(&cfg, sched)
    }

    /// [`DataSender::new`] from a borrowed configuration (a caller building many connections
    /// alike keeps one, instead of building and dropping one a connection).
    pub fn with_config(
        cfg: &ConnConfig,
        sched: Option<Box<dyn Scheduler>>,
    ) -> Result<Self, UnknownCc> {
        Self::build(cfg, sched, Room::default())
    }

    /// A sender of `cfg` whose vectors are `room`'s (empty; `room.rs`).
    fn build(
        cfg: &ConnConfig,
        sched: Option<Box<dyn Scheduler>>,
        room: Room,
    ) -> Result<Self, UnknownCc> {
        let n = cfg.subflow_count();
        let role = if cfg.is_client {
            Role::Client
        } else {
            Role::Server
        };
        let mut subflows = room.subflows;
        subflows.reserve_exact(n);
        for i in 0..n {
            let (tcp, opt, cc) = (
                cfg.tcp_config(),
                cfg.handshake_option(i),
                cc::build(&cfg.cc)?,
            );
            match subflows.get_mut(i) {
                Some(prev) => *prev = Sender::new_reusing(tcp, role, opt, cc, prev),
                None => subflows.push(Sender::new(tcp, role, opt, cc)),
            }
        }
        let mut sched = if cfg.mode == Mode::Mptcp { sched } else { None };
        if let Some(s) = sched.as_mut().filter(|_| !cfg.snd_buf_autotuning) {
            s.on_send_buffer_fixed(cfg.snd_buf_bytes);
        }
        let stale = sched
            .as_ref()
            .is_some_and(|s| s.upstream_stale_detection())
            .then(|| Box::new(StaleTracker::new(cfg.stale_loss_cnt, n)));
        let coupled_cc = subflows[0].cc().is_coupled();
        let single = n == 1 && sched.is_none() && stale.is_none() && !coupled_cc;
        Ok(Self {
            subflows,
            added: 0,
            path_up: if n >= 64 { u64::MAX } else { (1u64 << n) - 1 },
            views: room.views,
            views_dirty: u64::MAX,
            coupled: if coupled_cc {
                filled(room.coupled, n, CoupledSubflow::default())
            } else {
                room.coupled
            },
            coupled_dirty: u64::MAX,
            coupled_cc,
            has_scheduler: sched.is_some(),
            single,
            sched,
            actions: room.actions,
            chunks: Chunks::default(),
            app_written: 0,
            closed: false,
            next_dsn: 0,
            data_acked: 0,
            wnd_end: 0,
            need_schedule: false,
            joins_started: false,
            route_down: 0,
            failed_joins: 0,
            rejections: None,
            schedule_calls: 0,
            max_cwnd_segments: if cfg.snd_buf_autotuning {
                filled(room.max_cwnd_segments, n, 0)
            } else {
                room.max_cwnd_segments
            },
            stale,
            cfg: cfg.params(),
        })
    }

    /// Client: open the first subflow (`connect()`); a server waits for SYNs.
    pub fn connect(&mut self, now_ns: u64) {
        if self.cfg.is_client {
            self.touch(0);
            self.subflows[0].connect(now_ns);
            self.note_added(0, now_ns);
        }
    }

    fn note_added(&mut self, sf: usize, now_ns: u64) {
        if self.added & views::bit(sf) == 0 {
            self.added |= views::bit(sf);
            if let Some(s) = self.sched.as_mut() {
                s.on_subflow_added(sf, now_ns);
            }
        }
    }

    /// The application writes `bytes` more (accepted whole; see [`DataSender::send_buffer_free`]).
    pub fn write(&mut self, bytes: u64, now_ns: u64) {
        let _ = now_ns;
        if self.closed || bytes == 0 {
            return;
        }
        self.app_written += bytes;
        self.need_schedule = true;
        // `mptcp_sendmsg` ends in `__mptcp_push_pending`, whose scheduler call
        // (`mptcp_subflow_get_send`) stores the MPTCP timer's period whether or not the
        // connection window admits the data (`mptcp_check_allowed_size` only stops the copy).
        if let Some(st) = self.stale.as_mut() {
            st.push_pending = true;
        }
    }

    /// The application will write no more.
    pub fn close(&mut self) {
        self.closed = true;
        self.need_schedule = true;
    }

    /// Closed and every written byte DATA_ACKed.
    pub fn is_done(&self) -> bool {
        self.closed && self.data_acked >= self.app_written
    }

    /// Feeds a segment that arrived on `subflow`.
    pub fn handle_segment(&mut self, now_ns: u64, subflow: usize, seg: &Segment) {
        if subflow >= self.subflows.len() {
            return;
        }
        if seg.has(flags::SYN) {
            self.note_added(subflow, now_ns);
        }
        self.refresh_coupled();
        let view = CoupledView {
            subflows: &self.coupled,
            me: subflow,
        };
        let out = self.subflows[subflow].handle_segment_coupled(now_ns, seg, &view);
        // `tcp_sndbuf_expand` follows cwnd up on ACKs (`tcp_new_space`); it never shrinks.
        // Only the autotuned send buffer reads it (`send_buffer_bytes`).
        if self.cfg.snd_buf_autotuning {
            let tcb = self.subflows[subflow].cc_state();
            let cwnd_segments = tcb.cwnd_bytes / tcb.mss_bytes.max(1);
            let max = &mut self.max_cwnd_segments[subflow];
            *max = (*max).max(cwnd_segments);
        }
        if self.single {
            // Plain TCP (see `poll_transmit_single`): no subflow to mark, no joins (with one
            // subflow `start_joins` opens none), no stale tracker or scheduler to tell.
            if seg.has(flags::ACK) {
                self.on_data_ack(now_ns, seg.data_ack, seg.window);
            }
            self.need_schedule = true;
            return;
        }
        self.after_segment(now_ns, subflow, seg, out);
    }

    /// The rest of [`DataSender::handle_segment`] for every connection but plain TCP's (inline:
    /// as a call, with the outcome copied into it, both plain TCP and MPTCP paid more).
    #[inline(always)]
    fn after_segment(&mut self, now_ns: u64, subflow: usize, seg: &Segment, out: AckOutcome) {
        self.touch(subflow);
        let established = self.subflows[subflow].is_established();
        if self
            .cfg
            .triggers_joins(subflow, seg, established, out.became_established)
        {
            self.start_joins(now_ns);
        }
        if seg.has(flags::ACK) {
            if let Some(st) = self.stale.as_mut() {
                st.on_receive(subflow);
            }
            self.on_data_ack(now_ns, seg.data_ack, seg.window);
        }
        if let Some(s) = self.sched.as_mut() {
            if out.acked_bytes > 0 || out.rtt_sample_ns.is_some() {
                s.on_ack(subflow, out.acked_bytes, out.rtt_sample_ns, now_ns);
            }
            if let Some(kind) = out.loss {
                s.on_loss(subflow, kind, now_ns);
            }
        }
        self.need_schedule = true;
    }

    // Once a connection (out of line of the ACK path).
    #[cold]
    #[inline(never)]
    fn start_joins(&mut self, now_ns: u64) {
        if self.cfg.is_client && self.cfg.mode == Mode::Mptcp && !self.joins_started {
            self.joins_started = true;
            for i in 1..self.subflows.len() {
                if self.route_down & (1u64 << i.min(63)) != 0 {
                    self.failed_joins += 1;
                    continue;
                }
                self.touch(i);
                self.subflows[i].connect(now_ns);
                self.note_added(i, now_ns);
            }
        }
    }

    #[inline(always)]
    fn on_data_ack(&mut self, now_ns: u64, data_ack: u64, window: u64) {
        let data_ack = data_ack.min(self.next_dsn);
        // The right edge never moves left (RFC 8684 §3.3.4, RFC 9293 §3.8.6).
        self.wnd_end = self.wnd_end.max(data_ack + window);
        if data_ack > self.data_acked {
            self.data_acked = data_ack;
            self.chunks.trim(data_ack);
            // Upstream Linux gives a subflow its TCP sequence numbers when `mptcp_sendmsg_frag`
            // appends to its write queue (`tcp_skb_entail`: seq = write_seq), so what a subflow
            // queued stays there and goes out after what it sent, even once DATA_ACKed through
            // another subflow (a WLAN back from a `down` first sends the 0.3-0.6 MB the
            // scheduler had queued on it: docs/testbed.md, "Session 9: ... (fail15f)"). The
            // out-of-tree kernel hands segments to a subflow as its window opens: drop them.
            let upstream = self.stale.is_some();
            if !upstream {
                for (i, s) in self.subflows.iter_mut().enumerate() {
                    // Only the queued bytes can change, and only if something was dropped.
                    let queued = s.queued_bytes();
                    s.trim_unsent_below(data_ack);
                    if s.queued_bytes() != queued {
                        self.views_dirty |= views::bit(i);
                        self.coupled_dirty |= views::bit(i);
                    }
                }
            }
            if let Some(s) = self.sched.as_mut() {
                s.on_data_ack(data_ack, now_ns);
            }
            self.restart_rtx_timer(now_ns);
        }
    }

    fn is_path_up(&self, sf: usize) -> bool {
        self.path_up & views::bit(sf) != 0
    }

    fn usable(&self, sf: usize) -> bool {
        self.is_path_up(sf) && self.subflows[sf].is_established()
    }

    fn run_scheduler(&mut self, now_ns: u64) {
        let Some(mut sched) = self.sched.take() else {
            // Plain TCP: everything the window allows goes to the one subflow (after every
            // ACK: inline, not a call).
            let _ = self.send_new_inline(0, u64::MAX);
            return;
        };
        self.run_scheduler_rounds(sched.as_mut(), now_ns);
        self.sched = Some(sched);
    }

    /// `subflow` exists and can send: an action naming it is refused otherwise.
    #[inline(always)]
    fn check_usable(&self, subflow: usize) -> Result<(), Rejection> {
        if subflow >= self.subflows.len() {
            return Err(Rejection::UnknownSubflow);
        }
        if !self.usable(subflow) {
            return Err(Rejection::SubflowNotUsable);
        }
        Ok(())
    }

    /// Bytes `subflow`'s send queue can still take (the send buffer less what it holds).
    #[inline(always)]
    fn queue_room(&self, subflow: usize) -> u64 {
        self.cfg
            .snd_buf_bytes
            .saturating_sub(self.subflows[subflow].queued_bytes())
    }

    /// [`DataSender::send_new`], inlined where plain TCP hands its data down.
    #[inline(always)]
    fn send_new_inline(&mut self, subflow: usize, max_bytes: u64) -> Result<(), Rejection> {
        self.check_usable(subflow)?;
        let unsent = self.app_written - self.next_dsn;
        if unsent == 0 || max_bytes == 0 {
            return Err(Rejection::NothingToSend);
        }
        let room = self.wnd_end.saturating_sub(self.next_dsn);
        if room == 0 {
            return Err(Rejection::ReceiveWindowFull);
        }
        let qroom = self.queue_room(subflow);
        if qroom == 0 {
            return Err(Rejection::SubflowQueueFull);
        }
        let mut n = unsent.min(qroom);
        let mss = self.subflows[subflow].cc_state().mss_bytes.max(1);
        if max_bytes < n {
            // Linux builds subflow segments of a full MSS while data waits (the send
            // queue's skbs grow to `size_goal`); only the end of the data may be short.
            // A hand-over of part of a segment is rounded up to whole segments, so a
            // byte-sized hand-over never becomes a short segment on the wire. (Not
            // limited by `max_bytes`, as plain TCP's never is, the hand-over is
            // `min(unsent, qroom)` already: rounded up then capped by both again, it
            // stays that; no division.)
            n = (max_bytes.div_ceil(mss) * mss).min(unsent).min(qroom);
        }
        if cfg!(test) {
            // The round-up as it was written before, for every hand-over (where it fits).
            let before = max_bytes.min(unsent).min(qroom);
            if let Some(up) = before.div_ceil(mss).checked_mul(mss) {
                assert_eq!(n, up.min(unsent).min(qroom));
            }
        }
        // Plain TCP's window-limited hand-over: this many whole segments (0: not counted here).
        let mut whole_segs = 0;
        if room < n {
            n = if self.cfg.mode == Mode::Mptcp {
                // Linux `mptcp_check_allowed_size` trims the mapping to the connection
                // window's edge in bytes, so a window-limited hand-over ends in a partial
                // segment (the subflow's `snd_wnd` is the connection's, so
                // `tcp_snd_wnd_test` passes it); the testbed's captures show such mappings
                // (docs/testbed.md, tcp11y).
                room
            } else {
                // Plain TCP: sender silly-window avoidance (RFC 9293 §3.8.6.2.1; Linux
                // `tcp_snd_wnd_test` only sends segments that fit the window whole).
                whole_segs = room / mss;
                whole_segs * mss
            };
            if n == 0 {
                return Err(Rejection::ReceiveWindowFull);
            }
        }
        let dsn = self.next_dsn;
        let fin = self.closed && dsn + n == self.app_written;
        self.touch(subflow);
        self.subflows[subflow].queue_counted(dsn, n, fin, whole_segs);
        // Only a scheduler reads the unacked chunks (`Chunks::views`).
        if self.has_scheduler {
            self.chunks.push(dsn, n, views::bit(subflow));
        }
        self.next_dsn += n;
        Ok(())
    }

    /// Earliest timer of any subflow, absolute ns. (Inline: asked after every drain.)
    #[inline]
    pub fn poll_timeout(&self) -> Option<u64> {
        let msk = self.stale.as_ref().and_then(|st| st.timer_ns);
        // Asked after every event; one subflow without the MPTCP retransmit timer (plain
        // TCP) needs no iterator chain.
        if let ([s], None) = (self.subflows.as_slice(), msk) {
            return s.poll_timeout();
        }
        self.poll_timeout_general(msk)
    }

    /// [`DataSender::poll_timeout`] over several subflows or with the MPTCP timer. Apart, so
    /// that the one-subflow case saves no registers for the subflows' calls (a subflow's
    /// probe deadline noted and not yet computed is computed in a call).
    #[inline(never)]
    fn poll_timeout_general(&self, msk: Option<u64>) -> Option<u64> {
        self.subflows
            .iter()
            .filter_map(|s| s.poll_timeout())
            .chain(msk)
            .min()
    }

    /// Fires due timers; out of tree, an RTO queues the subflow's outstanding data for
    /// reinjection on the others (`mptcp_reinject_data` from the retransmission timer).
    pub fn handle_timeout(&mut self, now_ns: u64) {
        if self
            .stale
            .as_ref()
            .and_then(|st| st.timer_ns)
            .is_some_and(|t| t <= now_ns)
        {
            self.mptcp_retrans_timer(now_ns);
        }
        for i in 0..self.subflows.len() {
            if !matches!(self.subflows[i].poll_timeout(), Some(t) if t <= now_ns) {
                continue;
            }
            self.refresh_coupled();
            let view = CoupledView {
                subflows: &self.coupled,
                me: i,
            };
            let loss = self.subflows[i].handle_timeout_coupled(now_ns, &view);
            self.touch(i);
            if let Some(kind) = loss {
                if let Some(s) = self.sched.as_mut() {
                    s.on_loss(i, kind, now_ns);
                }
                // Upstream: nothing at the MPTCP level (its own timer moves the data).
                if kind == LossKind::Timeout && self.stale.is_none() {
                    self.reinject_outstanding(i);
                }
            }
            self.need_schedule = true;
        }
    }

    /// Queues everything subflow `sf` holds for reinjection: what it sent and what waits in
    /// its queue (the out-of-tree kernel's `mptcp_reinject_data` walks the whole write queue,
    /// sent and unsent skbs). The window counts segments, so after an RTO a subflow of one
    /// segment holds small messages it may not send until its next, backed-off, timeout.
    fn reinject_outstanding(&mut self, sf: usize) {
        if self.cfg.mode != Mode::Mptcp || self.subflows.len() < 2 {
            return;
        }
        let acked = self.data_acked;
        let chunks = &mut self.chunks;
        let subflow = &self.subflows[sf];
        for (dsn, len) in subflow.unacked_mappings().chain(subflow.unsent_mappings()) {
            chunks.add_reinject(dsn.max(acked), dsn + len);
        }
    }

    /// The client's interface of `subflow` lost or regained its routes, for an upstream
    /// kernel: only a join created meanwhile notices (see `super::join_route`).
    pub fn set_route_up(&mut self, subflow: usize, up: bool) {
        super::join_route::set(&mut self.route_down, subflow, up);
    }

    /// Joins that failed at `connect()` because their interface had no route.
    pub fn failed_joins(&self) -> u64 {
        self.failed_joins
    }

    /// Path of subflow `subflow` goes down (`false`) or comes back. Down: the subflow stops
    /// sending; its queued and outstanding data are copied to the reinjection queue (they also
    /// stay on the subflow, so nothing is lost with a scheduler that ignores that queue).
    pub fn set_path_up(&mut self, subflow: usize, up: bool, now_ns: u64) {
        if subflow >= self.subflows.len() || self.is_path_up(subflow) == up {
            return;
        }
        self.path_up ^= views::bit(subflow);
        self.touch(subflow);
        self.subflows[subflow].set_path_up(up, now_ns);
        if !up {
            self.reinject_outstanding(subflow);
        }
        self.need_schedule = true;
    }
}
