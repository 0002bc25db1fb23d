"""The simulator engine: the Rust core (`mpsched._core`), with Python schedulers from `mpsched.sched`."""

from __future__ import annotations

import json
from typing import Any, Callable

from mpsched import _core
from mpsched.engines.base import ConfigRefused, EngineError, EngineUnavailable, Tables
from mpsched.engines.refusal import find_non_finite, scenario_words
from mpsched import sched
from mpsched.sched import python_schedulers

__all__ = ["check", "check_config", "python_schedulers_of", "run"]


def check() -> None:
    """Raise `EngineUnavailable` unless the compiled core can run configurations."""
    if not hasattr(_core, "run_json"):
        raise EngineUnavailable(
            "the compiled simulator core in this installation has no run_json() yet; "
            "update the checkout and rebuild it with `make setup`"
        )


def python_schedulers_of(config: dict[str, Any]) -> dict[str, type]:
    """The Python scheduler classes a configuration names ("py:..."), from `mpsched.sched`."""
    try:
        return python_schedulers([t["scheduler"] for t in config.get("transports", [])])
    except KeyError as e:
        raise EngineError(str(e.args[0])) from None


def _json(config: dict[str, Any]) -> str:
    bad = find_non_finite(config)
    if bad is not None:
        raise ConfigRefused(bad, f"{scenario_words(bad, config)}: must be a finite number")
    return json.dumps(config)


def _refused(e: ValueError, config: dict[str, Any]) -> ConfigRefused:
    """The core's `ValueError("field: message")` in the scenario's words."""
    text = str(e)
    field, sep, message = text.partition(": ")
    if not sep or " " in field:
        return ConfigRefused("", text)
    return ConfigRefused(field, f"{scenario_words(field, config)}: {message}")


def check_config(config: dict[str, Any]) -> None:
    """Everything the core checks before it simulates (its `validate()`, then each connection's
    scheduler, congestion control and parameters), without simulating: the core runs the
    configuration for 1 ns. Raises `ConfigRefused` naming the field."""
    probe = dict(config, duration_ns=1)
    custom = python_schedulers_of(config)
    text = _json(probe)
    try:
        _core.run_json(text, custom) if custom else _core.run_json(text)
    except Exception as e:
        if custom and _raised_in_python(e):
            return  # the scheduler's own code failed, not the configuration: the run reports it
        if not isinstance(e, ValueError):
            raise
        raise _refused(e, config) from None


def _raised_in_python(e: BaseException) -> bool:
    """True when `e` was raised by Python code the core called (a Python scheduler), not made by
    the core itself (the core's errors carry no frame beyond this module)."""
    tb = e.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename != __file__:
            return True
        tb = tb.tb_next
    return False


def _scheduler_error(e: BaseException) -> str:
    """A Python scheduler's exception: its type, message and the line that raised it."""
    import traceback

    frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename != __file__]
    where = f" at {frames[-1].filename}:{frames[-1].lineno} ({frames[-1].name}: {frames[-1].line})" if frames else ""
    return f"the Python scheduler raised {type(e).__name__}: {e}{where}"


#: Told `(now_ns, duration_ns)` by the runs of this process given no `progress` of their own
#: (a study sets it to the clock its progress bar reads: `study.simclock`).
default_progress: Callable[[int, int], None] | None = None


def run(config: dict[str, Any], progress: Callable[[int, int], None] | None = None) -> Tables:
    """Run one normalized configuration in the core and return its record tables.
    `progress(now_ns, duration_ns)` (else `default_progress`) is told the simulated time as the
    run goes (the core calls it every few ten thousand events and at the end)."""
    progress = progress or default_progress
    custom = {k: sched.guarded(v) for k, v in python_schedulers_of(config).items()}
    text = _json(config)
    sched._RUNNING.append(1) if custom else None
    try:
        return _core.run_json(text, custom or None, progress)
    except KeyboardInterrupt:
        raise
    except sched.Stopped:
        raise KeyboardInterrupt from None
    except Exception as e:
        if custom and _raised_in_python(e):
            raise EngineError(_scheduler_error(e)) from None
        if isinstance(e, ValueError):  # the core refused the configuration
            r = _refused(e, config)
            raise ConfigRefused(r.field, f"the simulator refused the configuration: {r}") from None
        raise
    finally:
        if custom:
            sched._RUNNING.pop()
