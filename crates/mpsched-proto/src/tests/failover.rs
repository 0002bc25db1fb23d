//! Upstream MPTCP's reaction to a silent path (the links drop everything, the hosts are not
//! told): what its MPTCP-level retransmission timer moves, and when.

use super::mptcp::{download, download_with, PathSpec, Setup};
use super::util::*;
use crate::mptcp::stale::DFRAG_DATA_BYTES as FRAG_DATA_BYTES;
use crate::mptcp::Mode;
use crate::tcp::LossRecovery;

/// A 64 MiB upstream-`linux` MPTCP download with cubic over `paths`, receive buffer fixed.
fn linux_download(paths: Vec<PathSpec>, rcv_buf_bytes: u64) -> Setup {
    Setup {
        backup: vec![],
        upload: false,
        loss_recovery: LossRecovery::default(),
        autotune: false,
        mode: Mode::Mptcp,
        paths,
        sched: "linux",
        cc: "cubic",
        rcv_buf_bytes,
        total_bytes: 64 << 20,
    }
}

#[test]
fn linux_resends_the_head_data_frag_on_the_drained_subflow_at_the_mptcp_timer_not_at_an_rto() {
    // A small receive window: once path 0 goes silent its data is a hole the window cannot
    // pass, and path 1 drains. Upstream's MPTCP-level retransmission timer (`__mptcp_retrans`)
    // then sends the head data frag of the retransmission queue on the idle subflow
    // (`mptcp_subflow_get_retrans`), from the DATA_ACK to the frag's end: a subflow RTO does
    // nothing at the MPTCP level, and the stale mark needs five timer periods. The timer's
    // period is the largest remaining TCP timeout of the active subflows at the last push
    // (`mptcp_timeout_from_subflow`), so whether path 0's own RTO comes first depends on the
    // paths' RTTs: with mappings cut to whole segments it never did here (rcv_buf 128-384 KiB),
    // with Linux's cut at the window's edge in bytes it does at 192, 256 and 320 KiB (path 0's
    // RTO at 428 ms, the timer at 432 ms, armed at the last DATA_ACK with path 1's remaining
    // 324 ms), and moves nothing. (The testbed's kernel did the same through a blackhole: 28604
    // and 32728 bytes re-sent at the second and fourth timer periods, the stale mark at the
    // fifth.)
    let s = linux_download(vec![(20 * MBPS, 10 * MS), (10 * MBPS, 30 * MS)], 256 << 10);
    let mut p = download(&s);
    p.drive(2_000 * MS, |_, _| false);
    assert_eq!(p.b.resent().reinject_bytes, 0);
    p.ab[0].up = false;
    p.ba[0].up = false;
    let silent_ns = p.now_ns;
    let mut deadline_ns = None;
    let moved = p.drive(silent_ns + 3_000 * MS, |_, b| {
        let moved = b.resent().reinject_bytes > 0;
        if !moved {
            deadline_ns = b.mptcp_timer_ns();
        }
        moved
    });
    assert!(moved, "nothing re-sent within 3 s of the silence");
    let at_ns = p.now_ns;
    let acked = p.b.data_acked();
    let in_ms = (at_ns - silent_ns) / MS;
    assert_eq!(
        Some(at_ns),
        deadline_ns,
        "re-sent at {in_ms} ms, not when the MPTCP timer fired"
    );
    assert_eq!(p.b.stale_marks(), 0);
    assert!(in_ms < 500, "{in_ms} ms");
    // The whole head frag goes out before anything of it can be acknowledged (30 ms away),
    // and nothing more: the next period is at least 200 ms (`TCP_RTO_MIN`) away.
    p.drive(at_ns + 40 * MS, |_, _| false);
    assert_eq!(p.b.data_acked(), acked);
    let frag_end = (acked / FRAG_DATA_BYTES + 1) * FRAG_DATA_BYTES;
    assert_eq!(p.b.resent().reinject_bytes, frag_end - acked);
    assert_eq!(
        p.b.subflow_stats(1).unwrap().resent.reinject_bytes,
        frag_end - acked
    );
}

