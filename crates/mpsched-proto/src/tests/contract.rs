//! The connection applies scheduler actions as `sched/mod.rs` documents: in order, re-checked
//! against subflow state and the receive window, every failure counted and reported.

use crate::mptcp::{ConnConfig, DataSender, Mode};
use crate::sched::{Action, ConnView, Rejection, ResendKind, Scheduler};
use crate::tcp::{flags, Segment};
use std::sync::{Arc, Mutex};

/// Replays one scripted batch of actions per call and records what it is told.
#[derive(Debug, Default)]
struct Script {
    batches: Vec<Vec<Action>>,
    log: Arc<Mutex<Vec<(Action, Rejection)>>>,
    calls: Arc<Mutex<u32>>,
}

impl Scheduler for Script {
    fn name(&self) -> &'static str {
        "script"
    }
    fn schedule(&mut self, _view: &ConnView<'_>, out: &mut Vec<Action>) {
        *self.calls.lock().unwrap() += 1;
        if !self.batches.is_empty() {
            out.extend(self.batches.remove(0));
        }
    }
    fn on_rejected(&mut self, action: Action, why: Rejection, _now_ns: u64) {
        self.log.lock().unwrap().push((action, why));
    }
}

/// Payload of a full MPTCP segment.
const MSS: u64 = crate::tcp::MPTCP_DATA_MSS_BYTES_FOR_1500;

#[test]
fn actions_are_applied_in_order_and_every_rejection_is_counted_and_reported() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let calls = Arc::new(Mutex::new(0));
    let send = |subflow, max_bytes| Action::SendNew { subflow, max_bytes };
    let script = Script {
        batches: vec![
            // Before any handshake: no such subflow, then not established.
            vec![send(5, 1000), send(0, 1000)],
            // Called again when the SYN arrives: wait.
            vec![],
            // Established, window 3000 bytes: the hand-over is cut at the window's edge, as
            // Linux `mptcp_check_allowed_size` does: two full segments of the MPTCP payload
            // (1420 bytes, see `tcp::MPTCP_DATA_MSS_BYTES_FOR_1500`) and 160 bytes ...
            vec![send(0, 10_000)],
            // ... then no window is left, so nothing is handed over.
            vec![send(0, 1000)],
            // Penalties: both applied (the rate limit is the scheduler's). A copy of unsent data.
            vec![
                Action::Penalize { subflow: 0 },
                Action::Penalize { subflow: 0 },
                Action::Resend {
                    subflow: 0,
                    dsn: 50_000,
                    len: 10,
                    kind: ResendKind::Redundant,
                },
            ],
        ],
        log: log.clone(),
        calls: calls.clone(),
    };
    let mut tx = DataSender::new(
        ConnConfig::new(Mode::Mptcp, false, 2),
        Some(Box::new(script)),
    )
    .unwrap();
    tx.write(100_000, 0);
    assert!(tx.poll_transmit(0).is_none());
    assert_eq!(tx.rejections(Rejection::UnknownSubflow), 1);
    assert_eq!(tx.rejections(Rejection::SubflowNotUsable), 1);
    // Nothing applied: one call only.
    assert_eq!(*calls.lock().unwrap(), 1);

    // Handshake of subflow 0 (MP_CAPABLE), the client advertising a 3000-byte window.
    tx.handle_segment(
        10,
        0,
        &Segment {
            flags: flags::SYN | flags::MP_CAPABLE,
            ts_val: 5,
            ..Default::default()
        },
    );
    let (sf, synack) = tx.poll_transmit(10).expect("SYN-ACK");
    assert_eq!(sf, 0);
    assert!(synack.has(flags::SYN) && synack.has(flags::ACK) && synack.has(flags::MP_CAPABLE));
    let ack3 = Segment {
        flags: flags::ACK | flags::MP_CAPABLE,
        seq: 1,
        ack: 1,
        window: 3000,
        ts_val: 25,
        ts_ecr: synack.ts_val,
        ..Default::default()
    };
    tx.handle_segment(20_000_010, 0, &ack3);
    let mut sent = Vec::new();
    while let Some((sf, seg)) = tx.poll_transmit(20_000_010) {
        sent.push((sf, seg.dsn, seg.len as u64));
    }
    assert_eq!(
        sent,
        vec![(0, 0, MSS), (0, MSS, MSS), (0, 2 * MSS, 3000 - 2 * MSS)],
        "the window filled to its edge, the last segment partial"
    );
    assert_eq!(tx.next_dsn(), 3000);
    assert_eq!(tx.rejections(Rejection::ReceiveWindowFull), 1);

    // The next input runs the scheduler again: penalties and a copy of data never sent.
    tx.handle_segment(
        20_000_020,
        0,
        &Segment {
            flags: flags::ACK,
            seq: 1,
            ack: 1,
            window: 3000,
            ..Default::default()
        },
    );
    while tx.poll_transmit(20_000_020).is_some() {}
    assert_eq!(tx.rejections(Rejection::NothingToSend), 1);
    let cwnd = tx.subflows()[0].cc_state().cwnd_bytes;
    assert_eq!(
        cwnd,
        10 * MSS / 4,
        "two penalties applied: 10 -> 2.5 segments"
    );

    let log = log.lock().unwrap();
    let reasons: Vec<Rejection> = log.iter().map(|&(_, why)| why).collect();
    assert_eq!(
        reasons,
        vec![
            Rejection::UnknownSubflow,
            Rejection::SubflowNotUsable,
            Rejection::ReceiveWindowFull,
            Rejection::NothingToSend,
        ]
    );
    assert_eq!(
        log[0].0,
        send(5, 1000),
        "the rejected action is reported as given"
    );
}

/// Records the fixed send buffer the connection reports.
#[derive(Debug, Default)]
struct BufferProbe {
    fixed: Arc<Mutex<Option<u64>>>,
}

impl Scheduler for BufferProbe {
    fn name(&self) -> &'static str {
        "buffer-probe"
    }
    fn schedule(&mut self, _view: &ConnView<'_>, _out: &mut Vec<Action>) {}
    fn on_send_buffer_fixed(&mut self, snd_buf_bytes: u64) {
        *self.fixed.lock().unwrap() = Some(snd_buf_bytes);
    }
}

#[test]
fn the_scheduler_is_told_of_a_fixed_send_buffer_and_not_of_an_autotuned_one() {
    for autotuning in [false, true] {
        let fixed = Arc::new(Mutex::new(None));
        let mut cfg = ConnConfig::new(Mode::Mptcp, false, 2);
        cfg.snd_buf_bytes = 3 << 20;
        cfg.snd_buf_autotuning = autotuning;
        let probe = BufferProbe {
            fixed: fixed.clone(),
        };
        DataSender::new(cfg, Some(Box::new(probe))).unwrap();
        let told = *fixed.lock().unwrap();
        assert_eq!(
            told,
            (!autotuning).then_some(3 << 20),
            "autotuning {autotuning}"
        );
    }
}
