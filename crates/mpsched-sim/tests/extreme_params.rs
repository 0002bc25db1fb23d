//! Extreme scheduler parameters (issue 14): every scheduler of the registry, its `+rp` / `+bm`
//! wrappers included, given 0, 1, the largest allowed value, values just past it, near the
//! u32 / u64 limits and huge floats, either refuses the value at build time naming the
//! parameter, or runs a whole transfer that completes and delivers every byte once.
//!
//! Overflow: `cargo test --release` (what `make test` runs) has overflow checks off, so a
//! wrapped product is caught by what it does (a quota wrapped to 0 sends nothing and the flow
//! never completes, a wrapped buffer refuses every byte); under `cargo test` (the dev profile,
//! overflow checks on) it also panics.

mod common;

use common::*;
use mpsched_proto::sched::registry::{self, MAX_PARAM_INT, MAX_PARAM_NS};
use mpsched_sim::config::*;
use mpsched_sim::run::run;
use proptest::prelude::*;
use serde_json::{json, Map, Value};

const SIZE_BYTES: u64 = 300_000;

/// The candidate values of a parameter whose default is `default`.
fn extremes(key: &str, default: &Value) -> Vec<Value> {
    let top = if key.ends_with("_ns") { MAX_PARAM_NS } else { MAX_PARAM_INT };
    let mut v = vec![
        json!(0),
        json!(1),
        json!(top),
        json!(top + 1),
        json!(u32::MAX as u64 - 1),
        json!(1u64 << 62),
        json!(u64::MAX),
        json!(-1),
    ];
    if default.is_f64() {
        v.extend([json!(0.0), json!(1.0), json!(1e300), json!(top as f64), json!(f64::MAX)]);
    }
    v
}

/// Numeric parameters of every component of `name`, with their defaults.
fn numeric_params(name: &str) -> Vec<(String, Value)> {
    let all = registry::all();
    name.split('+')
        .filter_map(|part| all.iter().find(|i| i.name == part))
        .flat_map(|i| i.default_params.as_object().cloned().unwrap_or_default())
        .filter(|(_, v)| v.is_number())
        .collect()
}

/// Two unequal paths and one sized download with scheduler `name` and `params`.
fn scenario_with(name: &str, params: Value) -> SimConfig {
    let (links, paths) = paths_of(vec![
        (link("a_dn", 20_000_000, 10 * MS, 100), link("a_up", 20_000_000, 10 * MS, 100)),
        (link("b_dn", 5_000_000, 40 * MS, 100), link("b_up", 5_000_000, 40 * MS, 100)),
    ]);
    let mut cfg = scenario(links, paths, 30 * S);
    let mut t = transport(Protocol::Mptcp, name, "lia", vec![0, 1]);
    t.scheduler_params = params;
    cfg.transports.push(t);
    cfg.flows.push(sized(0, 0, 0, SIZE_BYTES));
    cfg
}

/// Runs `name` with `params`: a refusal names one of the parameters; a run delivers every byte.
fn check(name: &str, params: &Map<String, Value>) -> Result<(), String> {
    let cfg = scenario_with(name, Value::Object(params.clone()));
    match run(&cfg) {
        Err(e) => {
            if params.keys().any(|k| e.message.contains(k.as_str())) {
                Ok(())
            } else {
                Err(format!("{name} {params:?}: refused without naming the parameter: {e}"))
            }
        }
        Ok(rec) => {
            let delivered = u64s(&rec, "flows", "bytes_delivered")[0];
            let completed = bools(&rec, "flows", "completed")[0];
            // Every byte went out on some subflow (a subflow's own ACK may still be on its way
            // when a DATA_ACK on a faster one completes the flow) and reached the application
            // once, in order.
            let sent = u64s(&rec, "flows", "bytes_sent")[0];
            if completed && delivered == SIZE_BYTES && sent >= SIZE_BYTES {
                Ok(())
            } else {
                Err(format!(
                    "{name} {params:?}: accepted, but delivered {delivered} of {SIZE_BYTES} B \
                     (completed {completed}, sent {sent} B)"
                ))
            }
        }
    }
}

#[test]
fn every_scheduler_refuses_or_survives_each_extreme_parameter_alone() {
    let mut names: Vec<String> =
        registry::all().iter().filter(|i| !i.is_extension).map(|i| i.name.to_string()).collect();
    names.extend(["minrtt+rp".to_string(), "minrtt+bm".to_string()]);
    let mut failures = Vec::new();
    let mut runs = 0;
    for name in &names {
        for (key, default) in numeric_params(name) {
            for v in extremes(&key, &default) {
                let mut p = Map::new();
                p.insert(key.clone(), v);
                runs += 1;
                if let Err(e) = check(name, &p) {
                    failures.push(e);
                }
            }
        }
    }
    assert!(runs > 100, "only {runs} cases");
    assert!(failures.is_empty(), "{} of {runs} cases failed:\n{}", failures.len(), failures.join("\n"));
}

/// A composition and, for each of its numeric parameters, a choice: keep the default or one of
/// the extremes.
fn arb_case() -> impl Strategy<Value = (String, Map<String, Value>)> {
    prop::sample::select(registry::all_compositions())
        .prop_flat_map(|name| {
            let params = numeric_params(&name);
            let picks: Vec<_> = params
                .iter()
                .map(|(k, d)| {
                    let mut options = vec![None];
                    options.extend(extremes(k, d).into_iter().map(Some));
                    prop::sample::select(options)
                })
                .collect();
            (Just(name), Just(params), picks)
        })
        .prop_map(|(name, params, picks)| {
            let chosen = params.into_iter().zip(picks).filter_map(|((k, _), v)| v.map(|v| (k, v))).collect();
            (name, chosen)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn any_mix_of_extreme_parameters_is_refused_by_name_or_delivers_every_byte((name, params) in arb_case()) {
        prop_assert!(check(&name, &params).is_ok(), "{}", check(&name, &params).unwrap_err());
    }
}
