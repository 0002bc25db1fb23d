//! The data receiver: subflow receivers feeding one connection-level reassembly buffer.
//!
//! In-order subflow data is reassembled by DSN: bytes at the DATA_ACK point are delivered to
//! the application at once (it reads immediately), bytes above it wait in the out-of-order
//! queue, duplicates (reinjections, redundant copies) are dropped by DSN. The advertised
//! window is the free connection-level buffer (receive buffer minus the connection's
//! out-of-order bytes) capped by the sending subflow's `rcv_ssthresh`, relative to DATA_ACK,
//! and its right edge never moves left (Linux `__tcp_select_window`, `mptcp_set_rwin`).
//! A subflow's own out-of-order bytes (above a hole in its sequence space) are not taken
//! off: Linux's `mptcp_space` counts only the msk's receive memory, the subflow's
//! out-of-order queue is charged to the subflow socket ("as far as mptcp peer is concerned
//! that data is still inflight", subflow.c).
//!
//! With [`ConnConfig::rcv_buf_autotuning`] the buffer behind that window grows as Linux's
//! dynamic right-sizing does (`mptcp_rcv_space_adjust`, `mptcp_rcvbuf_grow` in 6.18.y): once
//! per RTT, if the application read more than in the previous measurement (`newval` bytes
//! against `oldval`), the window becomes `2 newval` plus, to let a sender in slow start
//! double its rate, `2 x 2 newval (newval - oldval) / oldval` ("tcp: fix too slow
//! tcp_rcvbuf_grow() action", 6.18). MPTCP-level out-of-order data does not grow it ("mptcp:
//! do not account for OoO in mptcp_rcvbuf_grow()", in the 6.18.y and 6.19 stable trees).
//! The RTT is the highest receiver-side estimate among the subflows (6.18: "use highest rtt
//! estimate of the subflows in use"; 7.0 changed it to the lowest).
//!
//! Buffer and window are kept apart as in Linux: the grown window is turned into buffer
//! memory (`sk_rcvbuf` = `mptcp_space_from_win`) at the connection's `scaling_ratio` of that
//! moment, and the window the buffer allows is that memory turned back at the ratio of the
//! moment it is offered (`__mptcp_space`). The connection's ratio is the lowest of its
//! subflows' (6.18 `mptcp_rcv_space_adjust`), so while a joining subflow has not measured a
//! full-sized skb (ratio 128 / 256, the others 197 / 256 on the testbed) a growth buys buffer
//! for 197 / 128 = 1.54x the window it was computed for, which the connection offers once
//! every subflow has measured (docs/testbed.md, "Session 10: the MPTCP window while a
//! subflow holds out-of-order data (ofo11)"). Known difference: out-of-order bytes still come
//! off that window one for one; the kernel's msk coalesces them (`mptcp_ooo_try_coalesce`),
//! so one costs about 1.03-1.07 bytes of memory, 0.79-0.82 of a window byte (measured).

use super::{ConnConfig, ConnParams};
use crate::tcp::{
    RangeSet, Receiver, ReceiverStats, Released, Role, Segment, SCALING_RATIO_DEFAULT,
};
use crate::PendingNs;

mod ack;
mod in_order;

