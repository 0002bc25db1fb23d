//! Name-keyed registry of schedulers: one line per scheduler.
//!
//! `build("minrtt+rp+bm", params)` builds the base scheduler and wraps it with each extension
//! named after a `+`, innermost first.
//!
//! Parameters are one flat JSON object shared by the base and its extensions. Each key belongs
//! to exactly one component (extension keys carry the extension's prefix, `rp_*`, `bm_*`);
//! a key no component of the composed name knows, or a value of the wrong type, is one error
//! naming the key and listing the valid ones.

use std::collections::BTreeSet;
use std::sync::{Mutex, OnceLock};

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

use super::common::{forward_events_to_inner, CheckConfig};
use super::{
    blest, bm, bwm, cfs, daps, ecf, freeze, linux, minrtt, otias, redundant, roundrobin, rp, sttf,
    Action, ConnView, LossKind, Rejection, Scheduler, SubflowId,
};

/// Error for an unknown scheduler name or bad parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildError(pub String);

impl std::fmt::Display for BuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for BuildError {}

/// Description of one registered scheduler or extension.
#[derive(Debug, Clone)]
pub struct SchedulerInfo {
    /// Name used in scenarios and results.
    pub name: &'static str,
    /// One-line description.
    pub summary: &'static str,
    /// Where the algorithm comes from (paper, kernel file).
    pub source: &'static str,
    /// True for wrappers (`+rp`, `+bm`) that modify another scheduler.
    pub is_extension: bool,
    /// Default parameters, as JSON.
    pub default_params: serde_json::Value,
}

type Params = Map<String, Value>;
type BaseFn = fn(&Params) -> Result<Box<dyn Scheduler>, String>;
type WrapFn = fn(Box<dyn Scheduler>, &Params) -> Result<Box<dyn Scheduler>, String>;

/// One registry line: name, summary, source, default parameters and constructor.
struct Entry {
    name: &'static str,
    summary: &'static str,
    source: &'static str,
    defaults: fn() -> Value,
    kind: Kind,
}

enum Kind {
    Base(BaseFn),
    Extension(WrapFn),
}

fn defaults_of<T: Serialize + Default>() -> Value {
    serde_json::to_value(T::default()).unwrap_or(Value::Object(Map::new()))
}

/// Largest value of a numeric scheduler parameter (segments, bytes, factors, milli-units):
/// parameters are multiplied with segment sizes, windows and times, and below this bound those
/// products stay far from `u64::MAX` (a `num_segments` of 2^62 wrapped to nothing sent).
pub const MAX_PARAM_INT: u64 = u32::MAX as u64;
/// Largest value of a parameter in nanoseconds (`*_ns`): 2^48 ns, about 78 hours.
pub const MAX_PARAM_NS: u64 = 1 << 48;

/// The bound of parameter `key`: [`MAX_PARAM_NS`] for `*_ns`, else [`MAX_PARAM_INT`].
pub fn param_bound(key: &str) -> u64 {
    if key.ends_with("_ns") {
        MAX_PARAM_NS
    } else {
        MAX_PARAM_INT
    }
}

/// Every number of a component's share finite, non-negative and within [`param_bound`]; the
/// error names the parameter.
fn check_bounds(p: &Params) -> Result<(), String> {
    for (k, v) in p {
        let Value::Number(n) = v else { continue };
        let top = param_bound(k);
        let ok = if let Some(u) = n.as_u64() {
            u <= top
        } else if n.as_i64().is_some() {
            false // a negative integer
        } else {
            n.as_f64()
                .is_some_and(|f| f.is_finite() && (0.0..=top as f64).contains(&f))
        };
        if !ok {
            return Err(format!(
                "parameter {k:?} must be a finite number in [0, {top}], got {n}"
            ));
        }
    }
    Ok(())
}

