//! How far the offered window may grow (Linux `rcv_ssthresh`, 6.18 net/ipv4/tcp_input.c:
//! `tcp_init_buffer_space`, `tcp_measure_rcv_mss`, `tcp_grow_window`, `__tcp_grow_window`).
//!
//! A fixed receive buffer (SO_RCVBUF): before any data the kernel sizes the window at the
//! default scaling ratio (`TCP_DEFAULT_SCALING_RATIO`, 128/256 of the buffer's memory), offers
//! all of it (`tcp_select_initial_window`, no 64 KB limit since v6.10) and keeps one advmss
//! below it as the clamp (`tcp_init_buffer_space`, `tcp_app_win`), so `rcv_ssthresh` starts
//! at the clamp: no room to grow. The first skb of at least `rcv_mss` measures the real
//! ratio (payload / truesize; the testbed's is 197/256) and raises the clamp to the buffer's
//! window at that ratio (`tcp_set_window_clamp`); only then does `tcp_grow_window` grow
//! `rcv_ssthresh`, re-arming quickack with each step. The simulator's `rcv_buf` is that
//! window (docs/testbed.md, "a fixed receive buffer on the kernel"), so the initial space is
//! `rcv_buf x 128/197`. A connection of small frames only (a VoIP call) never measures the
//! ratio, so its window never grows and its ACKs are delayed once the initial quickacks are
//! spent. Autotuned buffers keep the simulator's own start (64 KiB, `initial_rcv_ssthresh`).
//!
//! The growth per skb: `rcv_ssthresh += min(room, max(2 advmss, 2 len))` for every in-order
//! skb of at least 128 bytes. Known difference: Linux gives an skb whose memory (`truesize`)
//! is more than its window (a small one) only what `__tcp_grow_window` allows (2 `rcv_mss`
//! while `rcv_ssthresh` is small against `tcp_rmem[2]`'s window, else nothing). Modelled with
//! `SKB_TRUESIZE(0)` as the skb's fixed part, it moved the grid's fast_slow/htb/4MiB median
//! by 100 ms and made `tests/schedulers.rs`'s ECF contrast lose minRTT's final RTO
//! (docs/testbed.md, "Session 8: ... rpc15e"); not kept. A call's frames do not need it: on a
//! fixed buffer they never measure the ratio, so they have no room to grow.

use super::Receiver;

/// Linux `TCP_DEFAULT_SCALING_RATIO` (of 256): the window before any skb was measured.
pub const SCALING_RATIO_DEFAULT: u64 = 128;
/// The payload / truesize ratio the testbed's 6.18 measures for full-sized segments (of 256;
/// docs/testbed.md, "a fixed receive buffer on the kernel": `rcv_ssthresh` at most 262 145 =
/// 340 656 x 197 >> 8).
const SCALING_RATIO_MEASURED: u64 = 197;

/// RFC 7323's largest window scale (Linux `TCP_MAX_WSCALE`).
const MAX_WSCALE: u32 = 14;

/// The largest window a fixed buffer whose steady window is `window_bytes` can ever offer:
/// `65535 << rcv_wscale`, the scale chosen once at the handshake. With `SOCK_RCVBUF_LOCK`,
/// `tcp_connect_init` / `tcp_openreq_init_rwin` clamp the space to `tcp_full_space`, the
/// buffer at the default ratio (`SO_RCVBUF` = `ceil(window x 128/197)`, as the kernel engine
/// sets it), and `tcp_select_initial_window` takes `rcv_wscale = clamp(ilog2(space) - 15, 0,
/// 14)`; `tcp_select_window` (and MPTCP's `mptcp_set_rwin`) never offer more. In the upper
/// part of every scale's band this is below `window_bytes`: 65 535 for 100 KB, 4 194 240 for
/// the default 6 MiB (measured on 6.18: docs/testbed.md, "fixed receive buffers and the window
/// scale"). An autotuned buffer takes its scale from `tcp_rmem[2]`, which the testbed sets to
/// at least twice the buffer: no cap.
pub fn fixed_buffer_window_cap_bytes(window_bytes: u64) -> u64 {
    let space = (window_bytes * SCALING_RATIO_DEFAULT).div_ceil(SCALING_RATIO_MEASURED);
    let wscale = space.max(1).ilog2().saturating_sub(15).min(MAX_WSCALE);
    65_535 << wscale
}

/// The clamp (and initial `rcv_ssthresh`) of a fixed buffer whose window is `window_bytes`,
/// before any skb measured the ratio: the initial space less one advmss.
pub(super) fn fixed_buffer_initial_clamp(window_bytes: u64, mss_bytes: u64) -> u64 {
    let space = window_bytes * SCALING_RATIO_DEFAULT / SCALING_RATIO_MEASURED;
    let mss = mss_bytes.max(1);
    if space > 2 * mss {
        (space / mss * mss).min(space - mss)
    } else {
        space
    }
}

impl Receiver {
    /// The receive buffer is fixed (no autotuning): `rcv_ssthresh` starts at the initial
    /// space's clamp and may grow only once a full-sized skb measured the ratio.
    pub fn set_fixed_buffer(&mut self) {
        if self.stats.bytes_received == 0 {
            self.fixed_buffer = true;
            self.rcv_ssthresh = fixed_buffer_initial_clamp(self.window_clamp, self.cfg.mss_bytes);
        }
    }

    /// Linux `tp->scaling_ratio` (of 256): the default until a full-sized skb measured the
    /// payload / truesize ratio (`tcp_measure_rcv_mss`).
    pub fn scaling_ratio(&self) -> u64 {
        if self.ratio_measured {
            SCALING_RATIO_MEASURED
        } else {
            SCALING_RATIO_DEFAULT
        }
    }

    /// The subflow exists (see [`super::Handshake::is_started`]).
    pub fn is_started(&self) -> bool {
        self.hs.is_started()
    }

    /// Linux `min(window_clamp, tcp_space)` for `tcp_grow_window` (inline: every in-order
    /// segment asks).
    #[inline(always)]
    fn grow_clamp(&self) -> u64 {
        if self.fixed_buffer && !self.ratio_measured {
            fixed_buffer_initial_clamp(self.window_clamp, self.cfg.mss_bytes)
        } else {
            self.window_clamp
        }
    }

    /// Linux `tcp_grow_window` for an in-order data skb of `len` bytes (`tcp_event_data_recv`
    /// calls it for skbs of at least 128 bytes, after `tcp_measure_rcv_mss`): `rcv_ssthresh`
    /// grows by max(2 MSS, 2 len), at most to the clamp, and quickack mode is
    /// armed for this ACK (`icsk_ack.quick |= 1`: an odd count stays, an even one gains one).
    #[inline(always)]
    pub(super) fn grow_window(&mut self, len: u64) {
        let clamp = self.grow_clamp();
        if len < 128 || self.rcv_ssthresh >= clamp {
            return;
        }
        let incr = 2 * self.cfg.mss_bytes;
        let room = clamp - self.rcv_ssthresh;
        self.rcv_ssthresh += room.min(incr.max(2 * len));
        if self.cfg.quickack_segments > 0 {
            self.quickacks_left |= 1;
        }
    }
}
