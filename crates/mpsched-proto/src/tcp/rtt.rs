//! RTT estimator and retransmission timeout (RFC 6298 with Linux's bounds).
//!
//! Linux `tcp_rtt_estimator()` / `tcp_set_rto()` (net/ipv4/tcp_input.c) floor the variance term
//! at `TCP_RTO_MIN`, so RTO = SRTT + max(4 * RTTVAR, 200 ms); RFC 6298 (2.4) instead floors the
//! whole RTO at 1 s. We follow Linux, since the testbed runs Linux.

/// RFC 6298 (2.1): RTO before any sample, also Linux `TCP_TIMEOUT_INIT` (1 s).
pub const INITIAL_RTO_NS: u64 = 1_000_000_000;
/// Linux `TCP_RTO_MIN` (HZ / 5 = 200 ms), applied to the variance term.
pub const MIN_RTO_NS: u64 = 200_000_000;
/// Linux `TCP_RTO_MAX` (120 s), RFC 6298 (2.5) allows a cap of at least 60 s.
pub const MAX_RTO_NS: u64 = 120_000_000_000;
/// One jiffy of the testbed's kernel (`CONFIG_HZ=250`, /proc/config.gz of 6.18.44): Linux keeps
/// the RTO in jiffies (`__tcp_set_rto` returns `usecs_to_jiffies(srtt + rttvar)`, rounding up)
/// and backs it off by shifting that count.
pub const JIFFY_NS: u64 = 4_000_000;

/// When a Linux `timer_list` armed at `now_ns` to expire `delay_ns` later (a whole number of
/// jiffies) fires: the timer wheel (kernel/time/timer.c `calc_wheel_index` / `calc_index`)
/// files it at a level by its distance in jiffies (< 63: level 0, < 504: level 1, < 4032:
/// level 2, ...; each level 8 times coarser) and rounds the expiry up to the next boundary of
/// that level's granularity, "to guarantee that a timer does not fire early": one jiffy at level
/// 0, up to 8 at level 1 (32 ms at HZ 250), up to 64 at level 2. Every timer the model arms is
/// such a `timer_list` (`sk_reset_timer`): the retransmission timer that also carries the loss
/// probe and the RACK reordering timeout (`icsk_retransmit_timer`), the delayed ACK
/// (`icsk_delack_timer`) and the MPTCP retransmit timer; `delay_ns` is rounded up to whole
/// jiffies as `usecs_to_jiffies` does. (Pacing and the compressed-ACK timer are hrtimers; the
/// model has neither.)
#[inline]
pub fn timer_wheel_fire_ns(now_ns: u64, delay_ns: u64) -> u64 {
    timer_wheel_fire_after_jiffies(now_ns, jiffies_ceil(delay_ns))
}

/// [`timer_wheel_fire_ns`] for a delay already in whole jiffies (the RTO is kept in them, as
/// Linux keeps `icsk_rto`), so the ACK path's re-arm skips the rounding up.
#[inline]
pub fn timer_wheel_fire_after_jiffies(now_ns: u64, delta_j: u64) -> u64 {
    let now_j = now_ns / JIFFY_NS;
    let expires_j = now_j + delta_j;
    // Level 0 (under 63 jiffies, 252 ms: every probe and most RTOs) without the loop.
    if delta_j < 63 {
        return (expires_j + 1) * JIFFY_NS;
    }
    let mut shift = 3u32;
    // LVL_START(n) = 63 << (3 (n - 1)); 9 levels at HZ 250 (the last one is the cap).
    while shift < 24 && delta_j >= 63u64 << shift {
        shift += 3;
    }
    (((expires_j >> shift) + 1) << shift) * JIFFY_NS
}

/// `delay_ns` in whole jiffies, rounded up: `div_ceil` as one multiply (`div_ceil` itself
/// compiles to a multiply and a remainder test; the sender computes this for every segment
/// sent and every ACK: RTO, probe, RACK). Only a delay within a jiffy of `u64::MAX`, which
/// the model never arms, takes `div_ceil`.
#[inline]
#[allow(clippy::manual_div_ceil)] // on purpose: `div_ceil` is the slower form here (see above)
fn jiffies_ceil(delay_ns: u64) -> u64 {
    if delay_ns <= u64::MAX - (JIFFY_NS - 1) {
        (delay_ns + (JIFFY_NS - 1)) / JIFFY_NS
    } else {
        delay_ns.div_ceil(JIFFY_NS)
    }
}

