//! The data-receiving side of a subflow.
//!
//! In-order data is released to the owner at once (as [`Released`] DSN mappings, drained with
//! [`Receiver::drain_released`]); out-of-order segments wait in a queue keyed by sequence
//! number, reported in SACK blocks (RFC 2018 §4: the block holding the latest segment first,
//! then the most recently reported others).
//!
//! ACK policy (Linux `__tcp_ack_snd_check`): ACK at once when more than one MSS is unacked,
//! in quickack mode, for out-of-order or duplicate data and when a hole is filled; otherwise
//! after [`super::DELAYED_ACK_NS`]. Quickack mode lasts [`super::QUICKACKS`] ACKs from the
//! first data segment (Linux `tcp_incr_quickack`: rcv_wnd / (2 rcv_mss), at most
//! `TCP_MAX_QUICKACKS`; 16 for the initial 64 KB window) and is re-armed for one ACK by every
//! in-order data segment that grows `rcv_ssthresh` (Linux `tcp_grow_window`, called from
//! `tcp_event_data_recv` before the ACK decision: `rcv_ssthresh += min(room, max(2 advmss,
//! 2 skb->len))` and `icsk_ack.quick |= 1`, where room = min(window_clamp, tcp_space) -
//! rcv_ssthresh). `rcv_ssthresh` starts at the initial window (see `grow.rs`) and the clamp is
//! the receive buffer's window ([`Receiver::set_window_clamp`]), so while autotuning grows the
//! buffer (every RTT of slow start) every segment, and every skb, is acknowledged at once. Timestamps follow RFC 7323 §4.3: TS.Recent is
//! taken only from segments at or below the last ACK sent, so a delayed ACK echoes the oldest
//! unacknowledged segment and an ACK after a hole echoes the retransmission.

use super::fifo::InlineFifo;
use super::handshake::{Handshake, HsOption, Role};
use super::ofo::{OfoQueue, Ooo};
use super::rangeset::RangeSet;
use super::segment::{flags, Segment, MAX_SACK_BLOCKS};
use super::settings::ReceiverSettings;
use super::{TcpConfig, DELAYED_ACK_NS};
use crate::PendingNs;

mod ack;
mod grow;
mod in_order;
mod rcv_rtt;
mod read_ack;

pub use grow::{fixed_buffer_window_cap_bytes, SCALING_RATIO_DEFAULT};

/// Linux's initial `rcv_ssthresh` (`tcp_connect_init`: `rcv_ssthresh = rcv_wnd`) of an
/// autotuned socket or a standalone receiver: the initial window `tcp_select_initial_window`
/// offers, the buffer's window rounded down to whole segments, here at most 65 535 bytes (an
/// autotuned socket's initial space, `tcp_rmem[1]`'s window, is 64 KiB anyway). A fixed buffer
/// of a connection starts from its whole initial space instead (`grow.rs`, measured with
/// SO_RCVBUF on the 6.18 testbed: docs/testbed.md, "The initial rcv_ssthresh of a fixed
/// buffer").
fn initial_rcv_ssthresh(window_bytes: u64, mss_bytes: u64) -> u64 {
    let mss = mss_bytes.max(1);
    let w = if window_bytes > mss {
        window_bytes / mss * mss
    } else {
        window_bytes
    };
    w.min(65_535)
}

/// A piece of in-order data handed to the owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Released {
    /// DSN of the first byte.
    pub dsn: u64,
    /// Length, bytes.
    pub len: u64,
    /// Carried DATA_FIN.
    pub data_fin: bool,
}

/// Receiver counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReceiverStats {
    /// Payload bytes received, duplicates included.
    pub bytes_received: u64,
    /// Payload bytes released in order.
    pub bytes_in_order: u64,
    /// Payload bytes that were already received (spurious retransmissions).
    pub duplicate_bytes: u64,
    /// ACK segments sent.
    pub acks_sent: u64,
}

