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
//! The growth per skb depends on its memory (`truesize`): a full-sized segment has the
//! measured ratio, so its window equals its payload and it grows `rcv_ssthresh` by 2 advmss
//! (`tcp_grow_window`'s first branch, taken here for a segment of at least `rcv_mss`); a
//! smaller one carries the skb's fixed part too, and `__tcp_grow_window` grows by 2 `rcv_mss`
//! only while `rcv_ssthresh` is at most the host's largest window / 2, halved for every halving
//! that half the skb's window needs to fit its payload: small frames stop growing the window
//! (and re-arming quickack) once it is large. The host's largest window (`tcp_rmem[2]`'s) is
//! the simulator's buffer ceiling, `rcv_buf` (the testbed sets `tcp_rmem[2]` to twice it, a
//! window 1.54 times larger). The skb's fixed part is taken as Linux's `SKB_TRUESIZE(0)` on
//! x86-64 (the `sk_buff` and `skb_shared_info` structures, 256 + 320 bytes), a lower bound:
//! the kernel's skb also holds a head buffer.

use super::Receiver;

/// Linux `TCP_DEFAULT_SCALING_RATIO` (of 256): the window before any skb was measured.
const SCALING_RATIO_DEFAULT: u64 = 128;
/// The payload / truesize ratio the testbed's 6.18 measures for full-sized segments (of 256;
/// docs/testbed.md, "a fixed receive buffer on the kernel": `rcv_ssthresh` at most 262 145 =
/// 340 656 x 197 >> 8).
const SCALING_RATIO_MEASURED: u64 = 197;
/// Linux `SKB_TRUESIZE(0)` on x86-64: SKB_DATA_ALIGN(sizeof(struct sk_buff)) +
/// SKB_DATA_ALIGN(sizeof(struct skb_shared_info)).
const SKB_FIXED_TRUESIZE_BYTES: u64 = 256 + 320;

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

    /// Linux `min(window_clamp, tcp_space)` for `tcp_grow_window`.
    fn grow_clamp(&self) -> u64 {
        if self.fixed_buffer && !self.ratio_measured {
            fixed_buffer_initial_clamp(self.window_clamp, self.cfg.mss_bytes)
        } else {
            self.window_clamp
        }
    }

    /// Linux `tcp_grow_window` for an in-order data skb of `len` bytes (`tcp_event_data_recv`
    /// calls it for skbs of at least 128 bytes, after `tcp_measure_rcv_mss`): `rcv_ssthresh`
    /// grows by max(the skb's increment, 2 len), at most to the clamp, and quickack mode is
    /// armed for this ACK (`icsk_ack.quick |= 1`: an odd count stays, an even one gains one).
    pub(super) fn grow_window(&mut self, len: u64) {
        let clamp = self.grow_clamp();
        if len < 128 || self.rcv_ssthresh >= clamp {
            return;
        }
        let incr = if len >= u64::from(self.rcv_mss) {
            2 * self.cfg.mss_bytes
        } else {
            self.small_skb_increment(len)
        };
        if incr == 0 {
            return;
        }
        let room = clamp - self.rcv_ssthresh;
        self.rcv_ssthresh += room.min(incr.max(2 * len));
        if self.cfg.quickack_segments > 0 {
            self.quickacks_left |= 1;
        }
    }

    /// Linux `__tcp_grow_window` for an skb of `len` bytes whose memory is more than its
    /// window: 2 `rcv_mss` while `rcv_ssthresh` is at most half the largest window, halved as
    /// often as half the skb's window is halved to fit in `len`; else 0.
    fn small_skb_increment(&self, len: u64) -> u64 {
        let truesize = len + SKB_FIXED_TRUESIZE_BYTES;
        let mut skb_window = truesize * SCALING_RATIO_MEASURED / 256 / 2;
        let mut window = self.cfg.rcv_buf_bytes / 2;
        while self.rcv_ssthresh <= window {
            if skb_window <= len {
                return 2 * u64::from(self.rcv_mss);
            }
            skb_window >>= 1;
            window >>= 1;
        }
        0
    }
}
