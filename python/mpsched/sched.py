"""Schedulers written in Python.

A scheduler is a class with a ``schedule(view)`` method. The simulator makes one instance per
connection (so it may keep state in ``self``) and calls ``schedule`` whenever something may be
sent: data was written, an ACK arrived, a subflow became established, a timer fired. ``view``
is a read-only snapshot, the same as the Rust interface's (``crates/mpsched-proto/src/sched``):

* ``view.now_ns``, ``view.unsent_bytes`` (written, not yet on any subflow), ``view.app_done``
  (everything is written), ``view.next_dsn``, ``view.data_acked``, ``view.peer_rwnd_bytes``,
  ``view.rwnd_room_bytes``, ``view.unacked`` and ``view.reinject_queue`` (lists of
  ``(dsn, len, sent_on_mask)``);
* ``view.subflows``: one ``SubflowView`` per subflow with ``id``, ``established``, ``backup``,
  ``srtt_ns``, ``rttvar_ns``, ``min_rtt_ns``, ``cwnd_bytes``, ``in_flight_bytes``,
  ``queued_bytes``, ``free_cwnd_bytes``, ``usable``, ``available``, ``mss_bytes`` and more.

It returns a list of actions (an empty list or ``None`` means "wait"): ``SendNew(subflow,
max_bytes)`` hands new bytes to a subflow, ``Resend(subflow, dsn, len, why)`` sends a copy of
unacked data, ``Penalize(subflow)`` halves a subflow's window. The connection checks each
action, applies what it can, and calls ``schedule`` again while actions were applied; refused
actions are counted, never silently dropped. Optional hooks: ``on_ack(subflow, acked_bytes,
rtt_sample_ns, now_ns)``, ``on_loss(subflow, kind, now_ns)``, ``on_subflow_added(subflow,
now_ns)``.

Round-robin in a few lines (the built-in ``roundrobin`` does the same, see its tests)::

    class RoundRobin:
        def __init__(self):
            self.last = -1

        def schedule(self, view):
            n = len(view.subflows)
            for step in range(1, n + 1):
                sf = view.subflows[(self.last + step) % n]
                if sf.available and not sf.backup:
                    self.last = sf.id
                    return [SendNew(sf.id, min(sf.mss_bytes, sf.free_cwnd_bytes))]
            return []

Use the class where a scheduler name goes: ``ConnectionSpec(scheduler=RoundRobin)``, or a list
mixing names and classes. Python schedulers are slower than Rust ones (see
``benches/RESULTS.md``) but need no build; promote one to a Rust file in
``crates/mpsched-proto/src/sched/`` once it works.

This module sits at the bottom of the package (docs/architecture.md): the scenario checks a
scheduler class against it and the simulator engine (`mpsched.engines.sim`) calls the classes it
names, so it imports nothing of the package.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
import threading
from typing import NamedTuple

__all__ = ["SendNew", "Resend", "Penalize", "python_scheduler_name", "python_schedulers", "register",
           "load_class", "is_class_reference"]

#: Prefix of the names under which Python scheduler classes appear in configs and results.
PREFIX = "py:"

_REGISTRY: dict[str, type] = {}


class SendNew(NamedTuple):
    """Hand up to ``max_bytes`` new bytes to subflow ``subflow``."""

    subflow: int
    max_bytes: int
    kind: str = "new"


class Resend(NamedTuple):
    """Send again ``[dsn, dsn + len)`` on ``subflow``; ``why`` is "redundant", "reinject" or
    "opportunistic" (recorded in the results)."""

    subflow: int
    dsn: int
    len: int
    why: str = "redundant"
    kind: str = "resend"


class Penalize(NamedTuple):
    """Halve ``subflow``'s congestion window (at most once per its RTT)."""

    subflow: int
    kind: str = "penalize"


def is_scheduler_class(obj: object) -> bool:
    """True for a class (or other callable) whose instances have a ``schedule`` method."""
    return callable(obj) and callable(getattr(obj, "schedule", None))


def python_scheduler_name(cls: type) -> str:
    """The name a Python scheduler class gets in configs and results: ``py:<qualified name>``."""
    return PREFIX + getattr(cls, "__qualname__", getattr(cls, "__name__", repr(cls)))


def register(cls: type, name: str | None = None) -> str:
    """Registers a scheduler class and returns its name (idempotent; a different class under the
    same name replaces the old one, as re-running a notebook cell expects). `name`: the name it
    had where it was registered first (a class sent to a worker process by value may not keep
    its qualified name)."""
    if not is_scheduler_class(cls):
        raise TypeError(f"{cls!r} is not a scheduler: it needs a schedule(view) method")
    name = name or python_scheduler_name(cls)
    _REGISTRY[name] = cls
    return name


def python_schedulers(names: list[str]) -> dict[str, type]:
    """The registered classes among ``names`` (names without the ``py:`` prefix are skipped);
    raises a clear error for an unknown Python scheduler name."""
    out = {}
    for n in names:
        if n.startswith(PREFIX):
            if n not in _REGISTRY:
                raise KeyError(f"Python scheduler {n!r} is not registered in this process; pass the class itself")
            out[n] = _REGISTRY[n]
    return out


_REFERENCE = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


def is_class_reference(name: str) -> bool:
    """Whether ``name`` reads ``"package.module:Class"`` (a Python scheduler named in a file)."""
    return not name.startswith(PREFIX) and _REFERENCE.fullmatch(name) is not None


def load_class(reference: str) -> type:
    """Import ``"package.module:Class"`` (the module importable from the current directory or
    ``PYTHONPATH``) and return the class; `ValueError` saying what is missing otherwise."""
    module_name, _, attr = reference.partition(":")
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.append(cwd)  # as `python -m` would: a scheduler next to the scenario is found
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        raise ValueError(f"cannot import module {module_name!r} for scheduler {reference!r} ({e}); put it in the "
                         f"current directory or on PYTHONPATH") from None
    except Exception as e:  # the user's module failed while importing
        raise ValueError(f"importing {module_name!r} for scheduler {reference!r} failed: {type(e).__name__}: {e}") from None
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            found = sorted(n for n, v in vars(module).items() if isinstance(v, type) and is_scheduler_class(v))
            hint = f"; scheduler classes there: {', '.join(found)}" if found else ""
            raise ValueError(f"module {module_name!r} has no {attr!r}{hint}")
        obj = getattr(obj, part)
    if not is_scheduler_class(obj):
        raise ValueError(f"{reference!r} is not a scheduler: it needs a schedule(view) method")
    return obj


# --- stopping Python schedulers when a study is interrupted ---------------------------------------

#: Set when a study is interrupted: every call into a guarded Python scheduler then raises
#: `Stopped` at once, so the core disables the scheduler (an exception does) and the abandoned
#: run's thread runs no more Python code.
STOP = threading.Event()
_RUNNING: list[int] = []


class Stopped(Exception):
    """Raised inside a Python scheduler's calls after the study was interrupted."""


def guarded(cls: type) -> type:
    """A subclass of scheduler class `cls` whose methods raise `Stopped` once `STOP` is set."""
    ns: dict = {}
    for m in ("schedule", "on_ack", "on_loss", "on_subflow_added"):
        if callable(getattr(cls, m, None)):
            def call(self, *args, _m=m):
                if STOP.is_set():
                    raise Stopped("the study was interrupted")
                return getattr(super(sub, self), _m)(*args)
            ns[m] = call
    sub = type(cls.__name__, (cls,), ns)
    return sub


def python_running() -> bool:
    """True while a run with Python schedulers is inside the core."""
    return bool(_RUNNING)
