//! Links with a token-bucket transmitter, framing overhead and impairments before the queue.

use super::*;
use crate::event::EventQueue;
use crate::time::{serialization_ns, NS_PER_MS};

fn spec(rate_bps: u64, delay_ns: u64) -> LinkSpec {
    LinkSpec::plain(rate_bps, delay_ns)
}

fn one_link(s: LinkSpec) -> (Network<u64>, LinkId, RouteId) {
    let mut net = Network::new();
    let l = net.add_link(s, Rng::stream(3, 0));
    let r = net.add_route(vec![l]);
    (net, l, r)
}

/// Sends `n` packets of `size` bytes at time 0, then runs to the end; returns arrival times.
fn burst_at_zero(net: &mut Network<u64>, r: RouteId, n: u64, size: u32) -> Vec<u64> {
    let mut q = EventQueue::new();
    for i in 0..n {
        net.send(0, r, size, i, &mut |t, e| q.push(t, e));
    }
    let mut out = Vec::new();
    while let Some((now, ev)) = q.pop() {
        if let Some(p) = net.handle(now, ev, &mut |t, e| q.push(t, e)) {
            assert_eq!(p.payload, out.len() as u64, "a FIFO link keeps the order");
            out.push(now);
        }
    }
    out
}

#[test]
fn after_idle_a_32kb_bucket_releases_21_frames_at_once_then_paces_at_the_rate() {
    // tbf rate 10mbit burst 32k on a veth: 1500 B IP packets are 1514 B frames.
    let mut s = spec(10_000_000, 0);
    s.burst_bytes = Some(32_768);
    s.overhead_bytes = 14;
    let (mut net, _, r) = one_link(s);
    let got = burst_at_zero(&mut net, r, 60, 1500);
    let cost = serialization_ns(1514, 10_000_000);
    let bucket = serialization_ns(32_768, 10_000_000);
    assert_eq!(32_768 / 1514, 21);
    assert_eq!(got.iter().filter(|&&t| t == 0).count(), 21);
    // Packet k leaves once k + 1 frames' tokens were earned beyond the full bucket.
    let expected: Vec<u64> = (0..60u64).map(|k| ((k + 1) * cost).saturating_sub(bucket)).collect();
    assert_eq!(got, expected);
    assert!(got.windows(2).skip(21).all(|w| w[1] - w[0] == cost));
}

#[test]
fn long_run_goodput_is_the_rate_times_payload_over_frame() {
    for burst in [None, Some(32_768)] {
        let mut s = spec(10_000_000, 0);
        s.burst_bytes = burst;
        s.overhead_bytes = 14;
        let (mut net, l, r) = one_link(s);
        let n = 5_000u64;
        let got = burst_at_zero(&mut net, r, n, 1500);
        // From the first departure after the bucket ran dry to the last, one frame time each.
        let first = burst.map_or(0, |_| 21);
        let span_ns = got[n as usize - 1] - got[first];
        let bits = (n - 1 - first as u64) * 1500 * 8;
        let goodput = bits as f64 / (span_ns as f64 / 1e9);
        let expected = 10e6 * 1500.0 / 1514.0;
        assert!((goodput / expected - 1.0).abs() < 1e-9, "{burst:?}: {goodput} vs {expected}");
        assert_eq!(net.link_stats(l).bytes_forwarded, n * 1500, "stats count the packets' own bytes");
    }
}

#[test]
fn a_bucket_queue_drops_what_does_not_fit_its_byte_limit() {
    // tbf ... limit 10 frames: the packets waiting for tokens fill the bfifo; the burst the
    // bucket lets through at once never waits.
    let mut s = spec(10_000_000, 0);
    s.burst_bytes = Some(3 * 1514);
    s.overhead_bytes = 14;
    s.queue_bytes = Some(10 * 1514);
    let (mut net, l, r) = one_link(s);
    let mut q = EventQueue::new();
    for i in 0..20 {
        net.send(0, r, 1500, i, &mut |t, e| q.push(t, e));
    }
    assert_eq!(net.queue_occupancy(l, 0), (10 * 1514, 10));
    let cost = serialization_ns(1514, 10_000_000);
    // Half-way through the fifth frame time, four of the waiting ten have left.
    assert_eq!(net.queue_occupancy(l, 4 * cost + cost / 2), (6 * 1514, 6));
    let mut delivered = 0;
    while let Some((now, ev)) = q.pop() {
        delivered += net.handle(now, ev, &mut |t, e| q.push(t, e)).is_some() as u64;
    }
    assert_eq!(delivered, 13);
    assert_eq!(net.link_stats(l).packets_dropped_queue, 7);
    assert_eq!(net.link_stats(l).max_queue_bytes, 10 * 1514);
}