/// The receiving endpoint of a connection.
#[derive(Debug)]
pub struct DataReceiver {
    cfg: ConnParams,
    subflows: Vec<Receiver>,
    /// Bit `i`: the path of subflow `i` is up (at most 64 subflows).
    path_up: u64,
    rcv_nxt: u64,
    ofo: RangeSet,
    /// The furthest right edge (DSN) any subflow announced (Linux `msk->rcv_wnd_sent`).
    right_edge: u64,
    last_delivery_ns: PendingNs,
    data_fin_seen: bool,
    joins_started: bool,
    /// `rcv_nxt` moved since the last ACK (each carries it as DATA_ACK): the peer does not
    /// know of every byte read yet.
    data_ack_untold: bool,
    /// [`DataReceiver::in_order_state`], noted after every segment taken the general way (the
    /// only steps that change it): the short path's test of the receiver's state in one load.
    in_order_open: bool,
    /// Duplicates and routes lost: allocated at the first (most connections have neither;
    /// 24 bytes kept out of the receiver every concurrent flow holds, issue 17).
    rare: Option<Box<RareState>>,
    /// Autotuning: the buffer's memory, bytes (Linux msk `sk_rcvbuf`); the window it allows
    /// is [`DataReceiver::rcv_wnd_bytes`].
    rcv_buf_mem_bytes: u64,
    /// [`DataReceiver::rcv_wnd_bytes`], recomputed only where its inputs change (the buffer's
    /// growth and the ratio, once per measured RTT): every data segment and every ACK read it.
    rcv_wnd_now_bytes: u64,
    /// Autotuning: the connection's payload / truesize ratio, of 256 (Linux
    /// `msk->scaling_ratio`: the lowest of the subflows', refreshed by `rcv_space_adjust`).
    scaling_ratio: u8,
    /// [`offer_cap_bytes`] of the settings, kept as its window scale (`65 535 << scale`;
    /// [`NO_OFFER_CAP`]: none): each ACK reads it, and a byte fits the padding.
    offer_cap_scale: u8,
    /// Autotuning: bytes read in the last measurement (`rcvq_space.space`).
    space_bytes: u64,
    /// Autotuning: bytes read in this measurement (`rcvq_space.copied`).
    copied_bytes: u64,
    /// Autotuning: start of this measurement (`rcvq_space.time`).
    measure_start_ns: PendingNs,
}

/// See [`DataReceiver`]'s `rare`.
#[derive(Debug, Default)]
struct RareState {
    /// Subflows whose local interface has no route now (bit per subflow), see
    /// [`DataReceiver::set_route_up`].
    route_down: u64,
    /// Joins whose `connect()` failed at the route lookup (never retried).
    failed_joins: u64,
    /// Bytes received more than once (dropped by DSN).
    duplicate_bytes: u64,
}

/// The largest window this receiver's subflows can announce: a fixed buffer's window scale
/// caps it ([`crate::tcp::fixed_buffer_window_cap_bytes`]); an autotuned buffer's scale comes
/// from `tcp_rmem[2]` and never binds.
fn offer_cap_bytes(cfg: &ConnParams) -> u64 {
    if cfg.rcv_buf_autotuning {
        u64::MAX
    } else {
        crate::tcp::fixed_buffer_window_cap_bytes(cfg.rcv_buf_bytes)
    }
}

/// [`DataReceiver::offer_cap_scale`] of a receiver whose offers have no cap.
const NO_OFFER_CAP: u8 = u8::MAX;

/// A cap of [`offer_cap_bytes`] as its window scale, or [`NO_OFFER_CAP`].
fn offer_cap_scale(cap: u64) -> u8 {
    if cap == u64::MAX {
        return NO_OFFER_CAP;
    }
    let scale = cap.trailing_zeros() as u8;
    assert_eq!(
        65_535 << scale,
        cap,
        "a window cap is 65 535 shifted by the scale"
    );
    scale
}

/// Linux `tcp_rmem[1]`: the initial receive buffer, bytes.
pub const RMEM_INITIAL_BYTES: u64 = 131_072;

impl DataReceiver {
    /// A data receiver.
    pub fn new(cfg: ConnConfig) -> Self {
        Self::with_config(&cfg)
    }

    /// [`DataReceiver::new`] from a borrowed configuration (see `DataSender::with_config`).
    pub fn with_config(cfg: &ConnConfig) -> Self {
        Self::build(cfg, Vec::new())
    }

    /// [`DataReceiver::with_config`], its subflow vector being `old`'s (a finished
    /// connection's receiver), emptied: field for field the receiver `with_config` builds, but
    /// for that vector's capacity.
    pub fn with_config_reusing(cfg: &ConnConfig, old: &mut DataReceiver) -> Self {
        let mut subflows = std::mem::take(&mut old.subflows);
        subflows.clear();
        Self::build(cfg, subflows)
    }

