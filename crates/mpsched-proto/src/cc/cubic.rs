//! CUBIC (RFC 9438) with Linux's constants and HyStart (net/ipv4/tcp_cubic.c).
//!
//! Window growth after a loss follows W(t) = C (t - K)^3 + W_max with t measured from the
//! start of the epoch plus the minimum RTT (Linux aims one RTT ahead), C = 0.4
//! (`bic_scale` 41 / 1024 * 10), beta = 717/1024 (~0.7), fast convergence and the
//! TCP-friendly (Reno-emulation) region on, as Linux defaults. Growth is applied Linux-style:
//! cwnd gains one MSS per `cnt` MSS of acknowledged bytes, `cnt` = cwnd / (target - cwnd),
//! at least 2, at most 20 before the first loss. All arithmetic is integer (the cube root by
//! bisection), so runs are bit-reproducible on every machine.
//!
//! HyStart (Ha & Rhee 2011, Linux defaults `hystart=1`, `hystart_detect=3`) tracks rounds
//! from the first ACK and ends slow start early once cwnd >= 16 segments: ACK-train detection (ACKs spaced <= 2 ms apart spanning
//! more than half the minimum RTT) or delay increase (minimum of the first 8 RTT samples of a
//! round above delay_min + clamp(delay_min / 8, 4 ms, 16 ms)). Detection sets ssthresh = cwnd.
//! As in Linux it runs on every ACK's RTT sample while cwnd < ssthresh, whatever the state: in
//! fast recovery PRR can take cwnd below ssthresh, and a detection there lowers the window
//! recovery ends with.

use super::{AckSample, CcState, CongestionControl, CoupledView, MIN_SSTHRESH_SEGMENTS};
use crate::tcp::JIFFY_NS;
use crate::PendingNs;

/// Linux `beta` / `BICTCP_BETA_SCALE`: multiplicative decrease to 717/1024 of cwnd.
pub const BETA_NUM: u64 = 717;
/// Linux `BICTCP_BETA_SCALE`.
pub const BETA_DEN: u64 = 1024;
/// C = 0.4 (RFC 9438 §4.2, Linux `bic_scale` = 41 -> 41 * 10 / 1024), as a fraction.
const C_NUM: u128 = 4;
const C_DEN: u128 = 10;
const NS_PER_S: u128 = 1_000_000_000;
/// Linux `beta_scale` = 8 * (1024 + 717) / 3 / (1024 - 717) = 15: Reno emulation gains one MSS
/// per cwnd * 15 / 8 acknowledged bytes (alpha = 3 (1 - beta) / (1 + beta) ~ 0.53).
const BETA_SCALE: u64 = 8 * (BETA_DEN + BETA_NUM) / 3 / (BETA_DEN - BETA_NUM);
/// Linux `hystart_low_window`: HyStart acts once cwnd >= 16 segments.
pub const HYSTART_LOW_WINDOW_SEGMENTS: u64 = 16;
/// Linux `hystart_ack_delta_us`: ACKs closer than 2 ms form a train.
pub const HYSTART_ACK_DELTA_NS: u64 = 2_000_000;
/// Linux `HYSTART_MIN_SAMPLES`: RTT samples per round for delay detection.
pub const HYSTART_MIN_SAMPLES: u32 = 8;
/// Linux `HYSTART_DELAY_MIN` (4 ms) and `HYSTART_DELAY_MAX` (16 ms).
pub const HYSTART_DELAY_MIN_NS: u64 = 4_000_000;
/// See [`HYSTART_DELAY_MIN_NS`].
pub const HYSTART_DELAY_MAX_NS: u64 = 16_000_000;
/// Linux `GSO_LEGACY_MAX_SIZE` (64 KB), used by `hystart_ack_delay()`.
const GSO_MAX_BYTES: u64 = 65_536;