/// Receiver state machine of one subflow.
#[derive(Debug, Clone)]
pub struct Receiver {
    cfg: ReceiverSettings,
    hs: Handshake,
    rcv_nxt: u64,
    ofo: OfoQueue,
    ofo_ranges: RangeSet,
    recent_sack: [u64; 4],
    /// Entries of `recent_sack` in use (at most 4; a byte keeps the receiver in its budget).
    n_recent: u8,
    ts_recent: u64,
    last_ack_sent: u64,
    ack_now: bool,
    delack_deadline: PendingNs,
    quickacks_left: u32,
    quickack_armed: bool,
    /// Linux pingpong (interactive) mode: data of the other direction left within the
    /// delayed-ACK time of the last data received, so ACKs wait to ride on the next data
    /// instead of quickacks. Only an RPC's halves report such data
    /// ([`Receiver::ack_rides_on_data`]); other workloads never enter it.
    pingpong: bool,
    /// Small in-order segments since the last ACK, at most 2 (Linux `ICSK_ACK_PUSHED`,
    /// `ICSK_ACK_PUSHED2`): their delayed ACK leaves when the application reads them
    /// (see `read_ack.rs`).
    pushed: u8,
    /// Linux `icsk_ack.rcv_mss` (a u16 there too): the largest segment seen, from 536 bytes
    /// up to the MSS.
    rcv_mss: u16,
    /// A fixed receive buffer (see `grow.rs`): the clamp stays at the initial space until a
    /// full-sized skb measured the scaling ratio (`ratio_measured`).
    fixed_buffer: bool,
    ratio_measured: bool,
    /// When in-order data last arrived, ns (Linux `icsk_ack.lrcvtime`); 0 = never.
    last_data_rcv_ns: u64,
    /// Linux `rcv_ssthresh`: how far the window offered may grow now, bytes.
    rcv_ssthresh: u64,
    /// Linux `min(window_clamp, tcp_space)`: the receive buffer's window, bytes.
    window_clamp: u64,
    /// The right edge (sequence number) last announced without a connection window.
    right_edge: u64,
    /// Data released in order and not yet read by the owner, which reads and clears it in the
    /// same call: one entry for an in-order segment (inline), more for a filled hole (on the
    /// heap until cleared; `tcp::fifo`).
    released: InlineFifo<Released>,
    conn_window: Option<(u64, u64)>,
    path_up: bool,
    /// Receiver-side RTT estimate, ns (Linux `rcv_rtt_est`, from timestamps); 0 = none.
    rcv_rtt_ns: u64,
    /// The echoed timestamp of the last sample, ms (Linux `rcv_rtt_last_tsecr`, a 32-bit
    /// timestamp that wraps as Linux's does; 32 bits keep the receiver in its size budget).
    rcv_rtt_last_tsecr_ms: Option<u32>,
    stats: ReceiverStats,
}

impl Receiver {
    /// A receiver with the handshake `role` / `opt`.
    pub fn new(cfg: TcpConfig, role: Role, opt: HsOption) -> Self {
        Self::with_handshake(cfg, Handshake::new(role, opt))
    }

    /// A receiver whose handshake is already complete (unit tests).
    pub fn established(cfg: TcpConfig) -> Self {
        Self::with_handshake(cfg, Handshake::established(Role::Server))
    }

    fn with_handshake(cfg: TcpConfig, hs: Handshake) -> Self {
        let rcv_ssthresh = initial_rcv_ssthresh(cfg.rcv_buf_bytes, cfg.mss_bytes);
        let window_clamp = cfg.rcv_buf_bytes;
        let rcv_mss = read_ack::initial_rcv_mss(cfg.mss_bytes);
        Self {
            cfg: ReceiverSettings::of(&cfg),
            hs,
            rcv_nxt: 1,
            ofo: OfoQueue::default(),
            ofo_ranges: RangeSet::new(),
            recent_sack: [0; 4],
            n_recent: 0,
            ts_recent: 0,
            last_ack_sent: 1,
            ack_now: false,
            delack_deadline: PendingNs::NONE,
            quickacks_left: 0,
            quickack_armed: false,
            pingpong: false,
            pushed: 0,
            rcv_mss,
            fixed_buffer: false,
            ratio_measured: false,
            last_data_rcv_ns: 0,
            rcv_ssthresh,
            window_clamp,
            right_edge: 1,
            released: InlineFifo::new(),
            conn_window: None,
            path_up: true,
            rcv_rtt_ns: 0,
            rcv_rtt_last_tsecr_ms: None,
            stats: ReceiverStats::default(),
        }
    }

    /// Client: start the handshake.
    pub fn connect(&mut self, now_ns: u64) {
        self.hs.connect(now_ns);
    }

    /// Handshake complete.
    pub fn is_established(&self) -> bool {
        self.hs.is_established()
    }

    /// Sets the window and DATA_ACK the next ACKs carry (MPTCP: the connection's).
    pub fn set_conn_window(&mut self, data_ack: u64, window_bytes: u64) {
        self.conn_window = Some((data_ack, window_bytes));
    }