    /// A data receiver whose subflows are pushed onto `subflows` (empty).
    fn build(cfg: &ConnConfig, mut subflows: Vec<Receiver>) -> Self {
        let n = cfg.subflow_count();
        let role = if cfg.is_client {
            Role::Client
        } else {
            Role::Server
        };
        let rcv_wnd_bytes = if cfg.rcv_buf_autotuning {
            (RMEM_INITIAL_BYTES / 2).min(cfg.rcv_buf_bytes)
        } else {
            cfg.rcv_buf_bytes
        };
        // Every subflow socket starts from this initial space (`rcv_ssthresh`), also one
        // joining after autotuning grew the connection's buffer (see `set_window_clamp`).
        subflows.reserve_exact(n);
        subflows.extend((0..n).map(|i| {
            let mut s = Receiver::new(cfg.tcp_config(), role, cfg.handshake_option(i));
            s.set_window_clamp(rcv_wnd_bytes);
            if !cfg.rcv_buf_autotuning {
                s.set_fixed_buffer();
            }
            s
        }));
        let offer_cap = offer_cap_bytes(&cfg.params());
        let mut r = Self {
            // Linux `tcp_select_initial_window` offers the whole initial space (and makes it
            // rcv_ssthresh): with autotuning tcp_rmem[1]'s window, else the whole buffer, as
            // far as the window scale lets it.
            right_edge: rcv_wnd_bytes.min(offer_cap),
            offer_cap_scale: offer_cap_scale(offer_cap),
            rcv_buf_mem_bytes: RMEM_INITIAL_BYTES,
            // Computed from the buffer and the ratio once they are set, below.
            rcv_wnd_now_bytes: 0,
            scaling_ratio: SCALING_RATIO_DEFAULT as u8,
            // Linux `mptcp_rcv_space_init`: the initial offering, at most 10 segments.
            space_bytes: rcv_wnd_bytes.min(crate::tcp::MPTCP_DATA_MSS_BYTES_FOR_1500 * 10),
            copied_bytes: 0,
            measure_start_ns: PendingNs::NONE,
            subflows,
            path_up: if n >= 64 { u64::MAX } else { (1u64 << n) - 1 },
            rcv_nxt: 0,
            ofo: RangeSet::new(),
            last_delivery_ns: PendingNs::NONE,
            data_fin_seen: false,
            joins_started: false,
            data_ack_untold: false,
            // No handshake yet.
            in_order_open: false,
            rare: None,
            cfg: cfg.params(),
        };
        r.rcv_wnd_now_bytes = r.window_of_buffer();
        r
    }

    /// Client: open the first subflow; a server waits for SYNs.
    pub fn connect(&mut self, now_ns: u64) {
        if self.cfg.is_client {
            self.subflows[0].connect(now_ns);
        }
    }

    /// Feeds a segment that arrived on `subflow`.
    #[inline(always)]
    pub fn handle_segment(&mut self, now_ns: u64, subflow: usize, seg: &Segment) {
        if self.in_order_ready(subflow, seg) {
            self.take_in_order(now_ns, seg);
        } else {
            self.handle_segment_general(now_ns, subflow, seg);
        }
    }

