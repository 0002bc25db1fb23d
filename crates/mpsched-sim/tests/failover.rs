//! Failover, failback and real-time traffic: path impairments as events (blackhole, loss ramp,
//! RTT spike, rate collapse, each with its recovery), the upstream kernel's stale-subflow
//! detection under the `linux` scheduler, and message workloads with deadlines.

mod common;
use common::*;
use mpsched_sim::config::*;
use mpsched_sim::run::run;

#[test]
fn both_path_event_shapes_parse_and_a_bad_one_names_its_field() {
    let legacy: PathEvent = serde_json::from_str(r#"{"at_ns": 5, "path": 1, "up": false}"#).unwrap();
    assert_eq!(legacy, PathEvent::up_down(5, 1, false));
    let ramp: PathEvent = serde_json::from_str(
        r#"{"kind": "loss_ramp", "at_ns": 1, "path": 0, "ramp_ns": 10, "from_p": 0.0, "to_p": 0.5}"#,
    )
    .unwrap();
    assert_eq!(ramp.end_ns(), None);
    let black: PathEvent =
        serde_json::from_str(r#"{"kind": "blackhole", "at_ns": 1, "path": 0, "duration_ns": 9, "direction": "down"}"#)
            .unwrap();
    assert_eq!(black.end_ns(), Some(10));
    // Round trip through the serialised form.
    assert_eq!(serde_json::from_str::<PathEvent>(&serde_json::to_string(&black).unwrap()).unwrap(), black);
    let e = serde_json::from_str::<PathEvent>(r#"{"kind": "rtt_spike", "at_ns": 1, "path": 0}"#).unwrap_err();
    assert!(e.to_string().contains("extra_delay_ns"), "{e}");
    let e =
        serde_json::from_str::<PathEvent>(r#"{"kind": "blackhole", "at_ns": 1, "path": 0, "up": true}"#).unwrap_err();
    assert!(e.to_string().contains("up"), "{e}");

    let (links, paths) = paths_of(vec![(link("d", 10_000_000, MS, 100), link("u", 10_000_000, MS, 100))]);
    let mut cfg = scenario(links, paths, S);
    cfg.transports.push(transport(Protocol::Mptcp, "minrtt", "reno", vec![0]));
    cfg.flows.push(sized(0, 0, 0, 1000));
    cfg.path_events.push(impairment(2, 0, 0, MS, 0));
    if let PathEvent::Kind(PathImpairment::LossRamp { ref mut to_p, .. }) = cfg.path_events[0] {
        *to_p = 1.5;
    }
    assert_eq!(run(&cfg).unwrap_err().field, "path_events[0].to_p");
}

/// Two paths: path 0 at 10 ms one way, path 1 at 40 ms, both 10 Mbit/s with 100-packet queues.
fn two_paths(duration_ns: u64) -> SimConfig {
    let (links, paths) = paths_of(vec![
        (link("a.d", 10_000_000, 10 * MS, 100), link("a.u", 10_000_000, 10 * MS, 100)),
        (link("b.d", 10_000_000, 40 * MS, 100), link("b.u", 10_000_000, 40 * MS, 100)),
    ]);
    let mut cfg = scenario(links, paths, duration_ns);
    cfg.record.sample_interval_ns = 10 * MS;
    cfg
}

/// A game-state stream: 300-byte messages at 50 Hz for `stop_ns`, deadline 150 ms.
fn game(scheduler: &str, stop_ns: u64, events: Vec<PathEvent>) -> mpsched_sim::records::Records {
    let mut cfg = two_paths(stop_ns + 10 * S);
    cfg.transports.push(transport(Protocol::Mptcp, scheduler, "cubic", vec![0, 1]));
    let mut f = sized(0, 0, 0, 0);
    f.app = AppConfig::Messages { size_bytes: 300, interval_ns: 20 * MS, deadline_ns: Some(150 * MS), stop_ns };
    cfg.flows.push(f);
    cfg.path_events = events;
    run(&cfg).unwrap()
}

/// (sent_ns, delay_ns) of every message, and the deadline flags.
fn messages(rec: &mpsched_sim::records::Records) -> (Vec<(u64, Option<u64>)>, Vec<bool>) {
    let sent = u64s(rec, "blocks", "sent_ns");
    let delay = opt_u64s(rec, "blocks", "delay_ns");
    (sent.into_iter().zip(delay).collect(), bools(rec, "blocks", "deadline_missed"))
}

/// Prints the failover numbers of the report (`cargo test -p mpsched-sim --release --test
/// failover deadline_flags -- --nocapture`) and checks the record's deadline flag against
/// the delays: a message misses its deadline exactly when it arrives more than 150 ms after
/// it was sent.
#[test]
fn deadline_flags_match_the_delays_for_every_scheduler_through_outages() {
    for sched in ["minrtt", "linux", "redundant", "blest", "ecf"] {
        for (name, ev) in
            [("blackhole", impairment(1, 0, 2 * S, 3 * S, 0)), ("down", impairment(0, 0, 2 * S, 3 * S, 0))]
        {
            let rec = game(sched, 8 * S, vec![ev]);
            let (m, missed) = messages(&rec);
            assert_eq!(m.len(), 400, "{sched} {name}: every message issued");
            for ((s, d), x) in m.iter().zip(&missed) {
                assert_eq!(*x, d.is_none_or(|d| d > 150 * MS), "{sched} {name}: message sent at {s}");
            }
            let after: Vec<_> = m.iter().zip(&missed).filter(|((s, _), _)| *s >= 1_500 * MS).collect();
            let n_missed = after.iter().filter(|(_, x)| **x).count();
            let worst = after.iter().filter_map(|((_, d), _)| *d).max().unwrap_or(0);
            // First message sent after the event delivered within the deadline again.
            let recovered = m.iter().zip(&missed).find(|((s, _), x)| *s >= 2 * S && !**x).map(|((s, _), _)| *s);
            // First message after the recovery (5 s) that went on path 0 again: delay < 40 ms.
            let back = m.iter().find(|(s, d)| *s >= 5 * S && d.is_some_and(|d| d < 40 * MS)).map(|(s, _)| *s);
            let sacked = u64s(&rec, "subflows", "bytes_acked");
            println!(
                "{sched:9} {name:9} missed {n_missed:3}/{} worst {:6.1} ms, first on-time sent at {:?} ms, back on path 0 at {:?} ms, acked per subflow {sacked:?}",
                after.len(),
                worst as f64 / 1e6,
                recovered.map(|s| s / MS),
                back.map(|s| s / MS)
            );
        }
    }
}

fn game_cfg(scheduler: &str, stop_ns: u64, events: Vec<PathEvent>, stale_loss_cnt: u8) -> SimConfig {
    let mut cfg = two_paths(stop_ns + 10 * S);
    let mut t = transport(Protocol::Mptcp, scheduler, "cubic", vec![0, 1]);
    t.stale_loss_cnt = stale_loss_cnt;
    // The kernel's receive autotuning: the buffer stays at its initial window for this light
    // traffic, so after the first quickacks the messages are acknowledged by delayed ACKs (with
    // a fixed 6 MiB buffer each one would grow rcv_ssthresh and be ACKed at once, Linux
    // `tcp_grow_window`, shortening the RTO these tests count in).
    t.rcv_buf_autotuning = true;
    cfg.transports.push(t);
    let mut f = sized(0, 0, 0, 0);
    f.app = AppConfig::Messages { size_bytes: 300, interval_ns: 20 * MS, deadline_ns: Some(150 * MS), stop_ns };
    cfg.flows.push(f);
    cfg.path_events = events;
    cfg
}

/// Send time of the last message that missed its deadline.
fn last_miss_ns(rec: &mpsched_sim::records::Records) -> Option<u64> {
    let (m, missed) = messages(rec);
    m.iter().zip(&missed).filter(|(_, x)| **x).map(|((s, _), _)| *s).max()
}

/// First message sent at or after `from_ns` whose one-way delay shows it crossed path 0 (the
/// 10 ms path: under 40 ms, the other path's one-way delay).
fn first_on_path0_ns(rec: &mpsched_sim::records::Records, from_ns: u64) -> Option<u64> {
    let (m, _) = messages(rec);
    m.iter().find(|(s, d)| *s >= from_ns && d.is_some_and(|d| d < 40 * MS)).map(|(s, _)| *s)
}

#[test]
fn redundant_misses_no_deadline_the_surviving_path_can_meet_through_a_blackhole() {
    // Path 0 (10 ms) is blackholed from 2 s to 5 s; path 1 (40 ms one way) stays: every
    // message could arrive in about 40 ms, within the 150 ms deadline.
    let ev = vec![impairment(1, 0, 2 * S, 3 * S, 0)];
    let rec = run(&game_cfg("redundant", 8 * S, ev.clone(), 4)).unwrap();
    let (m, missed) = messages(&rec);
    assert_eq!(m.len(), 400);
    for ((sent, delay), miss) in m.iter().zip(&missed) {
        // After the handshake and join (first 0.5 s), nothing is late.
        if *sent >= 500 * MS {
            assert!(!miss, "message sent at {} ms: delay {delay:?}", sent / MS);
        }
    }
    // The same blackhole costs minRTT deadlines: it keeps sending on path 0 until an RTO.
    let minrtt = run(&game_cfg("minrtt", 8 * S, ev, 4)).unwrap();
    assert!(messages(&minrtt).1.iter().any(|x| *x));
}

#[test]
fn linux_fails_over_once_the_blackholed_subflow_is_stale() {
    // Upstream marks the blackholed subflow stale at the MPTCP retransmission-timer period
    // after the `stale_loss_cnt`-th without an ACK (`stale_count > stale_loss_cnt`); until
    // then the message stuck on it holds every later one back (head of line): the other
    // subflow is never idle, so the retransmission picker finds no subflow for it. The
    // timer's period is `msk->timer_ival` as the last push stored it
    // (`mptcp_timeout_from_subflow`): the time left on the other subflow's pending RTO (at
    // most its RTO, about 280 ms, plus one 32 ms timer-wheel slot), or exactly `TCP_RTO_MIN`
    // after a firing that counted it stale once. The two alternate, so two more units of
    // `stale_loss_cnt` (two more firings) take one of each: 200 to 520 ms.
    let blackhole = || vec![impairment(1, 0, 2 * S, 6 * S, 0)];
    let last_miss = |cnt: u8| last_miss_ns(&run(&game_cfg("linux", 8 * S, blackhole(), cnt)).unwrap()).unwrap();
    let by_cnt: Vec<u64> = [2u8, 4, 6, 8].iter().map(|&c| last_miss(c)).collect();
    for w in by_cnt.windows(2) {
        let step = w[1] - w[0];
        assert!((200 * MS..=520 * MS).contains(&step), "two more periods took {} ms ({by_cnt:?})", step / MS);
    }
    // The default (4): the mark at the fifth firing after the blackhole at 2 s; of the four
    // periods between the first and the fifth, two are exactly `TCP_RTO_MIN`, none over 320 ms.
    assert!((2_400 * MS..3_600 * MS).contains(&by_cnt[1]), "{by_cnt:?}");
    // Never stale (0): the stuck message waits for the path to come back at 8 s.
    assert!(last_miss(0) >= 7_900 * MS);
}

#[test]
fn linux_fails_over_after_an_interface_down_as_after_a_blackhole() {
    // Upstream Linux takes no notice of an interface going down (no netdevice notifier in the
    // in-kernel path manager; `__mptcp_subflow_active` reads the TCP state only): the subflow
    // on the dead interface is found stale by the same count of MPTCP retransmission-timer
    // periods as a blackholed one, and its data is then re-sent on the other path. So the
    // last message to miss its deadline is the one stuck until the mark: within the
    // blackhole's bound (the fifth MPTCP-timer firing after the event), and long before the
    // path returns at 8 s (before the model followed the kernel, it waited for the path).
    let down = run(&game_cfg("linux", 8 * S, vec![impairment(0, 0, 2 * S, 6 * S, 0)], 4)).unwrap();
    let black = run(&game_cfg("linux", 8 * S, vec![impairment(1, 0, 2 * S, 6 * S, 0)], 4)).unwrap();
    let (down_miss, black_miss) = (last_miss_ns(&down).unwrap(), last_miss_ns(&black).unwrap());
    assert!((2_400 * MS..3_600 * MS).contains(&down_miss), "down: last miss at {} ms", down_miss / MS);
    assert!(down_miss.abs_diff(black_miss) <= 100 * MS, "down {down_miss} vs blackhole {black_miss}");
    // Every message from then on arrives within its deadline on path 1.
    let (m, missed) = messages(&down);
    assert!(m.iter().zip(&missed).all(|((s, d), x)| *s <= down_miss || (!x && d.is_some())));
}

#[test]
fn a_path_that_comes_back_carries_traffic_again() {
    // Interface down from 2 s to 5 s under minRTT (the out-of-tree kernel, whose path manager
    // sees the interface): the hosts see it come back and retransmit at once (the backoff is
    // reset), so the path carries messages again within 100 ms.
    let rec = run(&game_cfg("minrtt", 8 * S, vec![impairment(0, 0, 2 * S, 3 * S, 0)], 4)).unwrap();
    let back = first_on_path0_ns(&rec, 5 * S).unwrap_or(u64::MAX);
    assert!(back <= 5_100 * MS, "minrtt: back on path 0 at {} ms after a down/up", back / MS);
    for sched in ["minrtt", "linux"] {
        if sched == "linux" {
            // Upstream Linux sees no interface come back either: as after a blackhole, within
            // one backed-off RTO of the recovery.
            let rec = run(&game_cfg(sched, 8 * S, vec![impairment(0, 0, 2 * S, 3 * S, 0)], 4)).unwrap();
            let back = first_on_path0_ns(&rec, 5 * S).unwrap_or(u64::MAX);
            assert!(
                (5_500 * MS..=7_100 * MS).contains(&back),
                "linux: back on path 0 at {} ms after down/up",
                back / MS
            );
        }
        // Blackhole from 2 s to 5 s: the hosts notice nothing; the next retransmission of
        // the backed-off RTO on path 0 (RTO about 260 ms, doubled at 2.26, 2.78, 3.82 s:
        // the next at about 5.9 s) gets through, its ACK clears `potentially_failed`
        // (minRTT) or the stale mark (Linux), and the path carries messages again: within
        // one backed-off RTO (about 2.1 s here) of the recovery.
        let rec = run(&game_cfg(sched, 8 * S, vec![impairment(1, 0, 2 * S, 3 * S, 0)], 4)).unwrap();
        let back = first_on_path0_ns(&rec, 5 * S).unwrap_or(u64::MAX);
        assert!(
            (5_500 * MS..=7_100 * MS).contains(&back),
            "{sched}: back on path 0 at {} ms after a blackhole",
            back / MS
        );
    }
}

#[test]
fn an_rtt_spike_moves_minrtt_to_the_other_path_and_it_never_comes_back() {
    // Path 0's one-way delay grows from 10 ms to 110 ms between 2 s and 4 s (both ways):
    // minRTT's sRTT of path 0 exceeds path 1's (80 ms RTT) after a few samples, so messages
    // move to path 1 (one way 40 ms). After the spike path 0 is fast again, but minRTT sends
    // nothing on it, so its sRTT never takes a new sample and stays high: no failback (the
    // complaint of the issue; a kernel keeps an idle subflow's sRTT as well).
    let spike = PathEvent::Kind(PathImpairment::RttSpike {
        at_ns: 2 * S,
        path: 0,
        duration_ns: Some(2 * S),
        direction: LinkDirection::Both,
        extra_delay_ns: 100 * MS,
    });
    let rec = run(&game_cfg("minrtt", 6 * S, vec![spike], 4)).unwrap();
    let (m, _) = messages(&rec);
    let delay_at = |from_ms: u64, to_ms: u64| -> Vec<u64> {
        m.iter().filter(|(s, _)| (from_ms * MS..to_ms * MS).contains(s)).map(|(_, d)| d.unwrap() / MS).collect()
    };
    assert!(delay_at(1_000, 2_000).iter().all(|&d| d < 40), "before: path 0");
    assert!(delay_at(2_000, 2_100).iter().any(|&d| d >= 110), "the spike is felt at once");
    let during = delay_at(2_600, 3_900);
    assert!(during.iter().all(|&d| (40..110).contains(&d)), "during, after adapting: path 1 {during:?}");
    let after = delay_at(4_500, 6_000);
    assert!(after.iter().all(|&d| d >= 40), "after: still on path 1 {after:?}");
    let srtt = u64s(&rec, "subflow_series", "srtt_ns");
    let sf = u64s(&rec, "subflow_series", "subflow");
    let last0 = srtt.iter().zip(&sf).filter(|(_, f)| **f == 0).map(|(s, _)| *s).next_back().unwrap();
    assert!(last0 > 80 * MS, "path 0's sRTT is left at {} ms", last0 / MS);
}

#[test]
fn a_rate_collapse_and_a_loss_ramp_show_in_the_link_records() {
    // Bulk over one path; its downlink collapses to 1 Mbit/s for 2 s, then loses packets on a
    // ramp from 0 to 10 % over 2 s: the flow delivers less than at full rate, the link
    // counts the ramp's losses, and everything still arrives.
    let mut cfg = two_paths(30 * S);
    cfg.transports.push(transport(Protocol::Mptcp, "minrtt", "cubic", vec![0]));
    cfg.flows.push(sized(0, 0, 0, 4_000_000));
    cfg.path_events = vec![
        PathEvent::Kind(PathImpairment::RateCollapse {
            at_ns: S,
            path: 0,
            duration_ns: Some(2 * S),
            direction: LinkDirection::Down,
            rate_bps: 1_000_000,
        }),
        PathEvent::Kind(PathImpairment::LossRamp {
            at_ns: S,
            path: 0,
            duration_ns: Some(2 * S),
            direction: LinkDirection::Down,
            ramp_ns: 2 * S,
            from_p: 0.0,
            to_p: 0.1,
        }),
    ];
    let rec = run(&cfg).unwrap();
    assert_eq!(bools(&rec, "flows", "completed"), vec![true]);
    let t = u64s(&rec, "conn_series", "time_ns");
    let d = u64s(&rec, "conn_series", "delivered_bytes");
    let at = |ns: u64| d[t.iter().position(|&x| x >= ns).unwrap()];
    // 1 Mbit/s for 2 s carries at most 250 kB (plus what was queued before).
    assert!(at(3 * S) - at(S) < 400_000, "{} bytes during the collapse", at(3 * S) - at(S));
    let lost = u64s(&rec, "links", "packets_lost");
    assert!(lost[0] > 0, "the ramp loses packets on the downlink: {lost:?}");
    assert_eq!(lost[1], 0, "the uplink is untouched");
}

#[test]
fn an_upstream_join_whose_interface_is_down_is_never_made() {
    // Path 1's interface is down from 0 to 1 s. Upstream Linux (`linux`): the join the path
    // manager creates once the first subflow is up fails at `connect()` (no route), and the
    // endpoint is not offered again, so path 1 carries nothing for the whole run. The same
    // outage from 1 s, after the join, leaves path 1 in use once it returns.
    let sent_on_path1 = |at_ns: u64| {
        let rec = run(&game_cfg("linux", 8 * S, vec![impairment(0, 1, at_ns, S, 0)], 4)).unwrap();
        let (paths, sent) = (u64s(&rec, "subflows", "path"), u64s(&rec, "subflows", "bytes_sent"));
        paths.iter().zip(&sent).filter(|(p, _)| **p == 1).map(|(_, b)| *b).sum::<u64>()
    };
    assert_eq!(sent_on_path1(0), 0);
    assert!(sent_on_path1(S) > 0);
}

#[test]
fn a_rate_collapse_acts_on_the_queue_it_finds_and_its_end_on_the_queue_it_leaves() {
    // Bulk over path 0 (10 Mbit/s, 10 ms one way, 100-packet queue); its downlink collapses to
    // 500 kbit/s from 1 s to 3 s. A qdisc prices each packet at dequeue with the rate in force
    // (htb/tbf after `tc class change`), so the packets queued at 1 s leave at 500 kbit/s and
    // those queued at 3 s at 10 Mbit/s: the collapse is felt at once and its end too. (Before,
    // the queue kept the pace it was accepted at: 97 kB came in the collapse's first 0.3 s,
    // 17 kB in the 0.3 s after it; now 30 kB and 325 kB.)
    let mut cfg = two_paths(8 * S);
    cfg.transports.push(transport(Protocol::Mptcp, "minrtt", "cubic", vec![0]));
    cfg.flows.push(sized(0, 0, 0, 6_000_000));
    cfg.path_events = vec![PathEvent::Kind(PathImpairment::RateCollapse {
        at_ns: S,
        path: 0,
        duration_ns: Some(2 * S),
        direction: LinkDirection::Down,
        rate_bps: 500_000,
    })];
    let rec = run(&cfg).unwrap();
    let t = u64s(&rec, "conn_series", "time_ns");
    let d = u64s(&rec, "conn_series", "delivered_bytes");
    let at = |ns: u64| d[t.iter().position(|&x| x >= ns).unwrap()];
    let first = at(S + 300 * MS) - at(S);
    // 500 kbit/s for 0.3 s is 18.75 kB; the packet in service and those propagating add a few.
    assert!(first < 50_000, "{first} bytes in the collapse's first 0.3 s");
    let after = at(3 * S + 300 * MS) - at(3 * S);
    // At 10 Mbit/s the 0.3 s after the end carry up to 375 kB.
    assert!(after > 200_000, "{after} bytes in the 0.3 s after the collapse");
}