/// Deserializes a component's config from its share of the parameters and checks its ranges.
fn parse<T: DeserializeOwned + CheckConfig>(p: &Params) -> Result<T, String> {
    check_bounds(p)?;
    match serde_json::from_value::<T>(Value::Object(p.clone())) {
        Ok(c) => c.check().map(|()| c),
        Err(e) => {
            // Name the offending key: retry each key alone.
            for (k, v) in p {
                let mut one = Map::new();
                one.insert(k.clone(), v.clone());
                if let Err(e1) = serde_json::from_value::<T>(Value::Object(one)) {
                    return Err(format!("parameter {k:?}: {e1}"));
                }
            }
            Err(e.to_string())
        }
    }
}

/// The registry: one line per scheduler.
static ENTRIES: &[Entry] = &[
    Entry {
        name: "minrtt",
        summary: "lowest-sRTT-first, waits when every active subflow is cwnd-full (kernel default = minrtt+rp)",
        source: "OOT net/mptcp/mptcp_sched.c; Paasch et al. CSWS 2014",
        defaults: defaults_of::<minrtt::Config>,
        kind: Kind::Base(|p| Ok(Box::new(minrtt::MinRtt::new(parse(p)?)))),
    },
    Entry {
        name: "linux",
        summary: "upstream default: least linger time (queued / pacing rate), 64 KB bursts",
        source: "Linux net/mptcp/protocol.c mptcp_subflow_get_send / get_retrans",
        defaults: defaults_of::<linux::Config>,
        kind: Kind::Base(|p| Ok(Box::new(linux::Linux::new(parse(p)?)))),
    },
    Entry {
        name: "roundrobin",
        summary: "round-robin quotas of num_segments per subflow",
        source: "OOT net/mptcp/mptcp_rr.c",
        defaults: defaults_of::<roundrobin::Config>,
        kind: Kind::Base(|p| Ok(Box::new(roundrobin::RoundRobin::new(parse(p)?)))),
    },
    Entry {
        name: "redundant",
        summary: "every active subflow sends every unacknowledged byte once",
        source: "OOT net/mptcp/mptcp_redundant.c (v0.90+)",
        defaults: defaults_of::<redundant::Config>,
        kind: Kind::Base(|p| Ok(Box::new(redundant::Redundant::new(parse(p)?)))),
    },
    Entry {
        name: "ecf",
        summary: "earliest completion first: waits for the fast path if the slow one would finish later (kernel = ecf+rp)",
        source: "Lim et al. CoNEXT 2017; OOT net/mptcp/mptcp_ecf.c",
        defaults: defaults_of::<ecf::Config>,
        kind: Kind::Base(|p| Ok(Box::new(ecf::Ecf::new(parse(p)?)))),
    },
    Entry {
        name: "blest",
        summary: "blocking estimation: skips the slow path when it would block the send window (kernel = blest+rp)",
        source: "Ferlin et al. IFIP Networking 2016; OOT net/mptcp/mptcp_blest.c",
        defaults: defaults_of::<blest::Config>,
        kind: Kind::Base(|p| Ok(Box::new(blest::Blest::new(parse(p)?)))),
    },
    Entry {
        name: "daps",
        summary: "delay-aware plan over the LCM of one-way delays, queues beyond cwnd",
        source: "Kuhn et al. ICC 2014; KAU net/mptcp/mptcp_daps.c",
        defaults: defaults_of::<daps::Config>,
        kind: Kind::Base(|p| Ok(Box::new(daps::Daps::new(parse(p)?)))),
    },
    Entry {
        name: "otias",
        summary: "earliest estimated arrival, queueing beyond cwnd",
        source: "Yang et al. AINA-W 2014; KAU net/mptcp/mptcp_otias.c",
        defaults: defaults_of::<otias::Config>,
        kind: Kind::Base(|p| Ok(Box::new(otias::Otias::new(parse(p)?)))),
    },
    Entry {
        name: "sttf",
        summary: "shortest transfer time first (queue + cwnd growth + last RTT)",
        source: "Hurtig et al. ToN 2019; KAU net/mptcp/mptcp_sttf.c",
        defaults: defaults_of::<sttf::Config>,
        kind: Kind::Base(|p| Ok(Box::new(sttf::Sttf::new(parse(p)?)))),
    },
    Entry {
        name: "cfs",
        summary: "minRTT, and the flow tail duplicated on the fastest subflow",
        source: "Heo & Yoo, KSII TIIS 13(8), 2019",
        defaults: defaults_of::<cfs::Config>,
        kind: Kind::Base(|p| Ok(Box::new(cfs::Cfs::new(parse(p)?)))),
    },
    Entry {
        name: "bwm",
        summary: "per-round quotas from the bandwidth measured once per RTT",
        source: "Kim et al., JKIICE 21(8), 2017 (Fig. 4)",
        defaults: defaults_of::<bwm::Config>,
        kind: Kind::Base(|p| Ok(Box::new(bwm::Bwm::new(parse(p)?)))),
    },
    Entry {
        name: "freeze",
        summary: "minRTT that freezes a path whose sRTT exceeds the fastest by a threshold",
        source: "project definition (Freeze-TCP idea cited by Heo & Yoo 2019)",
        defaults: defaults_of::<freeze::Config>,
        kind: Kind::Base(|p| Ok(Box::new(freeze::Freeze::new(parse(p)?)))),
    },
    Entry {
        name: "rp",
        summary: "extension: opportunistic retransmission + penalisation on receive-window block",
        source: "Raiciu et al. NSDI 2012; OOT mptcp_sched.c mptcp_rcv_buf_optimization",
        defaults: defaults_of::<rp::Config>,
        kind: Kind::Extension(|inner, p| Ok(Box::new(rp::Rp::new(inner, parse(p)?)))),
    },
    Entry {
        name: "bm",
        summary: "extension: caps in-flight data of a subflow whose sRTT has bloated",
        source: "Ferlin et al. IWQoS 2014 (MPT-BM)",
        defaults: defaults_of::<bm::Config>,
        kind: Kind::Extension(|inner, p| Ok(Box::new(bm::Bm::new(inner, parse(p)?)))),
    },
];

