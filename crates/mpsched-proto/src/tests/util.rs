//! Test harness: two endpoints wired by in-memory links (quinn's `Pair` pattern).
//!
//! Each path has one link per direction with a rate, a one-way propagation delay, an
//! unlimited FIFO (serialisation delay only), random loss from a seeded splitmix64 stream, and
//! an optional drop filter for scripted losses. `drive` runs the event loop: deliver segments
//! and fire timers at the times the endpoints ask for, until a stop condition or a deadline.

use crate::tcp::{Receiver, Segment, Sender};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Anything the harness can drive (the sim-facing API of both endpoint kinds).
pub trait Endpoint {
    fn handle_segment(&mut self, now_ns: u64, subflow: usize, seg: &Segment);
    fn poll_transmit(&mut self, now_ns: u64) -> Option<(usize, Segment)>;
    fn poll_timeout(&self) -> Option<u64>;
    fn handle_timeout(&mut self, now_ns: u64);
}

/// Drop filter: called with each segment about to enter the link; true drops it.
pub type DropFn = Box<dyn FnMut(&Segment) -> bool>;
/// Extra delay filter: called with each segment the link carries; returns ns added to its
/// propagation delay (later segments may overtake it: reordering).
pub type HoldFn = Box<dyn FnMut(&Segment) -> u64>;

pub struct Link {
    pub rate_bps: u64,
    pub delay_ns: u64,
    /// Loss probability, parts per million.
    pub loss_ppm: u64,
    pub up: bool,
    /// Drop-tail queue limit, bytes waiting for the line (None = unlimited).
    pub queue_limit_bytes: Option<u64>,
    busy_until_ns: u64,
    rng: u64,
    pub drop: Option<DropFn>,
    pub hold: Option<HoldFn>,
    pub delivered: u64,
    pub dropped: u64,
}

impl Link {
    pub fn new(rate_bps: u64, delay_ns: u64) -> Self {
        Self {
            rate_bps,
            delay_ns,
            loss_ppm: 0,
            up: true,
            queue_limit_bytes: None,
            busy_until_ns: 0,
            rng: 0x9E37_79B9,
            drop: None,
            hold: None,
            delivered: 0,
            dropped: 0,
        }
    }
    pub fn queue_limit(mut self, limit_bytes: Option<u64>) -> Self {
        self.queue_limit_bytes = limit_bytes;
        self
    }
    pub fn lossy(mut self, loss_ppm: u64, seed: u64) -> Self {
        self.loss_ppm = loss_ppm;
        self.rng = seed ^ 0xD1B5_4A32_D192_ED03;
        self
    }
    fn next_rand(&mut self) -> u64 {
        // splitmix64
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Arrival time of `seg` sent at `now`, or `None` if it is lost.
    fn send(&mut self, now_ns: u64, seg: &Segment) -> Option<u64> {
        if !self.up {
            self.dropped += 1;
            return None;
        }
        if let Some(f) = self.drop.as_mut() {
            if f(seg) {
                self.dropped += 1;
                return None;
            }
        }
        if self.loss_ppm > 0 && self.next_rand() % 1_000_000 < self.loss_ppm {
            self.dropped += 1;
            return None;
        }
        let tx_ns = seg.wire_bytes() * 8 * 1_000_000_000 / self.rate_bps.max(1);
        if let Some(limit) = self.queue_limit_bytes {
            // Bytes still waiting for the line (drop-tail).
            let backlog = self.busy_until_ns.saturating_sub(now_ns) as u128 * self.rate_bps as u128
                / 8_000_000_000;
            if backlog as u64 + seg.wire_bytes() > limit {
                self.dropped += 1;
                return None;
            }
        }
        let start = now_ns.max(self.busy_until_ns);
        self.busy_until_ns = start + tx_ns;
        self.delivered += 1;
        let extra = self.hold.as_mut().map_or(0, |f| f(seg));
        Some(self.busy_until_ns + self.delay_ns + extra)
    }
}

struct InFlight {
    at_ns: u64,
    order: u64,
    to_b: bool,
    path: usize,
    seg: Segment,
}
impl PartialEq for InFlight {
    fn eq(&self, o: &Self) -> bool {
        (self.at_ns, self.order) == (o.at_ns, o.order)
    }
}
impl Eq for InFlight {}
impl PartialOrd for InFlight {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for InFlight {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.at_ns, self.order).cmp(&(o.at_ns, o.order))
    }
}

/// Two endpoints `a` and `b` joined by `paths` (a->b link, b->a link each).
pub struct Pair<A: Endpoint, B: Endpoint> {
    pub a: A,
    pub b: B,
    pub ab: Vec<Link>,
    pub ba: Vec<Link>,
    pub now_ns: u64,
    queue: BinaryHeap<Reverse<InFlight>>,
    order: u64,
    pub events: u64,
}

impl<A: Endpoint, B: Endpoint> Pair<A, B> {
    pub fn new(a: A, b: B, ab: Vec<Link>, ba: Vec<Link>) -> Self {
        Self {
            a,
            b,
            ab,
            ba,
            now_ns: 0,
            queue: BinaryHeap::new(),
            order: 0,
            events: 0,
        }
    }

    fn flush(&mut self) {
        let now = self.now_ns;
        let mut guard = 0u64;
        while let Some((p, seg)) = self.a.poll_transmit(now) {
            guard += 1;
            assert!(
                guard < 10_000_000,
                "endpoint a transmits without end at {now}"
            );
            if let Some(at) = self.ab[p].send(now, &seg) {
                self.order += 1;
                self.queue.push(Reverse(InFlight {
                    at_ns: at,
                    order: self.order,
                    to_b: true,
                    path: p,
                    seg,
                }));
            }
        }
        while let Some((p, seg)) = self.b.poll_transmit(now) {
            guard += 1;
            assert!(
                guard < 10_000_000,
                "endpoint b transmits without end at {now}: {seg:?}"
            );
            if let Some(at) = self.ba[p].send(now, &seg) {
                self.order += 1;
                self.queue.push(Reverse(InFlight {
                    at_ns: at,
                    order: self.order,
                    to_b: false,
                    path: p,
                    seg,
                }));
            }
        }
    }

