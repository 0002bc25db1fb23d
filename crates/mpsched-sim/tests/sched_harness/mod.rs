//! The schedulers tests' scenario builders: symmetric paths, one MPTCP download under a chosen
//! scheduler, and what a user measures of it (`Out`).

use super::common::*;
use mpsched_sim::config::*;
use mpsched_sim::records::Records;
use mpsched_sim::run::run;
use serde_json::Value;
/// Payload of a full MPTCP segment (`common::transport`'s 1448-byte MSS less the 28-byte DSS
/// option Linux reserves), bytes.
pub const MSS: u64 = mpsched_proto::tcp::MPTCP_DATA_MSS_BYTES_FOR_1500;
/// Initial window: 10 segments (RFC 6928), bytes.
pub const IW_BYTES: u64 = 10 * MSS;
/// Write time of a warm transfer: both handshakes (at most 2 × 150 ms here) are long done.
pub const WARM_NS: u64 = 2 * S;

/// One path, symmetric: rate each way, round-trip time, queue of each link in packets.
#[derive(Clone, Copy)]
pub struct Path {
    pub rate_bps: u64,
    pub rtt_ns: u64,
    pub queue_packets: u64,
}

pub fn path(mbps: u64, rtt_ms: u64, queue_packets: u64) -> Path {
    Path { rate_bps: mbps * 1_000_000, rtt_ns: rtt_ms * MS, queue_packets }
}

/// Fast path: 20 Mbit/s, 10 ms RTT; BDP 25 kB, 17 packets of 1500 B.
pub fn fast() -> Path {
    path(20, 10, 17)
}

/// Slow path: 20 Mbit/s, `rtt_ms` RTT, a queue of about one BDP at 100 ms (172 packets).
pub fn slow(rtt_ms: u64) -> Path {
    path(20, rtt_ms, 172)
}

/// A network of symmetric paths: path `i` is links `2i` (down, named `p{i}.d`) and `2i+1`.
pub fn net(paths: &[Path]) -> SimConfig {
    let pairs = paths
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let d = p.rtt_ns / 2;
            (
                link(&format!("p{i}.d"), p.rate_bps, d, p.queue_packets),
                link(&format!("p{i}.u"), p.rate_bps, d, p.queue_packets),
            )
        })
        .collect();
    let (links, paths) = paths_of(pairs);
    let mut cfg = scenario(links, paths, 60 * S);
    cfg.record.sample_interval_ns = MS;
    cfg
}

/// How the application writes.
#[derive(Clone)]
pub enum Load {
    /// `size` bytes written at connect(): the time is the flow completion time.
    Cold(u64),
    /// `size` bytes written at [`WARM_NS`]: the time counts from the write.
    Warm(u64),
    /// Back-to-back transfers on one connection: the time is the last one's.
    Series(Vec<u64>),
}

/// What a user measures of one MPTCP download.
pub struct Out {
    /// Completion time of the (last) transfer, ns.
    pub time_ns: u64,
    /// Payload bytes sent per subflow (subflow `i` runs over path `i`).
    pub sent: Vec<u64>,
    /// Payload bytes sent again at the connection level (copies, reinjections).
    pub redundant: u64,
    pub rec: Records,
}

impl Out {
    /// Share of the payload bytes that subflow `i` carried.
    pub fn share(&self, i: usize) -> f64 {
        self.sent[i] as f64 / self.sent.iter().sum::<u64>() as f64
    }

    /// Bytes the scheduler gave each subflow: sent minus the subflow's own retransmissions.
    pub fn assigned(&self) -> Vec<u64> {
        let re = u64s(&self.rec, "subflows", "bytes_retransmitted");
        self.sent.iter().zip(re).map(|(s, r)| s - r).collect()
    }

    /// Values of a `subflow_series` column for subflow `sub`, in time order.
    pub fn series(&self, sub: u64, column: &str) -> Vec<u64> {
        let sf = u64s(&self.rec, "subflow_series", "subflow");
        let v = u64s(&self.rec, "subflow_series", column);
        (0..sf.len()).filter(|&i| sf[i] == sub).map(|i| v[i]).collect()
    }