/// All registered base schedulers and extensions.
pub fn all() -> Vec<SchedulerInfo> {
    ENTRIES
        .iter()
        .map(|e| SchedulerInfo {
            name: e.name,
            summary: e.summary,
            source: e.source,
            is_extension: matches!(e.kind, Kind::Extension(_)),
            default_params: (e.defaults)(),
        })
        .collect()
}

fn names(ext: bool) -> String {
    ENTRIES
        .iter()
        .filter(|e| matches!(e.kind, Kind::Extension(_)) == ext)
        .map(|e| e.name)
        .collect::<Vec<_>>()
        .join(", ")
}

fn find(name: &str) -> Option<&'static Entry> {
    ENTRIES.iter().find(|e| e.name == name)
}

/// Builds a scheduler from a name such as `"minrtt"` or `"minrtt+rp+bm"`.
///
/// `params` is a JSON object; keys are parameter names of the base scheduler or of an
/// extension (each scheduler reads its own and rejects unknown ones).
pub fn build(name: &str, params: &serde_json::Value) -> Result<Box<dyn Scheduler>, BuildError> {
    let mut parts = name.split('+');
    let base_name = parts.next().unwrap_or("");
    let base = find(base_name)
        .filter(|e| matches!(e.kind, Kind::Base(_)))
        .ok_or_else(|| {
            BuildError(format!(
                "unknown scheduler {base_name:?}; known: {}",
                names(false)
            ))
        })?;
    let mut chain: Vec<&'static Entry> = vec![base];
    for ext in parts {
        let e = find(ext)
            .filter(|e| matches!(e.kind, Kind::Extension(_)))
            .ok_or_else(|| {
                BuildError(format!(
                    "unknown extension {ext:?} in {name:?}; known: {}",
                    names(true)
                ))
            })?;
        if chain.iter().any(|c| c.name == e.name) {
            return Err(BuildError(format!(
                "extension {ext:?} appears twice in {name:?}"
            )));
        }
        chain.push(e);
    }
    let obj = match params {
        Value::Object(m) => m.clone(),
        Value::Null => Map::new(),
        other => {
            return Err(BuildError(format!(
                "scheduler parameters must be a JSON object, got {other}"
            )))
        }
    };
    // Split the flat object among the components; a key nobody owns is an error.
    let mut shares: Vec<Params> = vec![Map::new(); chain.len()];
    let owned: Vec<BTreeSet<String>> = chain
        .iter()
        .map(|e| match (e.defaults)() {
            Value::Object(m) => m.keys().cloned().collect(),
            _ => BTreeSet::new(),
        })
        .collect();
    for (k, v) in &obj {
        match owned.iter().position(|keys| keys.contains(k)) {
            Some(i) => {
                shares[i].insert(k.clone(), v.clone());
            }
            None => {
                let valid: Vec<&str> = owned.iter().flatten().map(String::as_str).collect();
                return Err(BuildError(format!(
                    "unknown parameter {k:?} for scheduler {name:?}; valid: {}",
                    if valid.is_empty() {
                        "(none)".to_string()
                    } else {
                        valid.join(", ")
                    }
                )));
            }
        }
    }
    let mut sched: Option<Box<dyn Scheduler>> = None;
    for (e, share) in chain.iter().zip(&shares) {
        let built = match (&e.kind, sched.take()) {
            (Kind::Base(f), None) => f(share),
            (Kind::Extension(f), Some(inner)) => f(inner, share),
            _ => unreachable!("chain is one base followed by extensions"),
        };
        sched = Some(built.map_err(|m| BuildError(format!("scheduler {:?}: {m}", e.name)))?);
    }
    let sched = sched.ok_or_else(|| BuildError("empty scheduler name".into()))?;
    if chain.len() == 1 {
        Ok(sched)
    } else {
        Ok(Box::new(Named {
            name: intern(name),
            inner: sched,
        }))
    }
}

