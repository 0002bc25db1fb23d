//! The normalized run configuration: what the Python front end hands the core.
//!
//! Python validates the human-facing scenario (TOML, units like "150Mbit" and "200ms", lists that
//! expand into one run per combination) and emits exactly one of these per run, as JSON, in base
//! units: bit/s, nanoseconds, bytes. Every struct denies unknown fields so a mismatch between the
//! two sides is an error, never a silently ignored setting. `SimConfig::validate` re-checks what
//! the core relies on, so the core never panics on a config that passed validation.
//!
//! The same normalized form drives the kernel testbed engine (`python/mpsched/testbed`).

use serde::{Deserialize, Serialize};

/// Links, their loss, jitter and capacity models are engine types, used here as they are:
/// see `crates/mpsched-engine/src/net/{link,loss,jitter,capacity}.rs` for their fields.
pub use mpsched_engine::net::{
    CapacityConfig, Impairments, JitterConfig, JitterDistribution, LinkSpec as LinkConfig, LossConfig, RateStep,
};

/// One simulation run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimConfig {
    /// Run seed: every random stream derives from (seed, component id).
    pub seed: u64,
    /// The run stops at this simulated time even if flows are unfinished (they are recorded as
    /// incomplete), ns.
    pub duration_ns: u64,
    /// Every unidirectional link of the network.
    pub links: Vec<LinkConfig>,
    /// Paths between the client and the server. Path `i` is what subflow `i` of a connection
    /// that uses it runs over.
    pub paths: Vec<PathConfig>,
    /// Transport settings, referenced by index from flows.
    pub transports: Vec<TransportConfig>,
    /// The application flows.
    pub flows: Vec<FlowConfig>,
    /// Constant-bit-rate cross traffic (UDP-like: no congestion control, no retransmission).
    #[serde(default)]
    pub cross_traffic: Vec<CrossTrafficConfig>,
    /// Paths going down and coming back up, and impairments of paths (blackhole, loss ramp,
    /// RTT spike, rate collapse) with their recovery.
    #[serde(default)]
    pub path_events: Vec<PathEvent>,
    /// What to record.
    #[serde(default)]
    pub record: RecordConfig,
    /// Endpoint timing model: a per-packet host processing delay at the receiving endpoint
    /// (absent: segments are handled the instant they arrive, as before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_delay: Option<HostDelayConfig>,
}

/// Per-packet host processing delay: every segment that reaches an endpoint is handled a
/// log-normal time later (the host's softirq / wake-up latency), in arrival order per endpoint
/// (a host never reorders one connection's packets). Each endpoint draws from its own stream.
/// `p99_ns == median_ns` gives a constant delay. With `floor_ns`, the delay is the floor plus a
/// log-normal (a host's fixed per-packet work, then its variable wake-ups), the median and p99
/// still being the whole delay's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostDelayConfig {
    /// Median of the delay, ns (positive).
    pub median_ns: u64,
    /// 99th percentile of the delay, ns (at least `median_ns`).
    pub p99_ns: u64,
    /// No delay is shorter, ns (below `median_ns`; 0, the default, is a pure log-normal and is
    /// left out when serialised, so configs without a floor keep their bytes).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub floor_ns: u64,
    /// Stalls: a packet that draws one is handled after the stall's delay instead of the
    /// log-normal above (None, the default: no stalls; left out when serialised).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall: Option<HostStallConfig>,
}

/// A host's slow spells (on the testbed an ACK's delay is tens of us, but a few percent of
/// them wait 0.3-3 ms, several in a row: docs/testbed.md, "Session 8: the ACKs' delay on the
/// testbed"): a two-state chain per endpoint, stepped once per packet, spends `per_million` /
/// 10^6 of the packets stalled, in spells of `run_packets` packets on average; a stalled
/// packet's delay is the stall's log-normal instead of the body's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostStallConfig {
    /// Stalled packets per million (1 to 999 999).
    pub per_million: u64,
    /// Mean length of a spell, packets (at least 1).
    pub run_packets: u64,
    /// Median of a stall, ns (positive).
    pub median_ns: u64,
    /// 99th percentile of a stall, ns (at least `median_ns`, at most 1 s).
    pub p99_ns: u64,
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}

