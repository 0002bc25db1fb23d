//! The short path of a plain hop (`short`) against the general one: twin links take the same
//! random packets, impairments, outages and arrivals (`backlog_tests::twin_run_as`), one with
//! the short path and one without (`short::NO_SHORT`), and must hold exactly the same state.

use super::backlog_tests::{live, spec, twin_run_as, Twin};
use super::short::NO_SHORT;
use super::*;
use crate::net::impairment::Impairment;
use crate::net::loss::LossConfig;
use crate::net::Transmitter;
use crate::time::NS_PER_MS;

/// Every field the two paths write, and what the backlog and pipe read back. (The backlog as
/// far as it has not ended: the short path forgets ended entries only when a packet might not
/// fit without, `Link::fits_unsettled`, where the general path forgets them at every packet.)
fn same_exactly(a: &Link<u64>, b: &Link<u64>, now_ns: u64, what: &str) {
    let scalars = |l: &Link<u64>| (l.free_at_ns, l.last_arrival_ns, l.short);
    assert_eq!(scalars(a), scalars(b), "{what}: at {now_ns}");
    assert_eq!(a.stats, b.stats, "{what}: at {now_ns}");
    assert_eq!(live(a, now_ns), live(b, now_ns), "{what}: backlog at {now_ns}");
    assert_eq!(a.waiting(now_ns), b.waiting(now_ns), "{what}: waiting at {now_ns}");
    let pipe = |l: &Link<u64>| {
        let entries: Vec<(u64, u64, u32)> =
            (0..l.pipe.len()).map(|i| (l.pipe_arrive_ns(i), l.pipe[i].pkt.payload, l.pipe[i].arrive_off)).collect();
        (entries, l.pipe_base_ns, l.pipe_wide, l.head_hint(), l.stale)
    };
    assert_eq!(pipe(a), pipe(b), "{what}: pipe at {now_ns}");
}

const SHORT: Twin =
    Twin { set_reference: |on| NO_SHORT.set(on), same: same_exactly, one_in: 100, calm: false, overload: false };

/// Mostly packets: long stretches on the short path between impairments and outages.
const SHORT_CALM: Twin = Twin { one_in: 300, calm: true, ..SHORT };

/// `SHORT_CALM` with the queue full (drops on the short path).
const SHORT_FULL: Twin = Twin { overload: true, ..SHORT_CALM };

#[test]
fn the_short_path_holds_what_the_general_path_holds() {
    let mut r = Rng::stream(11, 0);
    let (mut short, mut dropped) = (0, 0);
    for seed in 0..24 {
        let rate_bps = [1_000_000, 10_000_000, 123_456_789, 1_000_000_000][r.below(4) as usize];
        let delay_ns = [0, 1, 3 * NS_PER_MS, 50 * NS_PER_MS][r.below(4) as usize];
        let twin = [&SHORT, &SHORT_CALM, &SHORT_FULL][seed as usize % 3];
        let (_, (s, d)) = twin_run_as(twin, spec(rate_bps, delay_ns, 1 + r.below(60)), seed, 1500);
        (short, dropped) = (short + s, dropped + d);
    }
    // Most packets of the calm runs take the short path; the overloaded ones drop there.
    assert!(short > 10_000 && dropped > 1000, "{short} packets on the short path, {dropped} dropped");
}

#[test]
fn links_with_something_configured_never_take_the_short_path() {
    let base = spec(10_000_000, 2 * NS_PER_MS, 30);
    let variants = [
        LinkSpec { loss: LossConfig::Bernoulli { p: 0.05 }, ..base.clone() },
        LinkSpec { burst_bytes: Some(3028), ..base.clone() },
        LinkSpec { transmitter: Transmitter::Htb, ..base.clone() },
        LinkSpec { impairments: Impairments::BeforeQueue, ..base.clone() },
    ];
    for (k, s) in variants.into_iter().enumerate() {
        let (_, (short, _)) = twin_run_as(&SHORT, s, 200 + k as u64, 500);
        assert_eq!(short, 0, "variant {k}");
    }
    // An impairment in force or a closed entrance leaves it; lifting it brings it back.
    let mut l = Link::<u64>::new(base, Rng::stream(0, 0));
    assert!(l.takes_short(0));
    l.set_impairment(Impairment { extra_delay_ns: 1, ..Default::default() });
    assert!(!l.takes_short(0));
    l.set_impairment(Impairment::default());
    l.set_state(0, LinkState::Closed);
    assert!(!l.takes_short(0));
    l.set_state(0, LinkState::Up);
    assert!(l.takes_short(0));
}