    /// [`DataReceiver::handle_segment`] for any segment. Both paths are functions of their
    /// own, so the handler is the short path's test and a jump: inlined, this one took
    /// registers from the short path; and a second frame for every segment of a connection
    /// with several subflows cost the FatTree (benches/RESULTS.md, Session 16, perf17d).
    #[inline(never)]
    pub(crate) fn handle_segment_general(&mut self, now_ns: u64, subflow: usize, seg: &Segment) {
        if subflow >= self.subflows.len() {
            return;
        }
        // Linux `tcp_grow_window` on the subflow: `rcv_ssthresh` grows towards the buffer's
        // window (MPTCP propagates the msk's autotuned rcvbuf and clamp to its subflows).
        let window = self.rcv_wnd_bytes();
        self.subflows[subflow].set_window_clamp(window);
        let became_established = self.subflows[subflow].handle_segment(now_ns, seg);
        let established = self.subflows[subflow].is_established();
        if !self.joins_started
            && self
                .cfg
                .triggers_joins(subflow, seg, established, became_established)
        {
            self.joins_started = true;
            let route_down = self.rare.as_ref().map_or(0, |r| r.route_down);
            for i in 1..self.subflows.len() {
                if route_down & (1u64 << i.min(63)) != 0 {
                    self.rare_mut().failed_joins += 1;
                    continue;
                }
                self.subflows[i].connect(now_ns);
            }
        }
        let ofo_before = self.ofo.total_bytes();
        let read_before = self.rcv_nxt;
        // `deliver` leaves the subflows alone: their released data is read in place.
        let mut i = 0;
        while let Some(r) = self.subflows[subflow].released(i) {
            self.deliver(r, now_ns);
            i += 1;
        }
        self.subflows[subflow].clear_released();
        // The application reads what became in order (Linux `mptcp_recvmsg` ->
        // `mptcp_cleanup_rbuf`, every subflow): a small frame's delayed ACK leaves now if the
        // read emptied the receive memory, so a frame that waited in the out-of-order queue
        // for a slower subflow's frame is acknowledged when that one arrives (docs/testbed.md,
        // "the read-time ACK of small frames").
        if self.rcv_nxt > read_before {
            let rx_empty = self.ofo.is_empty();
            for (i, s) in self.subflows.iter_mut().enumerate() {
                if self.path_up & (1u64 << i.min(63)) != 0 {
                    s.ack_at_read(rx_empty);
                }
            }
        }
        // A connection-level hole was filled: DATA_ACK jumps and the window reopens. ACK at
        // once, as TCP does for a filled hole (RFC 5681 §4.2), instead of waiting for this
        // subflow's delayed ACK while the sender may be blocked on the window.
        // Not in pingpong mode: an RPC's small request that fills a hole barely reopens the
        // window (Linux sends the msk's window update, `mptcp_cleanup_rbuf`, when the space
        // doubles), and its ACK rides on the response.
        if self.ofo.total_bytes() < ofo_before && !self.subflows[subflow].in_pingpong() {
            self.subflows[subflow].request_ack();
        }
        self.in_order_open = self.in_order_state();
    }

    /// Data of the other direction leaves on `subflow` at `now_ns`: its pending delayed ACK
    /// rides on it (see [`crate::tcp::Receiver::ack_rides_on_data`]). Every MPTCP segment also
    /// carries the connection's DATA_ACK (Linux `mptcp_established_options_dss` puts the
    /// msk's `ack_seq` in each packet's DSS option), so data leaving here tells the peer of
    /// bytes another subflow received whose own delayed ACK still waits (an RPC's request read
    /// from LTE while its response leaves on WLAN); modelled as an ACK on this subflow (the
    /// data's subflow-level ACK field repeats the last one). True when an ACK was made due.
    pub fn ack_rides_on_data(&mut self, subflow: usize, now_ns: u64) -> bool {
        let up = self.is_path_up(subflow);
        let untold = self.data_ack_untold;
        let Some(s) = self.subflows.get_mut(subflow) else {
            return false;
        };
        if s.ack_rides_on_data(now_ns) {
            return true;
        }
        if untold && up && s.is_established() {
            s.request_ack();
            return true;
        }
        false
    }

    fn deliver(&mut self, r: Released, now_ns: u64) {
        let end = r.dsn + r.len;
        self.data_fin_seen |= r.data_fin;
        if end <= self.rcv_nxt {
            self.add_duplicate(r.len);
            return;
        }
        if r.dsn <= self.rcv_nxt {
            self.add_duplicate(self.rcv_nxt - r.dsn);
            let before = self.rcv_nxt;
            self.rcv_nxt = end;
            self.data_ack_untold = true;
            while let Some((_, e)) = self.ofo.pop_first_if_starts_by(self.rcv_nxt) {
                if e > self.rcv_nxt {
                    self.rcv_nxt = e;
                }
            }
            self.last_delivery_ns = PendingNs::at(now_ns);
            // The application reads at once.
            self.rcv_space_adjust(self.rcv_nxt - before, now_ns);
        } else {
            let added = self.ofo.insert(r.dsn, end);
            self.add_duplicate(r.len - added);
        }
    }