    /// Mean of a `subflow_series` column for subflow `sub` while the flow runs.
    pub fn mean(&self, sub: u64, column: &str) -> f64 {
        let v = self.series(sub, column);
        v.iter().sum::<u64>() as f64 / v.len().max(1) as f64
    }

    /// Mean and maximum bytes in the receiver's connection-level out-of-order queue.
    pub fn ofo(&self) -> (f64, u64) {
        let v = u64s(&self.rec, "conn_series", "ofo_bytes");
        (v.iter().sum::<u64>() as f64 / v.len().max(1) as f64, v.iter().copied().max().unwrap_or(0))
    }

    /// Bytes subflow `sub` had acknowledged at the last sample at or before `t_ns`.
    pub fn acked_at(&self, sub: u64, t_ns: u64) -> u64 {
        let t = u64s(&self.rec, "subflow_series", "time_ns");
        let sf = u64s(&self.rec, "subflow_series", "subflow");
        let a = u64s(&self.rec, "subflow_series", "bytes_acked");
        (0..t.len()).filter(|&i| sf[i] == sub && t[i] <= t_ns).map(|i| a[i]).max().unwrap_or(0)
    }

    /// Packets forwarded by link `name` (data segments on a down link).
    pub fn packets(&self, name: &str) -> u64 {
        let l = strs(&self.rec, "links", "link");
        let p = u64s(&self.rec, "links", "packets_forwarded");
        (0..l.len()).find(|&i| l[i] == name).map_or(0, |i| p[i])
    }

    /// Highest queue occupancy of link `name` over the run, bytes.
    pub fn max_queue(&self, name: &str) -> u64 {
        let l = strs(&self.rec, "link_series", "link");
        let q = u64s(&self.rec, "link_series", "queue_bytes");
        (0..l.len()).filter(|&i| l[i] == name).map(|i| q[i]).max().unwrap_or(0)
    }
}

/// Runs one MPTCP download over every path of `cfg` with `sched` (Cubic, `rcv_buf_bytes`
/// receive buffer) and checks that it completes.
pub fn run_mptcp(cfg: SimConfig, sched: &str, params: Value, rcv_buf_bytes: u64, load: Load) -> Out {
    run_mptcp_with(cfg, sched, params, rcv_buf_bytes, load, LossRecoveryConfig::default())
}

/// [`run_mptcp`] with the subflows' loss detection chosen.
pub fn run_mptcp_with(
    mut cfg: SimConfig,
    sched: &str,
    params: Value,
    rcv_buf_bytes: u64,
    load: Load,
    loss_recovery: LossRecoveryConfig,
) -> Out {
    let mut t = transport(Protocol::Mptcp, sched, "cubic", (0..cfg.paths.len()).collect());
    t.scheduler_params = params;
    t.loss_recovery = loss_recovery;
    t.rcv_buf_bytes = rcv_buf_bytes;
    cfg.transports.push(t);
    let app = match load.clone() {
        Load::Cold(size_bytes) => AppConfig::Sized { size_bytes },
        Load::Warm(size) => AppConfig::Transfers { sizes_bytes: vec![size], offsets_ns: Some(vec![WARM_NS]) },
        Load::Series(sizes_bytes) => AppConfig::Transfers { sizes_bytes, offsets_ns: None },
    };
    cfg.flows.push(FlowConfig { app, ..sized(0, 0, 0, 1) });
    let rec = run(&cfg).unwrap();
    assert_eq!(bools(&rec, "flows", "completed"), vec![true], "{sched}: incomplete");
    let time_ns = match load {
        Load::Cold(_) => opt_u64s(&rec, "flows", "fct_ns")[0].unwrap(),
        _ => opt_u64s(&rec, "blocks", "delay_ns").last().copied().flatten().unwrap(),
    };
    Out {
        time_ns,
        sent: u64s(&rec, "subflows", "bytes_sent"),
        redundant: u64s(&rec, "flows", "bytes_redundant")[0],
        rec,
    }
}

/// A warm transfer of `size` bytes over the fast path and a 100 ms slow path, 6 MB buffer.
pub fn het_warm(sched: &str, params: Value, size: u64) -> Out {
    run_mptcp(net(&[fast(), slow(100)]), sched, params, 6 << 20, Load::Warm(size))
}

pub fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}