    /// Sets the window the receive buffer allows (Linux `window_clamp` / `tcp_space`; an MPTCP
    /// connection's, which grows with autotuning), bytes. `rcv_ssthresh` grows towards it.
    /// Before the first data a smaller window lowers `rcv_ssthresh` to it (the socket's
    /// initial space: the SYN offered that), a larger one does not raise it: a subflow
    /// joining after autotuning grew the connection's buffer starts from its own initial
    /// space (`tcp_rmem[1]`'s window; MPTCP copies a grown `sk_rcvbuf` only to the subflows
    /// that exist, `mptcp_rcv_space_adjust`).
    pub fn set_window_clamp(&mut self, window_bytes: u64) {
        self.window_clamp = window_bytes;
        if self.stats.bytes_received == 0 {
            let initial = if self.fixed_buffer {
                grow::fixed_buffer_initial_clamp(window_bytes, self.cfg.mss_bytes)
            } else {
                initial_rcv_ssthresh(window_bytes, self.cfg.mss_bytes)
            };
            self.rcv_ssthresh = self.rcv_ssthresh.min(initial);
        }
    }

    /// Linux `rcv_ssthresh`, bytes.
    pub fn rcv_ssthresh(&self) -> u64 {
        self.rcv_ssthresh
    }

    /// Requests an immediate ACK (e.g. a window update).
    pub fn request_ack(&mut self) {
        if self.hs.is_established() {
            self.ack_now = true;
        }
    }

    /// True in pingpong (interactive) mode: ACKs wait for data of the other direction.
    pub fn in_pingpong(&self) -> bool {
        self.pingpong
    }

    /// Feeds an incoming segment. Returns true when the handshake completed with it.
    pub fn handle_segment(&mut self, now_ns: u64, seg: &Segment) -> bool {
        let mut established = false;
        if !self.hs.is_established() || seg.has(flags::SYN) || seg.has(flags::MP_JOIN) {
            let h = self.hs.handle_segment(now_ns, seg);
            established = h.became_established;
            if h.consumed || !self.hs.is_established() {
                return established;
            }
            if established {
                self.ts_recent = self.hs.ts_recent;
            }
        }
        if seg.len == 0 {
            return established;
        }
        let len = seg.len as u64;
        self.stats.bytes_received += len;
        self.rcv_rtt_measure_ts(now_ns, seg.ts_ecr, len);
        self.note_ts_recent(seg);
        if !self.quickack_armed {
            // Linux `tcp_event_data_recv`: first data segment starts quickack mode.
            self.quickack_armed = true;
            self.quickacks_left = self.cfg.quickack_segments;
        }
        let end = seg.seq + len;
        if end <= self.rcv_nxt {
            // A spurious retransmission: ACK now and re-enter quickack mode (Linux
            // `tcp_data_queue`, out_of_window: `tcp_enter_quickack_mode`).
            self.stats.duplicate_bytes += len;
            self.ack_now = true;
            self.quickacks_left = self.quickacks_left.max(self.cfg.quickack_segments);
            self.pingpong = false;
            return established;
        }
        if seg.seq <= self.rcv_nxt {
            let off = self.rcv_nxt - seg.seq;
            if off > 0 {
                self.stats.duplicate_bytes += off;
            }
            let had_ofo = !self.ofo.is_empty();
            self.accept_in_order(now_ns, len - off);
            self.released.push_back(Released {
                dsn: seg.dsn + off,
                len: len - off,
                data_fin: seg.has(flags::DATA_FIN),
            });
            self.rcv_nxt = end;
            if had_ofo {
                self.release_queued();
            }
            self.ofo_ranges.remove_below(self.rcv_nxt);
            // A hole was filled or remains: ACK at once.
            let hole = had_ofo || !self.ofo.is_empty();
            self.ack_in_order(now_ns, hole);
        } else {
            // Since "tcp: call tcp_measure_rcv_mss() for ooo packets" (2025, in 6.18) an
            // out-of-order skb measures rcv_mss and the scaling ratio too.
            self.measure_rcv_mss(len);
            let o = Ooo {
                seq: seg.seq,
                dsn: seg.dsn,
                len: seg.len,
                data_fin: seg.has(flags::DATA_FIN),
            };
            // Refused where a queued segment starts: a duplicate, whatever its length.
            if self.ofo.offer(o, self.rcv_nxt, self.cfg.mss_bytes) {
                let added = self.ofo_ranges.insert(seg.seq, end);
                self.stats.duplicate_bytes += len - added;
                // Known difference: Linux's `tcp_data_queue_ofo` (with SACK) also calls
                // `tcp_grow_window` for the queued skb; modelled, it moved the grid from 57
                // to 56 agreeing cells (docs/testbed.md, "Session 8: ... rpc15e"), not kept.
            } else {
                self.stats.duplicate_bytes += len;
            }
            self.note_sack(seg.seq);
            self.ack_now = true;
        }
        established
    }

