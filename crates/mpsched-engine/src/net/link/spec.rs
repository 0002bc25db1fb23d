//! What defines a link (`LinkSpec`, checked by `validate`) and what it counts (`LinkStats`),
//! kept apart from `link.rs`, which runs it.

use super::super::capacity::CapacityConfig;
use super::super::jitter::JitterConfig;
use super::super::loss::LossConfig;
use super::super::shaper::{Impairments, Transmitter};
use serde::{Deserialize, Serialize};

/// Everything that defines a link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// Name used in records, e.g. "wlan.down".
    pub name: String,
    /// Serialisation rate, bit/s (the initial rate when `capacity` varies it).
    pub rate_bps: u64,
    /// One-way propagation delay, ns.
    pub delay_ns: u64,
    /// Drop-tail limit of the queue in bytes, framing overhead included (the packet in service
    /// not counted; with a token bucket, the packets waiting for tokens are in the queue, as in
    /// tbf's bfifo); `None`, with `queue_packets` also `None`, means unlimited.
    #[serde(default)]
    pub queue_bytes: Option<u64>,
    /// Drop-tail limit of the queue in packets.
    #[serde(default)]
    pub queue_packets: Option<u64>,
    /// Random loss (as packets leave the link, or as they enter it: `impairments`).
    #[serde(default)]
    pub loss: LossConfig,
    /// Variation of the propagation delay.
    #[serde(default)]
    pub jitter: JitterConfig,
    /// Time-varying capacity.
    #[serde(default)]
    pub capacity: CapacityConfig,
    /// Token-bucket depth, bytes (Linux tbf `burst`): the transmitter releases a packet as soon
    /// as the bucket holds its tokens, back to back after an idle period, and fills at
    /// `rate_bps`. `None`: `transmitter` says how packets leave.
    #[serde(default)]
    pub burst_bytes: Option<u64>,
    /// Without a tbf bucket (`burst_bytes` is `None`): a wire (default) or Linux htb.
    #[serde(default)]
    pub transmitter: Transmitter,
    /// Framing bytes per packet that the rate and the byte queue limit count on top of
    /// `size_bytes` (an Ethernet header: 14, which a qdisc on a veth counts in `skb->len`).
    #[serde(default)]
    pub overhead_bytes: u64,
    /// Where loss, delay and jitter act: after the transmitter (default) or before the queue.
    #[serde(default)]
    pub impairments: Impairments,
}

/// Largest framing overhead a link accepts, bytes (Ethernet with preamble, FCS, gap and VLAN
/// tags is under 50; ATM/PPPoE encapsulations stay under 100).
pub const MAX_OVERHEAD_BYTES: u64 = 256;

impl LinkSpec {
    /// A plain serialising link named "l": no queue limit, loss, jitter, shaper or framing (set
    /// the other fields with struct update syntax).
    pub fn plain(rate_bps: u64, delay_ns: u64) -> Self {
        LinkSpec {
            name: "l".into(),
            rate_bps,
            delay_ns,
            queue_bytes: None,
            queue_packets: None,
            loss: LossConfig::None,
            jitter: JitterConfig::None,
            capacity: CapacityConfig::Constant,
            burst_bytes: None,
            transmitter: Transmitter::Serialise,
            overhead_bytes: 0,
            impairments: Impairments::AfterQueue,
        }
    }

    /// Checks the transmitter and impairment fields; returns (field, message) on error.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.overhead_bytes > MAX_OVERHEAD_BYTES {
            return Err((
                "overhead_bytes",
                format!("at most {MAX_OVERHEAD_BYTES} bytes of framing per packet (Ethernet: 14)"),
            ));
        }
        if self.transmitter == Transmitter::Htb
            && self.burst_bytes.is_none()
            && (self.capacity != CapacityConfig::Constant || self.rate_bps == 0)
        {
            return Err(("transmitter", "an htb class needs a constant, positive rate (no schedule or trace)".into()));
        }
        if let Some(burst) = self.burst_bytes {
            let frame = 1500 + self.overhead_bytes;
            if burst < frame {
                return Err((
                    "burst_bytes",
                    format!("a token bucket must hold at least one full frame (1500 + overhead = {frame} bytes)"),
                ));
            }
            if self.capacity != CapacityConfig::Constant {
                return Err(("burst_bytes", "a token bucket needs a constant capacity (no schedule or trace)".into()));
            }
            if self.rate_bps == 0 {
                return Err(("rate_bps", "must be positive".into()));
            }
        }
        Ok(())
    }
}

/// Counters of one link (`repr(C)`: the four a hop updates first, in the link's third cache
/// line; see `Link`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[repr(C)]
pub struct LinkStats {
    /// Packets that left the link (not lost).
    pub packets_forwarded: u64,
    /// Bytes that left the link (not lost).
    pub bytes_forwarded: u64,
    /// Packets dropped because the queue was full.
    pub packets_dropped_queue: u64,
    /// Largest queue occupancy seen, bytes.
    pub max_queue_bytes: u64,
    /// Packets lost by the random loss model.
    pub packets_lost_random: u64,
    /// Packets lost because the link was down.
    pub packets_lost_down: u64,
    /// Packets lost to an impairment in force (blackhole, loss ramp).
    pub packets_lost_impairment: u64,
}