    /// Runs until `stop` holds or nothing happens before `until_ns`. Returns true if stopped.
    pub fn drive(&mut self, until_ns: u64, mut stop: impl FnMut(&A, &B) -> bool) -> bool {
        loop {
            self.flush();
            if stop(&self.a, &self.b) {
                return true;
            }
            let mut next = u64::MAX;
            if let Some(Reverse(f)) = self.queue.peek() {
                next = f.at_ns;
            }
            for t in [self.a.poll_timeout(), self.b.poll_timeout()]
                .into_iter()
                .flatten()
            {
                next = next.min(t);
            }
            if next == u64::MAX || next > until_ns {
                return false;
            }
            self.now_ns = self.now_ns.max(next);
            self.events += 1;
            assert!(self.events < 50_000_000, "no progress at {}", self.now_ns);
            let now = self.now_ns;
            while self.queue.peek().is_some_and(|Reverse(f)| f.at_ns <= now) {
                let Reverse(f) = self.queue.pop().expect("peeked");
                self.events += 1;
                if f.to_b {
                    self.b.handle_segment(now, f.path, &f.seg);
                } else {
                    self.a.handle_segment(now, f.path, &f.seg);
                }
                // Let each endpoint answer before the next arrival (as a real stack would).
                self.flush();
            }
            if self.a.poll_timeout().is_some_and(|t| t <= now) {
                self.a.handle_timeout(now);
            }
            if self.b.poll_timeout().is_some_and(|t| t <= now) {
                self.b.handle_timeout(now);
            }
        }
    }
}

/// A bare subflow sender with an application that writes `total_bytes` at once.
pub struct TcpSenderEp {
    pub tx: Sender,
}
impl Endpoint for TcpSenderEp {
    fn handle_segment(&mut self, now_ns: u64, _sf: usize, seg: &Segment) {
        self.tx.handle_segment(now_ns, seg);
    }
    fn poll_transmit(&mut self, now_ns: u64) -> Option<(usize, Segment)> {
        self.tx.poll_transmit(now_ns).map(|s| (0, s))
    }
    fn poll_timeout(&self) -> Option<u64> {
        self.tx.poll_timeout()
    }
    fn handle_timeout(&mut self, now_ns: u64) {
        self.tx.handle_timeout(now_ns);
    }
}

/// A bare subflow receiver whose application checks in-order, exactly-once delivery.
pub struct TcpReceiverEp {
    pub rx: Receiver,
    pub delivered_bytes: u64,
    pub last_delivery_ns: u64,
}
impl TcpReceiverEp {
    pub fn new(rx: Receiver) -> Self {
        Self {
            rx,
            delivered_bytes: 0,
            last_delivery_ns: 0,
        }
    }
}
impl Endpoint for TcpReceiverEp {
    fn handle_segment(&mut self, now_ns: u64, _sf: usize, seg: &Segment) {
        self.rx.handle_segment(now_ns, seg);
        for r in self.rx.drain_released() {
            assert_eq!(r.dsn, self.delivered_bytes, "in order, exactly once");
            self.delivered_bytes += r.len;
            self.last_delivery_ns = now_ns;
        }
    }
    fn poll_transmit(&mut self, now_ns: u64) -> Option<(usize, Segment)> {
        self.rx.poll_transmit(now_ns).map(|s| (0, s))
    }
    fn poll_timeout(&self) -> Option<u64> {
        self.rx.poll_timeout()
    }
    fn handle_timeout(&mut self, now_ns: u64) {
        self.rx.handle_timeout(now_ns);
    }
}

pub const MS: u64 = 1_000_000;
pub const MBPS: u64 = 1_000_000;

/// Takes an MPTCP receiver with two subflows through their handshakes: the MP_CAPABLE and
/// MP_JOIN SYNs at 0 ns, the third ACKs at 1 ns (timestamps 1), its answers drained.
pub fn establish_two_subflows(rx: &mut crate::mptcp::DataReceiver) {
    use crate::tcp::flags;
    let syn = |f: u16| Segment {
        flags: flags::SYN | f,
        ts_val: 1,
        ..Default::default()
    };
    let ack3 = |f: u16| Segment {
        flags: flags::ACK | f,
        seq: 1,
        ack: 1,
        ts_val: 1,
        ..Default::default()
    };
    rx.handle_segment(0, 0, &syn(flags::MP_CAPABLE));
    rx.handle_segment(0, 1, &syn(flags::MP_JOIN));
    while rx.poll_transmit(0).is_some() {}
    rx.handle_segment(1, 0, &ack3(flags::MP_CAPABLE));
    rx.handle_segment(1, 1, &ack3(flags::MP_JOIN));
    while rx.poll_transmit(1).is_some() {}
}

/// The `k`-th full segment (`mss` bytes) of a subflow established by
/// [`establish_two_subflows`], mapped to connection-level sequence `dsn` and echoing `ts_ecr`
/// (0: no echo).
pub fn mapped_data(k: u64, dsn: u64, mss: u64, ts_ecr: u64) -> Segment {
    Segment {
        flags: crate::tcp::flags::ACK | crate::tcp::flags::DSS_MAP,
        seq: 1 + k * mss,
        len: mss as u32,
        ack: 1,
        ts_val: 2,
        ts_ecr,
        dsn,
        ..Default::default()
    }
}