/// Linux `cubictcp_cong_avoid` up to `bictcp_update`: nothing unless cwnd limited the sender
/// (`tcp_is_cwnd_limited`); in slow start `tcp_slow_start` grows cwnd by every acknowledged
/// byte up to ssthresh (Linux has no RFC 3465 per-ACK limit since 3.9, so an ACK of a GSO
/// skb of 6 segments opens 6), and only what is left over after crossing ssthresh reaches
/// congestion avoidance. (With a per-ACK limit the rest would start a cubic epoch while still
/// in slow start, and HyStart, which ignores the second after an epoch starts, would stop.)
fn linux_slow_start(tcb: &mut CcState, ack: &AckSample) -> Option<u64> {
    if !ack.cwnd_limited {
        return None;
    }
    if !tcb.in_slow_start() {
        return Some(ack.acked_bytes);
    }
    let inc = ack
        .acked_bytes
        .min(tcb.ssthresh_bytes.saturating_sub(tcb.cwnd_bytes));
    tcb.cwnd_bytes += inc;
    let left = ack.acked_bytes - inc;
    (left > 0).then_some(left)
}

/// CUBIC + HyStart state (Linux `struct bictcp`).
#[derive(Debug, Clone, Default)]
pub struct Cubic {
    /// W_max before fast convergence, bytes (0 = no loss yet).
    last_max_bytes: u64,
    /// Start of the current epoch (none before the first ACK after a loss or the start):
    /// Linux `ca->epoch_start` is in jiffies, so this is always the start of a jiffy.
    epoch_start_ns: PendingNs,
    origin_bytes: u64,
    k_ns: u64,
    /// Bytes acked since the epoch start (Reno emulation).
    ack_cnt_bytes: u64,
    /// Reno-emulated window, bytes.
    tcp_cwnd_bytes: u64,
    /// Linux `snd_cwnd_cnt`, in bytes.
    cnt_acc_bytes: u64,
    delay_min_ns: u64,
    /// Linux `ca->cnt`: acknowledged MSS per MSS of growth, as last computed (0 before).
    cnt: u64,
    /// Linux `ca->last_cwnd`: cwnd when `cnt` was last recomputed, bytes.
    last_cwnd_bytes: u64,
    /// Linux `ca->last_time`: when `cnt` was last recomputed, in jiffies (u32, wrapping as
    /// the kernel's `tcp_jiffies32`).
    last_time_jiffies: u32,
    // HyStart round state.
    found: bool,
    round_start_ns: u64,
    last_ack_ns: u64,
    end_seq: u64,
    curr_rtt_ns: u64,
    sample_cnt: u32,
    round_started: bool,
}

impl Cubic {
    /// True once HyStart ended slow start (for tests and records).
    pub fn hystart_found(&self) -> bool {
        self.found
    }

    /// Linux `ca->cnt` as last computed (tests).
    #[cfg(test)]
    pub(crate) fn cnt(&self) -> u64 {
        self.cnt
    }

    /// The epoch's start, ns (tests).
    #[cfg(test)]
    pub(crate) fn epoch_start_ns(&self) -> Option<u64> {
        self.epoch_start_ns.get()
    }

    fn hystart_reset(&mut self, now_ns: u64, snd_nxt: u64) {
        self.round_start_ns = now_ns;
        self.last_ack_ns = now_ns;
        self.end_seq = snd_nxt;
        self.curr_rtt_ns = u64::MAX;
        self.sample_cnt = 0;
        self.round_started = true;
    }