/// A path between client and server: a chain of links each way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathConfig {
    /// Human-readable name, e.g. "wlan".
    pub name: String,
    /// Link indices from server to client (downlink), in order.
    pub down: Vec<usize>,
    /// Link indices from client to server (uplink), in order.
    pub up: Vec<usize>,
    /// The path carries the sender's TSO skbs whole (a veth testbed: GSO super-packets pass
    /// the router's qdisc as one packet and reach the receiving TCP as one skb), so a sender's
    /// contiguous segments leave in skbs of `tcp_tso_autosize` segments, each queued, shaped,
    /// dropped and delivered as one packet and acknowledged once. `false` (default): every
    /// segment is a packet of its own, as on a wire where the NIC segments.
    #[serde(default)]
    pub gso: bool,
}

/// Transport (TCP or MPTCP) settings shared by the flows that reference them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransportConfig {
    /// "mptcp" or "tcp" (single path: uses `paths[0]`).
    pub protocol: Protocol,
    /// Scheduler registry name, e.g. "minrtt" or "minrtt+rp+bm" (ignored for TCP).
    pub scheduler: String,
    /// Scheduler parameters (JSON object; keys checked by the scheduler).
    #[serde(default = "empty_object")]
    pub scheduler_params: serde_json::Value,
    /// Congestion control: "reno", "cubic", "lia", "olia", "balia".
    pub cc: String,
    /// Path indices the connection opens subflows on, in order (the first carries the
    /// MP_CAPABLE handshake); a flow may override them.
    pub paths: Vec<usize>,
    /// Path indices (subset of `paths`) whose subflows are backups.
    #[serde(default)]
    pub backup_paths: Vec<usize>,
    /// Receive buffer (connection level for MPTCP), bytes.
    pub rcv_buf_bytes: u64,
    /// Send buffer, bytes.
    pub snd_buf_bytes: u64,
    /// Maximum segment size, bytes.
    #[serde(default = "default_mss")]
    pub mss_bytes: u64,
    /// Initial congestion window, segments.
    #[serde(default = "default_init_cwnd")]
    pub init_cwnd_segments: u64,
    /// Linux receive-buffer autotuning on the data receiver (dynamic right-sizing,
    /// `net.ipv4.tcp_moderate_rcvbuf` = 1, what Linux does unless the application sets
    /// `SO_RCVBUF`): the advertised window starts at half of `tcp_rmem[1]` (64 KiB) and grows
    /// once per receiver RTT to twice the bytes the application read in the last one, up to
    /// `rcv_buf_bytes` (MPTCP: `mptcp_rcv_space_adjust` as of Linux 6.18). Off (the default,
    /// so that results do not depend on a warm-up the scheduler under study does not
    /// control): the window is the whole `rcv_buf_bytes` from the first segment.
    #[serde(default)]
    pub rcv_buf_autotuning: bool,
    /// When the client opens the additional subflows (MP_JOIN). "oot" (the default, the
    /// out-of-tree multipath-tcp.org kernel with the full-mesh path manager, which most of
    /// the scheduler literature measured): at the MP_CAPABLE SYN-ACK. "fully_established"
    /// (upstream Linux's in-kernel path manager): once the connection is fully established,
    /// i.e. at the first segment from the server after the handshake, about one RTT of the
    /// first path later.
    #[serde(default)]
    pub join_timing: JoinTimingConfig,
    /// Loss detection of every subflow: "rack_tlp" (the default, Linux's RACK-TLP: time-based
    /// loss marking and a tail-loss probe ~2 SRTT after the last transmission) or "rfc6675"
    /// (DupThresh marking; a lost tail waits for the RTO).
    #[serde(default)]
    pub loss_recovery: LossRecoveryConfig,
    /// `net.mptcp.stale_loss_cnt` of the upstream kernel (default 4; 0 never marks a subflow
    /// stale): with a scheduler on the upstream machinery (`linux`), a busy subflow that has
    /// received no ACK for more than this many MPTCP-level retransmission-timer periods is
    /// avoided while another subflow is active, and its pending data is sent again on the
    /// others (`mpsched_proto::mptcp::stale`). Other schedulers ignore it.
    #[serde(default = "default_stale_loss_cnt")]
    pub stale_loss_cnt: u8,
}

