//! Behaviour of links and routes, driven by a minimal event loop.

use super::*;
use crate::event::EventQueue;
use crate::time::{NS_PER_MS, NS_PER_S};

/// Runs the network until no event is left; returns (arrival time, payload) of delivered packets.
fn drain(net: &mut Network<u64>, q: &mut EventQueue<NetEvent>) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    while let Some((now, ev)) = q.pop() {
        if let Some(p) = net.handle(now, ev, &mut |t, e| q.push(t, e)) {
            out.push((now, p.payload));
        }
    }
    out
}

fn spec(rate_bps: u64, delay_ns: u64) -> LinkSpec {
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
        overhead_bytes: 0,
        impairments: Impairments::AfterQueue,
    }
}

#[test]
fn a_burst_leaves_at_the_link_rate_after_the_propagation_delay() {
    let mut net = Network::new();
    let l = net.add_link(spec(12_000_000, 10 * NS_PER_MS), Rng::stream(0, 0));
    let r = net.add_route(vec![l]);
    let mut q = EventQueue::new();
    for i in 0..10 {
        net.send(0, r, 1500, i, &mut |t, e| q.push(t, e));
    }
    let got = drain(&mut net, &mut q);
    // 1500 B at 12 Mbit/s = 1 ms each; packet i arrives at (i+1) ms + 10 ms.
    let expected: Vec<(u64, u64)> = (0..10).map(|i| ((i + 11) * NS_PER_MS, i)).collect();
    assert_eq!(got, expected);
}

#[test]
fn a_full_drop_tail_queue_drops_the_excess() {
    let mut s = spec(12_000_000, 0);
    s.queue_packets = Some(3);
    let mut net = Network::new();
    let l = net.add_link(s, Rng::stream(0, 0));
    let r = net.add_route(vec![l]);
    let mut q = EventQueue::new();
    for i in 0..10 {
        net.send(0, r, 1500, i, &mut |t, e| q.push(t, e));
    }
    let got = drain(&mut net, &mut q);
    // One in service plus three queued survive.
    assert_eq!(got.iter().map(|g| g.1).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
    assert_eq!(net.link_stats(l).packets_dropped_queue, 6);
}

#[test]
fn a_two_hop_route_is_limited_by_its_slowest_link() {
    let mut net = Network::new();
    let fast = net.add_link(spec(1_000_000_000, NS_PER_MS), Rng::stream(0, 0));
    let slow = net.add_link(spec(12_000_000, NS_PER_MS), Rng::stream(0, 1));
    let r = net.add_route(vec![fast, slow]);
    let mut q = EventQueue::new();
    for i in 0..100 {
        net.send(0, r, 1500, i, &mut |t, e| q.push(t, e));
    }
    let got = drain(&mut net, &mut q);
    assert_eq!(got.len(), 100);
    let span = got[99].0 - got[0].0;
    // 99 further packets at 1 ms each on the slow link.
    assert_eq!(span, 99 * NS_PER_MS);
}

#[test]
fn smooth_jitter_never_reorders_and_reorder_jitter_does() {
    for (jitter, expect_reorder) in [
        (JitterConfig::Smooth { jitter_ns: 75 * NS_PER_MS, period_ns: 200 * NS_PER_MS }, false),
        (JitterConfig::Reorder { jitter_ns: 75 * NS_PER_MS, distribution: JitterDistribution::Uniform }, true),
    ] {
        let mut s = spec(100_000_000, 100 * NS_PER_MS);
        s.jitter = jitter;
        let mut net = Network::new();
        let l = net.add_link(s, Rng::stream(5, 0));
        let r = net.add_route(vec![l]);
        let mut q = EventQueue::new();
        // 1000 packets/s for 10 s, each sent when the clock reaches its send time.
        let mut delivered = Vec::new();
        let mut next_send = 0u64;
        let mut sent = 0u64;
        loop {
            let t_event = q.peek_time_ns();
            if sent < 10_000 && t_event.is_none_or(|t| next_send <= t) {
                net.send(next_send, r, 100, sent, &mut |t, e| q.push(t, e));
                sent += 1;
                next_send += NS_PER_MS;
                continue;
            }
            let Some((now, ev)) = q.pop() else { break };
            if let Some(p) = net.handle(now, ev, &mut |t, e| q.push(t, e)) {
                delivered.push((now, p.payload));
            }
        }
        assert_eq!(delivered.len(), 10_000);
        let reordered = delivered.windows(2).filter(|w| w[1].1 < w[0].1).count();
        if expect_reorder {
            assert!(reordered > 1000, "reorder mode reordered only {reordered}");
        } else {
            assert_eq!(reordered, 0);
            // One-way delay stays within 100 ms +- 75 ms (plus 8 us serialisation).
            for (t, i) in &delivered {
                let owd = t - i * NS_PER_MS;
                assert!((25 * NS_PER_MS..=176 * NS_PER_MS).contains(&owd), "{owd}");
            }
        }
    }
}

#[test]
fn a_link_that_goes_down_loses_its_packets_and_recovers() {
    let mut net = Network::new();
    let l = net.add_link(spec(12_000_000, 5 * NS_PER_MS), Rng::stream(0, 0));
    let r = net.add_route(vec![l]);
    let mut q = EventQueue::new();
    for i in 0..5 {
        net.send(0, r, 1500, i, &mut |t, e| q.push(t, e));
    }
    net.set_link_up(0, l, false);
    let got = drain(&mut net, &mut q);
    assert!(got.is_empty());
    assert_eq!(net.link_stats(l).packets_lost_down, 5);
    net.set_link_up(NS_PER_S, l, true);
    net.send(NS_PER_S, r, 1500, 9, &mut |t, e| q.push(t, e));
    assert_eq!(drain(&mut net, &mut q), vec![(NS_PER_S + 6 * NS_PER_MS, 9)]);
}

#[test]
fn random_loss_takes_the_configured_share_of_a_stream() {
    let mut s = spec(1_000_000_000, 0);
    s.loss = LossConfig::Bernoulli { p: 0.1 };
    let mut net = Network::new();
    let l = net.add_link(s, Rng::stream(9, 0));
    let r = net.add_route(vec![l]);
    let mut q = EventQueue::new();
    let mut got = 0.0;
    for i in 0..20_000 {
        net.send(i * NS_PER_MS, r, 100, i, &mut |t, e| q.push(t, e));
        got += drain(&mut net, &mut q).len() as f64;
    }
    // sd of the delivered count = sqrt(n p (1-p)) ~ 42; 5 sigma.
    assert!((got - 18_000.0).abs() < 212.0, "{got}");
}
