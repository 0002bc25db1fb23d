//! Scenario tests on a deliberately tiny connection model, so each scheduler's defining
//! behaviour can be checked end to end against numbers worked out by hand.
//!
//! The model (test-only, not the project's MPTCP connection): every subflow has a fixed RTT and
//! a fixed congestion window (no congestion control, no loss), the one-way delay is half the
//! RTT, the receiver reassembles by DSN in a buffer of `rcv_buf_bytes` and delivers in-order
//! data at once; its window (`rcv_buf − out-of-order bytes`) and cumulative DATA_ACK ride on
//! every subflow ACK. A subflow transmits what it was given as its window allows. After every
//! event the scheduler is called in the connection's loop (until a call applies nothing), as
//! `sched/mod.rs` documents. Penalise halves the fixed window (once per RTT of that subflow).
//! The application keeps a 256-segment send buffer full, so `unsent_bytes` is what that buffer
//! holds beyond the unacknowledged data.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

use super::registry::build;
use super::{Action, ConnView, Rejection, Scheduler, SubflowView, UnackedChunk};

const MSS: u64 = 1000;
const MS: u64 = 1_000_000;
/// Connection send buffer of the model (unacknowledged + unassigned bytes), bytes.
const SND_BUF_BYTES: u64 = 256 * MSS;

/// A path of the model: round-trip time and fixed congestion window.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PathSpec {
    pub rtt_ms: u64,
    pub cwnd_segments: u64,
}

#[derive(Debug)]
struct Sub {
    rtt_ns: u64,
    cwnd_bytes: u64,
    in_flight_bytes: u64,
    queue: VecDeque<(u64, u64)>,
    bytes_acked: u64,
    bytes_sent: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// A packet `[dsn, dsn+len)` of subflow `sf` reaches the receiver.
    Arrive { sf: usize, dsn: u64, len: u64 },
    /// Its ACK reaches the sender, carrying the receiver's DATA_ACK and window.
    Ack {
        sf: usize,
        len: u64,
        data_ack: u64,
        rwnd: u64,
    },
}

/// Outcome of one run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Outcome {
    /// Time the receiver had every byte in order, ns (`None` = not within the horizon).
    pub fct_ns: Option<u64>,
    /// Bytes delivered in order by the horizon.
    pub delivered_bytes: u64,
    /// Bytes the subflows transmitted (duplicates included).
    pub sent_bytes: u64,
    /// Bytes each subflow transmitted.
    pub sent_per_subflow: [u64; 4],
}

struct Model {
    now_ns: u64,
    seq: u64,
    events: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    subs: Vec<Sub>,
    total_bytes: u64,
    snd_buf_bytes: u64,
    next_dsn: u64,
    data_acked: u64,
    peer_rwnd: u64,
    /// Sent, not DATA_ACKed pieces: dsn -> (len, sent_on_mask).
    unacked: BTreeMap<u64, (u64, u64)>,
    rcv_buf_bytes: u64,
    rcv_nxt: u64,
    ofo: BTreeMap<u64, u64>,
    fct_ns: Option<u64>,
}

impl Model {
    fn at(&mut self, t: u64, ev: Ev) {
        self.seq += 1;
        self.events.push(Reverse((t, self.seq, ev)));
    }

    fn pump(&mut self, sf: usize) {
        loop {
            let s = &mut self.subs[sf];
            let Some(&(dsn, len)) = s.queue.front() else {
                return;
            };
            let take = len.min(MSS);
            if s.in_flight_bytes + take > s.cwnd_bytes {
                return;
            }
            if take == len {
                s.queue.pop_front();
            } else {
                s.queue[0] = (dsn + take, len - take);
            }
            s.in_flight_bytes += take;
            s.bytes_sent += take;
            let t = self.now_ns + s.rtt_ns / 2;
            self.at(t, Ev::Arrive { sf, dsn, len: take });
        }
    }