    fn hystart_update(&mut self, tcb: &mut CcState, ack: &AckSample, delay_ns: u64) {
        // Rounds are tracked from the first ACK, whatever cwnd (Linux resets the round before
        // its `hystart_low_window` test), so they stay aligned with the ACK-clocked flights
        // of slow start; starting them at cwnd 16 would start one mid-flight, and its ACK
        // train would end at the flight's tail.
        if !self.round_started || ack.snd_una > self.end_seq {
            self.hystart_reset(ack.now_ns, ack.snd_nxt);
        }
        if tcb.cwnd_bytes < HYSTART_LOW_WINDOW_SEGMENTS * tcb.mss_bytes {
            return;
        }
        let now = ack.now_ns;
        // ACK train.
        if now.saturating_sub(self.last_ack_ns) <= HYSTART_ACK_DELTA_NS {
            self.last_ack_ns = now;
            // Linux `hystart_ack_delay`: time to send four GSO bursts, at most 1 ms.
            let ack_delay_ns = (4 * GSO_MAX_BYTES * 8 * 1_000_000_000)
                .checked_div(ack.pacing_rate_bps)
                .map_or(0, |d| d.min(1_000_000));
            // No pacing qdisc: threshold halved (Linux `SK_PACING_NONE`).
            let threshold = (self.delay_min_ns + ack_delay_ns) >> 1;
            if now - self.round_start_ns > threshold {
                self.found = true;
                tcb.ssthresh_bytes = tcb.cwnd_bytes;
            }
        }
        // Delay increase.
        self.curr_rtt_ns = self.curr_rtt_ns.min(delay_ns);
        if self.sample_cnt < HYSTART_MIN_SAMPLES {
            self.sample_cnt += 1;
        } else {
            let thresh = (self.delay_min_ns >> 3).clamp(HYSTART_DELAY_MIN_NS, HYSTART_DELAY_MAX_NS);
            if self.curr_rtt_ns > self.delay_min_ns + thresh {
                self.found = true;
                tcb.ssthresh_bytes = tcb.cwnd_bytes;
            }
        }
    }

    /// Linux `bictcp_update`'s hold: `cnt` is kept while cwnd is unchanged since the last
    /// recomputation and at most `HZ / 32` jiffies have passed (`tcp_jiffies32` against
    /// `ca->last_time`; measured on the testbed's 6.18 kernel, where `last_time` holds
    /// jiffies, docs/testbed.md "Session 17"). Between recomputations the ACKs only count.
    #[inline(always)]
    fn holds_cnt(&self, cwnd: u64, now_ns: u64) -> bool {
        let since_jiffies = jiffies32(now_ns).wrapping_sub(self.last_time_jiffies) as i32;
        self.last_cwnd_bytes == cwnd && since_jiffies <= LAST_TIME_HOLD_JIFFIES
    }

    /// Linux `bictcp_update` past its hold (the caller counted the ACK in `ack_cnt_bytes`
    /// and found [`Cubic::holds_cnt`] false): returns `cnt`, acknowledged MSS per one MSS of
    /// growth, and recomputes the cubic target at most once per jiffy.
    fn recompute_cnt(&mut self, tcb: &CcState, ack: &AckSample) -> u64 {
        let cwnd = tcb.cwnd_bytes;
        let mss = tcb.mss_bytes;
        let now_jiffies = jiffies32(ack.now_ns);
        let cnt = if self.epoch_start_ns.get().is_some() && now_jiffies == self.last_time_jiffies {
            self.cnt
        } else {
            self.last_cwnd_bytes = cwnd;
            self.last_time_jiffies = now_jiffies;
            self.target_cnt(cwnd, mss, ack)
        };
        let cnt = self.friendly_cnt(cwnd, mss, cnt).max(2);
        self.cnt = cnt;
        cnt
    }

    /// [`CongestionControl::on_ack`] when `bictcp_update` recomputes `cnt` (out of line).
    #[inline(never)]
    fn on_ack_recomputing(&mut self, tcb: &mut CcState, ack: &AckSample, acked: u64) {
        let cnt = self.recompute_cnt(
            tcb,
            &AckSample {
                acked_bytes: acked,
                ..*ack
            },
        );
        self.cong_avoid_ai(tcb, cnt, acked);
    }