/// Linux `tcp_rtt_estimator`'s deviation step: with `m` the sample's error (signed, a `long`
/// there), `mdev += m - mdev/4`, but only an eighth of a positive excess while the sample is below
/// srtt. Written in u64 without the signed error (the i128 form cost ~8 instructions a sample):
/// the result is never negative (`mdev - mdev/4 >= 0`, the kernel's clamp never binds), so each
/// branch is an unsigned add or subtract, wrapping where the signed sum reduced mod 2^64 would
/// (`mdev4_step_is_the_signed_form` checks it against the i128 form).
#[inline(always)]
fn mdev4_step(mdev4_ns: u64, srtt_ns: u64, rtt_ns: u64) -> u64 {
    let quarter = mdev4_ns / 4;
    if rtt_ns < srtt_ns {
        let below = srtt_ns - rtt_ns;
        if below > quarter {
            mdev4_ns.wrapping_add((below - quarter) >> 3)
        } else {
            mdev4_ns - (quarter - below)
        }
    } else {
        (mdev4_ns - quarter).wrapping_add(rtt_ns - srtt_ns)
    }
}

/// SRTT / RTTVAR / min RTT state of one subflow.
#[derive(Debug, Clone, Default)]
pub struct RttEstimator {
    /// Smoothed RTT, ns (0 before the first sample).
    pub srtt_ns: u64,
    /// Minimum sample seen, ns (0 before the first sample).
    pub min_rtt_ns: u64,
    /// Latest raw sample, ns.
    pub last_rtt_ns: u64,
    /// True once a sample has been taken.
    pub has_sample: bool,
    /// Linux `mdev_us`: four times the mean deviation, ns.
    mdev4_ns: u64,
    /// Linux `mdev_max_us`: the largest `mdev4_ns` in the current window of data, at least
    /// `TCP_RTO_MIN`.
    mdev_max_ns: u64,
    /// Linux `rttvar_us`: the variance term of the RTO, at least `TCP_RTO_MIN`; it rises at once
    /// to `mdev_max_ns` and falls by a quarter of the excess once a window.
    rto_var_ns: u64,
    /// Linux `rtt_seq`: `snd_nxt` when the current window began.
    rtt_seq: u64,
}

impl RttEstimator {
    /// Feeds one RTT sample that ends the estimator's window (a handshake's, a test's).
    pub fn on_sample(&mut self, rtt_ns: u64) {
        self.on_sample_at(rtt_ns, u64::MAX, u64::MAX);
        self.note_min_rtt(rtt_ns);
    }

    /// RTT variation, ns: Linux `mdev_us >> 2`, what `tcpi_rttvar` reports.
    #[inline]
    pub fn rttvar_ns(&self) -> u64 {
        self.mdev4_ns / 4
    }

    /// Lowers the minimum RTT to `rtt_ns`. Linux feeds its min-RTT filter the congestion
    /// control's sample (`tcp_update_rtt_min(sk, ca_rtt_us, ..)`: the latest-sent segment an ACK
    /// delivers), not the estimator's, which is measured from the earliest one.
    pub fn note_min_rtt(&mut self, rtt_ns: u64) {
        let rtt_ns = rtt_ns.max(1);
        self.min_rtt_ns = if self.min_rtt_ns == 0 {
            rtt_ns
        } else {
            self.min_rtt_ns.min(rtt_ns)
        };
    }

