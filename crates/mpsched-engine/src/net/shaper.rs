//! A token-bucket transmitter, as Linux `tbf` (`net/sched/sch_tbf.c`) shapes, and where a
//! link's impairments act.
//!
//! tbf keeps its tokens in time units: the bucket holds `buffer` = the time the rate needs to
//! send `burst` bytes (`psched_l2t_ns`), and tokens grow by the elapsed time up to that depth.
//! `tbf_dequeue` lets the head packet of length L leave at `now` when
//! `min(buffer, tokens + now - t_c) >= l2t(L)`, then sets `tokens` to what is left and
//! `t_c = now`; otherwise it arms a watchdog for the moment the deficit is earned. Without a
//! peak rate (tc's default) nothing else limits a full bucket: on a veth the device takes the
//! packets as fast as tbf releases them, so after an idle period `burst / L` packets leave at
//! the same instant and the rest are paced at the rate. tbf starts (and restarts, on a change
//! or a reset) with a full bucket. A packet longer than the bucket can never earn its tokens:
//! tbf drops it at enqueue (`qdisc_pkt_len > max_size`), unless it is a GSO super-packet whose
//! segments fit, which it segments; the simulator's packets are single segments.
//!
//! Because tokens are a deterministic function of the previous departures, the departure of a
//! packet through a FIFO in front of the bucket is known the moment it reaches the queue, just
//! as a serialising transmitter's is: the link keeps computing departures on acceptance.

use crate::time::serialization_ns;
use serde::{Deserialize, Serialize};

/// Where a link's random loss, propagation delay and jitter act, relative to its queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Impairments {
    /// After the transmitter (a wire): a lost packet has used the transmitter, and the delay
    /// varies after the bottleneck.
    #[default]
    AfterQueue,
    /// Before the queue (the kernel engine's delayer in the router's FORWARD hook, in front of
    /// the egress qdisc): a lost packet never reaches the queue, and the queue sees the
    /// delayed arrivals, bunched where the delay shrinks (or, with `reorder` jitter, in the
    /// order they overtook one another; the FIFO queue keeps that order).
    BeforeQueue,
}

/// Token bucket state, tokens in nanoseconds of the rate (tbf's units).
#[derive(Debug, Clone)]
pub(crate) struct TokenBucket {
    rate_bps: u64,
    /// Bucket depth, ns (`buffer` in tbf).
    buffer_ns: u64,
    /// Tokens left at `t_c_ns`, ns.
    tokens_ns: u64,
    /// Time of the last departure (tbf's `t_c`).
    t_c_ns: u64,
}

impl TokenBucket {
    /// A full bucket of `burst_bytes` filling at `rate_bps` (tbf after `tbf_change`).
    pub(crate) fn new(rate_bps: u64, burst_bytes: u64) -> Self {
        let buffer_ns = serialization_ns(burst_bytes, rate_bps);
        Self { rate_bps, buffer_ns, tokens_ns: buffer_ns, t_c_ns: 0 }
    }

    /// Tokens available at `t_ns` (not before the last departure).
    #[inline]
    fn available_ns(&self, t_ns: u64) -> u64 {
        self.tokens_ns.saturating_add(t_ns - self.t_c_ns).min(self.buffer_ns)
    }

    /// Departure time of a packet of `bytes` (framing included) that reaches the FIFO at
    /// `at_ns`, behind every packet passed before it; `None` when it is longer than the
    /// bucket (tbf drops it). Calls come in FIFO order with non-decreasing `at_ns`.
    #[inline]
    pub(crate) fn depart(&mut self, at_ns: u64, bytes: u64) -> Option<u64> {
        let cost_ns = serialization_ns(bytes, self.rate_bps);
        if cost_ns > self.buffer_ns {
            return None;
        }
        // The packet is at the head once its predecessor has left.
        let head_ns = at_ns.max(self.t_c_ns);
        let depart_ns = if self.available_ns(head_ns) >= cost_ns {
            head_ns
        } else {
            // Short of tokens: tokens < cost <= buffer, so the bucket is below its cap until
            // the deficit is earned (tbf's watchdog at now + (cost - tokens)).
            self.t_c_ns + (cost_ns - self.tokens_ns)
        };
        self.tokens_ns = self.available_ns(depart_ns) - cost_ns;
        self.t_c_ns = depart_ns;
        Some(depart_ns)
    }

    /// The qdisc is reset (the interface went down): a full bucket from `now_ns` (`tbf_reset`).
    pub(crate) fn reset(&mut self, now_ns: u64) {
        self.tokens_ns = self.buffer_ns;
        self.t_c_ns = now_ns;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{NS_PER_MS, NS_PER_US};

    #[test]
    fn a_full_bucket_releases_its_burst_at_once_then_paces_at_the_rate() {
        // 12 Mbit/s: 1500 B cost 1 ms of tokens; a 4500 B bucket holds three.
        let mut b = TokenBucket::new(12_000_000, 4500);
        let d: Vec<u64> = (0..6).map(|_| b.depart(0, 1500).unwrap()).collect();
        assert_eq!(d, vec![0, 0, 0, NS_PER_MS, 2 * NS_PER_MS, 3 * NS_PER_MS]);
        // Idle for 10 ms: the bucket refills to its depth, not beyond.
        let t = 13 * NS_PER_MS;
        let d: Vec<u64> = (0..4).map(|_| b.depart(t, 1500).unwrap()).collect();
        assert_eq!(d, vec![t, t, t, t + NS_PER_MS]);
    }

    #[test]
    fn a_partly_full_bucket_sends_what_it_holds() {
        let mut b = TokenBucket::new(12_000_000, 3000);
        assert_eq!(b.depart(0, 3000), Some(0));
        // 500 us later half a packet's tokens are there: the next leaves 500 us after that.
        assert_eq!(b.depart(500 * NS_PER_US, 1500), Some(NS_PER_MS));
        // A packet longer than the bucket never leaves.
        assert_eq!(b.depart(NS_PER_MS, 3001), None);
    }
}
