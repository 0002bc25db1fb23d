//! Workloads through the real engine: web page fetches (request up, objects down, one at a
//! time), constant-bit-rate blocks and their application delay, and transfers on one
//! long-lived connection against fresh connections (RPCs: `rpc.rs`).

mod common;
use common::*;
use mpsched_sim::config::*;
use mpsched_sim::run::run;

/// One path: 20 Mbit/s each way, `rtt_ms` round trip, queues of 100 packets.
fn one_path(rtt_ms: u64) -> SimConfig {
    let d = rtt_ms * MS / 2;
    let (links, paths) = paths_of(vec![(link("p.d", 20_000_000, d, 100), link("p.u", 20_000_000, d, 100))]);
    let mut cfg = scenario(links, paths, 30 * S);
    cfg.transports.push(transport(Protocol::Tcp, "minrtt", "cubic", vec![0]));
    cfg
}

fn flow(id: u64, app: AppConfig) -> FlowConfig {
    FlowConfig { id, transport: 0, start_ns: 0, direction: Direction::Download, paths: None, app, nodelay: None }
}

fn web(objects_bytes: Vec<u64>) -> AppConfig {
    AppConfig::Web { objects_bytes, request_bytes: 500, request_retry_ns: S }
}

fn fct(cfg: &SimConfig) -> u64 {
    let rec = run(cfg).unwrap();
    assert!(bools(&rec, "flows", "completed")[0], "flow did not complete");
    opt_u64s(&rec, "flows", "fct_ns")[0].unwrap()
}

#[test]
fn web_fetch_takes_at_least_a_round_trip_more_than_a_push() {
    let rtt_ns = 40 * MS;
    let objects = vec![30_000, 60_000, 10_000, 80_000];
    let total: u64 = objects.iter().sum();
    let mut pushed = one_path(40);
    pushed.flows.push(sized(0, 0, 0, total));
    let mut fetched = one_path(40);
    fetched.flows.push(flow(0, web(objects.clone())));
    let (push_ns, fetch_ns) = (fct(&pushed), fct(&fetched));
    // Every object after the first waits for its own request. Not a full RTT each more than
    // the push, which pays slow-start rounds the fetch overlaps with its requests (the window
    // grown on one object carries over to the next), but at least one.
    assert!(fetch_ns >= push_ns + rtt_ns, "fetch {} ms vs push {} ms", fetch_ns / MS, push_ns / MS);
    let rec = run(&fetched).unwrap();
    assert_eq!(u64s(&rec, "flows", "units"), vec![4]);
    assert_eq!(strs(&rec, "flows", "app"), vec!["web"]);
    assert_eq!(u64s(&rec, "blocks", "size_bytes"), objects);
    let sent = u64s(&rec, "blocks", "sent_ns");
    let got: Vec<u64> = opt_u64s(&rec, "blocks", "delivered_ns").into_iter().map(Option::unwrap).collect();
    // The first request leaves once the handshake is done (one RTT), each later one when the
    // previous object is complete; an object cannot arrive sooner than a round trip after
    // its request.
    assert!(sent[0] >= rtt_ns, "first request at {} ms", sent[0] / MS);
    for k in 0..objects.len() {
        assert!(got[k] >= sent[k] + rtt_ns, "object {k}");
        if k > 0 {
            assert_eq!(sent[k], got[k - 1], "request {k} leaves when object {} is complete", k - 1);
        }
    }
}

#[test]
fn a_single_file_fetch_is_never_faster_than_a_push() {
    for size in [76_000, 1_146_000] {
        let mut pushed = one_path(60);
        pushed.flows.push(sized(0, 0, 0, size));
        let mut fetched = one_path(60);
        fetched.flows.push(flow(0, web(vec![size])));
        assert!(fct(&fetched) >= fct(&pushed), "{size} B");
    }
}

#[test]
fn lost_requests_are_sent_again_after_a_second() {
    // A lossy uplink loses some of the 20 requests (P(none lost) = 0.7^20 < 0.1 %): the page
    // still completes, and waiting out a retry costs at least the 1 s timeout.
    let objects = vec![5_000; 20];
    let mut clean = one_path(40);
    clean.flows.push(flow(0, web(objects.clone())));
    let mut lossy = one_path(40);
    lossy.links[1].loss = LossConfig::Bernoulli { p: 0.3 };
    lossy.flows.push(flow(0, web(objects)));
    let (clean_ns, lossy_ns) = (fct(&clean), fct(&lossy));
    assert!(lossy_ns >= clean_ns + S, "lossy {} ms vs clean {} ms", lossy_ns / MS, clean_ns / MS);
}