/// Names of composed schedulers, leaked once each so `Scheduler::name` can stay `&'static`.
fn intern(name: &str) -> &'static str {
    static NAMES: OnceLock<Mutex<BTreeSet<&'static str>>> = OnceLock::new();
    let mut set = NAMES
        .get_or_init(|| Mutex::new(BTreeSet::new()))
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(n) = set.get(name) {
        return n;
    }
    let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
    set.insert(leaked);
    leaked
}

/// A composed scheduler reporting its full registry name (`"minrtt+rp"`).
#[derive(Debug)]
struct Named {
    name: &'static str,
    inner: Box<dyn Scheduler>,
}

impl Scheduler for Named {
    fn name(&self) -> &'static str {
        self.name
    }
    fn schedule(&mut self, view: &ConnView<'_>, out: &mut Vec<Action>) {
        self.inner.schedule(view, out)
    }
    forward_events_to_inner!();
    fn on_rejected(&mut self, action: Action, why: Rejection, now_ns: u64) {
        self.inner.on_rejected(action, why, now_ns)
    }
}

/// A boxed scheduler is a scheduler, so the generic wrappers (`Rp<S>`, `Bm<S>`) can wrap the
/// registry's output.
impl Scheduler for Box<dyn Scheduler> {
    fn name(&self) -> &'static str {
        (**self).name()
    }
    fn schedule(&mut self, view: &ConnView<'_>, out: &mut Vec<Action>) {
        (**self).schedule(view, out)
    }
    fn on_subflow_added(&mut self, id: SubflowId, now_ns: u64) {
        (**self).on_subflow_added(id, now_ns)
    }
    fn on_ack(&mut self, id: SubflowId, acked_bytes: u64, rtt_sample_ns: Option<u64>, now_ns: u64) {
        (**self).on_ack(id, acked_bytes, rtt_sample_ns, now_ns)
    }
    fn on_data_ack(&mut self, data_acked: u64, now_ns: u64) {
        (**self).on_data_ack(data_acked, now_ns)
    }
    fn on_loss(&mut self, id: SubflowId, kind: LossKind, now_ns: u64) {
        (**self).on_loss(id, kind, now_ns)
    }
    fn on_rejected(&mut self, action: Action, why: Rejection, now_ns: u64) {
        (**self).on_rejected(action, why, now_ns)
    }
    fn upstream_stale_detection(&self) -> bool {
        (**self).upstream_stale_detection()
    }
    fn on_send_buffer_fixed(&mut self, snd_buf_bytes: u64) {
        (**self).on_send_buffer_fixed(snd_buf_bytes)
    }
}