    /// Linux `mptcp_rcv_space_adjust` (6.18): once per RTT (the highest receiver-side RTT
    /// estimate of the subflows), if the application read more than in the last measurement,
    /// grow the buffer.
    #[inline(always)]
    fn rcv_space_adjust(&mut self, copied: u64, now_ns: u64) {
        if self.cfg.rcv_buf_autotuning && copied > 0 {
            self.rcv_space_measure(copied, now_ns);
        }
    }

    /// [`DataReceiver::rcv_space_adjust`] with autotuning on (out of line: inlined in the
    /// in-order path, it took registers from runs without it).
    #[inline(never)]
    fn rcv_space_measure(&mut self, copied: u64, now_ns: u64) {
        self.copied_bytes += copied;
        let start = self.measure_start_ns.get().unwrap_or(now_ns);
        self.measure_start_ns = PendingNs::at(start);
        let rtt_ns = self
            .subflows
            .iter()
            .map(|s| s.rcv_rtt_ns())
            .max()
            .unwrap_or(0);
        let closes = now_ns - start >= rtt_ns;
        if rtt_ns == 0 || closes {
            // Linux refreshes the msk's ratio whenever it passes the time check (every read
            // before the first RTT sample, then once a measurement).
            self.update_scaling_ratio();
        }
        if rtt_ns == 0 || !closes {
            return;
        }
        if self.copied_bytes > self.space_bytes {
            self.rcvbuf_grow(self.copied_bytes);
        }
        self.copied_bytes = 0;
        self.measure_start_ns = PendingNs::at(now_ns);
    }

    /// Linux `mptcp_rcvbuf_grow(sk, newval)` (6.18.y): "DRS is always one RTT late" (twice
    /// the bytes read in the last RTT), plus "slow start: allow the sender to double its
    /// rate" (twice the growth over the previous measurement, scaled to that window), capped
    /// by the configured buffer (`tcp_rmem[2]`); it never shrinks.
    fn rcvbuf_grow(&mut self, newval: u64) {
        let oldval = self.space_bytes.max(1);
        self.space_bytes = newval;
        let mut rcvwin = 2 * newval;
        rcvwin += 2 * (rcvwin * newval.saturating_sub(oldval) / oldval);
        let want = rcvwin.min(self.cfg.rcv_buf_bytes);
        // `mptcp_space_from_win` at the ratio of this moment; the buffer never shrinks.
        let mem = want * 256 / u64::from(self.scaling_ratio);
        self.rcv_buf_mem_bytes = self.rcv_buf_mem_bytes.max(mem);
        self.rcv_wnd_now_bytes = self.window_of_buffer();
    }

    /// Linux `msk->scaling_ratio` (6.18 `mptcp_rcv_space_adjust`): the lowest ratio of the
    /// subflows that exist.
    fn update_scaling_ratio(&mut self) {
        let lowest = self
            .subflows
            .iter()
            .filter(|s| s.is_started())
            .map(|s| s.scaling_ratio())
            .min();
        if let Some(ratio) = lowest {
            self.scaling_ratio = ratio.min(255) as u8;
            self.rcv_wnd_now_bytes = self.window_of_buffer();
        }
    }

    /// Earliest timer of any subflow, absolute ns.
    pub fn poll_timeout(&self) -> Option<u64> {
        // Asked after every event; one subflow (plain TCP, most MPTCP flows' start) needs
        // no iterator.
        if let [s] = self.subflows.as_slice() {
            return s.poll_timeout();
        }
        self.subflows.iter().filter_map(|s| s.poll_timeout()).min()
    }

    /// Fires due timers.
    pub fn handle_timeout(&mut self, now_ns: u64) {
        for s in &mut self.subflows {
            if s.poll_timeout().is_some_and(|t| t <= now_ns) {
                s.handle_timeout(now_ns);
            }
        }
    }

    /// Path of `subflow` down or up: nothing is sent on a down path.
    pub fn set_path_up(&mut self, subflow: usize, up: bool) {
        if let Some(s) = self.subflows.get_mut(subflow) {
            s.set_path_up(up);
            let bit = 1u64 << subflow.min(63);
            if up {
                self.path_up |= bit;
            } else {
                self.path_up &= !bit;
            }
        }
    }