/// Fast path (`fast_mbps`, 10 ms one way) and slow path (10 Mbit/s, 100 ms one way).
fn two_paths(fast_mbps: u64) -> SimConfig {
    let (links, paths) = paths_of(vec![
        (link("fast.d", fast_mbps * 1_000_000, 10 * MS, 50), link("fast.u", fast_mbps * 1_000_000, 10 * MS, 50)),
        (link("slow.d", 10_000_000, 100 * MS, 200), link("slow.u", 10_000_000, 100 * MS, 200)),
    ]);
    let mut cfg = scenario(links, paths, 20 * S);
    cfg.transports.push(transport(Protocol::Mptcp, "minrtt", "cubic", vec![0, 1]));
    cfg
}

fn cbr_delays_ms(fast_mbps: u64, rate_bps: u64) -> (Vec<f64>, u64) {
    let mut cfg = two_paths(fast_mbps);
    cfg.flows.push(flow(0, AppConfig::Cbr { rate_bps, block_bytes: 8192, stop_ns: 10 * S }));
    let rec = run(&cfg).unwrap();
    assert!(bools(&rec, "flows", "completed")[0]);
    let delays = opt_u64s(&rec, "blocks", "delay_ns");
    let sent = u64s(&rec, "blocks", "sent_ns");
    // Blocks leave on the CBR clock: block k at k * 8192 * 8 / rate seconds.
    for (k, &t) in sent.iter().enumerate() {
        assert_eq!(t, (k as u128 * 8192 * 8 * 1_000_000_000 / rate_bps as u128) as u64);
    }
    // Skip the first second (handshake and slow start) to look at the steady state.
    let steady = delays.iter().zip(&sent).filter(|(_, &t)| t >= S).map(|(d, _)| d.unwrap() as f64 / 1e6).collect();
    (steady, u64s(&rec, "flows", "units")[0])
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

#[test]
fn cbr_block_delay_is_at_least_the_one_way_delay_and_grows_on_the_slow_path() {
    // 4 Mbit/s fits the 20 Mbit/s fast path; 12 Mbit/s overflows a 8 Mbit/s one onto the slow.
    let (fast_only, n) = cbr_delays_ms(20, 4_000_000);
    assert_eq!(n, (10 * 4_000_000u64).div_ceil(8192 * 8), "blocks in 10 s at 4 Mbit/s");
    let (spill, _) = cbr_delays_ms(8, 12_000_000);
    for d in fast_only.iter().chain(&spill) {
        assert!(*d >= 10.0, "a block arrived in {d} ms, under the 10 ms one-way delay");
    }
    let (m_fast, m_spill) = (mean(&fast_only), mean(&spill));
    assert!(m_fast < 30.0, "fast-only mean delay {m_fast} ms");
    assert!(m_spill > 100.0, "blocks on the slow path wait its 100 ms: mean {m_spill} ms");
}

#[test]
fn transfers_on_a_long_lived_connection_skip_the_handshake() {
    let size = 100_000;
    let mut fresh = one_path(100);
    fresh.flows.push(sized(0, 0, 0, size));
    let fresh_ns = fct(&fresh);
    let mut long = one_path(100);
    long.flows.push(flow(0, AppConfig::Transfers { sizes_bytes: vec![size; 5], offsets_ns: None }));
    let rec = run(&long).unwrap();
    assert_eq!(u64s(&rec, "flows", "units"), vec![5]);
    assert_eq!(opt_u64s(&rec, "flows", "size_bytes"), vec![Some(5 * size)]);
    let sent = u64s(&rec, "blocks", "sent_ns");
    let got: Vec<u64> = opt_u64s(&rec, "blocks", "delivered_ns").into_iter().map(Option::unwrap).collect();
    let delay = opt_u64s(&rec, "blocks", "delay_ns");
    for k in 1..5 {
        // Back to back: the next transfer is written once the previous is acknowledged.
        assert!(sent[k] >= got[k - 1], "transfer {k} written before {} was delivered", k - 1);
        // No handshake: faster than the same size on a fresh connection (at least one RTT).
        assert!(delay[k].unwrap() + 100 * MS <= fresh_ns, "transfer {k}: {:?} vs fresh {fresh_ns}", delay[k]);
    }
}

#[test]
fn transfers_at_given_offsets_are_written_then() {
    let mut cfg = one_path(40);
    let offsets = vec![0, 2 * S, 2 * S, 5 * S];
    cfg.flows.push(FlowConfig {
        start_ns: S,
        ..flow(0, AppConfig::Transfers { sizes_bytes: vec![50_000; 4], offsets_ns: Some(offsets.clone()) })
    });
    let rec = run(&cfg).unwrap();
    let sent = u64s(&rec, "blocks", "sent_ns");
    assert_eq!(sent, offsets.iter().map(|o| S + o).collect::<Vec<_>>());
    // Two transfers written together: the second completes after the first.
    let got = opt_u64s(&rec, "blocks", "delivered_ns");
    assert!(got[2].unwrap() > got[1].unwrap());
}

#[test]
fn a_web_upload_is_refused() {
    let mut cfg = one_path(40);
    cfg.flows.push(FlowConfig { direction: Direction::Upload, ..flow(0, web(vec![1000])) });
    let e = run(&cfg).unwrap_err();
    assert_eq!(e.field, "flows[0].direction");
}