    /// Releases the queued segments the in-order data now reaches (out of line: only a filled
    /// hole calls it, and inlined it took registers from the in-order path).
    #[inline(never)]
    fn release_queued(&mut self) {
        while let Some(o) = self.ofo.pop_front_by(self.rcv_nxt) {
            let s = o.seq;
            let e = s + o.len as u64;
            if e > self.rcv_nxt {
                let off = self.rcv_nxt - s;
                self.release(o.dsn + off, e - self.rcv_nxt, o.data_fin);
                self.rcv_nxt = e;
            }
        }
    }

    fn release(&mut self, dsn: u64, len: u64, data_fin: bool) {
        self.stats.bytes_in_order += len;
        self.released.push_back(Released { dsn, len, data_fin });
    }

    fn note_sack(&mut self, seq: u64) {
        // Most recent first; drop an entry that now falls in the same block.
        let block = self.ofo_ranges.containing(seq);
        let mut kept = [0u64; 4];
        let mut n = 1;
        kept[0] = seq;
        for &r in &self.recent_sack[..usize::from(self.n_recent)] {
            if n == kept.len() {
                break;
            }
            let same = match (block, self.ofo_ranges.containing(r)) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            };
            if !same {
                kept[n] = r;
                n += 1;
            }
        }
        self.recent_sack = kept;
        self.n_recent = n as u8;
    }

    /// Takes the data released in order since the last call.
    pub fn drain_released(&mut self) -> impl Iterator<Item = Released> {
        self.released.drain()
    }

    /// Entry `i` of the data released in order since [`Receiver::clear_released`]: the owner
    /// reads them in place, by index (nothing is moved out and back for the one mapping most
    /// segments release), then clears them.
    #[inline(always)]
    pub fn released(&self, i: usize) -> Option<Released> {
        self.released.get(i).copied()
    }

    /// Entries of heap room the released data holds (tests of `tcp::fifo`).
    #[cfg(test)]
    pub(crate) fn released_heap_entries(&self) -> usize {
        self.released.heap_capacity()
    }

    /// Forgets the released data (read with [`Receiver::released`]). A filled hole releases
    /// every segment queued behind it at once (hundreds with a large window); clearing gives
    /// all that room back (it was ~2 KB a flow at the peak of 1 000 long flows at 10 Mbit/s
    /// when kept), and an in-order segment's one entry never had any.
    #[inline(always)]
    pub fn clear_released(&mut self) {
        self.released.clear();
    }

    /// Next segment to send (handshake or ACK).
    #[inline]
    pub fn poll_transmit(&mut self, now_ns: u64) -> Option<Segment> {
        self.poll_transmit_with(now_ns, |seg| seg)
    }

    /// [`Receiver::poll_transmit`] building the caller's value in place (as
    /// `Sender::poll_transmit_with`; inline: asked only when an ACK is pending).
    #[inline(always)]
    pub fn poll_transmit_with<R>(
        &mut self,
        now_ns: u64,
        wrap: impl FnOnce(Segment) -> R,
    ) -> Option<R> {
        if !self.path_up {
            return None;
        }
        let (data_ack, window) = self.window();
        if let Some(mut s) = self.hs.poll_transmit(now_ns) {
            // The SYN's window field is not scaled: at most 65 535 bytes.
            s.window = if s.has(flags::SYN) {
                window.min(65_535)
            } else {
                window
            };
            s.data_ack = data_ack;
            return Some(wrap(s));
        }
        if !self.ack_now || !self.hs.is_established() {
            return None;
        }
        Some(wrap(self.take_ack(now_ns, data_ack, window, false)))
    }

    /// The SACK blocks of an ACK, most recent first, still above rcv_nxt (out of line: only
    /// while out-of-order data waits).
    #[inline(never)]
    fn sack_blocks(&self) -> ([(u64, u64); MAX_SACK_BLOCKS], u8) {
        let mut sack = [(0u64, 0u64); MAX_SACK_BLOCKS];
        let mut n = 0;
        for &r in &self.recent_sack[..usize::from(self.n_recent)] {
            if n >= usize::from(self.cfg.sack_blocks) {
                break;
            }
            if let Some(b) = self.ofo_ranges.containing(r) {
                if !sack[..n].contains(&b) {
                    sack[n] = b;
                    n += 1;
                }
            }
        }
        (sack, n as u8)
    }

    /// The (ACK point, window) to announce. Plain TCP (Linux `__tcp_select_window`): the free
    /// buffer capped by `rcv_ssthresh`, and `tcp_select_window` never moves the right edge
    /// left (an offer below the window still open keeps the old edge).
    fn window(&self) -> (u64, u64) {
        match self.conn_window {
            Some(w) => w,
            None => {
                let free = self
                    .cfg
                    .rcv_buf_bytes
                    .saturating_sub(self.ofo_ranges.total_bytes());
                let edge = self
                    .right_edge
                    .max(self.rcv_nxt + free.min(self.rcv_ssthresh));
                (self.rcv_nxt - 1, edge - self.rcv_nxt)
            }
        }
    }

    /// Earliest timer (handshake retransmission or delayed ACK), absolute ns.
    pub fn poll_timeout(&self) -> Option<u64> {
        self.hs
            .pending_timeout()
            .earliest(self.delack_deadline)
            .get()
    }

    /// Fires due timers.
    pub fn handle_timeout(&mut self, now_ns: u64) {
        self.hs.handle_timeout(now_ns);
        if self.delack_deadline.get().is_some_and(|t| now_ns >= t) {
            self.delack_deadline = PendingNs::NONE;
            // Linux `tcp_delack_timer_handler`: a delayed ACK that no data carried ends
            // pingpong mode.
            self.pingpong = false;
            // An ACK due while the interface is gone is lost (see `set_path_up`).
            self.ack_now = self.path_up;
        }
    }

    /// Data of the other direction leaves on this subflow at `now_ns` (an RPC's response on
    /// the subflow that carried the request, or the next request on the one that carried a
    /// response). In a real connection every segment carries the current ACK, so a delayed
    /// ACK goes with it (Linux `tcp_transmit_skb` -> `tcp_event_ack_sent` stops the
    /// delayed-ACK timer); here it is sent at once. Data sent within the delayed-ACK time
    /// (`ato`, [`super::DELAYED_ACK_NS`]) of the last data received enters pingpong mode
    /// (`tcp_event_data_sent`, `tcp_pingpong_thresh` = 1). Returns true when an ACK was due;
    /// without a pending delayed ACK none is sent (the data's ACK field repeats the last one).
    pub fn ack_rides_on_data(&mut self, now_ns: u64) -> bool {
        if self.last_data_rcv_ns > 0
            && now_ns.saturating_sub(self.last_data_rcv_ns) < DELAYED_ACK_NS
        {
            self.pingpong = true;
        }
        if self.delack_deadline.is_none() || !self.path_up || !self.hs.is_established() {
            return false;
        }
        self.delack_deadline = PendingNs::NONE;
        self.ack_now = true;
        true
    }

    /// Path down: nothing is sent until it is up again. An ACK due meanwhile is lost, not
    /// held: Linux sends ACKs once (`__tcp_send_ack`) and a transmission without a route
    /// fails and is not retried, so the first ACK after the path returns answers a new
    /// segment and echoes its timestamp (a held ACK would echo one from before the outage
    /// and give the sender an RTT sample as long as the outage).
    pub fn set_path_up(&mut self, up: bool) {
        if !up {
            self.ack_now = false;
            self.delack_deadline = PendingNs::NONE;
        }
        self.path_up = up;
    }

    /// The path is up ([`Receiver::set_path_up`]).
    pub fn is_path_up(&self) -> bool {
        self.path_up
    }

    /// Out-of-order bytes held at this subflow.
    pub fn ofo_bytes(&self) -> u64 {
        self.ofo_ranges.total_bytes()
    }
    /// Receiver-side RTT estimate from timestamps, ns (0 before the first sample).
    pub fn rcv_rtt_ns(&self) -> u64 {
        self.rcv_rtt_ns
    }
    /// Next expected subflow sequence number.
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }
    /// Counters.
    pub fn stats(&self) -> ReceiverStats {
        self.stats
    }
    /// True when an ACK is waiting to be sent.
    pub fn ack_pending(&self) -> bool {
        self.ack_now || self.hs.has_pending()
    }
}
