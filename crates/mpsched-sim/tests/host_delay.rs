//! The endpoint timing model (`host_delay`): seeds matter on constant-delay paths, a seed is
//! still reproducible, and a constant host delay costs what the segments on the critical path
//! wait for their host.

mod common;
use common::*;
use mpsched_sim::config::*;
use mpsched_sim::run::run;

/// Two constant-delay 20 Mbit/s, 20 ms RTT paths (the grid's `equal` shape), one MPTCP download.
fn equal_paths(size_bytes: u64, host_delay: Option<HostDelayConfig>) -> SimConfig {
    let (links, paths) = paths_of(vec![
        (link("a.d", 20_000_000, 10 * MS, 40), link("a.u", 20_000_000, 10 * MS, 40)),
        (link("b.d", 20_000_000, 10 * MS, 40), link("b.u", 20_000_000, 10 * MS, 40)),
    ]);
    let mut cfg = scenario(links, paths, 30 * S);
    cfg.transports.push(transport(Protocol::Mptcp, "linux", "cubic", vec![0, 1]));
    cfg.flows.push(sized(0, 0, 0, size_bytes));
    cfg.host_delay = host_delay;
    cfg
}

/// What benches/host_latency.py measured on the testbed (docs/testbed.md, "Host timing").
const MEASURED: HostDelayConfig = HostDelayConfig { median_ns: 68_000, p99_ns: 417_000, floor_ns: 0, stall: None };

fn fct(cfg: &SimConfig) -> u64 {
    opt_u64s(&run(cfg).unwrap(), "flows", "fct_ns")[0].expect("the flow completes")
}

#[test]
fn seeds_spread_the_completion_time_only_with_the_model_on() {
    let fcts = |host| {
        (1..=6)
            .map(|seed| {
                let mut cfg = equal_paths(1 << 20, host);
                cfg.seed = seed;
                fct(&cfg)
            })
            .collect::<Vec<_>>()
    };
    let off = fcts(None);
    assert!(off.iter().all(|&f| f == off[0]), "constant delays, no model: every seed alike {off:?}");
    let mut on = fcts(Some(MEASURED));
    on.sort_unstable();
    on.dedup();
    assert_eq!(on.len(), 6, "every seed its own completion time: {on:?}");
}

#[test]
fn the_same_seed_gives_the_same_records_with_the_model_on() {
    let mut cfg = equal_paths(1 << 20, Some(MEASURED));
    cfg.record.sample_interval_ns = 10 * MS;
    cfg.seed = 5;
    assert_eq!(run(&cfg).unwrap(), run(&cfg).unwrap());
}

#[test]
fn a_constant_host_delay_adds_one_delay_per_reception_on_the_critical_path() {
    // One segment of data: SYN, SYN-ACK, the handshake's ACK with the request, the data; each
    // is received by a host before the next can leave, so a constant d costs exactly 4 d.
    let d = 3 * MS;
    let base = fct(&equal_paths(1000, None));
    let slow = fct(&equal_paths(1000, Some(HostDelayConfig { median_ns: d, p99_ns: d, floor_ns: 0, stall: None })));
    assert_eq!(slow - base, 4 * d, "base {base} ns, with host delay {slow} ns");
}

#[test]
fn a_constant_floor_adds_exactly_itself_per_reception_on_the_critical_path() {
    // Floor f under the same log-normal part (median and p99 both raised by f): each of the
    // four receptions on the one-segment transfer's critical path waits exactly f longer.
    let f = 2 * MS;
    let d = 3 * MS;
    let at = |floor_ns| {
        fct(&equal_paths(
            1000,
            Some(HostDelayConfig { median_ns: d + floor_ns, p99_ns: d + floor_ns, floor_ns, stall: None }),
        ))
    };
    assert_eq!(at(f) - at(0), 4 * f);
    let mut cfg =
        equal_paths(1000, Some(HostDelayConfig { median_ns: d + f, p99_ns: d + f + MS, floor_ns: f, stall: None }));
    let base = fct(&equal_paths(1000, None));
    for seed in 1..=5 {
        cfg.seed = seed;
        assert!(fct(&cfg) >= base + 4 * f, "seed {seed}: every reception waits at least the floor");
    }
}

#[test]
fn the_same_seed_gives_the_same_records_with_a_floor() {
    let mut cfg = equal_paths(1 << 20, Some(HostDelayConfig { floor_ns: 30_000, ..MEASURED }));
    cfg.record.sample_interval_ns = 10 * MS;
    cfg.seed = 5;
    let records = run(&cfg).unwrap();
    assert_eq!(records, run(&cfg).unwrap());
    cfg.host_delay = Some(MEASURED);
    assert_ne!(records, run(&cfg).unwrap(), "the floor changes the draws");
}

#[test]
fn a_zero_floor_is_the_floorless_model_to_the_byte() {
    // A config that names floor_ns = 0 and one without the field: same run, same records.
    let mut json = serde_json::to_value(equal_paths(1 << 20, Some(MEASURED))).unwrap();
    assert!(json["host_delay"].get("floor_ns").is_none(), "a zero floor is not serialised");
    let plain: SimConfig = serde_json::from_value(json.clone()).unwrap();
    json["host_delay"]["floor_ns"] = 0.into();
    let named: SimConfig = serde_json::from_value(json).unwrap();
    assert_eq!(run(&plain).unwrap(), run(&named).unwrap());
}

#[test]
fn a_floor_at_or_above_the_median_is_refused_naming_the_field() {
    let cfg = equal_paths(1000, Some(HostDelayConfig { floor_ns: 68_000, ..MEASURED }));
    let e = run(&cfg).unwrap_err().to_string();
    assert!(e.contains("host_delay.floor_ns"), "{e}");
}
