//! PyO3 bindings: the `mpsched._core` extension module. Thin by design; the public API and its
//! documentation live in `python/mpsched`.

mod pysched;

// mimalloc (v2) rather than the system allocator: fewer bytes a flow at 100 000 flows and less CPU
// a packet (benches/RESULTS.md, Session 13 perf17x). Set here, in the program, not in the
// library crates, so their users keep their own choice.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use mpsched_sim::config::SimConfig;
use mpsched_sim::records::Column;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::sync::Mutex;

/// Version of the compiled core.
#[pyfunction]
fn core_version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// Runs one normalized configuration (JSON text) and returns its tables as
/// `{table: {column: list}}` plus a `_stats` entry. Releases the GIL while simulating.
///
/// `schedulers` maps scheduler names used in the config to Python classes (each with a
/// `schedule(view)` method); they take precedence over the built-in registry.
///
/// Raises `ValueError("field: message")` for a configuration the core refuses, and re-raises
/// the first exception a Python scheduler raised.
///
/// `progress(now_ns, duration_ns)`, when given, is called as the run goes (every
/// `PROGRESS_EVENTS` events and at the end) with the simulated time reached; an exception it
/// raises is re-raised after the run.
#[pyfunction]
#[pyo3(signature = (config_json, schedulers = None, progress = None))]
fn run_json<'py>(
    py: Python<'py>,
    config_json: &str,
    schedulers: Option<std::collections::BTreeMap<String, Py<PyAny>>>,
    progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let cfg: SimConfig =
        serde_json::from_str(config_json).map_err(|e| PyValueError::new_err(format!("config: {e}")))?;
    let factory = schedulers.filter(|s| !s.is_empty()).map(pysched::PyFactory::new);
    let progress = progress.map(|callback| PyProgress { callback, error: Mutex::new(None) });
    let records = py
        .allow_threads(|| {
            let custom = factory.as_ref().map(|f| f as &dyn mpsched_sim::run::CustomSchedulers);
            let progress = progress.as_ref().map(|p| p as &dyn mpsched_sim::run::Progress);
            mpsched_sim::run::run_with_progress(&cfg, custom, progress)
        })
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    if let Some(err) = factory.as_ref().and_then(|f| f.error.lock().ok().and_then(|mut e| e.take())) {
        return Err(err);
    }
    if let Some(err) = progress.and_then(|p| p.error.into_inner().ok().flatten()) {
        return Err(err);
    }
    let out = PyDict::new(py);
    for table in &records.tables {
        let cols = PyDict::new(py);
        for (name, col) in &table.columns {
            let list = match col {
                Column::U64(v) => PyList::new(py, v)?,
                Column::F64(v) => PyList::new(py, v)?,
                Column::Bool(v) => PyList::new(py, v)?,
                Column::Str(v) => PyList::new(py, v)?,
                Column::OptU64(v) => PyList::new(py, v)?,
            };
            cols.set_item(*name, list)?;
        }
        out.set_item(table.name, cols)?;
    }
    let stats = PyDict::new(py);
    stats.set_item("events", records.stats.events)?;
    stats.set_item("packets_sent", records.stats.packets_sent)?;
    stats.set_item("packet_hops", records.stats.packet_hops)?;
    stats.set_item("end_ns", records.stats.end_ns)?;
    out.set_item("_stats", stats)?;
    Ok(out)
}

/// A Python callable told the simulated time; the core calls it without the GIL held.
struct PyProgress {
    callback: Py<PyAny>,
    /// The first exception the callable raised (later calls are skipped).
    error: Mutex<Option<PyErr>>,
}

impl mpsched_sim::run::Progress for PyProgress {
    fn simulated(&self, now_ns: u64, duration_ns: u64) {
        let mut error = self.error.lock().unwrap_or_else(|p| p.into_inner());
        if error.is_none() {
            *error = Python::with_gil(|py| self.callback.call1(py, (now_ns, duration_ns)).err());
        }
    }
}

/// Builds a topology (`mpsched_sim::topology::TopologyRequest` as JSON: a FatTree with the
/// flows to route, or a dumbbell) and returns its links and paths as JSON.
///
/// Raises `ValueError` for a request the generator refuses.
#[pyfunction]
fn topology_json(request_json: &str) -> PyResult<String> {
    let req: mpsched_sim::topology::TopologyRequest =
        serde_json::from_str(request_json).map_err(|e| PyValueError::new_err(format!("topology: {e}")))?;
    let built = mpsched_sim::topology::build(&req).map_err(|e| PyValueError::new_err(format!("topology: {e}")))?;
    serde_json::to_string(&built).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The scheduler registry as JSON: `{"schedulers": [{name, summary, source, is_extension,
/// default_params}], "max_param_int", "max_param_ns"}` (the bounds the registry puts on numeric
/// parameters, so Python checks the same ones).
#[pyfunction]
fn schedulers_json() -> String {
    let items: Vec<serde_json::Value> = mpsched_proto::sched::registry::all()
        .into_iter()
        .map(|i| {
            serde_json::json!({
                "name": i.name,
                "summary": i.summary,
                "source": i.source,
                "is_extension": i.is_extension,
                "default_params": i.default_params,
            })
        })
        .collect();
    use mpsched_proto::sched::registry::{MAX_PARAM_INT, MAX_PARAM_NS};
    serde_json::json!({"schedulers": items, "max_param_int": MAX_PARAM_INT, "max_param_ns": MAX_PARAM_NS}).to_string()
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(core_version, m)?)?;
    m.add_function(wrap_pyfunction!(run_json, m)?)?;
    m.add_function(wrap_pyfunction!(schedulers_json, m)?)?;
    m.add_function(wrap_pyfunction!(topology_json, m)?)?;
    m.add_class::<pysched::PySubflowView>()?;
    m.add_class::<pysched::PyConnView>()?;
    Ok(())
}
