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

/// How a link's transmitter releases packets when it has no tbf bucket (`burst_bytes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Transmitter {
    /// A wire: a packet leaves once it has been serialised at the rate behind the ones before.
    #[default]
    Serialise,
    /// Linux htb, the kernel engine's shaper (a class at the link's rate and tc's default
    /// burst): a packet leaves when the class owes no tokens and is charged after (see
    /// [`TokenBucket`]), one packet time before a wire's.
    Htb,
}

/// Depth of an htb class's bucket when tc is given no `burst` (iproute2 `htb_parse_class_opt`:
/// `rate / get_hz() + mtu`, with `get_hz()` 10^9 on a kernel with high-resolution timers, whose
/// `/proc/net/psched` says so, and the default mtu 1600): 1600 bytes below 8 Gbit/s. `tc -d
/// class show` on the testbed prints `burst 1600b` for its 20 Mbit/s and 500 kbit/s classes.
pub const HTB_DEFAULT_BURST_BYTES: u64 = 1600;

/// Token bucket state, tokens in nanoseconds of the rate (tbf's and htb's units).
///
/// Two ways to spend them. tbf (`tbf_dequeue`) lets a packet leave only once the bucket holds
/// its whole cost. htb (`net/sched/sch_htb.c`) lets a class send while its tokens are not
/// negative (`htb_class_mode`: `HTB_CAN_SEND` at `tokens >= 0`, hysteresis off by default),
/// and charges the packet after it left (`htb_charge_class` -> `htb_accnt_tokens`: tokens
/// capped at the bucket, less the packet's cost, possibly below zero): the class then waits
/// until the debt is paid back. So an htb link delays a packet only behind the debts of the
/// packets before it: below its rate a packet leaves the moment it arrives, and at its rate
/// each packet leaves when the one before it would have finished serialising, one packet time
/// earlier than on a wire. On the veth after the qdisc the packet arrives at once.
#[derive(Debug, Clone)]
pub(crate) struct TokenBucket {
    rate_bps: u64,
    /// Bucket depth, bytes (`burst`), and ns at the rate (`buffer`).
    burst_bytes: u64,
    buffer_ns: u64,
    /// Tokens left at `t_c_ns`, ns; below zero only in an htb bucket (a debt).
    tokens_ns: i64,
    /// Time of the last departure (tbf's and htb's `t_c`).
    t_c_ns: u64,
    /// htb: send while the tokens are not negative, charge after (see above).
    pay_after: bool,
}

impl TokenBucket {
    /// A full bucket of `burst_bytes` filling at `rate_bps` (tbf after `tbf_change`).
    pub(crate) fn new(rate_bps: u64, burst_bytes: u64) -> Self {
        let buffer_ns = serialization_ns(burst_bytes, rate_bps);
        Self { rate_bps, burst_bytes, buffer_ns, tokens_ns: buffer_ns as i64, t_c_ns: 0, pay_after: false }
    }

    /// A link's bucket: tbf's when it has a burst, else htb's (tc's default burst) or none.
    pub(crate) fn for_link(rate_bps: u64, burst_bytes: Option<u64>, transmitter: Transmitter) -> Option<Self> {
        match (burst_bytes, transmitter) {
            (Some(b), _) => Some(Self::new(rate_bps, b)),
            (None, Transmitter::Htb) => Some(Self::htb(rate_bps, HTB_DEFAULT_BURST_BYTES)),
            (None, Transmitter::Serialise) => None,
        }
    }

    /// A full htb class bucket of `burst_bytes` at `rate_bps` (rate and ceil equal).
    pub(crate) fn htb(rate_bps: u64, burst_bytes: u64) -> Self {
        Self { pay_after: true, ..Self::new(rate_bps, burst_bytes) }
    }

    /// True for an htb bucket.
    #[inline]
    pub(crate) fn pays_after(&self) -> bool {
        self.pay_after
    }

    /// The rate changes (`tc class change` of an htb class, which keeps its tokens in ns and
    /// its burst in bytes: tc computes the default burst again at the new rate).
    pub(crate) fn set_rate(&mut self, rate_bps: u64) {
        self.rate_bps = rate_bps.max(1);
        self.buffer_ns = serialization_ns(self.burst_bytes, self.rate_bps);
    }