    /// Linux `tcp_cong_avoid_ai` in bytes: one MSS of growth per `cnt` MSS acknowledged.
    #[inline(always)]
    fn cong_avoid_ai(&mut self, tcb: &mut CcState, cnt: u64, acked: u64) {
        let step = cnt * tcb.mss_bytes;
        // Credits accumulated at a higher cnt are applied gently: one MSS, then reset.
        if self.cnt_acc_bytes >= step {
            self.cnt_acc_bytes = 0;
            tcb.cwnd_bytes += tcb.mss_bytes;
        }
        self.cnt_acc_bytes += acked;
        if self.cnt_acc_bytes >= step {
            let n = self.cnt_acc_bytes / step;
            self.cnt_acc_bytes -= n * step;
            tcb.cwnd_bytes += n * tcb.mss_bytes;
        }
    }

    /// `bictcp_update`'s cubic part: the epoch (started here if none), the target one
    /// `delay_min` ahead, and `cnt` towards it (capped at 20 before any loss). The time since
    /// the epoch counts whole jiffies, as the kernel's `(tcp_jiffies32 - epoch_start) *
    /// USEC_PER_JIFFY`.
    fn target_cnt(&mut self, cwnd: u64, mss: u64, ack: &AckSample) -> u64 {
        let now_ns = jiffy_start_ns(ack.now_ns);
        let epoch = match self.epoch_start_ns.get() {
            Some(e) => e,
            None => {
                self.epoch_start_ns = PendingNs::at(now_ns);
                self.ack_cnt_bytes = ack.acked_bytes;
                self.tcp_cwnd_bytes = cwnd;
                if self.last_max_bytes <= cwnd {
                    self.k_ns = 0;
                    self.origin_bytes = cwnd;
                } else {
                    // K = cbrt((W_max - cwnd) / C), in seconds with W in segments.
                    let num = (self.last_max_bytes - cwnd) as u128
                        * C_DEN
                        * NS_PER_S
                        * NS_PER_S
                        * NS_PER_S;
                    self.k_ns = cbrt_u128(num / (C_NUM * mss as u128)) as u64;
                    self.origin_bytes = self.last_max_bytes;
                }
                now_ns
            }
        };
        let t_ns = now_ns.saturating_sub(epoch) + self.delay_min_ns;
        let k = self.k_ns;
        let offs_ns = t_ns.abs_diff(k).min(OFFS_MAX_NS);
        let delta = cubic_delta_bytes(mss, offs_ns);
        let target = if t_ns < k {
            self.origin_bytes.saturating_sub(delta)
        } else {
            self.origin_bytes + delta
        };
        let mut cnt = if target > cwnd {
            cwnd / (target - cwnd)
        } else {
            100 * cwnd / mss
        };
        // Before any loss, grow at most ~5% per RTT (Linux: cnt capped at 20).
        if self.last_max_bytes == 0 {
            cnt = cnt.min(20);
        }
        cnt
    }

    /// `bictcp_update`'s TCP-friendly region: the Reno-emulated window grows with the
    /// acknowledged bytes, and `cnt` is lowered so cwnd grows at least as fast as it.
    fn friendly_cnt(&mut self, cwnd: u64, mss: u64, mut cnt: u64) -> u64 {
        let delta_bytes = (cwnd * BETA_SCALE / 8).max(1);
        while self.ack_cnt_bytes > delta_bytes {
            self.ack_cnt_bytes -= delta_bytes;
            self.tcp_cwnd_bytes += mss;
        }
        if self.tcp_cwnd_bytes > cwnd {
            let max_cnt = cwnd / (self.tcp_cwnd_bytes - cwnd);
            cnt = cnt.min(max_cnt);
        }
        cnt
    }

