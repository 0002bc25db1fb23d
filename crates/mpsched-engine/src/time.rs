//! Simulated time: a `u64` count of nanoseconds since the start of the run.
//!
//! Plain integers keep the hot path free of wrapper arithmetic; every name that holds a time or
//! a duration ends in `_ns`. A `u64` of nanoseconds covers 584 years.

/// Nanoseconds in a microsecond.
pub const NS_PER_US: u64 = 1_000;
/// Nanoseconds in a millisecond.
pub const NS_PER_MS: u64 = 1_000_000;
/// Nanoseconds in a second.
pub const NS_PER_S: u64 = 1_000_000_000;

/// Time to serialise `bytes` at `rate_bps`, rounded up to the next nanosecond.
///
/// Rounding up (never down) means a link can never exceed its configured rate.
#[inline]
pub fn serialization_ns(bytes: u64, rate_bps: u64) -> u64 {
    debug_assert!(rate_bps > 0);
    // bytes * 8e9 fits in u64 up to 2^31 bytes; the 128-bit path is for larger values only.
    if bytes < 1 << 31 {
        (bytes * 8 * NS_PER_S).div_ceil(rate_bps)
    } else {
        (bytes as u128 * 8 * NS_PER_S as u128).div_ceil(rate_bps as u128) as u64
    }
}

/// Converts seconds (as used in human-facing input) to nanoseconds, rounding to nearest.
#[inline]
pub fn secs_to_ns(secs: f64) -> u64 {
    (secs * NS_PER_S as f64).round() as u64
}

/// Converts nanoseconds to seconds, for output only (never for decisions inside the core).
#[inline]
pub fn ns_to_secs(ns: u64) -> f64 {
    ns as f64 / NS_PER_S as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialization_of_a_full_frame_at_100mbit_is_120us() {
        // 1500 bytes * 8 bit / 100e6 bit/s = 120 us.
        assert_eq!(serialization_ns(1500, 100_000_000), 120 * NS_PER_US);
    }

    #[test]
    fn serialization_rounds_up() {
        // 1 byte at 3 bit/s = 8/3 s = 2.666..s -> rounds up to the next ns.
        assert_eq!(serialization_ns(1, 3), 2_666_666_667);
    }
}
