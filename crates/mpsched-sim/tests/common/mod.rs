//! Builders shared by the integration tests: small scenarios in a few lines.
#![allow(dead_code)]

use mpsched_sim::config::*;
use mpsched_sim::records::{Column, Records};

pub const MS: u64 = 1_000_000;
pub const S: u64 = 1_000_000_000;

/// A link with a rate, a one-way delay and a queue limit in packets.
pub fn link(name: &str, rate_bps: u64, delay_ns: u64, queue_packets: u64) -> LinkConfig {
    LinkConfig { name: name.into(), queue_packets: Some(queue_packets), ..LinkConfig::plain(rate_bps, delay_ns) }
}

/// A transport over `paths`.
pub fn transport(protocol: Protocol, scheduler: &str, cc: &str, paths: Vec<usize>) -> TransportConfig {
    TransportConfig::with_defaults(protocol, scheduler, cc, paths, 6 << 20, 4 << 20)
}

/// A sized download starting at `start_ns` on transport `transport`.
pub fn sized(id: u64, transport: usize, start_ns: u64, size_bytes: u64) -> FlowConfig {
    FlowConfig {
        id,
        transport,
        start_ns,
        direction: Direction::Download,
        paths: None,
        app: AppConfig::Sized { size_bytes },
        nodelay: None,
    }
}

/// Paths from (down, up) link pairs given as link configs; returns links and paths.
pub fn paths_of(pairs: Vec<(LinkConfig, LinkConfig)>) -> (Vec<LinkConfig>, Vec<PathConfig>) {
    let mut links = Vec::new();
    let mut paths = Vec::new();
    for (i, (d, u)) in pairs.into_iter().enumerate() {
        links.push(d);
        links.push(u);
        paths.push(PathConfig { name: format!("p{i}"), down: vec![2 * i], up: vec![2 * i + 1], gso: false });
    }
    (links, paths)
}

/// An empty scenario over the given links and paths.
pub fn scenario(links: Vec<LinkConfig>, paths: Vec<PathConfig>, duration_ns: u64) -> SimConfig {
    SimConfig {
        seed: 1,
        duration_ns,
        links,
        paths,
        transports: vec![],
        flows: vec![],
        cross_traffic: vec![],
        path_events: vec![],
        record: RecordConfig { sample_interval_ns: 0 },
        host_delay: None,
    }
}

pub fn u64s(rec: &Records, table: &str, column: &str) -> Vec<u64> {
    match rec.table(table).and_then(|t| t.column(column)) {
        Some(Column::U64(v)) => v.clone(),
        other => panic!("{table}.{column}: {other:?}"),
    }
}

pub fn opt_u64s(rec: &Records, table: &str, column: &str) -> Vec<Option<u64>> {
    match rec.table(table).and_then(|t| t.column(column)) {
        Some(Column::OptU64(v)) => v.clone(),
        other => panic!("{table}.{column}: {other:?}"),
    }
}

pub fn bools(rec: &Records, table: &str, column: &str) -> Vec<bool> {
    match rec.table(table).and_then(|t| t.column(column)) {
        Some(Column::Bool(v)) => v.clone(),
        other => panic!("{table}.{column}: {other:?}"),
    }
}

pub fn strs(rec: &Records, table: &str, column: &str) -> Vec<String> {
    match rec.table(table).and_then(|t| t.column(column)) {
        Some(Column::Str(v)) => v.clone(),
        other => panic!("{table}.{column}: {other:?}"),
    }
}

/// A path event of kind `kind` (0 down, 1 blackhole, 2 loss ramp, 3 RTT spike, 4 rate collapse,
/// 5 the original down shape with no recovery) on `path` from `at_ns`, lifted after
/// `duration_ns` (except kind 5); `x` in [0, 1000) sets the kind's parameter.
pub fn impairment(kind: u8, path: usize, at_ns: u64, lift_after_ns: u64, x: u64) -> PathEvent {
    let duration_ns = Some(lift_after_ns);
    let direction = [LinkDirection::Both, LinkDirection::Down, LinkDirection::Up][(x % 3) as usize];
    PathEvent::Kind(match kind % 6 {
        0 => PathImpairment::Down { at_ns, path, duration_ns },
        1 => PathImpairment::Blackhole { at_ns, path, duration_ns, direction },
        2 => PathImpairment::LossRamp {
            at_ns,
            path,
            duration_ns,
            direction,
            ramp_ns: lift_after_ns / 2,
            from_p: 0.0,
            to_p: (x % 1000) as f64 / 1000.0,
        },
        3 => PathImpairment::RttSpike { at_ns, path, duration_ns, direction, extra_delay_ns: x * MS },
        4 => PathImpairment::RateCollapse { at_ns, path, duration_ns, direction, rate_bps: 10_000 + x * 10_000 },
        _ => return PathEvent::up_down(at_ns, path, x.is_multiple_of(2)),
    })
}

/// The endpoint timing model, off half of the time, otherwise a median of 1 us to 2 ms with a
/// p99 from equal (a constant delay) to 8x the median, a floor of 0 to 3/4 of the median and
/// stalls in 0 to 2 % of packets.
pub fn arb_host_delay() -> impl proptest::strategy::Strategy<Value = Option<HostDelayConfig>> {
    use proptest::prelude::*;
    prop_oneof![
        1 => Just(None),
        1 => (1u64..=2_000, 1u64..=8, 0u64..4, 0u64..3).prop_map(|(median_us, k, f, s)| Some(HostDelayConfig {
            median_ns: median_us * 1_000,
            p99_ns: median_us * 1_000 * k,
            floor_ns: median_us * 250 * f,
            // stalls of 20x the median in 0, 1 or 2 % of packets
            stall: (s > 0).then(|| HostStallConfig {
                per_million: s * 10_000,
                run_packets: s * 2 - 1,
                median_ns: median_us * 20_000,
                p99_ns: median_us * 40_000,
            }),
        })),
    ]
}