    fn reset(&mut self) {
        *self = Cubic {
            delay_min_ns: 0,
            ..Default::default()
        };
    }
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    // Out of line (as a trait object's method it is anyway): `AnyCc` calls it directly.
    #[inline(never)]
    fn on_rtt_sample(&mut self, tcb: &mut CcState, ack: &AckSample) {
        // Linux `cubictcp_acked`: RTT bookkeeping and HyStart, on every ACK with a sample and
        // in any state (in fast recovery too, whenever PRR has taken cwnd below ssthresh; the
        // testbed's subflows end most of their first recoveries that way: ssthresh = the PRR
        // window, below beta x cwnd), skipping the second after a cubic epoch starts.
        let Some(rtt) = ack.rtt_sample_ns else {
            return;
        };
        // (`(s32)(tcp_jiffies32 - ca->epoch_start) < HZ`: whole jiffies, the epoch's unit.)
        let after_recovery = self
            .epoch_start_ns
            .get()
            .is_some_and(|e| jiffy_start_ns(ack.now_ns).saturating_sub(e) < NS_PER_S as u64);
        if !after_recovery {
            let delay = rtt.max(1);
            if self.delay_min_ns == 0 || self.delay_min_ns > delay {
                self.delay_min_ns = delay;
            }
            if !self.found && tcb.in_slow_start() {
                self.hystart_update(tcb, ack, delay);
            }
        }
    }

    #[inline(never)]
    fn on_ack(&mut self, tcb: &mut CcState, ack: &AckSample, _view: &CoupledView<'_>) {
        // Linux `cubictcp_cong_avoid` (HyStart ran before, in `on_rtt_sample`).
        let Some(acked) = linux_slow_start(tcb, ack) else {
            return;
        };
        self.ack_cnt_bytes += acked;
        if self.holds_cnt(tcb.cwnd_bytes, ack.now_ns) {
            // Most ACKs in congestion avoidance. The recomputation is a call of its own, so
            // that this path and slow start's save no registers (15 instructions an ACK).
            self.cong_avoid_ai(tcb, self.cnt, acked);
            return;
        }
        self.on_ack_recomputing(tcb, ack, acked);
    }

    fn ssthresh_on_loss(&mut self, tcb: &CcState, _now_ns: u64, _view: &CoupledView<'_>) -> u64 {
        // Linux `cubictcp_recalc_ssthresh`: end the epoch, remember W_max with fast convergence.
        self.epoch_start_ns = PendingNs::NONE;
        let cwnd = tcb.cwnd_bytes;
        self.last_max_bytes = if cwnd < self.last_max_bytes {
            cwnd * (BETA_DEN + BETA_NUM) / (2 * BETA_DEN)
        } else {
            cwnd
        };
        (cwnd * BETA_NUM / BETA_DEN).max(MIN_SSTHRESH_SEGMENTS * tcb.mss_bytes)
    }

    fn on_rto(&mut self, tcb: &CcState, now_ns: u64, view: &CoupledView<'_>) -> u64 {
        let ssthresh = self.ssthresh_on_loss(tcb, now_ns, view);
        // Linux `cubictcp_state(TCP_CA_Loss)`: full reset, HyStart armed again.
        self.reset();
        ssthresh
    }

    fn on_recovery_exit(&mut self, _tcb: &mut CcState, _now_ns: u64) {
        self.cnt_acc_bytes = 0;
    }

    fn on_tx_start(&mut self, now_ns: u64, idle_ns: u64) {
        // Linux `cubictcp_cwnd_event(CA_EVENT_TX_START)`: the idle time does not count as
        // growth time, so shift the epoch (not past now), in jiffies: `tcp_jiffies32 -
        // tp->lsndtime`, the last send's jiffy.
        if let Some(e) = self.epoch_start_ns.get() {
            let now = jiffy_start_ns(now_ns);
            let idle = now - jiffy_start_ns(now_ns.saturating_sub(idle_ns));
            if idle > 0 {
                self.epoch_start_ns = PendingNs::at((e + idle).min(now));
            }
        }
    }
}

