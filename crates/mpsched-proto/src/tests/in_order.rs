//! The data receiver's short path for in-order data (`mptcp/receiver/in_order.rs`) against its
//! general path: two receivers fed the same arrivals, timers, path changes and piggybacked
//! ACKs, one through `handle_segment` (short path where it applies), the other always through
//! `handle_segment_general`, must emit the same segments and hold the same state (their
//! `Debug` text: every field of the connection and of its subflow) after every step.
//! `tests::plain_ack` runs the same harness with the transmissions taken two ways instead.

use crate::mptcp::{ConnConfig, DataReceiver, Mode};
use crate::tcp::{flags, Segment};
use proptest::prelude::*;

/// One receiver's settings, drawn by the tests.
#[derive(Debug, Clone)]
pub(super) struct Setup {
    pub(super) mptcp: bool,
    pub(super) is_client: bool,
    pub(super) autotuning: bool,
    pub(super) delayed_ack: bool,
    pub(super) quickacks: u32,
    pub(super) rcv_buf_bytes: u64,
}

/// One arrival of the plan: segment `k` of the flight, `dt_ns` after the step before;
/// `path_flap`: subflow 0's path goes down and up before it; `ride`: data of the other
/// direction leaves after it.
#[derive(Debug, Clone)]
pub(super) struct Step {
    k: usize,
    dt_ns: u64,
    path_flap: bool,
    ride: bool,
}

/// How often each path ran: the in-order segment's, and the one-subflow pure ACK's
/// (`DataReceiver::plain_ack_due`) against every other transmission.
#[derive(Debug, Default)]
pub(super) struct Counts {
    pub(super) short: usize,
    pub(super) general: usize,
    pub(super) plain_acks: usize,
    pub(super) other_sends: usize,
}

/// Which way the second receiver takes: the general path for segments, for transmissions.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ways {
    pub(super) general_receive: bool,
    pub(super) general_transmit: bool,
}

fn config(s: &Setup) -> ConnConfig {
    let mode = if s.mptcp { Mode::Mptcp } else { Mode::Tcp };
    let mut cfg = ConnConfig::new(mode, s.is_client, 1);
    cfg.rcv_buf_autotuning = s.autotuning;
    cfg.rcv_buf_bytes = s.rcv_buf_bytes;
    cfg.tcp.delayed_ack = s.delayed_ack;
    cfg.tcp.quickack_segments = s.quickacks;
    cfg
}

/// The flight: segment `k` starts where `k - 1` ended (sequence numbers from 1), with DSNs
/// contiguous but for `dsn_gaps` (a connection-level hole no later segment fills) and
/// `dsn_swaps` (segment `k + 1`'s data mapped before `k`'s: `k` waits at the connection level
/// for the next segment of the subflow to fill its hole); the last carries DATA_FIN.
pub(super) fn flight(lens: &[u32], dsn_gaps: &[u64], dsn_swaps: &[bool]) -> Vec<Segment> {
    let (mut seq, mut dsn) = (1u64, 0u64);
    let n = lens.len();
    let mut segs: Vec<Segment> = lens
        .iter()
        .enumerate()
        .map(|(k, &len)| {
            dsn += dsn_gaps[k];
            let mut f = flags::ACK | flags::DSS_MAP;
            if k + 1 == n {
                f |= flags::DATA_FIN;
            }
            let s = Segment {
                flags: f,
                seq,
                len,
                ack: 1,
                ts_val: 0,
                dsn,
                ..Default::default()
            };
            seq += u64::from(len);
            dsn += u64::from(len);
            s
        })
        .collect();
    let mut k = 0;
    while k + 1 < n {
        let (x, y) = (segs[k], segs[k + 1]);
        if dsn_swaps[k] && x.len == y.len && y.dsn == x.dsn + u64::from(x.len) {
            segs[k].dsn = y.dsn;
            segs[k + 1].dsn = x.dsn;
            k += 1;
        }
        k += 1;
    }
    segs
}

/// Both receivers emit the same segments (every field) until neither has one; `b` through
/// the general transmit path if `ways` says so.
fn drain(
    a: &mut DataReceiver,
    b: &mut DataReceiver,
    now_ns: u64,
    ways: Ways,
    counts: &mut Counts,
) -> Result<(), TestCaseError> {
    loop {
        let plain = a.plain_ack_due();
        let x = a.poll_transmit(now_ns);
        let y = if ways.general_transmit {
            b.poll_transmit_general(now_ns)
        } else {
            b.poll_transmit(now_ns)
        };
        prop_assert_eq!(&x, &y, "segments sent at {}", now_ns);
        if x.is_none() {
            return Ok(());
        }
        if plain {
            counts.plain_acks += 1;
        } else {
            counts.other_sends += 1;
        }
    }
}