    /// Feeds one RTT sample, Linux `tcp_rtt_estimator` (net/ipv4/tcp_input.c): srtt with gain
    /// 1/8; the deviation with gain 1/4, but only 1/32 while samples fall below srtt (its
    /// "Eifel" variant); the RTO's variance term is the largest deviation of the window, kept
    /// until `snd_una` passes the `snd_nxt` of the window's start, then lowered by a quarter of
    /// its excess. So one long sample (an ACK after lost ones) holds the RTO up for many RTTs,
    /// where RFC 6298's estimate would decay it sample by sample.
    pub fn on_sample_at(&mut self, rtt_ns: u64, snd_una: u64, snd_nxt: u64) {
        let rtt_ns = rtt_ns.max(1);
        self.last_rtt_ns = rtt_ns;
        if !self.has_sample {
            self.has_sample = true;
            self.srtt_ns = rtt_ns;
            self.mdev4_ns = 2 * rtt_ns; // "make sure rto = 3*rtt"
            self.rto_var_ns = self.mdev4_ns.max(MIN_RTO_NS);
            self.mdev_max_ns = self.rto_var_ns;
            self.rtt_seq = snd_nxt;
            return;
        }
        self.mdev4_ns = mdev4_step(self.mdev4_ns, self.srtt_ns, rtt_ns);
        if self.mdev4_ns > self.mdev_max_ns {
            self.mdev_max_ns = self.mdev4_ns;
            self.rto_var_ns = self.rto_var_ns.max(self.mdev_max_ns);
        }
        if snd_una > self.rtt_seq {
            if self.mdev_max_ns < self.rto_var_ns {
                self.rto_var_ns -= (self.rto_var_ns - self.mdev_max_ns) / 4;
            }
            self.rtt_seq = snd_nxt;
            self.mdev_max_ns = MIN_RTO_NS;
        }
        self.srtt_ns = (7 * self.srtt_ns + rtt_ns) / 8;
    }

    /// Base RTO (no backoff), ns: Linux `__tcp_set_rto`, srtt + `rttvar_us`.
    pub fn rto_ns(&self) -> u64 {
        self.rto_jiffies() * JIFFY_NS
    }

    /// Base RTO in whole jiffies (rounded up, as `usecs_to_jiffies`), at most [`MAX_RTO_NS`]
    /// (a whole number of jiffies, so capping the count is capping the time).
    #[inline]
    pub fn rto_jiffies(&self) -> u64 {
        if !self.has_sample {
            return INITIAL_RTO_NS / JIFFY_NS;
        }
        jiffies_ceil(self.srtt_ns + self.rto_var_ns.max(MIN_RTO_NS)).min(MAX_RTO_NS / JIFFY_NS)
    }

    /// RTO after `backoff` doublings (RFC 6298 (5.5)), capped at [`MAX_RTO_NS`].
    pub fn backed_off_rto_ns(&self, backoff: u32) -> u64 {
        self.backed_off_rto_jiffies(backoff) * JIFFY_NS
    }

