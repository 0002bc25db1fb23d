//! A pending time, or none, in 8 bytes.

/// The time of a pending event (a timer's deadline, a last transmission), or none, in 8 bytes
/// where an `Option<u64>` takes 16: the per-connection state keeps several (a subflow sender's
/// timers, the simulator's flow slot), and every concurrent flow holds them (issue 17).
/// `u64::MAX` means none; storing it as a time is refused rather than read back as none (no
/// event is ever scheduled there: a run ends long before 584 years of simulated time).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct PendingNs(u64);

impl PendingNs {
    /// No pending time.
    pub const NONE: Self = Self(u64::MAX);

    /// A pending time `t_ns` (below `u64::MAX`).
    #[inline(always)]
    pub fn at(t_ns: u64) -> Self {
        assert!(t_ns != u64::MAX, "a pending time at u64::MAX ns");
        Self(t_ns)
    }

    /// [`PendingNs::at`] of a time, or none.
    #[inline(always)]
    pub fn from_option(t_ns: Option<u64>) -> Self {
        t_ns.map_or(Self::NONE, Self::at)
    }

    /// The time, or `None`.
    #[inline(always)]
    pub fn get(self) -> Option<u64> {
        (self.0 != u64::MAX).then_some(self.0)
    }

    /// A time is pending.
    #[inline(always)]
    pub fn is_some(self) -> bool {
        self.0 != u64::MAX
    }

    /// No time is pending.
    #[inline(always)]
    pub fn is_none(self) -> bool {
        self.0 == u64::MAX
    }

    /// The earlier of two pending times (none if neither is pending): a plain `min`, as none
    /// is the largest value.
    #[inline(always)]
    pub fn earliest(self, other: Self) -> Self {
        Self(self.0.min(other.0))
    }
}

impl Default for PendingNs {
    fn default() -> Self {
        Self::NONE
    }
}

#[cfg(test)]
mod tests {
    use super::PendingNs;

    /// A pending time reads back as stored, `NONE` as none; `u64::MAX`, which would read back
    /// as none, is refused.
    #[test]
    fn a_pending_time_reads_back_and_u64_max_is_refused() {
        assert_eq!(PendingNs::NONE.get(), None);
        assert_eq!(PendingNs::default(), PendingNs::NONE);
        assert!(PendingNs::NONE.is_none() && !PendingNs::NONE.is_some());
        for t in [0, 1, 3_000_000_000, u64::MAX - 1] {
            assert_eq!(PendingNs::at(t).get(), Some(t));
            assert_eq!(PendingNs::from_option(Some(t)).get(), Some(t));
            assert!(PendingNs::at(t).is_some());
        }
        assert_eq!(PendingNs::from_option(None), PendingNs::NONE);
        let (a, b, none) = (PendingNs::at(5), PendingNs::at(7), PendingNs::NONE);
        assert_eq!([a.earliest(b), b.earliest(a)], [a, a]);
        assert_eq!([a.earliest(none), none.earliest(b)], [a, b]);
        assert_eq!(none.earliest(none), none);
        assert!(std::panic::catch_unwind(|| PendingNs::at(u64::MAX)).is_err());
        assert_eq!(std::mem::size_of::<PendingNs>(), 8);
    }
}
