//! Endpoints built in a finished connection's heap room (`with_config_reusing`) are those built
//! afresh, field for field but for capacities (`Debug` prints what vectors and queues hold,
//! not their room), and they run alike.

use super::util::*;
use crate::mptcp::{ConnConfig, DataReceiver, DataSender, Mode};
use crate::sched::{registry, Scheduler};

/// (receiver, sender) settings of a download over `n` paths with `cc`; the sender autotunes its
/// buffer (its per-subflow window record is then kept).
fn configs(mode: Mode, n: usize, cc: &str) -> (ConnConfig, ConnConfig) {
    let rc = ConnConfig::new(mode, true, n);
    let mut sc = ConnConfig::new(mode, false, n);
    sc.cc = cc.to_string();
    sc.snd_buf_autotuning = true;
    (rc, sc)
}

fn sched() -> Option<Box<dyn Scheduler>> {
    Some(registry::build("minrtt", &serde_json::json!({})).unwrap())
}

/// Sends `total` bytes from `tx` to `rx` over `n` paths of 50 Mbit/s, 10 ms, 1 % loss (seed
/// `seed`) until both are done, or (`midway`) until half is delivered, data in flight and
/// queued left in both; returns them and the end time.
fn transfer(
    mut rx: DataReceiver,
    mut tx: DataSender,
    n: usize,
    total: u64,
    seed: u64,
    midway: bool,
) -> (DataReceiver, DataSender, u64) {
    rx.connect(0);
    tx.connect(0);
    tx.write(total, 0);
    tx.close();
    let links = || {
        (0..n)
            .map(|i| Link::new(50 * MBPS, 10 * MS).lossy(10_000, seed + i as u64))
            .collect()
    };
    let mut p = Pair::new(rx, tx, links(), links());
    let done = |a: &DataReceiver, b: &DataSender| match midway {
        true => a.delivered_bytes() >= total / 2,
        false => a.delivered_bytes() == total && b.is_done(),
    };
    assert!(p.drive(600_000 * MS, done));
    (p.a, p.b, p.now_ns)
}

#[test]
fn an_endpoint_built_in_a_finished_ones_room_is_the_fresh_one() {
    // (mode, subflows of the finished connection, of the new one, cc); the finished one stopped
    // midway (a flow cut by the end of a run), its queues not empty.
    let cases = [
        (Mode::Tcp, 1, 1, "cubic"),
        (Mode::Mptcp, 2, 2, "lia"),
        (Mode::Mptcp, 2, 1, "olia"),
        (Mode::Mptcp, 1, 2, "cubic"),
    ];
    for (mode, old_n, new_n, cc) in cases {
        let what = format!("{mode:?} {old_n} -> {new_n} subflows, {cc}");
        let (rc, sc) = configs(mode, old_n, cc);
        let (old_rx, old_tx) = (
            DataReceiver::with_config(&rc),
            DataSender::with_config(&sc, sched()).unwrap(),
        );
        let (mut old_rx, mut old_tx, _) = transfer(old_rx, old_tx, old_n, 400_000, 7, true);
        let (rc, sc) = configs(mode, new_n, cc);
        let fresh_rx = DataReceiver::with_config(&rc);
        let fresh_tx = DataSender::with_config(&sc, sched()).unwrap();
        let rx = DataReceiver::with_config_reusing(&rc, &mut old_rx);
        let tx = DataSender::with_config_reusing(&sc, sched(), &mut old_tx).unwrap();
        assert_eq!(
            format!("{rx:?}"),
            format!("{fresh_rx:?}"),
            "{what}: receiver"
        );
        assert_eq!(format!("{tx:?}"), format!("{fresh_tx:?}"), "{what}: sender");
        let (fresh_rx, fresh_tx, end) = transfer(fresh_rx, fresh_tx, new_n, 300_000, 11, false);
        let (rx, tx, reused_end) = transfer(rx, tx, new_n, 300_000, 11, false);
        assert_eq!(reused_end, end, "{what}: end time");
        assert_eq!(
            format!("{rx:?}"),
            format!("{fresh_rx:?}"),
            "{what}: receiver after a transfer"
        );
        assert_eq!(
            format!("{tx:?}"),
            format!("{fresh_tx:?}"),
            "{what}: sender after a transfer"
        );
    }
}
