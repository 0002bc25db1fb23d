//! Schedulers written in Python: a class with a `schedule(view)` method, used where a scheduler
//! name goes. One instance per connection (so it may keep state); optional hooks `on_ack`,
//! `on_loss`, `on_subflow_added` are called when the class defines them.
//!
//! The view is the same as the Rust interface's (`mpsched_proto::sched::ConnView`), as frozen
//! Python objects; the actions come back as objects with a `kind` attribute ("new", "resend",
//! "penalize"; see `python/mpsched/sched.py`) or as plain tuples `("new", subflow, max_bytes)`,
//! `("resend", subflow, dsn, len[, why])`, `("penalize", subflow)`.
//!
//! An exception in Python stops that scheduler (it answers "wait" from then on) and is kept,
//! so the run raises it at the end instead of producing a silently wrong result.

use mpsched_proto::sched::{Action, ConnView, LossKind, ResendKind, Scheduler, SubflowId, SubflowView};
use mpsched_sim::run::CustomSchedulers;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Read-only snapshot of one subflow (`mpsched_proto::sched::SubflowView`).
#[pyclass(frozen, get_all, name = "SubflowView", module = "mpsched._core")]
pub struct PySubflowView {
    id: usize,
    path_index: usize,
    established: bool,
    backup: bool,
    potentially_failed: bool,
    in_loss_recovery: bool,
    in_fast_recovery: bool,
    has_rtt_sample: bool,
    srtt_ns: u64,
    rttvar_ns: u64,
    min_rtt_ns: u64,
    last_rtt_ns: u64,
    rto_ns: u64,
    mss_bytes: u64,
    cwnd_bytes: u64,
    ssthresh_bytes: u64,
    in_flight_bytes: u64,
    queued_bytes: u64,
    pacing_rate_bps: u64,
    bytes_acked: u64,
    bytes_sent: u64,
    bytes_retransmitted: u64,
    rto_count: u64,
    /// cwnd minus in-flight minus queued, bytes.
    free_cwnd_bytes: u64,
    /// Established and not potentially failed.
    usable: bool,
    /// Usable, not in RTO recovery, and with window room.
    available: bool,
}

impl From<&SubflowView> for PySubflowView {
    fn from(v: &SubflowView) -> Self {
        Self {
            id: v.id,
            path_index: v.path_index,
            established: v.established,
            backup: v.backup,
            potentially_failed: v.potentially_failed,
            in_loss_recovery: v.in_loss_recovery,
            in_fast_recovery: v.in_fast_recovery,
            has_rtt_sample: v.has_rtt_sample,
            srtt_ns: v.srtt_ns,
            rttvar_ns: v.rttvar_ns,
            min_rtt_ns: v.min_rtt_ns,
            last_rtt_ns: v.last_rtt_ns,
            rto_ns: v.rto_ns,
            mss_bytes: v.mss_bytes,
            cwnd_bytes: v.cwnd_bytes,
            ssthresh_bytes: v.ssthresh_bytes,
            in_flight_bytes: v.in_flight_bytes,
            queued_bytes: v.queued_bytes,
            pacing_rate_bps: v.pacing_rate_bps,
            bytes_acked: v.bytes_acked,
            bytes_sent: v.bytes_sent,
            bytes_retransmitted: v.bytes_retransmitted,
            rto_count: v.rto_count,
            free_cwnd_bytes: v.free_cwnd_bytes(),
            usable: v.usable(),
            available: v.available(),
        }
    }
}

/// Read-only snapshot of the connection (`mpsched_proto::sched::ConnView`). `unacked` and
/// `reinject_queue` are lists of `(dsn, len, sent_on_mask)`.
#[pyclass(frozen, get_all, name = "ConnView", module = "mpsched._core")]
pub struct PyConnView {
    now_ns: u64,
    subflows: Vec<Py<PySubflowView>>,
    unsent_bytes: u64,
    app_done: bool,
    next_dsn: u64,
    data_acked: u64,
    unacked: Vec<(u64, u64, u64)>,
    reinject_queue: Vec<(u64, u64, u64)>,
    peer_rwnd_bytes: u64,
    /// New bytes the receive window still allows beyond `next_dsn`.
    rwnd_room_bytes: u64,
}