/// `bictcp_update` keeps `cnt` while cwnd is unchanged and at most `HZ / 32` jiffies have
/// passed: 7 at the testbed's `CONFIG_HZ=250` (the integer quotient), so a recomputation
/// comes 8 jiffy ticks (32 ms) after the last one at the earliest.
const LAST_TIME_HOLD_JIFFIES: i32 = (NS_PER_S as u64 / JIFFY_NS / 32) as i32;

/// Linux `tcp_jiffies32` at `now_ns` (the simulator's jiffies tick from time 0, as its timers').
fn jiffies32(now_ns: u64) -> u32 {
    (now_ns / JIFFY_NS) as u32
}

/// The start of the jiffy `now_ns` falls in: a jiffy timestamp, in ns.
fn jiffy_start_ns(now_ns: u64) -> u64 {
    now_ns - now_ns % JIFFY_NS
}

/// The offset |t - K| is clamped to 100 s (the curve is flat beyond any real epoch).
const OFFS_MAX_NS: u64 = 100 * NS_PER_S as u64;
/// Denominator of the cubic term: C_DEN * (1 s in ns)^3 = 10^28 = 2^28 * 5^28.
const DELTA_DEN: u128 = C_DEN * NS_PER_S * NS_PER_S * NS_PER_S;
/// floor(2^128 / 5^28) (< 2^63): with it, x / 10^28 ~ (x >> 64) * DELTA_RECIP >> 92.
/// (5^28 is odd, so floor((2^128 - 1) / 5^28) = floor(2^128 / 5^28).)
const DELTA_RECIP: u128 = u128::MAX / (DELTA_DEN >> 28);

/// The cubic term C * mss * offs^3 (offs in seconds), in bytes: exactly
/// floor(C_NUM * mss * offs_ns^3 / (C_DEN * 10^27)), capped at u64::MAX / 2, for
/// mss <= 65535 and offs_ns <= 100 s (then the numerator x < 2^128). The caller clamps the
/// offset; the simulator's config check refuses an MSS above 65 000 (`mss_bytes`).
///
/// Per ACK, so without the u128 division (`__udivti3`, ~40 instructions): the quotient is
/// estimated by one 64x64 multiply with the reciprocal [`DELTA_RECIP`] and corrected once.
/// Error bound: dropping the low 64 bits of x and the fraction of the reciprocal lower
/// the estimate by less than 2^36 / 5^28 + x / 2^156 < 10^-8 of a unit, and it is never
/// above x / 10^28, so it is the exact floor or one below it.
fn cubic_delta_bytes(mss_bytes: u64, offs_ns: u64) -> u64 {
    debug_assert!(mss_bytes <= 65_535 && offs_ns <= OFFS_MAX_NS);
    // 4 * mss * offs < 2^18 * 2^37 fits u64; offs^2 < 2^74.
    let x = (C_NUM as u64 * mss_bytes * offs_ns) as u128 * (offs_ns as u128 * offs_ns as u128);
    let q = div_delta_den(x);
    q.min(u64::MAX / 2)
}

/// floor(x / 10^28) for x <= 2^128 - 10^28 (the cubic term's x is < 2^127.7).
fn div_delta_den(x: u128) -> u64 {
    debug_assert!(x <= u128::MAX - DELTA_DEN + 1);
    let mut q = (((x >> 64) * DELTA_RECIP) >> 92) as u64;
    // (q + 1) * 10^28 <= x + 10^28 <= 2^128: no overflow, by the domain.
    // (q < 2^36, so q + 1 fits u64 and the product is one 64x128 multiply.)
    if (q + 1) as u128 * DELTA_DEN <= x {
        q += 1;
    }
    q
}

