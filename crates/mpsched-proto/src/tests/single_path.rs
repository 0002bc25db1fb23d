//! A plain TCP connection's short send path (`DataSender::poll_transmit_single`, and the early
//! return of `DataSender::handle_segment`) gives what the general path gives: the same segments
//! at the same times, on random networks and workloads. MPTCP with one subflow and no scheduler
//! takes the short path too and is run as well. The tail-loss probe scheduled once per drain
//! (`Sender::schedule_tlp` noted, computed at the drain's end) gives the deadlines and
//! segments that computing it at every transmission and ACK gives.

use super::util::*;
use crate::mptcp::{ConnConfig, DataReceiver, DataSender, Mode};
use crate::tcp::{LossRecovery, Segment};
use proptest::prelude::*;

/// A data sender that logs what it transmits, writes its data in pieces as ACKs arrive, and
/// loses its path for a while.
struct Logged {
    tx: DataSender,
    log: Vec<(u64, usize, Segment)>,
    /// The sender's timer deadline after every input and every poll.
    timeouts: Vec<Option<u64>>,
    /// Bytes still to write, a piece at a time, and the piece's size.
    left_bytes: u64,
    piece_bytes: u64,
    /// The path is down in `[down_ns, up_ns)`.
    down_ns: u64,
    up_ns: u64,
    path_down: bool,
    went_down: bool,
    /// Stop a drain after this many segments, before the sender's `None` (0: never): the
    /// next input finds the drain unfinished.
    drain_cap: usize,
    drained: usize,
}

impl Logged {
    fn on_time(&mut self, now_ns: u64) {
        let down = (self.down_ns..self.up_ns).contains(&now_ns);
        if down != self.path_down {
            self.path_down = down;
            self.went_down |= down;
            self.tx.set_path_up(0, !down, now_ns);
        }
        if self.left_bytes > 0 {
            let n = self.piece_bytes.min(self.left_bytes);
            self.tx.write(n, now_ns);
            self.left_bytes -= n;
            if self.left_bytes == 0 {
                self.tx.close();
            }
        }
    }
}

impl Endpoint for Logged {
    fn handle_segment(&mut self, now_ns: u64, sf: usize, seg: &Segment) {
        self.drained = 0;
        self.tx.handle_segment(now_ns, sf, seg);
        self.timeouts.push(self.tx.poll_timeout());
        self.on_time(now_ns);
    }
    fn poll_transmit(&mut self, now_ns: u64) -> Option<(usize, Segment)> {
        if self.drain_cap > 0 && self.drained == self.drain_cap {
            return None;
        }
        self.drained += 1;
        let out = self.tx.poll_transmit(now_ns);
        self.timeouts.push(self.tx.poll_timeout());
        if let Some((sf, seg)) = out {
            self.log.push((now_ns, sf, seg));
        }
        out
    }
    fn poll_timeout(&self) -> Option<u64> {
        // The path's next change is a timer of its own.
        let change = if self.path_down {
            Some(self.up_ns)
        } else {
            Some(self.down_ns).filter(|&t| t > 0 && self.up_ns > t && !self.went_down)
        };
        match (self.tx.poll_timeout(), change) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
    fn handle_timeout(&mut self, now_ns: u64) {
        self.drained = 0;
        if self.tx.poll_timeout().is_some_and(|t| t <= now_ns) {
            self.tx.handle_timeout(now_ns);
        }
        self.timeouts.push(self.tx.poll_timeout());
        self.on_time(now_ns);
    }
}

#[derive(Debug, Clone)]
struct Net {
    rate_mbps: u64,
    delay_ms: u64,
    loss_ppm: u64,
    seed: u64,
    rcv_buf_bytes: u64,
    total_bytes: u64,
    piece_bytes: u64,
    nagle: bool,
    rack: bool,
    autotune: bool,
    snd_buf_autotuning: bool,
    down_ms: u64,
    /// MPTCP with one subflow and no scheduler (also `single`), else plain TCP.
    mptcp: bool,
    /// See [`Logged`]'s `drain_cap`.
    drain_cap: usize,
}

/// How the sender runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Way {
    Short,
    General,
    /// The short path, every probe schedule computed when noted.
    EagerTlp,
}

/// What a run gave: the sender's transmissions, its deadlines, the bytes delivered.
type Run = (Vec<(u64, usize, Segment)>, Vec<Option<u64>>, u64);