/// Every base scheduler with default parameters, plus every base composed with every
/// extension: the set the generic tests and the benchmark run over.
pub fn all_compositions() -> Vec<String> {
    let bases: Vec<&str> = ENTRIES
        .iter()
        .filter(|e| matches!(e.kind, Kind::Base(_)))
        .map(|e| e.name)
        .collect();
    let exts: Vec<&str> = ENTRIES
        .iter()
        .filter(|e| matches!(e.kind, Kind::Extension(_)))
        .map(|e| e.name)
        .collect();
    let mut out = Vec::new();
    for b in &bases {
        out.push((*b).to_string());
        for x in &exts {
            out.push(format!("{b}+{x}"));
        }
        if exts.len() > 1 {
            out.push(format!("{b}+{}", exts.join("+")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_registered_name_builds_with_defaults_and_reports_its_name() {
        for name in all_compositions() {
            let s = build(&name, &json!({})).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(s.name(), name);
        }
        assert!(all().len() >= 14);
    }

    #[test]
    fn defaults_round_trip_as_parameters() {
        for info in all() {
            if info.is_extension {
                let name = format!("minrtt+{}", info.name);
                build(&name, &info.default_params).unwrap_or_else(|e| panic!("{name}: {e}"));
            } else {
                build(info.name, &info.default_params)
                    .unwrap_or_else(|e| panic!("{}: {e}", info.name));
            }
        }
    }

    #[test]
    fn unknown_names_and_parameters_give_one_clear_error() {
        let e = build("nosuch", &json!({})).unwrap_err().0;
        assert!(e.contains("\"nosuch\"") && e.contains("minrtt"), "{e}");
        let e = build("minrtt+zz", &json!({})).unwrap_err().0;
        assert!(e.contains("\"zz\"") && e.contains("rp"), "{e}");
        let e = build("ecf+rp", &json!({"bogus": 1})).unwrap_err().0;
        assert!(
            e.contains("\"bogus\"") && e.contains("r_beta") && e.contains("rp_"),
            "{e}"
        );
        let e = build("ecf", &json!({"r_beta": "four"})).unwrap_err().0;
        assert!(e.contains("\"r_beta\""), "{e}");
        assert!(build("ecf", &json!([1])).is_err());
        assert!(build("minrtt+rp+rp", &json!({})).is_err());
        // Well-typed but out of range: a cap below the window for every subflow would stall.
        let e = build("minrtt+bm", &json!({"bm_lambda": 0.5}))
            .unwrap_err()
            .0;
        assert!(e.contains("bm_lambda"), "{e}");
        assert!(build("roundrobin", &json!({"num_segments": 0})).is_err());
    }

    #[test]
    fn numbers_beyond_the_bounds_are_refused_naming_the_parameter() {
        for (name, key, v) in [
            ("roundrobin", "num_segments", json!(1u64 << 62)),
            ("linux", "sndbuf_factor", json!(u64::MAX)),
            ("freeze", "probe_interval_ns", json!(MAX_PARAM_NS + 1)),
            ("minrtt+bm", "bm_lambda", json!(1e300)),
            ("ecf", "r_beta", json!(-1)),
        ] {
            let e = build(name, &json!({ key: v })).unwrap_err().0;
            assert!(
                e.contains(&format!("{key:?}")) && e.contains("[0, "),
                "{name}: {e}"
            );
        }
        // The bounds themselves are accepted.
        assert!(build("roundrobin", &json!({"num_segments": MAX_PARAM_INT})).is_ok());
        assert!(build(
            "freeze",
            &json!({"probe_interval_ns": MAX_PARAM_NS, "threshold_ns": MAX_PARAM_NS})
        )
        .is_ok());
    }

    #[test]
    fn parameters_reach_their_component() {
        // A key of the extension is accepted in a composed name, rejected on the bare base.
        assert!(build("minrtt+bm", &json!({"bm_lambda": 2.0})).is_ok());
        assert!(build("minrtt", &json!({"bm_lambda": 2.0})).is_err());
    }
}