    /// The client's interface of `subflow` lost (`up` false) or regained its routes, for an
    /// upstream kernel, which tells neither TCP nor the in-kernel path manager (see
    /// `super::join_route`): only a join created meanwhile notices, its `connect()` failing.
    pub fn set_route_up(&mut self, subflow: usize, up: bool) {
        if up && self.rare.is_none() {
            return; // no bit to clear
        }
        super::join_route::set(&mut self.rare_mut().route_down, subflow, up);
    }

    /// Joins that failed at `connect()` because their interface had no route.
    pub fn failed_joins(&self) -> u64 {
        self.rare.as_ref().map_or(0, |r| r.failed_joins)
    }

    fn rare_mut(&mut self) -> &mut RareState {
        self.rare.get_or_insert_with(Box::default)
    }

    /// Counts `bytes` received more than once (none: nothing allocated).
    #[inline]
    fn add_duplicate(&mut self, bytes: u64) {
        if bytes > 0 {
            self.rare_mut().duplicate_bytes += bytes;
        }
    }

    fn is_path_up(&self, subflow: usize) -> bool {
        self.path_up & (1u64 << subflow.min(63)) != 0
    }

    /// The first subflow's handshake is complete (the client application may send its
    /// request: a web client writes its GET once connect() returns).
    pub fn is_established(&self) -> bool {
        self.subflows.first().is_some_and(|s| s.is_established())
    }

    /// Bytes delivered in order to the application.
    pub fn delivered_bytes(&self) -> u64 {
        self.rcv_nxt
    }
    /// Time the last in-order byte was delivered.
    pub fn last_delivery_ns(&self) -> Option<u64> {
        self.last_delivery_ns.get()
    }
    /// Out-of-order bytes held at the connection level.
    pub fn ofo_bytes(&self) -> u64 {
        self.ofo.total_bytes()
    }
    /// Receive-buffer bytes in use: connection-level plus subflow-level out-of-order data
    /// (in-order data is read by the application at once).
    pub fn buffer_in_use_bytes(&self) -> u64 {
        self.ofo.total_bytes() + self.subflows.iter().map(|s| s.ofo_bytes()).sum::<u64>()
    }
    /// Receive window the buffer allows now (grows with autotuning), bytes.
    /// Autotuned: the buffer's memory at the connection's ratio now
    /// (`mptcp_win_from_space(sk_rcvbuf)`), at most the configured buffer's window.
    #[inline]
    pub fn rcv_wnd_bytes(&self) -> u64 {
        #[cfg(any(test, debug_assertions))]
        assert_eq!(
            self.rcv_wnd_now_bytes,
            self.window_of_buffer(),
            "buffer moved, not noted"
        );
        self.rcv_wnd_now_bytes
    }
    /// What [`DataReceiver::rcv_wnd_bytes`] keeps: computed from the buffer and the ratio.
    fn window_of_buffer(&self) -> u64 {
        if !self.cfg.rcv_buf_autotuning {
            return self.cfg.rcv_buf_bytes;
        }
        let window = self.rcv_buf_mem_bytes * u64::from(self.scaling_ratio) / 256;
        window.min(self.cfg.rcv_buf_bytes)
    }
    /// Bytes received more than once (dropped by DSN).
    pub fn duplicate_bytes(&self) -> u64 {
        self.rare.as_ref().map_or(0, |r| r.duplicate_bytes)
    }
    /// The DATA_FIN mapping was received.
    pub fn data_fin_seen(&self) -> bool {
        self.data_fin_seen
    }
    /// Per-subflow counters.
    pub fn subflow_stats(&self, subflow: usize) -> Option<ReceiverStats> {
        self.subflows.get(subflow).map(|s| s.stats())
    }
    /// Number of subflows.
    pub fn subflow_count(&self) -> usize {
        self.subflows.len()
    }
    /// The subflows' receivers (as `DataSender::subflows` gives the senders).
    pub fn subflows(&self) -> &[Receiver] {
        &self.subflows
    }
}