/// Runs a download over `net`, the sender as `way` says.
fn run(net: &Net, way: Way) -> Run {
    let mode = if net.mptcp { Mode::Mptcp } else { Mode::Tcp };
    let mut rc = ConnConfig::new(mode, true, 1);
    rc.rcv_buf_bytes = net.rcv_buf_bytes;
    rc.rcv_buf_autotuning = net.autotune;
    let mut sc = ConnConfig::new(mode, false, 1);
    sc.tcp.nagle = net.nagle;
    sc.tcp.loss_recovery = if net.rack {
        LossRecovery::RackTlp
    } else {
        LossRecovery::Rfc6675
    };
    sc.snd_buf_autotuning = net.snd_buf_autotuning;
    let mut rx = DataReceiver::new(rc);
    rx.connect(0);
    let mut tx = DataSender::new(sc, None).unwrap();
    match way {
        Way::Short => {}
        Way::General => tx.take_general_path(),
        Way::EagerTlp => tx.take_eager_tlp(),
    }
    tx.connect(0);
    let first = net.piece_bytes.min(net.total_bytes);
    tx.write(first, 0);
    let down_ns = net.down_ms * MS;
    let tx = Logged {
        tx,
        log: Vec::new(),
        timeouts: Vec::new(),
        left_bytes: net.total_bytes - first,
        piece_bytes: net.piece_bytes,
        down_ns,
        up_ns: if net.down_ms > 0 {
            down_ns + 300 * MS
        } else {
            0
        },
        path_down: false,
        went_down: false,
        drain_cap: net.drain_cap,
        drained: 0,
    };
    let rate = net.rate_mbps * MBPS;
    let delay = net.delay_ms * MS;
    // ACKs are lost too, a quarter as often (the ACK side's short path sees gaps).
    let ab = vec![Link::new(rate, delay).lossy(net.loss_ppm / 4, !net.seed)];
    let ba = vec![Link::new(rate, delay).lossy(net.loss_ppm, net.seed)];
    let mut p = Pair::new(rx, tx, ab, ba);
    p.drive(120_000 * MS, |a, _| a.delivered_bytes() == net.total_bytes);
    let timeouts = std::mem::take(&mut p.b.timeouts);
    (
        std::mem::take(&mut p.b.log),
        timeouts,
        p.a.delivered_bytes(),
    )
}

fn nets() -> impl Strategy<Value = Net> {
    (
        (1u64..200, 1u64..60, 0u64..30_000, any::<u64>()),
        (10_000u64..2_000_000, 1u64..400_000, 1u64..200_000),
        (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()),
        (
            prop_oneof![Just(0u64), 1u64..2_000],
            any::<bool>(),
            prop_oneof![Just(0usize), 1usize..4],
        ),
    )
        .prop_map(
            |(
                (rate_mbps, delay_ms, loss_ppm, seed),
                (rcv, total, piece),
                (n, r, a, s),
                (down, mptcp, drain_cap),
            )| {
                Net {
                    rate_mbps,
                    delay_ms,
                    loss_ppm,
                    seed,
                    rcv_buf_bytes: rcv,
                    total_bytes: total,
                    piece_bytes: piece,
                    nagle: n,
                    rack: r,
                    autotune: a,
                    snd_buf_autotuning: s,
                    down_ms: down,
                    mptcp,
                    drain_cap,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn single_path_is_the_general_path(net in nets()) {
        let (short, _, short_bytes) = run(&net, Way::Short);
        let (general, _, general_bytes) = run(&net, Way::General);
        prop_assert!(short.len() > 1, "the sender sent something beyond its handshake");
        prop_assert_eq!(short_bytes, general_bytes);
        prop_assert_eq!(short.len(), general.len());
        for (i, (s, g)) in short.iter().zip(&general).enumerate() {
            prop_assert_eq!(s, g, "transmission {} differs", i);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn probe_scheduled_once_per_drain_is_the_eager_schedule(net in nets()) {
        let (noted, noted_t, noted_bytes) = run(&net, Way::Short);
        let (eager, eager_t, eager_bytes) = run(&net, Way::EagerTlp);
        prop_assert!(noted.len() > 1, "the sender sent something beyond its handshake");
        prop_assert_eq!(noted_bytes, eager_bytes);
        prop_assert_eq!(noted.len(), eager.len());
        for (i, (s, g)) in noted.iter().zip(&eager).enumerate() {
            prop_assert_eq!(s, g, "transmission {} differs", i);
        }
        prop_assert_eq!(noted_t.len(), eager_t.len());
        for (i, (s, g)) in noted_t.iter().zip(&eager_t).enumerate() {
            prop_assert_eq!(s, g, "deadline {} differs", i);
        }
    }
}