    fn view_parts(&self) -> (Vec<SubflowView>, Vec<UnackedChunk>) {
        let subflows = self
            .subs
            .iter()
            .enumerate()
            .map(|(id, s)| SubflowView {
                id,
                path_index: id,
                established: true,
                has_rtt_sample: true,
                srtt_ns: s.rtt_ns,
                rttvar_ns: s.rtt_ns / 8,
                min_rtt_ns: s.rtt_ns,
                last_rtt_ns: s.rtt_ns,
                rto_ns: 200 * MS + s.rtt_ns,
                mss_bytes: MSS,
                cwnd_bytes: s.cwnd_bytes,
                ssthresh_bytes: s.cwnd_bytes,
                in_flight_bytes: s.in_flight_bytes,
                queued_bytes: s.queue.iter().map(|q| q.1).sum(),
                segs_in_use: 0,
                pacing_rate_bps: s.cwnd_bytes * 8 * 1_000_000_000 / s.rtt_ns * 12 / 10,
                bytes_acked: s.bytes_acked,
                bytes_sent: s.bytes_sent,
                ..SubflowView::default()
            })
            .collect();
        let unacked = self
            .unacked
            .iter()
            .map(|(&dsn, &(len, mask))| UnackedChunk {
                dsn,
                len,
                sent_on_mask: mask,
            })
            .collect();
        (subflows, unacked)
    }

    /// Application bytes in the send buffer not yet given to a subflow: the application
    /// keeps the buffer (unacknowledged + unsent) full.
    fn unsent_bytes(&self) -> u64 {
        let in_buffer = self.next_dsn - self.data_acked;
        (self.total_bytes - self.next_dsn).min(self.snd_buf_bytes.saturating_sub(in_buffer))
    }

    fn apply(&mut self, a: Action) -> Result<(), Rejection> {
        match a {
            Action::SendNew { subflow, max_bytes } => {
                let room = (self.data_acked + self.peer_rwnd).saturating_sub(self.next_dsn);
                let bytes = max_bytes.min(self.unsent_bytes()).min(room);
                if bytes == 0 {
                    return Err(Rejection::ReceiveWindowFull);
                }
                let mut dsn = self.next_dsn;
                while dsn < self.next_dsn + bytes {
                    let len = MSS.min(self.next_dsn + bytes - dsn);
                    self.unacked.insert(dsn, (len, 1 << subflow));
                    dsn += len;
                }
                self.subs[subflow].queue.push_back((self.next_dsn, bytes));
                self.next_dsn += bytes;
                self.pump(subflow);
            }
            Action::Resend {
                subflow, dsn, len, ..
            } => {
                let start = dsn.max(self.data_acked);
                let end = dsn + len;
                if start >= end {
                    return Err(Rejection::NothingToSend);
                }
                for (_, (_, mask)) in self
                    .unacked
                    .range_mut(..end)
                    .filter(|(&d, &mut (l, _))| d + l > start)
                {
                    *mask |= 1 << subflow;
                }
                self.subs[subflow].queue.push_back((start, end - start));
                self.pump(subflow);
            }
            Action::Penalize { subflow } => {
                let s = &mut self.subs[subflow];
                s.cwnd_bytes = (s.cwnd_bytes / 2).max(MSS);
            }
        }
        Ok(())
    }

    fn call_scheduler(&mut self, sched: &mut dyn Scheduler) {
        for _ in 0..100_000 {
            let (subflows, unacked) = self.view_parts();
            let view = ConnView {
                now_ns: self.now_ns,
                subflows: &subflows,
                unsent_bytes: self.unsent_bytes(),
                app_done: true,
                next_dsn: self.next_dsn,
                data_acked: self.data_acked,
                unacked: &unacked,
                reinject_queue: &[],
                peer_rwnd_bytes: self.peer_rwnd,
            };
            let mut out = Vec::new();
            sched.schedule(&view, &mut out);
            let mut applied = false;
            for a in out {
                match self.apply(a) {
                    Ok(()) => applied = true,
                    Err(why) => sched.on_rejected(a, why, self.now_ns),
                }
            }
            if !applied {
                return;
            }
        }
        panic!("{}: the scheduling loop did not stop", sched.name());
    }