#[test]
fn a_packet_larger_than_the_bucket_is_dropped_as_tbf_does() {
    let mut s = spec(10_000_000, 0);
    s.burst_bytes = Some(1514);
    s.overhead_bytes = 14;
    let (mut net, l, r) = one_link(s);
    assert_eq!(burst_at_zero(&mut net, r, 1, 1500), vec![0]);
    assert!(burst_at_zero(&mut net, r, 1, 1501).is_empty());
    assert_eq!(net.link_stats(l).packets_dropped_queue, 1);
}

#[test]
fn the_overhead_counts_in_serialisation_and_in_the_byte_queue() {
    let mut s = spec(12_000_000, 0);
    s.overhead_bytes = 100;
    s.queue_bytes = Some(3 * 1600);
    let (mut net, l, r) = one_link(s);
    let got = burst_at_zero(&mut net, r, 10, 1500);
    // 1600 B frames at 12 Mbit/s: 1 ms 66.67 us each; one in service plus three queued.
    let cost = serialization_ns(1600, 12_000_000);
    assert_eq!(got, (1..=4).map(|k| k * cost).collect::<Vec<_>>());
    assert_eq!(net.link_stats(l).packets_dropped_queue, 6);
}

#[test]
fn loss_before_the_queue_never_uses_it_and_loss_after_it_does() {
    for (impairments, queued) in [(Impairments::BeforeQueue, false), (Impairments::AfterQueue, true)] {
        // Two routes share the link: one loses everything, the other is a probe.
        let mut s = spec(10_000_000, 5 * NS_PER_MS);
        s.loss = LossConfig::Bernoulli { p: 1.0 };
        s.impairments = impairments;
        let (mut net, l, r) = one_link(s);
        let mut q = EventQueue::new();
        for i in 0..50 {
            net.send(0, r, 1500, i, &mut |t, e| q.push(t, e));
        }
        let st = net.link_stats(l);
        assert_eq!(st.packets_lost_random, 50);
        assert_eq!(st.max_queue_bytes > 0, queued, "{impairments:?}");
        // After the queue, the lost packets still occupy the transmitter: 49 wait at t = 0.
        assert_eq!(net.queue_occupancy(l, 0), if queued { (49 * 1500, 49) } else { (0, 0) });
        assert!(q.pop().is_none(), "nothing arrives");
    }
}

#[test]
fn a_constant_delay_gives_the_same_arrivals_before_or_after_the_queue() {
    let mut times = Vec::new();
    for impairments in [Impairments::BeforeQueue, Impairments::AfterQueue] {
        let mut s = spec(12_000_000, 10 * NS_PER_MS);
        s.impairments = impairments;
        s.queue_packets = Some(5);
        let (mut net, l, r) = one_link(s);
        let mut q = EventQueue::new();
        for i in 0..10 {
            net.send(0, r, 1500, i, &mut |t, e| q.push(t, e));
        }
        // Before the queue, nothing has reached it yet at 2.5 ms; after it, two packets have
        // left, one is being serialised and three wait.
        let waiting = net.queue_occupancy(l, 5 * NS_PER_MS / 2).1;
        assert_eq!(waiting, if impairments == Impairments::BeforeQueue { 0 } else { 3 });
        let mut got = Vec::new();
        while let Some((now, ev)) = q.pop() {
            if let Some(p) = net.handle(now, ev, &mut |t, e| q.push(t, e)) {
                got.push((now, p.payload));
            }
        }
        times.push(got);
    }
    assert_eq!(times[0], times[1]);
    assert_eq!(times[0].len(), 6);
}

/// Sends 1000-byte packets every `gap_ns` for 2 s; returns (max queue bytes, reordered).
fn paced_through_jitter(impairments: Impairments, gap_ns: u64) -> (u64, usize) {
    let mut s = spec(10_000_000, 50 * NS_PER_MS);
    s.jitter = JitterConfig::Smooth { jitter_ns: 40 * NS_PER_MS, period_ns: 60 * NS_PER_MS };
    s.impairments = impairments;
    let (mut net, l, r) = one_link(s);
    let mut q = EventQueue::new();
    let (mut sent, mut next_send, mut delivered) = (0u64, 0u64, Vec::new());
    loop {
        if sent < 2_000_000_000 / gap_ns && q.peek_time_ns().is_none_or(|t| next_send <= t) {
            net.send(next_send, r, 1000, sent, &mut |t, e| q.push(t, e));
            sent += 1;
            next_send += gap_ns;
            continue;
        }
        let Some((now, ev)) = q.pop() else { break };
        if let Some(p) = net.handle(now, ev, &mut |t, e| q.push(t, e)) {
            delivered.push(p.payload);
        }
    }
    assert_eq!(delivered.len() as u64, sent);
    (net.link_stats(l).max_queue_bytes, delivered.windows(2).filter(|w| w[1] < w[0]).count())
}