impl TransportConfig {
    /// A transport over `paths`, every optional field at serde's default for a scenario.
    pub fn with_defaults(
        protocol: Protocol,
        scheduler: &str,
        cc: &str,
        paths: Vec<usize>,
        rcv_buf_bytes: u64,
        snd_buf_bytes: u64,
    ) -> Self {
        TransportConfig {
            protocol,
            scheduler: scheduler.into(),
            scheduler_params: empty_object(),
            cc: cc.into(),
            paths,
            backup_paths: Vec::new(),
            rcv_buf_bytes,
            snd_buf_bytes,
            mss_bytes: default_mss(),
            init_cwnd_segments: default_init_cwnd(),
            rcv_buf_autotuning: false,
            join_timing: JoinTimingConfig::default(),
            loss_recovery: LossRecoveryConfig::default(),
            stale_loss_cnt: default_stale_loss_cnt(),
        }
    }
}

fn default_stale_loss_cnt() -> u8 {
    mpsched_proto::mptcp::stale::DEFAULT_STALE_LOSS_CNT
}

/// Loss detection of the subflows (`mpsched_proto::tcp::LossRecovery`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum LossRecoveryConfig {
    /// Linux's default RACK-TLP (RFC 8985).
    #[default]
    RackTlp,
    /// RFC 6675 DupThresh, no tail-loss probe.
    Rfc6675,
}

/// When the client opens subflows 1.. of an MPTCP connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum JoinTimingConfig {
    /// At the MP_CAPABLE SYN-ACK (out-of-tree Linux, full-mesh path manager).
    #[default]
    Oot,
    /// Once the connection is fully established (upstream Linux,
    /// `mptcp_pm_fully_established`).
    FullyEstablished,
}

fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(Default::default())
}
fn default_mss() -> u64 {
    1448
}
fn default_init_cwnd() -> u64 {
    10
}

/// Transport protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// Multipath TCP over `paths`.
    Mptcp,
    /// Single-path TCP over the first of `paths`.
    Tcp,
}

/// One application flow on its own connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowConfig {
    /// Flow id, unique in the run.
    pub id: u64,
    /// Index into `transports`.
    pub transport: usize,
    /// connect() time, ns.
    pub start_ns: u64,
    /// Which way the data goes: "download" (server to client, the default) or "upload".
    #[serde(default)]
    pub direction: Direction,
    /// Paths this flow's subflows use, overriding the transport's `paths` (topologies where
    /// every host pair has its own paths, e.g. FatTree).
    #[serde(default)]
    pub paths: Option<Vec<usize>>,
    /// What the application sends.
    pub app: AppConfig,
    /// Whether the application sets `TCP_NODELAY` on its sockets (Nagle off). `None`: what
    /// the kernel engine's mpxfer does for that kind ([`AppConfig::nodelay_by_default`]).
    #[serde(default)]
    pub nodelay: Option<bool>,
}

impl FlowConfig {
    /// Whether the flow's writers leave Nagle on (Linux's default without `TCP_NODELAY`).
    pub fn nagle(&self) -> bool {
        !self.nodelay.unwrap_or_else(|| self.app.nodelay_by_default())
    }
}

/// Direction of the data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Server to client.
    #[default]
    Download,
    /// Client to server.
    Upload,
}

