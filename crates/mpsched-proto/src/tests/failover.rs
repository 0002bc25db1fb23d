//! Upstream MPTCP's reaction to a silent path (the links drop everything, the hosts are not
//! told): what its MPTCP-level retransmission timer moves, and when.

use super::mptcp::{download, Setup};
use super::util::*;
use crate::mptcp::stale::DFRAG_DATA_BYTES as FRAG_DATA_BYTES;
use crate::mptcp::Mode;
use crate::tcp::LossRecovery;

#[test]
fn linux_resends_the_head_data_frag_on_the_drained_subflow_at_the_mptcp_timer_before_any_rto() {
    // A small receive window: once path 0 goes silent its data is a hole the window cannot
    // pass, and path 1 drains. Upstream's MPTCP-level retransmission timer (`__mptcp_retrans`)
    // then sends the head data frag of the retransmission queue on the idle subflow
    // (`mptcp_subflow_get_retrans`), from the DATA_ACK to the frag's end: a subflow RTO does
    // nothing at the MPTCP level, and the stale mark needs five timer periods. Here the timer
    // fires before path 0's first RTO: its period is path 0's remaining RTO at the last
    // DATA_ACK, and path 0's tail-loss probe re-arms that RTO later. (The testbed's kernel did
    // the same through a blackhole: 28604 and 32728 bytes re-sent at the second and fourth
    // timer periods, the stale mark at the fifth.)
    let s = Setup {
        backup: vec![],
        upload: false,
        loss_recovery: LossRecovery::default(),
        autotune: false,
        mode: Mode::Mptcp,
        paths: vec![(20 * MBPS, 10 * MS), (10 * MBPS, 30 * MS)],
        sched: "linux",
        cc: "cubic",
        rcv_buf_bytes: 256 << 10,
        total_bytes: 64 << 20,
    };
    let mut p = download(&s);
    p.drive(2_000 * MS, |_, _| false);
    assert_eq!(p.b.resent().reinject_bytes, 0);
    p.ab[0].up = false;
    p.ba[0].up = false;
    let silent_ns = p.now_ns;
    let moved = p.drive(silent_ns + 3_000 * MS, |_, b| b.resent().reinject_bytes > 0);
    assert!(moved, "nothing re-sent within 3 s of the silence");
    let at_ns = p.now_ns;
    let acked = p.b.data_acked();
    let in_ms = (at_ns - silent_ns) / MS;
    assert_eq!(
        p.b.subflow_stats(0).unwrap().rto_count,
        0,
        "re-sent at {in_ms} ms, after an RTO"
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