    fn handle(&mut self, ev: Ev) {
        match ev {
            Ev::Arrive { sf, dsn, len } => {
                if dsn + len > self.rcv_nxt {
                    let e = self.ofo.entry(dsn).or_insert(dsn + len);
                    *e = (*e).max(dsn + len);
                    while let Some((&s, &e)) = self.ofo.first_key_value() {
                        if s > self.rcv_nxt {
                            break;
                        }
                        self.rcv_nxt = self.rcv_nxt.max(e);
                        self.ofo.remove(&s);
                    }
                }
                if self.rcv_nxt == self.total_bytes && self.fct_ns.is_none() {
                    self.fct_ns = Some(self.now_ns);
                }
                let ofo_bytes: u64 = self
                    .ofo
                    .iter()
                    .map(|(&s, &e)| e - s.max(self.rcv_nxt))
                    .sum();
                let rwnd = self.rcv_buf_bytes.saturating_sub(ofo_bytes);
                let t = self.now_ns + self.subs[sf].rtt_ns / 2;
                self.at(
                    t,
                    Ev::Ack {
                        sf,
                        len,
                        data_ack: self.rcv_nxt,
                        rwnd,
                    },
                );
            }
            Ev::Ack {
                sf,
                len,
                data_ack,
                rwnd,
            } => {
                let s = &mut self.subs[sf];
                s.in_flight_bytes -= len;
                s.bytes_acked += len;
                if data_ack >= self.data_acked {
                    self.data_acked = data_ack;
                    self.peer_rwnd = rwnd;
                }
                let acked = self.data_acked;
                self.unacked.retain(|&d, &mut (l, _)| d + l > acked);
                self.pump(sf);
            }
        }
    }
}

/// Runs `flow_bytes` of application data over `paths` with `scheduler` until `horizon_ms`.
pub(crate) fn run(
    scheduler: &str,
    paths: &[PathSpec],
    flow_bytes: u64,
    rcv_buf_bytes: u64,
    horizon_ms: u64,
) -> Outcome {
    run_with(
        scheduler,
        &serde_json::json!({}),
        paths,
        flow_bytes,
        rcv_buf_bytes,
        horizon_ms,
    )
}