#[test]
fn shrinking_jitter_before_the_queue_bunches_packets_into_it_without_reordering() {
    // 1000 B every 1 ms is 8 Mbit/s on a 10 Mbit/s link: paced, it never queues. A delay that
    // shrinks by up to 80 ms per 60 ms compresses the gaps before the queue.
    let (after_q, after_reordered) = paced_through_jitter(Impairments::AfterQueue, NS_PER_MS);
    let (before_q, before_reordered) = paced_through_jitter(Impairments::BeforeQueue, NS_PER_MS);
    assert_eq!((after_q, after_reordered), (0, 0));
    assert_eq!(before_reordered, 0);
    assert!(before_q >= 5 * 1000, "bunched arrivals queue: max {before_q} B");
}

#[test]
fn reorder_jitter_before_the_queue_reorders_arrivals_and_the_fifo_keeps_that_order() {
    // 1000 B every 1 ms at 10 Mbit/s (0.8 ms each), 50 ms +- 20 ms netem-like jitter.
    let ser = serialization_ns(1000, 10_000_000);
    let mut results = Vec::new();
    for impairments in [Impairments::BeforeQueue, Impairments::AfterQueue] {
        let mut s = spec(10_000_000, 50 * NS_PER_MS);
        s.jitter = JitterConfig::Reorder { jitter_ns: 20 * NS_PER_MS, distribution: JitterDistribution::Uniform };
        s.impairments = impairments;
        let (mut net, l, r) = one_link(s);
        let mut q = EventQueue::new();
        let (mut sent, mut next_send, mut delivered) = (0u64, 0u64, Vec::new());
        loop {
            if sent < 2000 && q.peek_time_ns().is_none_or(|t| next_send <= t) {
                net.send(next_send, r, 1000, sent, &mut |t, e| q.push(t, e));
                sent += 1;
                next_send += NS_PER_MS;
                continue;
            }
            let Some((now, ev)) = q.pop() else { break };
            if let Some(p) = net.handle(now, ev, &mut |t, e| q.push(t, e)) {
                delivered.push((now, p.payload));
            }
        }
        assert_eq!(delivered.len(), 2000, "{impairments:?}");
        let reordered = delivered.windows(2).filter(|w| w[1].1 < w[0].1).count();
        let min_gap = delivered.windows(2).map(|w| w[1].0 - w[0].0).min().unwrap();
        results.push((reordered, min_gap, net.link_stats(l).max_queue_bytes));
    }
    let (before, after) = (results[0], results[1]);
    assert!(before.0 > 500 && after.0 > 500, "both reorder: {before:?} {after:?}");
    // Before the queue, the transmitter spaces every arrival by a serialisation time and the
    // bunched arrivals queue; after it, packets overtake on the wire and arrive closer.
    assert!(before.1 >= ser, "{before:?}");
    assert!(before.2 > 0, "{before:?}");
    assert!(after.1 < ser && after.2 == 0, "{after:?}");
}

#[test]
fn a_link_going_down_loses_the_packets_in_the_delay_line_before_its_queue() {
    for jitter in [
        JitterConfig::None,
        JitterConfig::Reorder { jitter_ns: 2 * NS_PER_MS, distribution: JitterDistribution::Uniform },
    ] {
        let mut s = spec(12_000_000, 10 * NS_PER_MS);
        s.jitter = jitter.clone();
        s.impairments = Impairments::BeforeQueue;
        s.burst_bytes = Some(3000);
        let (mut net, l, r) = one_link(s);
        let mut q = EventQueue::new();
        for i in 0..5 {
            net.send(0, r, 1500, i, &mut |t, e| q.push(t, e));
        }
        net.set_link_up(NS_PER_MS, l, false);
        net.set_link_up(2 * NS_PER_MS, l, true);
        net.send(2 * NS_PER_MS, r, 1500, 9, &mut |t, e| q.push(t, e));
        let mut got = Vec::new();
        while let Some((now, ev)) = q.pop() {
            if let Some(p) = net.handle(now, ev, &mut |t, e| q.push(t, e)) {
                got.push(p.payload);
            }
        }
        assert_eq!(got, vec![9], "{jitter:?}");
        assert_eq!(net.link_stats(l).packets_lost_down, 5, "{jitter:?}");
    }
}