/// Application behaviour of a flow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum AppConfig {
    /// Send `size_bytes` as fast as the transport allows, then close.
    Sized {
        /// Bytes to transfer.
        size_bytes: u64,
    },
    /// Send without end until `stop_ns` (iperf-like).
    Bulk {
        /// Time the application stops writing, ns.
        stop_ns: u64,
    },
    /// A web page fetched as wget / curl do it over one HTTP/1.1 keep-alive connection: the
    /// client sends a request (a real packet up the flow's first path, which can queue and be
    /// lost) once the connection is established, the server writes the object when the request
    /// arrives, and the next request leaves when the previous object is complete. Download only.
    Web {
        /// Response size of each object, in fetch order (one entry: a single file).
        objects_bytes: Vec<u64>,
        /// Size of one request on the wire, bytes.
        #[serde(default = "default_request_bytes")]
        request_bytes: u64,
        /// A request not received by then is sent again, ns.
        #[serde(default = "default_request_retry_ns")]
        request_retry_ns: u64,
    },
    /// Constant-bit-rate application: a block of `block_bytes` every `block_bytes * 8 /
    /// rate_bps` seconds from the flow's start until `stop_ns`, each stamped with its send
    /// time; the receiver records when each block is complete in order (the `blocks` table).
    Cbr {
        /// Application rate, bit/s (payload).
        rate_bps: u64,
        /// Block size, bytes.
        #[serde(default = "default_block_bytes")]
        block_bytes: u64,
        /// No block is issued at or after this time, ns.
        stop_ns: u64,
    },
    /// Real-time messages: one message of `size_bytes` every `interval_ns` from the flow's
    /// start until `stop_ns` (game state at 30-60 Hz, a VoIP frame every 20 ms), each stamped
    /// with its send time; the receiver records when each is complete in order (the `blocks`
    /// table, with the deadline and whether it was missed).
    Messages {
        /// Size of one message, bytes.
        size_bytes: u64,
        /// Time between messages, ns.
        interval_ns: u64,
        /// A message delivered more than this after it was sent misses its deadline, ns.
        #[serde(default)]
        deadline_ns: Option<u64>,
        /// No message is issued at or after this time, ns.
        stop_ns: u64,
    },
    /// Request / response (RPC) on one connection: the client writes each request of
    /// `request_bytes` into the connection's client-to-server byte stream (its own sequence
    /// space, segmented, scheduled on the subflows by the connection's scheduler, acknowledged,
    /// lost and retransmitted like any data), the server writes the `response_bytes` response
    /// once the whole request has arrived (requests served in order), and the `blocks` table
    /// records each request's write and its response's last byte delivered (its latency).
    /// Open loop with `interval_ns` (request `k` at `start + k * interval_ns`), else closed
    /// loop with `concurrency` requests outstanding (the next leaves when a response is
    /// complete). Requests are written once the client's connection is established. Download
    /// only.
    Rpc {
        /// Number of requests.
        requests: u64,
        /// Size of one request (payload in the client-to-server stream), bytes.
        #[serde(default = "default_request_bytes")]
        request_bytes: u64,
        /// Size of one response, bytes.
        response_bytes: u64,
        /// Open loop: time between requests, ns.
        #[serde(default)]
        interval_ns: Option<u64>,
        /// Closed loop: requests outstanding at once (1 without `interval_ns`).
        #[serde(default)]
        concurrency: Option<u64>,
        /// A response completed more than this after its request left misses its deadline, ns.
        #[serde(default)]
        deadline_ns: Option<u64>,
    },
    /// Several transfers on one long-lived connection. Without `offsets_ns` they run back to
    /// back: the next is written once the previous one is DATA_ACKed. With `offsets_ns`,
    /// transfer `k` is written at `start_ns + offsets_ns[k]` (queued behind unfinished ones).
    Transfers {
        /// Size of each transfer, bytes.
        sizes_bytes: Vec<u64>,
        /// Write time of each transfer after the flow's start, ns (non-decreasing).
        #[serde(default)]
        offsets_ns: Option<Vec<u64>>,
    },
}

impl AppConfig {
    /// Whether this kind of application sets `TCP_NODELAY` when the scenario does not say.
    /// The kernel engine's mpxfer sets it for rpc and messages and leaves Nagle on for sized
    /// and bulk transfers (`native/mpxfer.c`), so a scenario means one network on both
    /// engines. The simulator-only kinds: a CBR or real-time stream is latency-bound like
    /// messages, and HTTP servers disable Nagle (nginx `tcp_nodelay on` and Apache httpd by
    /// default), so cbr and web set it; transfers on one connection are sized transfers.
    pub fn nodelay_by_default(&self) -> bool {
        matches!(
            self,
            AppConfig::Messages { .. } | AppConfig::Rpc { .. } | AppConfig::Cbr { .. } | AppConfig::Web { .. }
        )
    }
}

/// A GET with typical browser headers is a few hundred bytes; 500 B on the wire (headers
/// included) is an assumption, not a measurement.
fn default_request_bytes() -> u64 {
    500
}
/// RFC 6298 §2.1: the initial RTO is 1 s, which is what a lost first segment waits (as a SYN).
fn default_request_retry_ns() -> u64 {
    1_000_000_000
}
/// 8 KB application blocks, as in the CBR experiments of the `004_` seed (slides 23-26).
fn default_block_bytes() -> u64 {
    8192
}

/// Constant-bit-rate cross traffic over a chain of links.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrossTrafficConfig {
    /// Link indices the packets traverse, in order.
    pub links: Vec<usize>,
    /// Sending rate, bit/s (on the wire).
    pub rate_bps: u64,
    /// Size of each packet, bytes.
    #[serde(default = "default_cbr_packet")]
    pub packet_bytes: u64,
    /// First packet time, ns.
    pub start_ns: u64,
    /// No packet at or after this time, ns.
    pub stop_ns: u64,
}