/// [`run`] with scheduler parameters.
pub(crate) fn run_with(
    scheduler: &str,
    params: &serde_json::Value,
    paths: &[PathSpec],
    flow_bytes: u64,
    rcv_buf_bytes: u64,
    horizon_ms: u64,
) -> Outcome {
    let mut sched = build(scheduler, params).expect("registered scheduler");
    let mut m = Model {
        now_ns: 0,
        seq: 0,
        events: BinaryHeap::new(),
        subs: paths
            .iter()
            .map(|p| Sub {
                rtt_ns: p.rtt_ms * MS,
                cwnd_bytes: p.cwnd_segments * MSS,
                in_flight_bytes: 0,
                queue: VecDeque::new(),
                bytes_acked: 0,
                bytes_sent: 0,
            })
            .collect(),
        total_bytes: flow_bytes,
        snd_buf_bytes: SND_BUF_BYTES,
        next_dsn: 0,
        data_acked: 0,
        peer_rwnd: rcv_buf_bytes,
        unacked: BTreeMap::new(),
        rcv_buf_bytes,
        rcv_nxt: 0,
        ofo: BTreeMap::new(),
        fct_ns: None,
    };
    m.call_scheduler(sched.as_mut());
    while let Some(Reverse((t, _, ev))) = m.events.pop() {
        if t > horizon_ms * MS || m.fct_ns.is_some() {
            break;
        }
        m.now_ns = t;
        m.handle(ev);
        m.call_scheduler(sched.as_mut());
    }
    Outcome {
        fct_ns: m.fct_ns,
        delivered_bytes: m.rcv_nxt,
        sent_bytes: m.subs.iter().map(|s| s.bytes_sent).sum(),
        sent_per_subflow: std::array::from_fn(|i| m.subs.get(i).map_or(0, |s| s.bytes_sent)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 10 ms path and a 100 ms path, 10-segment windows: the heterogeneous case every
    /// HoL-aware scheduler was designed for.
    const HET: [PathSpec; 2] = [
        PathSpec {
            rtt_ms: 10,
            cwnd_segments: 10,
        },
        PathSpec {
            rtt_ms: 100,
            cwnd_segments: 10,
        },
    ];

    fn fct_ms(name: &str, flow_segments: u64) -> u64 {
        let o = run(name, &HET, flow_segments * MSS, 1 << 30, 10_000);
        o.fct_ns
            .unwrap_or_else(|| panic!("{name} did not finish: {o:?}"))
            / MS
    }

    #[test]
    fn every_scheduler_completes_a_flow_on_the_model() {
        for name in super::super::registry::all_compositions() {
            let o = run(&name, &HET, 200 * MSS, 1 << 30, 10_000);
            assert!(o.fct_ns.is_some(), "{name}: {o:?}");
            assert!(o.sent_bytes >= 200 * MSS, "{name}: {o:?}");
        }
    }

    #[test]
    fn short_flow_ecf_and_cfs_beat_minrtt_which_waits_for_the_slow_path() {
        // 30 segments. minRTT: 10 on the fast path, 10 on the slow one (arriving at 50 ms),
        // 10 more on the fast path at 10 ms: done when the slow ones land, 50 ms.
        assert_eq!(fct_ms("minrtt", 30), 50);
        // ECF keeps the slow path idle: three fast rounds, the last arriving at 25 ms.
        assert_eq!(fct_ms("ecf", 30), 25);
        // CFS uses the slow path like minRTT, but at 20 ms, with nothing left to assign, the
        // fast path re-sends the slow path's 10 segments: they arrive at 25 ms.
        assert_eq!(fct_ms("cfs", 30), 25);
        // Redundant sends everything on both: the fast copy wins.
        assert_eq!(fct_ms("redundant", 30), 25);
        // OTIAS and STTF queue the rest behind the fast window (arrival 15, 25 ms < 50 ms).
        assert_eq!(fct_ms("otias", 30), 25);
        assert_eq!(fct_ms("sttf", 30), 25);
        // DAPS plans 10 fast windows per slow one, fast first.
        assert_eq!(fct_ms("daps", 30), 25);
        // Round-robin ignores RTTs entirely: half the data waits for the slow path.
        assert!(fct_ms("roundrobin", 30) >= 50);
    }

    /// Which paths carry data (Linux selftests style: one row per scheduler), on the 10 ms /
    /// 100 ms pair: a 5-segment flow that fits the fast window, and one second of bulk data.
    #[test]
    fn path_usage_table() {
        // (scheduler, short flow touches the slow path, bulk transfer uses the slow path)
        let rows = [
            ("minrtt", false, true),
            ("linux", false, true),
            ("roundrobin", true, true),
            ("redundant", true, true),
            ("ecf", false, true),
            ("blest", false, true),
            ("daps", false, true),
            ("otias", false, true),
            ("sttf", false, true),
            ("cfs", false, true),
            ("bwm", false, true),
            ("freeze", false, true),
        ];
        assert_eq!(
            rows.len(),
            super::super::registry::all()
                .iter()
                .filter(|i| !i.is_extension)
                .count()
        );
        for (name, short_slow, bulk_slow) in rows {
            let short = run(name, &HET, 5 * MSS, 1 << 30, 10_000);
            assert!(
                short.sent_per_subflow[0] > 0,
                "{name}: short flow never used the fast path"
            );
            assert_eq!(
                short.sent_per_subflow[1] > 0,
                short_slow,
                "{name}: short {short:?}"
            );
            let bulk = run(name, &HET, 1 << 40, 1 << 30, 1_000);
            assert!(bulk.sent_per_subflow[0] > 0, "{name}");
            assert_eq!(
                bulk.sent_per_subflow[1] > 0,
                bulk_slow,
                "{name}: bulk {bulk:?}"
            );
        }
        // Freeze on a 10 ms / 200 ms pair: the slow path only carries the 1-per-second probes.
        let far = [
            HET[0],
            PathSpec {
                rtt_ms: 200,
                cwnd_segments: 10,
            },
        ];
        let o = run("freeze", &far, 1 << 40, 1 << 30, 3_000);
        assert!(o.sent_per_subflow[1] <= 3 * MSS, "{o:?}");
        assert!(run("minrtt", &far, 1 << 40, 1 << 30, 3_000).sent_per_subflow[1] > 100 * MSS);
    }

    #[test]
    fn cfs_duplicates_only_the_tail_of_a_long_flow() {
        // 2000 segments: the copies are the slow path's last window or so, not the flow.
        let o = run("cfs", &HET, 2000 * MSS, 1 << 30, 10_000);
        let m = run("minrtt", &HET, 2000 * MSS, 1 << 30, 10_000);
        assert!(o.fct_ns.unwrap() <= m.fct_ns.unwrap(), "{o:?} vs {m:?}");
        let copies = o.sent_bytes - 2000 * MSS;
        assert!(
            copies > 0 && copies <= 2 * 10 * MSS,
            "{copies} bytes of copies"
        );
    }

    #[test]
    fn with_a_small_receive_buffer_blest_and_rp_deliver_more_than_minrtt() {
        // 30-segment receive buffer: data on the slow path blocks the window for 100 ms.
        let buf = 30 * MSS;
        let bytes = |n: &str| run(n, &HET, 1 << 40, buf, 1_000).delivered_bytes;
        let (minrtt, blest, rp) = (bytes("minrtt"), bytes("blest"), bytes("minrtt+rp"));
        assert!(blest > minrtt * 3 / 2, "blest {blest} vs minrtt {minrtt}");
        assert!(rp > minrtt, "minrtt+rp {rp} vs minrtt {minrtt}");
        // The fast path alone moves 10 segments per 10 ms: an upper bound for BLEST here.
        assert!(blest <= 1_000 * MSS + 20 * MSS, "blest {blest}");
    }

    #[test]
    fn bwm_splits_data_in_proportion_to_measured_bandwidth() {
        // Equal RTTs, 40- and 10-segment windows: 4:1 bandwidth.
        let paths = [
            PathSpec {
                rtt_ms: 20,
                cwnd_segments: 40,
            },
            PathSpec {
                rtt_ms: 20,
                cwnd_segments: 10,
            },
        ];
        // Weights summing to 1 (0.875 / 0.125): Fig. 4's printed 0.825 / 0.125 settles every
        // estimate at 0.714 of what the path carried, so a path given its quota measures less
        // than it got and the shares follow the round dynamics (6.3:1 here), not the
        // bandwidths; see `bwm.rs`.
        let params = serde_json::json!({"ewma_keep": 0.875});
        let o = run_with("bwm", &params, &paths, 1 << 40, 1 << 30, 2_000);
        let [a, b, ..] = o.sent_per_subflow;
        assert!(a >= 35 * b / 10 && a <= 45 * b / 10, "split {a}:{b}");
        let ideal = 50 * MSS * 2_000 / 20; // both windows every 20 ms
        assert!(o.delivered_bytes * 10 >= ideal * 8, "{o:?} vs {ideal}");
    }
}