/// Integer cube root (floor), by bisection: deterministic on every platform.
pub fn cbrt_u128(x: u128) -> u128 {
    let cube_le = |m: u128| {
        m.checked_mul(m)
            .and_then(|v| v.checked_mul(m))
            .is_some_and(|c| c <= x)
    };
    // cbrt(2^128) < 2^43.
    let (mut lo, mut hi) = (0u128, 1u128 << 43);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if cube_le(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

#[cfg(test)]
mod delta_tests {
    use super::*;
    use proptest::prelude::*;

    /// The formula before the reciprocal (u128 division), as the reference.
    fn delta_by_division(mss_bytes: u64, offs_ns: u64) -> u64 {
        let offs = offs_ns as u128;
        let delta = C_NUM * mss_bytes as u128 * offs * offs * offs / DELTA_DEN;
        delta.min(u64::MAX as u128 / 2) as u64
    }

    #[test]
    fn reciprocal_is_floor_of_two_to_128_over_five_to_28() {
        let five_28 = 5u128.pow(28);
        assert_eq!(DELTA_DEN, five_28 << 28);
        // DELTA_RECIP * 5^28 <= 2^128 - 1 < (DELTA_RECIP + 1) * 5^28.
        assert!(DELTA_RECIP.checked_mul(five_28).is_some());
        assert!((DELTA_RECIP + 1).checked_mul(five_28).is_none());
    }

    #[test]
    fn delta_matches_division_at_the_edges() {
        let offs = [
            0,
            1,
            999_999_999,
            1_000_000_000,
            2_154_434_690, // ~cbrt(10^28): the term crosses 1 for small mss
            4_217_163_326, // K for W_max = 100 segments, 30 % back-off
            OFFS_MAX_NS - 1,
            OFFS_MAX_NS,
        ];
        for mss in [1, 2, 536, 1_000, 1_448, 1_460, 8_948, 65_534, 65_535] {
            for o in offs {
                assert_eq!(
                    cubic_delta_bytes(mss, o),
                    delta_by_division(mss, o),
                    "{mss} {o}"
                );
            }
        }
        // The largest numerator of the domain: 4 * 65535 * 10^33.
        assert_eq!(cubic_delta_bytes(65_535, OFFS_MAX_NS), 26_214_000_000);
    }

    #[test]
    fn division_is_exact_around_every_kind_of_multiple() {
        // Multiples of 10^28 and their neighbours, where an estimate one low would show.
        let top = (u128::MAX - DELTA_DEN + 1) / DELTA_DEN;
        for q in (0..2_000u128)
            .chain(top - 2_000..=top)
            .chain([1 << 20, 1 << 34, 26_214_000_000])
        {
            for x in [
                q * DELTA_DEN,
                (q * DELTA_DEN).wrapping_sub(1),
                q * DELTA_DEN + 1,
            ] {
                if x > u128::MAX - DELTA_DEN + 1 {
                    continue;
                }
                assert_eq!(div_delta_den(x) as u128, x / DELTA_DEN, "{x}");
            }
        }
        let last = u128::MAX - DELTA_DEN + 1;
        assert_eq!(div_delta_den(last) as u128, last / DELTA_DEN);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200_000))]

        #[test]
        fn delta_matches_division(mss in 1u64..=65_535, offs in 0u64..=OFFS_MAX_NS) {
            prop_assert_eq!(cubic_delta_bytes(mss, offs), delta_by_division(mss, offs));
        }

        #[test]
        fn delta_matches_division_for_short_offsets(mss in 1u64..=65_535, offs in 0u64..=5_000_000_000) {
            prop_assert_eq!(cubic_delta_bytes(mss, offs), delta_by_division(mss, offs));
        }

        #[test]
        fn division_matches_near_multiples(q in 0u128..=26_214_000_001, d in -1_000_000i128..=1_000_000) {
            let x = (q * DELTA_DEN).saturating_add_signed(d);
            prop_assert_eq!(div_delta_den(x) as u128, x / DELTA_DEN);
        }

        #[test]
        fn division_matches_anywhere(x in 0u128..=u128::MAX - DELTA_DEN + 1) {
            prop_assert_eq!(div_delta_den(x) as u128, x / DELTA_DEN);
        }
    }
}

#[cfg(test)]
#[path = "cubic_on_ack_tests.rs"]
mod on_ack_tests;
