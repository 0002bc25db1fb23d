//! The request / response (RPC) workload: requests written into the connection's
//! client-to-server stream (segmented, scheduled, acknowledged and retransmitted like any data),
//! each response written once its request is whole, each request's latency in `blocks`.

mod common;
use common::*;
use mpsched_sim::config::*;
use mpsched_sim::records::Records;
use mpsched_sim::run::run;

/// One path: 20 Mbit/s each way, 20 ms one way, queues of 100 packets; plain TCP.
fn one_path() -> SimConfig {
    let (links, paths) = paths_of(vec![(link("p.d", 20_000_000, 20 * MS, 100), link("p.u", 20_000_000, 20 * MS, 100))]);
    let mut cfg = scenario(links, paths, 30 * S);
    cfg.transports.push(transport(Protocol::Tcp, "minrtt", "cubic", vec![0]));
    cfg
}

fn rpc(
    requests: u64,
    request_bytes: u64,
    response_bytes: u64,
    interval_ns: Option<u64>,
    concurrency: Option<u64>,
) -> AppConfig {
    AppConfig::Rpc { requests, request_bytes, response_bytes, interval_ns, concurrency, deadline_ns: None }
}

fn flow(app: AppConfig) -> FlowConfig {
    FlowConfig { app, ..sized(0, 0, 0, 0) }
}

/// (sent_ns, delivered_ns) of every request of the first flow (None: never answered).
fn requests(rec: &Records) -> Vec<(u64, Option<u64>)> {
    u64s(rec, "blocks", "sent_ns").into_iter().zip(opt_u64s(rec, "blocks", "delivered_ns")).collect()
}

/// Latency of every request, all answered.
fn latencies(rec: &Records) -> Vec<u64> {
    requests(rec).iter().map(|&(s, d)| d.expect("every request answered") - s).collect()
}

/// Serialisation of `payload_bytes` at 20 Mbit/s in segments of at most 1448 B with 52 B of
/// headers each (IP, TCP, timestamps), ns.
fn serialisation_ns(payload_bytes: u64) -> u64 {
    let wire = payload_bytes + payload_bytes.div_ceil(1448) * 52;
    wire * 8 * 1_000_000_000 / 20_000_000
}

#[test]
fn an_rpc_on_an_idle_path_takes_request_serialisation_plus_rtt_plus_response_serialisation() {
    // Nothing waits for an ACK: a request of up to three segments and a 4000-byte response
    // (three segments) leave back to back within the initial window, and the ACKs of either
    // direction leave after the data of that side (as they would ride on it). Tolerance 1 us:
    // the model is exact up to integer nanoseconds.
    for request_bytes in [300, 4000] {
        let expect_ns = serialisation_ns(request_bytes) + 40 * MS + serialisation_ns(4000);
        for (interval, conc) in [(None, Some(1)), (Some(100 * MS), None)] {
            let mut cfg = one_path();
            cfg.flows.push(flow(rpc(20, request_bytes, 4000, interval, conc)));
            let rec = run(&cfg).unwrap();
            assert_eq!(strs(&rec, "flows", "app"), vec!["rpc"]);
            let r = requests(&rec);
            let lat = latencies(&rec);
            assert_eq!(lat.len(), 20);
            // The first request leaves behind the handshake's last ACKs (one per half-connection);
            // an open loop's is due at 0 and waits for the handshake's round trip too.
            let first_ns = expect_ns + if interval.is_some() { 40 * MS } else { 0 };
            assert!((first_ns..first_ns + 100_000).contains(&lat[0]), "{request_bytes} B: first {} ns", lat[0]);
            for k in 1..20 {
                assert!(
                    lat[k].abs_diff(expect_ns) <= 1_000,
                    "{request_bytes} B {interval:?} request {k}: {} ns vs {expect_ns}",
                    lat[k]
                );
                if interval.is_some() {
                    assert_eq!(r[k].0, k as u64 * 100 * MS, "open loop: request {k} at its time");
                } else {
                    assert_eq!(
                        Some(r[k].0),
                        r[k - 1].1,
                        "closed loop: request {k} when response {} is complete",
                        k - 1
                    );
                }
            }
        }
    }
}