/// The Python classes of one run, by the name the scenario uses for them.
pub struct PyFactory {
    classes: BTreeMap<String, Py<PyAny>>,
    /// The first exception any Python scheduler raised.
    pub error: Arc<Mutex<Option<PyErr>>>,
}

impl PyFactory {
    pub fn new(classes: BTreeMap<String, Py<PyAny>>) -> Self {
        Self { classes, error: Arc::new(Mutex::new(None)) }
    }
}

fn keep_first(slot: &Mutex<Option<PyErr>>, err: PyErr) {
    let mut slot = slot.lock().unwrap_or_else(|p| p.into_inner());
    if slot.is_none() {
        *slot = Some(err);
    }
}

impl CustomSchedulers for PyFactory {
    fn build(&self, name: &str) -> Option<Box<dyn Scheduler>> {
        let class = self.classes.get(name)?;
        // The registry's names are `&'static str`; a Python scheduler's name lives as long as
        // the process (there are a handful per study).
        let static_name: &'static str = Box::leak(name.to_string().into_boxed_str());
        Python::with_gil(|py| {
            let obj = match class.call0(py) {
                Ok(o) => Some(o),
                Err(e) => {
                    keep_first(&self.error, e);
                    None
                }
            };
            let has = |m: &str| obj.as_ref().is_some_and(|o| o.bind(py).hasattr(m).unwrap_or(false));
            let (on_ack, on_loss, on_added) = (has("on_ack"), has("on_loss"), has("on_subflow_added"));
            Some(Box::new(PyScheduler { name: static_name, obj, on_ack, on_loss, on_added, error: self.error.clone() })
                as Box<dyn Scheduler>)
        })
    }
}

/// One connection's Python scheduler.
struct PyScheduler {
    name: &'static str,
    /// `None` once it raised: it waits from then on.
    obj: Option<Py<PyAny>>,
    on_ack: bool,
    on_loss: bool,
    on_added: bool,
    error: Arc<Mutex<Option<PyErr>>>,
}

impl std::fmt::Debug for PyScheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PyScheduler({})", self.name)
    }
}

fn view_to_py(py: Python<'_>, v: &ConnView<'_>) -> PyResult<PyConnView> {
    let chunk = |c: &mpsched_proto::sched::UnackedChunk| (c.dsn, c.len, c.sent_on_mask);
    Ok(PyConnView {
        now_ns: v.now_ns,
        subflows: v.subflows.iter().map(|s| Py::new(py, PySubflowView::from(s))).collect::<PyResult<_>>()?,
        unsent_bytes: v.unsent_bytes,
        app_done: v.app_done,
        next_dsn: v.next_dsn,
        data_acked: v.data_acked,
        unacked: v.unacked.iter().map(chunk).collect(),
        reinject_queue: v.reinject_queue.iter().map(chunk).collect(),
        peer_rwnd_bytes: v.peer_rwnd_bytes,
        rwnd_room_bytes: v.rwnd_room_bytes(),
    })
}