    /// Tokens available at `t_ns` (not before the last departure).
    #[inline]
    fn available_ns(&self, t_ns: u64) -> i64 {
        self.tokens_ns.saturating_add((t_ns - self.t_c_ns) as i64).min(self.buffer_ns as i64)
    }

    /// Departure time of a packet of `bytes` (framing included) that reaches the FIFO at
    /// `at_ns`, behind every packet passed before it; `None` when a tbf bucket cannot hold it
    /// (tbf drops it; htb takes any packet). Calls come in FIFO order with non-decreasing
    /// `at_ns`.
    #[inline]
    pub(crate) fn depart(&mut self, at_ns: u64, bytes: u64) -> Option<u64> {
        let cost_ns = serialization_ns(bytes, self.rate_bps);
        if !self.pay_after && cost_ns > self.buffer_ns {
            return None;
        }
        // What the bucket must hold for the packet to leave: its cost (tbf), nothing (htb).
        let need_ns = if self.pay_after { 0 } else { cost_ns as i64 };
        // The packet is at the head once its predecessor has left.
        let head_ns = at_ns.max(self.t_c_ns);
        let depart_ns = if self.available_ns(head_ns) >= need_ns {
            head_ns
        } else {
            // Short of tokens: tokens < need <= buffer, so the bucket is below its cap until
            // the deficit is earned (tbf's watchdog, htb's wait queue).
            self.t_c_ns + (need_ns - self.tokens_ns) as u64
        };
        self.tokens_ns = self.available_ns(depart_ns) - cost_ns as i64;
        self.t_c_ns = depart_ns;
        Some(depart_ns)
    }

    /// Rewinds an htb bucket to `now_ns`, before the departures of the packets still waiting
    /// (a rate change re-times them): the class owes tokens until the first of them was to
    /// leave (`first_waiting_ns`), as it leaves the moment the debt is paid. htb keeps that
    /// debt in ns across the change (`htb_change_class` leaves `tokens` alone).
    pub(crate) fn rewind(&mut self, now_ns: u64, first_waiting_ns: u64) {
        self.tokens_ns = -((first_waiting_ns.saturating_sub(now_ns)).min(i64::MAX as u64) as i64);
        self.t_c_ns = now_ns;
    }

    /// The qdisc is reset (the interface went down): a full bucket from `now_ns` (`tbf_reset`).
    pub(crate) fn reset(&mut self, now_ns: u64) {
        self.tokens_ns = self.buffer_ns as i64;
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

    #[test]
    fn an_htb_bucket_sends_while_it_owes_nothing_and_charges_after() {
        // 12 Mbit/s: 1500 B cost 1 ms; tc's default burst (1600 B) is 1.07 ms of tokens.
        let mut b = TokenBucket::htb(12_000_000, HTB_DEFAULT_BURST_BYTES);
        // A 3000-byte skb leaves at once although the bucket holds only 1600 B: it goes into
        // debt (tbf would drop it), and the next packet waits until the debt is paid.
        assert_eq!(b.depart(0, 3000), Some(0));
        let debt_ns = 2 * NS_PER_MS - serialization_ns(1600, 12_000_000);
        assert_eq!(b.depart(0, 1500), Some(debt_ns));
        assert_eq!(b.depart(0, 1500), Some(debt_ns + NS_PER_MS));
        // Below the rate nothing waits: 10 ms later the bucket is full again.
        let t = 20 * NS_PER_MS;
        assert_eq!(b.depart(t, 1500), Some(t));
        // A rewind to 21.5 ms before a packet that was to leave at 22 ms: 0.5 ms owed.
        b.rewind(21 * NS_PER_MS + NS_PER_MS / 2, 22 * NS_PER_MS);
        assert_eq!(b.depart(21 * NS_PER_MS + NS_PER_MS / 2, 1500), Some(22 * NS_PER_MS));
        assert_eq!(TokenBucket::for_link(12_000_000, None, Transmitter::Serialise).map(|b| b.pay_after), None);
        assert_eq!(TokenBucket::for_link(12_000_000, Some(3000), Transmitter::Htb).map(|b| b.pay_after), Some(false));
    }
}