#[test]
fn a_request_lost_on_the_way_is_retransmitted_and_its_latency_includes_the_repair() {
    // Closed loop, one at a time. The uplink drops everything for 5 ms around request 5's
    // departure: that request (one segment) is lost, and nothing behind it can reveal the loss,
    // so TCP repairs it by its tail-loss probe (2 SRTT + 200 ms for a lone segment) or its RTO
    // (at least 200 ms, at most the initial 1 s): the latency grows by 200 ms to 1 s.
    let clean = {
        let mut cfg = one_path();
        cfg.flows.push(flow(rpc(20, 300, 4000, None, Some(1))));
        run(&cfg).unwrap()
    };
    let base = latencies(&clean);
    let t5 = requests(&clean)[5].0;
    let mut cfg = one_path();
    cfg.flows.push(flow(rpc(20, 300, 4000, None, Some(1))));
    cfg.path_events.push(impairment(1, 0, t5 - MS, 5 * MS, 2)); // a blackhole, upstream only
    let rec = run(&cfg).unwrap();
    let lat = latencies(&rec);
    assert_eq!(&lat[..5], &base[..5], "before the loss");
    assert!((base[5] + 200 * MS..=base[5] + S).contains(&lat[5]), "lost request: {} ms", lat[5] / MS);
    assert_eq!(u64s(&rec, "flows", "bytes_delivered"), vec![20 * 4000]);
}

#[test]
fn every_rpc_is_answered_once_with_at_most_concurrency_outstanding_despite_lost_requests() {
    // A lossy uplink (30 %) loses request segments and the client's ACKs; TCP repairs them;
    // the server answers each request once, in order, and the connection carries exactly
    // requests x response.
    for conc in [1, 4] {
        let mut cfg = one_path();
        cfg.links[1].loss = LossConfig::Bernoulli { p: 0.3 };
        cfg.flows.push(flow(rpc(40, 2000, 10_000, None, Some(conc))));
        let rec = run(&cfg).unwrap();
        assert_eq!(bools(&rec, "flows", "completed"), vec![true]);
        assert_eq!(u64s(&rec, "flows", "bytes_delivered"), vec![40 * 10_000]);
        let r: Vec<(u64, u64)> = requests(&rec).into_iter().map(|(s, d)| (s, d.unwrap())).collect();
        assert_eq!(r.len(), 40);
        assert!(r.windows(2).all(|w| w[1].1 >= w[0].1), "responses complete in order");
        for &(s, _) in &r {
            let outstanding = r.iter().filter(|&&(s2, d2)| s2 <= s && d2 > s).count();
            assert!(outstanding <= conc as usize, "{outstanding} outstanding at {s} (concurrency {conc})");
        }
        // Some request waited for a repair (a lost segment costs at least a probe timeout).
        let fastest = r.iter().map(|(s, d)| d - s).min().unwrap();
        assert!(r.iter().any(|(s, d)| d - s >= fastest + 200 * MS), "conc {conc}");
    }
}

/// Two paths, 10 Mbit/s: path 0 at 10 ms one way, path 1 at 40 ms; MPTCP with `scheduler`;
/// an open-loop RPC at 50 Hz (300 B up, 2000 B down) for 8 s.
fn two_path_rpc(scheduler: &str, events: Vec<PathEvent>) -> SimConfig {
    let (links, paths) = paths_of(vec![
        (link("a.d", 10_000_000, 10 * MS, 100), link("a.u", 10_000_000, 10 * MS, 100)),
        (link("b.d", 10_000_000, 40 * MS, 100), link("b.u", 10_000_000, 40 * MS, 100)),
    ]);
    let mut cfg = scenario(links, paths, 20 * S);
    let mut t = transport(Protocol::Mptcp, scheduler, "cubic", vec![0, 1]);
    t.rcv_buf_autotuning = true;
    cfg.transports.push(t);
    cfg.flows.push(flow(rpc(400, 300, 2000, Some(20 * MS), None)));
    cfg.path_events = events;
    cfg
}