    /// [`RttEstimator::backed_off_rto_ns`] in jiffies (Linux shifts the jiffy count too).
    #[inline]
    pub fn backed_off_rto_jiffies(&self, backoff: u32) -> u64 {
        if backoff >= 20 {
            return MAX_RTO_NS / JIFFY_NS;
        }
        // At most 30 000 jiffies shifted by 19: no overflow.
        (self.rto_jiffies() << backoff).min(MAX_RTO_NS / JIFFY_NS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sample_then_smoothing() {
        let mut r = RttEstimator::default();
        assert_eq!(r.rto_ns(), INITIAL_RTO_NS);
        r.on_sample(100_000_000);
        assert_eq!(r.srtt_ns, 100_000_000);
        assert_eq!(r.rttvar_ns(), 50_000_000);
        // RTO = 100 ms + max(200 ms, 200 ms)
        assert_eq!(r.rto_ns(), 300_000_000);
        r.on_sample(20_000_000);
        assert_eq!(r.srtt_ns, 90_000_000);
        // Below srtt: the deviation grows by an eighth of (80 - 50) ms only (Linux's gain).
        assert_eq!(
            r.rttvar_ns(),
            (200_000_000 + (80_000_000 - 50_000_000) / 8) / 4
        );
        assert_eq!(r.min_rtt_ns, 20_000_000);
        // A short, stable RTT still gives at least 200 ms of margin (Linux TCP_RTO_MIN).
        let mut s = RttEstimator::default();
        for _ in 0..50 {
            s.on_sample(10_000_000);
        }
        assert!(s.rto_ns() >= 210_000_000 - 1 && s.rto_ns() < 215_000_000);
        assert_eq!(s.rto_ns() % JIFFY_NS, 0);
        assert_eq!(s.backed_off_rto_ns(1), 2 * s.rto_ns());
        assert_eq!(s.backed_off_rto_ns(30), MAX_RTO_NS);
    }

    #[test]
    fn a_long_sample_holds_the_rto_up_until_the_window_passes() {
        // 30 ms samples, then one of 330 ms (an ACK after lost ones): Linux's variance term
        // rises at once to the window's largest deviation and stays there while the window's
        // data is unacknowledged, however many short samples follow.
        let mut r = RttEstimator::default();
        let mut una = 0u64;
        for _ in 0..100 {
            una += 1000;
            r.on_sample_at(30_000_000, una, una + 10_000);
        }
        let calm = r.rto_ns();
        assert!((228_000_000..=236_000_000).contains(&calm), "{calm}");
        una += 1000;
        r.on_sample_at(330_000_000, una, una + 10_000);
        let after_spike = r.rto_ns();
        assert!(after_spike > 350_000_000, "{after_spike}");
        // Short samples within the window (snd_una below its end): the term does not fall.
        for _ in 0..5 {
            r.on_sample_at(30_000_000, una, una + 10_000);
        }
        assert!(
            r.rto_ns() + 60_000_000 > after_spike,
            "{} {after_spike}",
            r.rto_ns()
        );
        // Windows passing: it falls by a quarter of its excess each time.
        for _ in 0..40 {
            una += 20_000;
            r.on_sample_at(30_000_000, una, una + 10_000);
        }
        assert!(r.rto_ns() <= calm + 8_000_000, "{}", r.rto_ns());
    }

    /// The step as it was written before (signed, 128 bits, clamped at 0, truncated).
    fn mdev4_step_signed(mdev4_ns: u64, srtt_ns: u64, rtt_ns: u64) -> u64 {
        let err = rtt_ns as i128 - srtt_ns as i128;
        let quarter = (mdev4_ns / 4) as i128;
        let d = if err < 0 {
            let m = -err - quarter;
            if m > 0 {
                m >> 3
            } else {
                m
            }
        } else {
            err - quarter
        };
        (mdev4_ns as i128 + d).max(0) as u64
    }

    #[test]
    fn mdev4_step_is_the_signed_form() {
        let edges = [
            0u64,
            1,
            2,
            3,
            4,
            7,
            8,
            9,
            JIFFY_NS,
            MIN_RTO_NS,
            1 << 32,
            u64::MAX / 8,
            u64::MAX / 4,
            u64::MAX / 2,
            u64::MAX - 8,
            u64::MAX,
        ];
        for &m in &edges {
            for &s in &edges {
                for &r in &edges {
                    for (m, s, r) in [(m, s, r), (m, s / 3 + 1, r / 5)] {
                        assert_eq!(
                            mdev4_step(m, s, r),
                            mdev4_step_signed(m, s, r),
                            "{m} {s} {r}"
                        );
                    }
                }
            }
        }
        // Near the branch edges: the error equal to, one above and one below the quarter.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..200_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let m = x >> (x % 64);
            let s = x.rotate_left(17) >> (x % 61);
            let q = m / 4;
            for r in [
                s.wrapping_sub(q),
                s.wrapping_sub(q + 1),
                s.wrapping_sub(q.wrapping_sub(1)),
                s.wrapping_add(q % 3),
                x.rotate_left(31) >> (x % 59),
            ] {
                assert_eq!(
                    mdev4_step(m, s, r),
                    mdev4_step_signed(m, s, r),
                    "{m} {s} {r}"
                );
            }
        }
    }

    #[test]
    fn rto_is_whole_jiffies_rounded_up() {
        // srtt 29 ms + the 200 ms floor = 229 ms: 57.25 jiffies at HZ 250, the kernel's 58.
        let mut r = RttEstimator::default();
        for _ in 0..200 {
            r.on_sample(29_000_000);
        }
        assert_eq!(r.srtt_ns, 29_000_000);
        assert_eq!(r.rto_ns(), 232_000_000);
        assert_eq!(r.backed_off_rto_ns(3), 8 * 232_000_000);
    }

    #[test]
    fn rto_in_jiffies_matches_the_ns_formula() {
        // The former ns computation: (srtt + max(rttvar, 200 ms)) rounded up to a jiffy,
        // capped at 120 s, shifted by the backoff and capped again.
        let reference = |r: &RttEstimator, backoff: u32| {
            let base = if r.has_sample {
                let rto_ns = r.srtt_ns + r.rto_var_ns.max(MIN_RTO_NS);
                (rto_ns.div_ceil(JIFFY_NS) * JIFFY_NS).min(MAX_RTO_NS)
            } else {
                INITIAL_RTO_NS
            };
            if backoff >= 20 {
                MAX_RTO_NS
            } else {
                (base << backoff).min(MAX_RTO_NS)
            }
        };
        let mut r = RttEstimator::default();
        let mut samples = vec![1u64, 2, JIFFY_NS - 1, JIFFY_NS, JIFFY_NS + 1, MAX_RTO_NS];
        samples.extend((0..400u64).map(|k| k * 997_331 + (k % 7) * JIFFY_NS));
        samples.extend([MAX_RTO_NS - MIN_RTO_NS - 1, 2 * MAX_RTO_NS, 1 << 50, 3, 5]);
        for (i, &s) in samples.iter().enumerate() {
            for backoff in [0u32, 1, 2, 5, 12, 19, 20, 31] {
                assert_eq!(
                    r.backed_off_rto_ns(backoff),
                    reference(&r, backoff),
                    "{i} {backoff}"
                );
                let j = r.backed_off_rto_jiffies(backoff);
                assert_eq!(j * JIFFY_NS, reference(&r, backoff));
                for now in [0u64, 3_999_999, 1_234_567_890] {
                    assert_eq!(
                        timer_wheel_fire_after_jiffies(now, j),
                        timer_wheel_fire_ns(now, reference(&r, backoff))
                    );
                }
            }
            assert_eq!(r.rto_ns(), reference(&r, 0));
            r.on_sample_at(s, i as u64, i as u64 + 10);
        }
    }

    #[test]
    fn timer_wheel_rounds_up_by_level() {
        // Level 0 (< 63 jiffies): the jiffy after expiry.
        assert_eq!(timer_wheel_fire_ns(1_000_000, 40_000_000), 44_000_000);
        // 232 ms = 58 jiffies from jiffy 0: level 0, fires at jiffy 59.
        assert_eq!(timer_wheel_fire_ns(0, 232_000_000), 236_000_000);
        // 464 ms = 116 jiffies from jiffy 3: expires 119, level 1 (8 jiffies): jiffy 120.
        assert_eq!(timer_wheel_fire_ns(12_000_000, 464_000_000), 480_000_000);
        // 1856 ms = 464 jiffies from jiffy 100: expires 564, level 1: jiffy 568.
        assert_eq!(
            timer_wheel_fire_ns(400_000_000, 1_856_000_000),
            2_272_000_000
        );
        // 2 s = 500 jiffies... 4 s = 1000 jiffies from 0: level 2 (64 jiffies): 1024.
        assert_eq!(timer_wheel_fire_ns(0, 4_000_000_000), 4_096_000_000);
        // The level-0 shortcut and the one-multiply `div_ceil` give the loop's answer, at
        // every level boundary and jiffy edge (and for delays near `u64::MAX`).
        let reference = |now_ns: u64, delay_ns: u64| {
            let (now_j, delta_j) = (now_ns / JIFFY_NS, delay_ns.div_ceil(JIFFY_NS));
            let mut shift = 0u32;
            while shift < 24 && delta_j >= 63u64 << shift {
                shift += 3;
            }
            ((((now_j + delta_j) >> shift) + 1) << shift) * JIFFY_NS
        };
        for d in [0u64, 1, JIFFY_NS - 1, JIFFY_NS, JIFFY_NS + 1, u64::MAX / 2]
            .into_iter()
            .chain((0..2 * JIFFY_NS).map(|k| u64::MAX - k))
        {
            assert_eq!(jiffies_ceil(d), d.div_ceil(JIFFY_NS), "delay {d}");
        }
        let mut delays = vec![0u64, 1, u64::MAX / 8];
        for level in 0..9u32 {
            let start_j = 63u64 << (3 * level);
            for j in [start_j.saturating_sub(1), start_j, start_j + 1] {
                for off in [0, 1, JIFFY_NS - 1, JIFFY_NS] {
                    delays.push((j * JIFFY_NS).saturating_sub(JIFFY_NS) + off);
                }
            }
        }
        for now in [
            0u64,
            1,
            3_999_999,
            4_000_000,
            7_777_777,
            1_234_567_890,
            1 << 40,
        ] {
            for &d in &delays {
                assert_eq!(
                    timer_wheel_fire_ns(now, d),
                    reference(now, d),
                    "{now} + {d}"
                );
            }
        }
        // Never early.
        for now in [0u64, 3_999_999, 7_777_777, 1_234_567_890] {
            for d in [4_000_000u64, 250_000_000, 999_000_000, 5_000_000_000] {
                assert!(timer_wheel_fire_ns(now, d) >= now + d);
            }
        }
    }
}