fn default_cbr_packet() -> u64 {
    1500
}

/// One entry of `path_events`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(untagged)]
pub enum PathEvent {
    /// The original shape: the path goes down (`up` false) or comes back (`up` true).
    UpDown(PathUpDown),
    /// An event with a `kind`.
    Kind(PathImpairment),
}

/// A path going down (its links lose everything they hold and the hosts see the interface
/// go) or coming back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathUpDown {
    /// Time of the event, ns.
    pub at_ns: u64,
    /// Path index.
    pub path: usize,
    /// False: the path goes down; true: it comes back.
    pub up: bool,
}

/// Which of a path's link chains an impairment applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum LinkDirection {
    /// Both the downlink (server to client) and the uplink chain.
    #[default]
    Both,
    /// The downlink chain only.
    Down,
    /// The uplink chain only.
    Up,
}

/// An event with a `kind`. Every kind has `at_ns` (start, ns), `path` (index) and an optional
/// `duration_ns` (the event is undone then; without it, it lasts to the end of the run).
/// Impairments (all but `down`) have an optional `direction` ("both", "down", "up").
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum PathImpairment {
    /// The path goes down as in the original shape (hosts see it), and comes back after
    /// `duration_ns`.
    Down {
        /// Start, ns.
        at_ns: u64,
        /// Path index.
        path: usize,
        /// Time until the path comes back, ns.
        #[serde(default)]
        duration_ns: Option<u64>,
    },
    /// Every packet on the path is silently lost; the hosts see no change (a dead Wi-Fi
    /// association, a middlebox dropping the flow).
    Blackhole {
        /// Start, ns.
        at_ns: u64,
        /// Path index.
        path: usize,
        /// Time until it is lifted, ns.
        #[serde(default)]
        duration_ns: Option<u64>,
        /// Link chains affected.
        #[serde(default)]
        direction: LinkDirection,
    },
    /// Extra random loss rising linearly from `from_p` at `at_ns` to `to_p` at `at_ns +
    /// ramp_ns`, then holding `to_p` (until `duration_ns` after `at_ns`, if given).
    LossRamp {
        /// Start, ns.
        at_ns: u64,
        /// Path index.
        path: usize,
        /// Time until it is lifted, ns (at least `ramp_ns`).
        #[serde(default)]
        duration_ns: Option<u64>,
        /// Link chains affected.
        #[serde(default)]
        direction: LinkDirection,
        /// Length of the ramp, ns.
        ramp_ns: u64,
        /// Loss probability at the start, in [0, 1].
        from_p: f64,
        /// Loss probability at the end of the ramp and after, in [0, 1].
        to_p: f64,
    },
    /// `extra_delay_ns` more propagation delay on each link of the chain (bufferbloat onset).
    RttSpike {
        /// Start, ns.
        at_ns: u64,
        /// Path index.
        path: usize,
        /// Time until it is lifted, ns.
        #[serde(default)]
        duration_ns: Option<u64>,
        /// Link chains affected.
        #[serde(default)]
        direction: LinkDirection,
        /// Delay added per link, ns.
        extra_delay_ns: u64,
    },
    /// The links of the chain serialise at `rate_bps` (replacing their rate or capacity model).
    RateCollapse {
        /// Start, ns.
        at_ns: u64,
        /// Path index.
        path: usize,
        /// Time until it is lifted, ns.
        #[serde(default)]
        duration_ns: Option<u64>,
        /// Link chains affected.
        #[serde(default)]
        direction: LinkDirection,
        /// Rate while it lasts, bit/s (positive).
        rate_bps: u64,
    },
}

impl<'de> Deserialize<'de> for PathEvent {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let v = serde_json::Value::deserialize(d)?;
        if v.get("kind").is_some() {
            PathImpairment::deserialize(v).map(PathEvent::Kind).map_err(D::Error::custom)
        } else {
            PathUpDown::deserialize(v).map(PathEvent::UpDown).map_err(D::Error::custom)
        }
    }
}

/// What the run records besides the flow table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordConfig {
    /// Sampling interval of the time series, ns; 0 disables the series.
    pub sample_interval_ns: u64,
}

impl Default for RecordConfig {
    fn default() -> Self {
        Self { sample_interval_ns: 10_000_000 }
    }
}

/// A configuration the core refuses, with the path of the offending field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// Field path, e.g. `links[2].rate_bps`.
    pub field: String,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}
impl std::error::Error for ConfigError {}