#[test]
fn a_join_created_while_its_interface_has_no_route_fails_and_is_not_retried() {
    // Upstream (6.18): the client's interface of path 1 is down when the path manager creates
    // the join; `connect()` fails at the route lookup, no SYN leaves, and the endpoint is not
    // offered again (`id_avail_bitmap`), so the connection stays on path 0 after the interface
    // returns.
    let s = linux_download(vec![(20 * MBPS, 10 * MS), (10 * MBPS, 30 * MS)], 1 << 20);
    let mut p = download(&s);
    let syns = std::rc::Rc::new(std::cell::Cell::new(0u32));
    let seen = syns.clone();
    p.ab[1].drop = Some(Box::new(move |seg: &crate::tcp::Segment| {
        seen.set(seen.get() + u32::from(seg.has(crate::tcp::flags::SYN)));
        false
    }));
    p.a.set_route_up(1, false);
    p.drive(2_000 * MS, |_, _| false);
    assert_eq!(p.a.failed_joins(), 1);
    assert_eq!(syns.get(), 0, "a join SYN left without a route");
    p.a.set_route_up(1, true);
    let acked = p.b.data_acked();
    p.drive(6_000 * MS, |_, _| false);
    assert_eq!(syns.get(), 0, "the join was tried again");
    assert_eq!(p.b.subflow_stats(1).unwrap().bytes_sent, 0);
    assert!(p.b.data_acked() > acked, "path 0 stopped carrying");

    // The same run with the route present: the join's SYN leaves and path 1 carries data.
    let mut q = download(&s);
    q.drive(2_000 * MS, |_, _| false);
    assert_eq!(q.a.failed_joins(), 0);
    assert!(q.b.subflow_stats(1).unwrap().bytes_sent > 0);
}

#[test]
fn linux_rearms_the_mptcp_timer_with_the_period_stored_at_the_last_push() {
    // Path 0 goes silent; path 1 (2 Mbit/s, a long queue of its own data) stays busy and
    // keeps being ACKed, and the DATA_ACK is stuck at path 0's hole. Upstream re-arms the
    // MPTCP timer at the start of each firing (`__mptcp_retrans` -> `mptcp_clean_una_wakeup`)
    // with `msk->timer_ival` as the last push (`mptcp_subflow_get_send`) stored it, before the
    // firing's stale checks. A firing that finds both subflows busy gives each `stale_count`
    // 1, and the push after it stores `TCP_RTO_MIN` (no subflow with count 0); the next
    // firing, where path 1's count goes back to 0 (it was ACKed), re-arms with that 200 ms,
    // and only the push after it stores path 1's long RTO again. So the periods alternate
    // long, exactly 200 ms (on the timer wheel: 204), long. (Recomputing the period after the
    // checks, as the simulator used to, gives 200 ms, long, 200 ms: one firing out of phase.)
    // The sender autotunes its send buffer: with a fixed one (SO_SNDBUF, which Linux gives
    // every subflow) path 1 holds about as long a backlog of older data as path 0 (the
    // linger-time balance), and the DATA_ACK moves on for 1.6 s after path 0 goes silent.
    let s = linux_download(vec![(20 * MBPS, 10 * MS), (2 * MBPS, 30 * MS)], 4 << 20);
    let mut p = download_with(&s, |sc| sc.snd_buf_autotuning = true);
    p.drive(3_000 * MS, |_, _| false);
    p.ab[0].up = false;
    p.ba[0].up = false;
    let silent_ns = p.now_ns;
    let (mut last, mut acked) = (p.b.mptcp_timer_ns(), p.b.data_acked());
    // (firing time, the period it re-armed with): the deadline moved on while the DATA_ACK
    // stood still since the previous step. The DATA_ACK is followed at every step, not only
    // when the deadline moves: an advance re-arms the timer at `now + timer_ival`, which is
    // path 1's RTO expiry (filed on the timer wheel, 32 ms buckets) and so often the deadline
    // already set; the last advance before the hole can leave it unchanged.
    let mut firings = vec![];
    p.drive(silent_ns + 2_000 * MS, |_, b| {
        let t = b.mptcp_timer_ns();
        if let (Some(old), Some(new)) = (last, t) {
            if b.data_acked() == acked && new > old {
                firings.push((old, new - old));
            }
        }
        (last, acked) = (t, b.data_acked());
        false
    });
    assert!(firings.len() >= 3, "{firings:?}");
    let periods_ms: Vec<u64> = firings.iter().take(3).map(|&(_, d)| d / MS).collect();
    assert_eq!(
        p.b.subflow_stats(1).unwrap().rto_count,
        0,
        "path 1 had an RTO"
    );
    assert!(periods_ms[0] > 300, "{periods_ms:?}");
    // Exactly `TCP_RTO_MIN` on the timer wheel (`sk_reset_timer(jiffies + timer_ival)`): the
    // firing comes at a jiffy boundary, 50 jiffies are filed at level 0 and fire one jiffy
    // later, 204 ms at HZ 250.
    let (fired_ns, period_ns) = firings[1];
    assert_eq!(
        period_ns,
        crate::tcp::timer_wheel_fire_ns(fired_ns, crate::mptcp::stale::TCP_RTO_MIN_NS) - fired_ns,
        "{periods_ms:?}"
    );
    assert_eq!(period_ns, 204 * MS, "{periods_ms:?}");
    assert!(periods_ms[2] > 300, "{periods_ms:?}");
}