#[test]
fn after_a_blackhole_linux_moves_requests_and_responses_to_the_surviving_path() {
    // Path 0 is blackholed both ways from 2 s to the end. Upstream Linux keeps sending on it
    // until the subflow is stale (after `stale_loss_cnt` = 4 RTOs without an ACK: 2.4 to 3.6 s,
    // tests/failover.rs), each host for its own data: the client's requests and the server's
    // responses; then the requests and responses stuck meanwhile (up to 80) drain through path
    // 1 and the data stuck on path 0 is reinjected. Every request is answered, each one sent
    // after 2 s through path 1 only (path 0 carries nothing): the requests moved. From 6 s on
    // each takes path 1's RTT of 80 ms plus serialisation, under 100 ms.
    let rec = run(&two_path_rpc("linux", vec![impairment(1, 0, 2 * S, 18 * S, 0)])).unwrap();
    let r = requests(&rec);
    assert_eq!(r.len(), 400);
    for &(s, d) in &r {
        let lat = d.map(|d| d - s);
        assert!(lat.is_some_and(|l| l < 2 * S), "request at {s} ns: {lat:?}");
        if s >= 6 * S {
            assert!(lat.is_some_and(|l| (80 * MS..100 * MS).contains(&l)), "after failover, on path 1: {s} ns {lat:?}");
        }
    }
    // The requests sent into the blackhole wait for the failover.
    let first = r.iter().filter(|&&(s, _)| (2 * S..2_100 * MS).contains(&s));
    assert!(first.clone().any(|&(s, d)| d.unwrap() - s >= 300 * MS), "{:?}", first.collect::<Vec<_>>());
}

#[test]
fn the_same_seed_gives_the_same_records() {
    let cfg = || {
        let mut c = two_path_rpc("minrtt", vec![impairment(2, 0, S, 3 * S, 300)]);
        c.seed = 7;
        c
    };
    let (a, b) = (run(&cfg()).unwrap(), run(&cfg()).unwrap());
    assert_eq!(a, b);
    let lost = u64s(&a, "links", "packets_lost");
    assert!(lost.iter().sum::<u64>() > 0, "the loss ramp lost packets: {lost:?}");
}

#[test]
fn a_bad_rpc_names_its_field() {
    let mut cfg = one_path();
    cfg.flows.push(flow(rpc(5, 300, 1000, Some(10 * MS), Some(2))));
    assert_eq!(run(&cfg).unwrap_err().field, "flows[0].app.concurrency");
    cfg.flows[0].app = rpc(0, 300, 1000, None, None);
    assert_eq!(run(&cfg).unwrap_err().field, "flows[0].app.requests");
    for request_bytes in [0, u64::MAX / 2] {
        cfg.flows[0].app = rpc(5, request_bytes, 1000, None, None);
        assert_eq!(run(&cfg).unwrap_err().field, "flows[0].app.request_bytes");
    }
    cfg.flows[0].app = rpc(5, 300, 1000, None, None);
    cfg.flows[0].direction = Direction::Upload;
    assert_eq!(run(&cfg).unwrap_err().field, "flows[0].direction");
}

#[test]
fn requests_survive_an_interface_down_and_host_delays_on_both_halves() {
    // minRTT (the out-of-tree kernel: both hosts see the interface go) with the endpoint timing
    // model: the request half's segments wait on the same hosts' models; path 0 goes down for
    // 1 s. Every request is answered, each response once, and the run is repeatable.
    let cfg = || {
        let mut c = two_path_rpc("minrtt", vec![impairment(0, 0, 2 * S, S, 0)]);
        c.host_delay = Some(HostDelayConfig { median_ns: 50_000, p99_ns: 400_000, floor_ns: 10_000, stall: None });
        c
    };
    let rec = run(&cfg()).unwrap();
    assert_eq!(bools(&rec, "flows", "completed"), vec![true]);
    assert_eq!(u64s(&rec, "flows", "bytes_delivered"), vec![400 * 2000]);
    let lat = latencies(&rec);
    // Requests sent while the path is down wait for its RTOs or move to path 1 (80 ms RTT);
    // from 3.2 s on none waits for a repair: each takes less than path 1's round trip plus
    // 20 ms. (Back on path 0 they take 33.7 ms, not the 22 ms of before the outage: the request
    // half's path-0 subflow comes back from its RTOs with a window of about one segment that
    // this thin stream never grows; not investigated further.)
    assert!(lat[160..].iter().all(|&l| l < 100 * MS), "{:?}", &lat[160..170]);
    assert_eq!(run(&cfg()).unwrap(), rec);
}