fn same_state(a: &DataReceiver, b: &DataReceiver, what: &str) -> Result<(), TestCaseError> {
    prop_assert_eq!(format!("{a:?}"), format!("{b:?}"), "state after {}", what);
    prop_assert_eq!(a.poll_timeout(), b.poll_timeout(), "timer after {}", what);
    Ok(())
}

/// Feeds `steps` to a receiver built from `setup` through both paths, comparing after every
/// step; returns how often the short path was taken.
fn run_both(setup: &Setup, segs: &[Segment], steps: &[Step]) -> Result<Counts, TestCaseError> {
    let ways = Ways {
        general_receive: true,
        general_transmit: false,
    };
    run_both_ways(setup, segs, steps, ways)
}

/// [`run_both`] with the second receiver taking `ways`.
pub(super) fn run_both_ways(
    setup: &Setup,
    segs: &[Segment],
    steps: &[Step],
    ways: Ways,
) -> Result<Counts, TestCaseError> {
    let mut a = DataReceiver::new(config(setup));
    let mut b = DataReceiver::new(config(setup));
    let mut counts = Counts::default();
    let mut now_ns = 1_000u64;
    // The handshake, through the general path on both (no data: the short path never applies).
    let hs: Vec<Segment> = if setup.is_client {
        a.connect(now_ns);
        b.connect(now_ns);
        drain(&mut a, &mut b, now_ns, ways, &mut counts)?;
        vec![Segment {
            flags: flags::SYN | flags::ACK | flags::MP_CAPABLE,
            ack: 1,
            ts_val: 1,
            ..Default::default()
        }]
    } else {
        let f = flags::MP_CAPABLE;
        vec![
            Segment {
                flags: flags::SYN | f,
                ts_val: 1,
                ..Default::default()
            },
            Segment {
                flags: flags::ACK | f,
                seq: 1,
                ack: 1,
                ts_val: 1,
                ..Default::default()
            },
        ]
    };
    for seg in &hs {
        a.handle_segment(now_ns, 0, seg);
        receive(&mut b, now_ns, seg, ways);
        drain(&mut a, &mut b, now_ns, ways, &mut counts)?;
    }
    same_state(&a, &b, "the handshake")?;
    for (i, st) in steps.iter().enumerate() {
        now_ns += st.dt_ns;
        // Timers due by now fire first, as in the simulator's loop.
        while let Some(t) = a.poll_timeout().filter(|&t| t <= now_ns) {
            prop_assert_eq!(Some(t), b.poll_timeout());
            a.handle_timeout(t);
            b.handle_timeout(t);
            drain(&mut a, &mut b, t, ways, &mut counts)?;
        }
        if st.path_flap {
            a.set_path_up(0, false);
            b.set_path_up(0, false);
            a.set_path_up(0, true);
            b.set_path_up(0, true);
        }
        let mut seg = segs[st.k];
        // Echo a timestamp from a few ms back (1 ms ticks: some repeat, some give samples).
        seg.ts_val = now_ns;
        seg.ts_ecr = now_ns
            .saturating_sub(20_000_000 + (i as u64 % 3) * 1_000_000)
            .max(1);
        if a.in_order_ready(0, &seg) {
            counts.short += 1;
        } else {
            counts.general += 1;
        }
        a.handle_segment(now_ns, 0, &seg);
        receive(&mut b, now_ns, &seg, ways);
        same_state(&a, &b, &format!("step {i} ({st:?})"))?;
        drain(&mut a, &mut b, now_ns, ways, &mut counts)?;
        if st.ride {
            prop_assert_eq!(
                a.ack_rides_on_data(0, now_ns),
                b.ack_rides_on_data(0, now_ns)
            );
            drain(&mut a, &mut b, now_ns, ways, &mut counts)?;
        }
        same_state(&a, &b, &format!("step {i}'s ACKs"))?;
    }
    Ok(counts)
}

/// `b` takes `seg` on subflow 0 the way `ways` says.
fn receive(b: &mut DataReceiver, now_ns: u64, seg: &Segment, ways: Ways) {
    if ways.general_receive {
        b.handle_segment_general(now_ns, 0, seg);
    } else {
        b.handle_segment(now_ns, 0, seg);
    }
}