/// Reads one action: an object with `kind` and named fields, or a tuple.
fn action_from_py(item: &Bound<'_, PyAny>) -> PyResult<Action> {
    let err = |m: String| pyo3::exceptions::PyValueError::new_err(m);
    if let Ok(t) = item.downcast::<PyTuple>() {
        if !item.hasattr("kind")? {
            let kind: String = t.get_item(0)?.extract()?;
            return match (kind.as_str(), t.len()) {
                ("new", 3) => Ok(Action::SendNew { subflow: t.get_item(1)?.extract()?, max_bytes: t.get_item(2)?.extract()? }),
                ("resend", 4 | 5) => Ok(Action::Resend {
                    subflow: t.get_item(1)?.extract()?,
                    dsn: t.get_item(2)?.extract()?,
                    len: t.get_item(3)?.extract()?,
                    kind: resend_kind(if t.len() == 5 { t.get_item(4)?.extract()? } else { "redundant".into() })?,
                }),
                ("penalize", 2) => Ok(Action::Penalize { subflow: t.get_item(1)?.extract()? }),
                _ => Err(err(format!(
                    "an action tuple is (\"new\", subflow, max_bytes), (\"resend\", subflow, dsn, len[, why]) or (\"penalize\", subflow); got {item}"
                ))),
            };
        }
    }
    let kind: String = item
        .getattr("kind")
        .map_err(|_| err(format!("not an action: {item} (use mpsched.SendNew, Resend or Penalize)")))?
        .extract()?;
    let sf = || -> PyResult<SubflowId> { item.getattr("subflow")?.extract() };
    match kind.as_str() {
        "new" => Ok(Action::SendNew { subflow: sf()?, max_bytes: item.getattr("max_bytes")?.extract()? }),
        "resend" => Ok(Action::Resend {
            subflow: sf()?,
            dsn: item.getattr("dsn")?.extract()?,
            len: item.getattr("len")?.extract()?,
            kind: resend_kind(item.getattr("why")?.extract()?)?,
        }),
        "penalize" => Ok(Action::Penalize { subflow: sf()? }),
        other => Err(err(format!("unknown action kind {other:?}; expected \"new\", \"resend\" or \"penalize\""))),
    }
}

fn resend_kind(why: String) -> PyResult<ResendKind> {
    match why.as_str() {
        "reinject" => Ok(ResendKind::Reinject),
        "opportunistic" => Ok(ResendKind::Opportunistic),
        "redundant" => Ok(ResendKind::Redundant),
        other => Err(pyo3::exceptions::PyValueError::new_err(format!(
            "unknown resend reason {other:?}; expected \"reinject\", \"opportunistic\" or \"redundant\""
        ))),
    }
}

impl PyScheduler {
    /// Runs `f` with the GIL on the live object; an exception disables the scheduler.
    fn call(&mut self, f: impl FnOnce(Python<'_>, &Bound<'_, PyAny>) -> PyResult<()>) {
        let Some(obj) = self.obj.as_ref() else { return };
        let failed = Python::with_gil(|py| f(py, obj.bind(py)).err());
        if let Some(e) = failed {
            keep_first(&self.error, e);
            self.obj = None;
        }
    }
}

impl Scheduler for PyScheduler {
    fn name(&self) -> &'static str {
        self.name
    }

    fn schedule(&mut self, view: &ConnView<'_>, out: &mut Vec<Action>) {
        self.call(|py, obj| {
            let v = Py::new(py, view_to_py(py, view)?)?;
            let result = obj.call_method1("schedule", (v,))?;
            if result.is_none() {
                return Ok(());
            }
            let list = result.downcast_into::<PyList>().map_err(|e| {
                pyo3::exceptions::PyTypeError::new_err(format!(
                    "schedule() must return a list of actions (or None), got {}",
                    e.into_inner()
                ))
            })?;
            for item in list.iter() {
                out.push(action_from_py(&item)?);
            }
            Ok(())
        });
    }

    fn on_subflow_added(&mut self, id: SubflowId, now_ns: u64) {
        if self.on_added {
            self.call(|_, obj| obj.call_method1("on_subflow_added", (id, now_ns)).map(drop));
        }
    }

    fn on_ack(&mut self, id: SubflowId, acked_bytes: u64, rtt_sample_ns: Option<u64>, now_ns: u64) {
        if self.on_ack {
            self.call(|_, obj| obj.call_method1("on_ack", (id, acked_bytes, rtt_sample_ns, now_ns)).map(drop));
        }
    }

    fn on_loss(&mut self, id: SubflowId, kind: LossKind, now_ns: u64) {
        if self.on_loss {
            let kind = match kind {
                LossKind::FastRetransmit => "fast_retransmit",
                LossKind::Timeout => "timeout",
            };
            self.call(|_, obj| obj.call_method1("on_loss", (id, kind, now_ns)).map(drop));
        }
    }
}
