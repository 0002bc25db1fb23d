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
    LinkSpec::plain(rate_bps, delay_ns)
}

/// A network of one link and the route over it, with an empty event queue.
fn one_link(spec: LinkSpec, rng: Rng) -> (Network<u64>, LinkId, RouteId, EventQueue<NetEvent>) {
    let mut net = Network::new();
    let l = net.add_link(spec, rng);
    let r = net.add_route(vec![l]);
    (net, l, r, EventQueue::new())
}

#[test]
fn a_burst_leaves_at_the_link_rate_after_the_propagation_delay() {
    let (mut net, _, r, mut q) = one_link(spec(12_000_000, 10 * NS_PER_MS), Rng::stream(0, 0));
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
    let (mut net, l, r, mut q) = one_link(s, Rng::stream(0, 0));
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
        let (mut net, _, r, mut q) = one_link(s, Rng::stream(5, 0));
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
    let (mut net, l, r, mut q) = one_link(spec(12_000_000, 5 * NS_PER_MS), Rng::stream(0, 0));
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
fn packets_on_a_link_when_it_goes_down_are_lost_and_those_sent_after_it_recovers_are_not() {
    let (mut net, l, r, mut q) = one_link(spec(12_000_000, 5 * NS_PER_MS), Rng::stream(0, 0));
    let send = |net: &mut Network<u64>, q: &mut EventQueue<NetEvent>, at_ns, payload| {
        net.send(at_ns, r, 1500, payload, &mut |t, e| q.push(t, e));
    };
    // 0..5 are on the link (queued or propagating) when it goes down at 2 ms; 5 and 6 enter
    // after it comes back at 3 ms, behind them in the pipe; 7 enters after a second outage
    // that 5 and 6, still propagating, do not survive either.
    for i in 0..5 {
        send(&mut net, &mut q, 0, i);
    }
    let mut got = Vec::new();
    let mut run_until = |net: &mut Network<u64>, q: &mut EventQueue<NetEvent>, until_ns| {
        while q.peek_time_ns().is_some_and(|t| t <= until_ns) {
            let (now, ev) = q.pop().unwrap();
            if let Some(p) = net.handle(now, ev, &mut |t, e| q.push(t, e)) {
                got.push((now, p.payload));
            }
        }
    };
    run_until(&mut net, &mut q, 2 * NS_PER_MS);
    net.set_link_up(2 * NS_PER_MS, l, false);
    net.set_link_up(3 * NS_PER_MS, l, true);
    send(&mut net, &mut q, 3 * NS_PER_MS, 5);
    send(&mut net, &mut q, 3 * NS_PER_MS, 6);
    run_until(&mut net, &mut q, 6 * NS_PER_MS);
    net.set_link_up(6 * NS_PER_MS, l, false);
    net.set_link_up(7 * NS_PER_MS, l, true);
    send(&mut net, &mut q, 7 * NS_PER_MS, 7);
    run_until(&mut net, &mut q, NS_PER_S);
    // The first five would have arrived at 6..10 ms, 5 and 6 at 10 ms (not before the last
    // packet ahead of them); 7 leaves at 8 ms and arrives at 13 ms.
    assert_eq!(got, vec![(13 * NS_PER_MS, 7)]);
    assert_eq!(net.link_stats(l).packets_lost_down, 7);
    assert_eq!(net.link_stats(l).packets_forwarded, 1);
}

#[test]
fn a_closed_link_delivers_what_it_holds_and_takes_nothing_new() {
    let (mut net, l, r, mut q) = one_link(spec(12_000_000, 5 * NS_PER_MS), Rng::stream(0, 0));
    // 0..5 are queued or propagating when the entrance closes at 2 ms (1 ms of serialisation
    // each): they arrive at 6..10 ms as if nothing happened. 5 is offered while closed and is
    // lost; 6 enters after the link is up again at 20 ms.
    for i in 0..5 {
        net.send(0, r, 1500, i, &mut |t, e| q.push(t, e));
    }
    net.set_link_state(2 * NS_PER_MS, l, LinkState::Closed);
    net.send(3 * NS_PER_MS, r, 1500, 5, &mut |t, e| q.push(t, e));
    net.set_link_state(20 * NS_PER_MS, l, LinkState::Up);
    net.send(20 * NS_PER_MS, r, 1500, 6, &mut |t, e| q.push(t, e));
    let got = drain(&mut net, &mut q);
    let want: Vec<(u64, u64)> = (0..5).map(|i| ((6 + i) * NS_PER_MS, i)).chain([(26 * NS_PER_MS, 6)]).collect();
    assert_eq!(got, want);
    assert_eq!(net.link_stats(l).packets_lost_down, 1);
    assert_eq!(net.link_stats(l).packets_forwarded, 6);
}

#[test]
fn a_closed_link_that_goes_down_loses_what_it_still_holds() {
    let (mut net, l, r, mut q) = one_link(spec(12_000_000, 5 * NS_PER_MS), Rng::stream(0, 0));
    for i in 0..5 {
        net.send(0, r, 1500, i, &mut |t, e| q.push(t, e));
    }
    net.set_link_state(NS_PER_MS, l, LinkState::Closed);
    net.set_link_state(2 * NS_PER_MS, l, LinkState::Down);
    assert!(drain(&mut net, &mut q).is_empty());
    assert_eq!(net.link_stats(l).packets_lost_down, 5);
}

#[test]
fn random_loss_takes_the_configured_share_of_a_stream() {
    let mut s = spec(1_000_000_000, 0);
    s.loss = LossConfig::Bernoulli { p: 0.1 };
    let (mut net, _, r, mut q) = one_link(s, Rng::stream(9, 0));
    let mut got = 0.0;
    for i in 0..20_000 {
        net.send(i * NS_PER_MS, r, 100, i, &mut |t, e| q.push(t, e));
        got += drain(&mut net, &mut q).len() as f64;
    }
    // sd of the delivered count = sqrt(n p (1-p)) ~ 42; 5 sigma.
    assert!((got - 18_000.0).abs() < 212.0, "{got}");
}

/// Sends one 1500-byte packet every `gap_ns` from 0 until `until_ns`, changing the link's
/// impairment at the given times; returns (send time, arrival time) of each delivered packet.
fn impaired_run(
    s: LinkSpec,
    gap_ns: u64,
    until_ns: u64,
    changes: &[(u64, Impairment)],
) -> (Network<u64>, Vec<(u64, u64)>) {
    let (mut net, l, r, mut q) = one_link(s, Rng::stream(5, 0));
    let mut got = Vec::new();
    let mut t = 0;
    let mut next_change = 0;
    while t < until_ns {
        // Deliver what arrives before this send, then apply changes due by now.
        while q.peek_time_ns().is_some_and(|at| at <= t) {
            let Some((at, ev)) = q.pop() else { break };
            if let Some(p) = net.handle(at, ev, &mut |w, e| q.push(w, e)) {
                got.push((p.payload, at));
            }
        }
        while next_change < changes.len() && changes[next_change].0 <= t {
            net.set_impairment(t, l, changes[next_change].1, &mut |w, e| q.push(w, e));
            next_change += 1;
        }
        net.send(t, r, 1500, t, &mut |w, e| q.push(w, e));
        t += gap_ns;
    }
    for (at, p) in drain(&mut net, &mut q) {
        got.push((p, at));
    }
    (net, got)
}

#[test]
fn a_blackhole_loses_every_packet_while_in_force_and_the_link_recovers_after() {
    // 12 Mbit/s, 10 ms: a 1500-byte packet every 2 ms takes 1 ms + 10 ms.
    let black = Impairment { blackhole: true, ..Default::default() };
    let (net, got) = impaired_run(
        spec(12_000_000, 10 * NS_PER_MS),
        2 * NS_PER_MS,
        NS_PER_S,
        &[(400 * NS_PER_MS, black), (600 * NS_PER_MS, Impairment::default())],
    );
    let sent_in = |a: u64, b: u64| got.iter().filter(|(s, _)| *s >= a * NS_PER_MS && *s < b * NS_PER_MS).count();
    assert_eq!(sent_in(0, 400), 200);
    assert_eq!(sent_in(400, 600), 0, "a blackhole loses everything");
    assert_eq!(sent_in(600, 1000), 200, "and nothing after it is lifted");
    assert_eq!(net.link_stats(0).packets_lost_impairment, 100);
    assert!(got.iter().all(|(s, a)| a - s == 11 * NS_PER_MS), "the delay is untouched");
}

#[test]
fn an_rtt_spike_adds_its_delay_from_its_start_to_its_end() {
    let spike = Impairment { extra_delay_ns: 200 * NS_PER_MS, ..Default::default() };
    let (_, got) = impaired_run(
        spec(12_000_000, 10 * NS_PER_MS),
        2 * NS_PER_MS,
        NS_PER_S,
        &[(400 * NS_PER_MS, spike), (600 * NS_PER_MS, Impairment::default())],
    );
    assert_eq!(got.len(), 500, "nothing lost");
    for &(s, a) in &got {
        let d = a - s;
        if s < 400 * NS_PER_MS {
            assert_eq!(d, 11 * NS_PER_MS, "before the spike: {s}");
        } else if s < 600 * NS_PER_MS {
            assert_eq!(d, 211 * NS_PER_MS, "during the spike: {s}");
        } else {
            // FIFO: packets sent after the spike wait behind the last delayed one (arriving
            // at 598 + 211 ms), then the delay falls back to 11 ms.
            assert_eq!(a, (s + 11 * NS_PER_MS).max(809 * NS_PER_MS), "after the spike: {s}");
        }
    }
}

#[test]
fn a_rate_collapse_serialises_at_the_low_rate_until_it_is_lifted() {
    // At 1.2 Mbit/s a 1500-byte packet takes 10 ms; offered one per 20 ms, no queue builds.
    let slow = Impairment { rate_limit_bps: Some(1_200_000), ..Default::default() };
    let (_, got) = impaired_run(
        spec(12_000_000, 10 * NS_PER_MS),
        20 * NS_PER_MS,
        NS_PER_S,
        &[(400 * NS_PER_MS, slow), (600 * NS_PER_MS, Impairment::default())],
    );
    assert_eq!(got.len(), 50);
    for &(s, a) in &got {
        let serialisation = if (400 * NS_PER_MS..600 * NS_PER_MS).contains(&s) { 10 } else { 1 };
        assert_eq!(a - s, (serialisation + 10) * NS_PER_MS, "sent at {s}");
    }
}

#[test]
fn a_loss_ramp_loses_about_its_mean_probability_over_the_ramp_and_its_end_value_after() {
    // From 0 at 1 s to 0.4 at 3 s (mean 0.2), then 0.4 held until 5 s, lifted at 5 s.
    let ramp = Impairment {
        loss_ramp: Some(LossRamp { start_ns: NS_PER_S, end_ns: 3 * NS_PER_S, from_p: 0.0, to_p: 0.4 }),
        ..Default::default()
    };
    let gap = 100_000; // 10 000 packets per second
    let (_, got) = impaired_run(
        spec(1_000_000_000, NS_PER_MS),
        gap,
        6 * NS_PER_S,
        &[(NS_PER_S, ramp), (5 * NS_PER_S, Impairment::default())],
    );
    let lost = |a: u64, b: u64| {
        let sent = ((b - a) * NS_PER_S / gap) as f64;
        let recv = got.iter().filter(|(s, _)| *s >= a * NS_PER_S && *s < b * NS_PER_S).count() as f64;
        1.0 - recv / sent
    };
    assert_eq!(lost(0, 1), 0.0);
    // 20 000 packets: sd of the loss rate ~ 0.003.
    assert!((lost(1, 3) - 0.2).abs() < 0.015, "{}", lost(1, 3));
    assert!((lost(3, 5) - 0.4).abs() < 0.015, "{}", lost(3, 5));
    assert_eq!(lost(5, 6), 0.0);
    // The ramp rises: its second half loses more than its first.
    assert!(lost(2, 3) > lost(1, 2) + 0.1);
}

/// Sends `n` 1500-byte packets at time 0 into a one-link network, applies `changes` at their
/// times while delivering; returns (arrival time, payload) of every delivered packet.
fn burst_under_changes(s: LinkSpec, n: u64, changes: &[(u64, Impairment)]) -> Vec<(u64, u64)> {
    let (mut net, l, r, mut q) = one_link(s, Rng::stream(5, 0));
    for i in 0..n {
        net.send(0, r, 1500, i, &mut |w, e| q.push(w, e));
    }
    let mut got = Vec::new();
    for &(at, imp) in changes {
        while q.peek_time_ns().is_some_and(|t| t <= at) {
            let Some((t, ev)) = q.pop() else { break };
            if let Some(p) = net.handle(t, ev, &mut |w, e| q.push(w, e)) {
                got.push((t, p.payload));
            }
        }
        net.set_impairment(at, l, imp, &mut |w, e| q.push(w, e));
    }
    got.extend(drain(&mut net, &mut q));
    got
}

#[test]
fn a_rate_collapse_re_times_the_queue_it_finds_and_its_end_the_queue_it_leaves() {
    // 12 Mbit/s (1 ms per packet), 10 ms: 20 packets at once queue up. The collapse to
    // 1.2 Mbit/s (10 ms per packet) at 5.5 ms lets packet 5 (in service, 5-6 ms) finish,
    // then serves the waiting ones at 10 ms each, as htb or tbf would after a rate change;
    // the lift at 50 ms lets packet 10 (in service, 46-56 ms) finish and serves the rest at
    // 1 ms each again. (Before: the queue kept the schedule of the rate it was accepted at,
    // so the whole collapse's queue drained slowly after it ended.)
    let slow = Impairment { rate_limit_bps: Some(1_200_000), ..Default::default() };
    let got = burst_under_changes(
        spec(12_000_000, 10 * NS_PER_MS),
        20,
        &[(5 * NS_PER_MS + NS_PER_MS / 2, slow), (50 * NS_PER_MS, Impairment::default())],
    );
    let end_ms = |i: u64| match i {
        0..=5 => i + 1,
        6..=10 => 6 + 10 * (i - 5),
        _ => 56 + (i - 10),
    };
    let expected: Vec<(u64, u64)> = (0..20).map(|i| ((end_ms(i) + 10) * NS_PER_MS, i)).collect();
    assert_eq!(got, expected);
}

#[test]
fn a_re_timed_queue_head_arrives_at_its_new_time_not_its_old_event() {
    // A token bucket of one frame at 12 Mbit/s, no delay: 10 packets at once leave 1 ms apart
    // (0, 1, 2, ... ms), each arriving as it leaves. At 2.5 ms the pipe's head is packet 3,
    // waiting for tokens (its arrival event is at 3 ms); the collapse serves it at 1.2 Mbit/s
    // from 2.5 ms, so it arrives at 12.5 ms: the 3 ms event must not deliver it.
    let mut s = spec(12_000_000, 0);
    s.burst_bytes = Some(1500);
    let slow = Impairment { rate_limit_bps: Some(1_200_000), ..Default::default() };
    let got =
        burst_under_changes(s, 10, &[(2 * NS_PER_MS + NS_PER_MS / 2, slow), (30 * NS_PER_MS, Impairment::default())]);
    let order: Vec<u64> = got.iter().map(|g| g.1).collect();
    assert_eq!(order, (0..10).collect::<Vec<_>>(), "all delivered, in order");
    assert_eq!(got[3].0, 12 * NS_PER_MS + NS_PER_MS / 2);
    assert_eq!(got[4].0, 22 * NS_PER_MS + NS_PER_MS / 2);
    // Packet 5 is in service at the lift (22.5-32.5 ms); the rest follow at the bucket's pace.
    assert_eq!(got[5].0, 32 * NS_PER_MS + NS_PER_MS / 2);
    assert!(got[9].0 <= 36 * NS_PER_MS, "{:?}", got[9]);
}

#[test]
fn a_queue_keeps_its_counts_and_times_behind_a_packet_served_for_seconds() {
    // The backlog keeps a packet's service time in 32 bits of ns: a 1500-byte packet at
    // 2 kbit/s (6 s) moves it to plain entries until it empties, and the drop-tail limit
    // (which counts the packet in service apart) and the arrival times stay exact.
    let mut s = spec(2_000, 10 * NS_PER_MS);
    s.queue_packets = Some(3);
    let (mut net, l, r, mut q) = one_link(s, Rng::stream(0, 0));
    net.send(0, r, 1500, 0, &mut |t, e| q.push(t, e));
    for i in 1..10 {
        net.send(0, r, 100, i, &mut |t, e| q.push(t, e));
    }
    let got = drain(&mut net, &mut q);
    // 100 bytes at 2 kbit/s: 0.4 s each, after the 6 s of the first.
    let expected: Vec<(u64, u64)> = (0..4).map(|i| (6 * NS_PER_S + i * 400 * NS_PER_MS + 10 * NS_PER_MS, i)).collect();
    assert_eq!(got, expected);
    assert_eq!(net.link_stats(l).packets_dropped_queue, 6);
    // A second burst of short packets once the queue has drained.
    let t1 = 20 * NS_PER_S;
    for i in 0..10 {
        net.send(t1, r, 100, 10 + i, &mut |t, e| q.push(t, e));
    }
    let got = drain(&mut net, &mut q);
    let expected: Vec<(u64, u64)> = (0..4).map(|i| (t1 + (i + 1) * 400 * NS_PER_MS + 10 * NS_PER_MS, 10 + i)).collect();
    assert_eq!(got, expected);
    assert_eq!(net.link_stats(l).packets_dropped_queue, 12);
}

#[test]
fn an_htb_link_sends_a_packet_while_it_owes_nothing_and_keeps_its_debt_across_a_rate_change() {
    // htb at 12.8 Mbit/s with 100 bytes of framing (1 ms per 1500-byte packet; tc's default
    // burst of 1600 B is one packet), 10 ms: 20 packets at once. The full bucket lets packets 0 and 1 leave at 0 (htb charges after sending: one
    // debt of 1 ms), then each leaves when the debt before it is paid: packet k at k - 1 ms,
    // two packet times before a wire's. The collapse to 1.28 Mbit/s at 5.5 ms finds packet 7
    // waiting for the 0.5 ms still owed: it leaves at 6 ms, and each after it owes 10 ms. At
    // the lift (50 ms) packet 12 waits for the 6 ms owed at the slow rate (htb keeps the debt
    // in ns), then the rest leave 1 ms apart.
    let mut s = spec(12_800_000, 10 * NS_PER_MS);
    s.transmitter = crate::net::Transmitter::Htb;
    s.overhead_bytes = 100;
    let slow = Impairment { rate_limit_bps: Some(1_280_000), ..Default::default() };
    let got =
        burst_under_changes(s, 20, &[(5 * NS_PER_MS + NS_PER_MS / 2, slow), (50 * NS_PER_MS, Impairment::default())]);
    let depart_ms = |i: u64| match i {
        0 => 0,
        1..=7 => i - 1,
        8..=12 => 6 + 10 * (i - 7),
        _ => 56 + (i - 12),
    };
    let expected: Vec<(u64, u64)> = (0..20).map(|i| ((depart_ms(i) + 10) * NS_PER_MS, i)).collect();
    assert_eq!(got, expected);
    // Below its rate an htb link adds no serialisation: a packet at 0 and one at 15 ms
    // arrive after the delay alone (on a wire: 1 ms later each).
    for (transmitter, extra_ns) in [(crate::net::Transmitter::Htb, 0), (crate::net::Transmitter::Serialise, NS_PER_MS)]
    {
        let mut s = spec(12_800_000, 10 * NS_PER_MS);
        s.transmitter = transmitter;
        s.overhead_bytes = 100;
        let (mut net, _, r, mut q) = one_link(s, Rng::stream(5, 0));
        net.send(0, r, 1500, 0, &mut |w, e| q.push(w, e));
        let mut got = drain(&mut net, &mut q);
        net.send(15 * NS_PER_MS, r, 1500, 1, &mut |w, e| q.push(w, e));
        got.extend(drain(&mut net, &mut q));
        assert_eq!(got, vec![(10 * NS_PER_MS + extra_ns, 0), (25 * NS_PER_MS + extra_ns, 1)], "{transmitter:?}");
    }
}

/// With enough links the network keeps each pipe's front address apart (`Network::fronts`),
/// for the event loop's prefetch: it must name every link's front after each send and hop,
/// through queues that fill and overflow and pipes that empty.
#[test]
fn every_kept_front_address_is_its_pipes_front_after_each_send_and_hop() {
    let links = MIN_LINKS_FOR_FRONTS;
    let mut net: Network<u64> = Network::new();
    for i in 0..links {
        let mut s = spec(1_000_000_000, 1_000 * (i as u64 % 7 + 1));
        if i % 5 == 0 {
            s.queue_packets = Some(4);
        }
        net.add_link(s, Rng::stream(0, i as u64));
    }
    let routes: Vec<RouteId> =
        (0..64u32).map(|r| net.add_route((0..4).map(|h| (r * 37 + h * 101) % links as u32).collect())).collect();
    let stale = |net: &Network<u64>| -> Vec<usize> {
        (0..links).filter(|&i| net.fronts[i] != net.links[i].pipe.front_addr()).collect()
    };
    assert_eq!(net.fronts.len(), links);
    let mut q = EventQueue::new();
    let (mut hops, mut delivered) = (0, 0);
    for i in 0..400u64 {
        // Bursts of eight into one route: pipes hold several packets, some queues overflow.
        net.send(i / 8 * 2_000, routes[(i / 8 * 13 % 64) as usize], 1500, i, &mut |t, e| q.push(t, e));
        assert_eq!(stale(&net), Vec::<usize>::new(), "after send {i}");
    }
    while let Some((now, ev)) = q.pop() {
        delivered += net.handle(now, ev, &mut |t, e| q.push(t, e)).is_some() as u32;
        hops += 1;
        assert_eq!(stale(&net), Vec::<usize>::new(), "after hop {hops}");
    }
    let dropped: u64 = (0..links).map(|l| net.link_stats(l as LinkId).packets_dropped_queue).sum();
    assert!(dropped > 0 && delivered > 300 && hops > 1_000, "{dropped} dropped, {delivered} delivered, {hops} hops");
    // A small network keeps none.
    let mut small: Network<u64> = Network::new();
    for i in 0..links - 1 {
        small.add_link(spec(1_000_000, 0), Rng::stream(0, i as u64));
    }
    assert!(small.fronts.is_empty());
}