/// Arrival plan: every segment once in the order of its key (`k * 4 + jitter`: mostly in
/// order, sometimes overtaken), some a second time (a spurious retransmission) or only late
/// (a loss repaired later).
pub(super) fn plan(
    n: usize,
    jitter: &[u32],
    twice: &[bool],
    late: &[bool],
    dt_ns: &[u64],
    rare: &[u8],
) -> Vec<Step> {
    let mut keyed: Vec<(u64, usize)> = (0..n)
        .map(|k| {
            let base = k as u64 * 4 + u64::from(jitter[k]);
            (if late[k] { base + 40 } else { base }, k)
        })
        .collect();
    keyed.extend((0..n).filter(|&k| twice[k]).map(|k| (k as u64 * 4 + 9, k)));
    keyed.sort();
    keyed
        .iter()
        .enumerate()
        .map(|(i, &(_, k))| Step {
            k,
            dt_ns: dt_ns[i % dt_ns.len()],
            path_flap: rare[i % rare.len()] == 0,
            ride: rare[i % rare.len()] == 1,
        })
        .collect()
}

pub(super) fn setups() -> impl Strategy<Value = Setup> {
    (
        any::<bool>(),
        prop_oneof![3 => Just(false), 1 => Just(true)],
        any::<bool>(),
        prop_oneof![4 => Just(true), 1 => Just(false)],
        prop_oneof![Just(0u32), Just(1), Just(16)],
        prop_oneof![Just(6u64 << 20), Just(100_000), Just(20_000)],
    )
        .prop_map(
            |(mptcp, is_client, autotuning, delayed_ack, quickacks, rcv_buf_bytes)| Setup {
                mptcp,
                is_client,
                autotuning,
                delayed_ack,
                quickacks,
                rcv_buf_bytes,
            },
        )
}

/// A flight and its arrival plan (see [`flight`] and [`plan`]).
pub(super) fn arrivals() -> impl Strategy<Value = (Vec<Segment>, Vec<Step>)> {
    (
        proptest::collection::vec(prop_oneof![6 => Just(1428u32), 1 => 1u32..=1428], 2..90),
        proptest::collection::vec(prop_oneof![30 => Just(0u64), 1 => 1u64..3000], 90),
        proptest::collection::vec(prop_oneof![20 => Just(false), 1 => Just(true)], 90),
        proptest::collection::vec(prop_oneof![6 => Just(0u32), 1 => 0u32..12], 90),
        proptest::collection::vec(prop_oneof![12 => Just(false), 1 => Just(true)], 90),
        proptest::collection::vec(prop_oneof![15 => Just(false), 1 => Just(true)], 90),
        proptest::collection::vec(
            prop_oneof![
                4 => Just(0u64),
                4 => 1u64..2_000_000,
                1 => 30_000_000u64..250_000_000
            ],
            1..40,
        ),
        proptest::collection::vec(0u8..40, 1..40),
    )
        .prop_map(
            |(lens, dsn_gaps, dsn_swaps, jitter, twice, late, dt_ns, rare)| {
                let segs = flight(&lens, &dsn_gaps, &dsn_swaps);
                let steps = plan(lens.len(), &jitter, &twice, &late, &dt_ns, &rare);
                (segs, steps)
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(160))]
    #[test]
    fn the_short_path_leaves_the_state_and_acks_of_the_general_path(
        setup in setups(),
        (segs, steps) in arrivals(),
    ) {
        run_both(&setup, &segs, &steps)?;
    }
}

/// A bulk arrival of `swaps.len()` segments of 1428 bytes, the DSNs of those `swaps` marks
/// swapped with the next, every 50th segment (from the 8th) lost and repaired late: the
/// workload that shows a comparison is not empty.
pub(super) fn bulk_arrival(swaps: &[bool]) -> (Vec<Segment>, Vec<Step>) {
    let n = swaps.len();
    let segs = flight(&vec![1428; n], &vec![0; n], swaps);
    let late: Vec<bool> = (0..n).map(|k| k % 50 == 7).collect();
    let steps = plan(
        n,
        &vec![0; n],
        &vec![false; n],
        &late,
        &[0, 120_000, 3_000_000],
        &[5],
    );
    (segs, steps)
}

/// The bulk arrival's receiver: autotuning, delayed ACKs, 16 quick ACKs, a 6 MiB buffer.
pub(super) fn bulk_setup(mptcp: bool, is_client: bool) -> Setup {
    Setup {
        mptcp,
        is_client,
        autotuning: true,
        delayed_ack: true,
        quickacks: 16,
        rcv_buf_bytes: 6 << 20,
    }
}

/// The comparison above is not empty: on a plain bulk arrival with a few losses repaired late,
/// both paths run many times (so each side of `in_order_ready` is exercised).
#[test]
fn both_paths_run_on_a_bulk_arrival() {
    let swaps: Vec<bool> = (0..300).map(|k| k % 40 == 21).collect();
    let (segs, steps) = bulk_arrival(&swaps);
    for mptcp in [false, true] {
        let setup = bulk_setup(mptcp, false);
        let counts = run_both(&setup, &segs, &steps).expect("same state and ACKs");
        assert!(counts.short > 200 && counts.general > 20, "{counts:?}");
    }
}
