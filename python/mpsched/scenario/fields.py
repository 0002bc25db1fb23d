"""The value types of scenario fields: how a human value ("150Mbit", "200ms", a list for a sweep)
is checked, which fields sweep, and the error a bad value raises.

`mpsched.scenario` builds its models from these; a field's type says both its parser and whether
it sweeps (`_Sweepable` in its metadata, read by `mpsched.scenario.sweep`). Values stay as the user wrote
them; `mpsched.scenario.normalize` converts them to base units.
"""

from __future__ import annotations

import re

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict

from mpsched import registry
from mpsched.scenario.units import parse_fraction, parse_queue, parse_rate_bps, parse_size_bytes, parse_time_ns


class _Model(BaseModel):
    """Every table of a scenario: unknown fields refused, values frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def _given(m: BaseModel) -> set[str]:
    """Fields of `m` that differ from their defaults (what the user set: `model_fields_set`
    would also count defaults written back by a sweep's expansion)."""
    return {n for n, f in type(m).model_fields.items() if getattr(m, n) != f.get_default(call_default_factory=True)}


class ScenarioError(ValueError):
    """A scenario the front end refuses: `field` is the path of the offending field (may be
    empty for file-level problems), `message` says what is wrong and what is allowed."""

    def __init__(self, field: str, message: str, source: str | None = None,
                 more: list[tuple[str, str]] | None = None):
        self.field = field
        self.message = message
        self.source = source
        #: every problem found, the first one (`field`, `message`) included
        self.problems = [(field, message), *(more or [])]
        where = f"{source}: " if source else ""
        if len(self.problems) == 1:
            at = f"{field}: " if field else ""
            super().__init__(f"{where}{at}{message}")
        else:
            lines = "".join(f"\n  {f}: {m}" if f else f"\n  {m}" for f, m in self.problems)
            super().__init__(f"{where}{len(self.problems)} problems:{lines}")


class _FieldError(ValueError):
    """Raised inside model validators to point at a sub-field of the model being validated."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(message)


# --- value types -------------------------------------------------------------------------------


class _Sweepable:
    """Marker in a field's metadata: the field accepts a list, one run per element. `kind` says
    which parser reads it, so a space-filling design can draw values for it."""

    def __init__(self, kind: str):
        self.kind = kind


SWEEP_RATE, SWEEP_TIME, SWEEP_SIZE = _Sweepable("rate"), _Sweepable("time"), _Sweepable("size")
SWEEP_FRACTION, SWEEP_COUNT, SWEEP_OTHER = _Sweepable("fraction"), _Sweepable("count"), _Sweepable("other")
#: A queue limit: a design draws it as buffering time (`"0ms"` to `"100ms"`).
SWEEP_QUEUE = _Sweepable("queue")


def _checked(parser, *, positive: bool = False):
    """A before-validator that checks a human value with `parser` and keeps it as written."""

    def check(v: Any) -> Any:
        if isinstance(v, str):
            v = v.strip()
        x = parser(v)
        if positive and x <= 0:
            raise ValueError(f"must be positive, got {v!r}")
        return v

    return check


def _bare_number(v: Any) -> Any:
    """`v` as a user wrote it if it is a number without a unit (``10``, ``"1e3"``), else None."""
    if isinstance(v, str):
        return v.strip() if v.strip() and re.fullmatch(r"\s*[+-]?[0-9.eE+-]+\s*", v) else None
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return int(v) if float(v).is_integer() else v
    return None


def _rate_with_unit(parser):
    """A rate in a scenario must carry its unit: a bare ``10`` is more often a forgotten "Mbit"
    than a 10 bit/s link, so it is refused with the spellings that say what was meant."""

    def check(v: Any) -> Any:
        n = _bare_number(v)
        if n is not None:
            raise ValueError(f"{n} has no unit; write \"{n}bit\" for {n} bit/s, \"{n}Mbit\" for {n} Mbit/s "
                             f"(or kbit, Gbit; \"{n}MB/s\" in bytes per second)")
        return parser(v)

    return check


def _queue_with_unit(parser):
    """A path's queue must carry its unit: a bare ``100`` reads as bytes to the parser, but a
    `[topology]`'s ``queue = 100`` counts packets (and ns-2 / netem limits are packets), so on a
    path the number alone is refused with the spellings of both meanings."""

    def check(v: Any) -> Any:
        n = _bare_number(v)
        try:
            positive = n is not None and float(v) > 0
        except ValueError:  # "1.2.3": the parser names it
            positive = False
        if positive:  # 0 or below: the parser says why no unit helps
            packets = f"\"{n} packets\" for {n} packets (what a [topology]'s queue = {n} means) or " \
                if float(v).is_integer() else ""
            raise ValueError(f"{n} has no unit; write {packets}\"{n}B\" for {n} bytes (or a limit like \"1BDP\", "
                             f"\"50ms\", \"unlimited\")")
        return parser(v)

    return check


def _sweepable(check):
    """Accept a scalar, or a non-empty list of scalars each passing `check` (a sweep)."""

    def validate(v: Any) -> Any:
        if isinstance(v, list):
            if not v:
                raise ValueError("an empty list sweeps over nothing; give at least one value")
            out = []
            for i, item in enumerate(v):
                if isinstance(item, (list, dict)):
                    raise ValueError(f"item {i}: a sweep list holds plain values, got {item!r}")
                try:
                    out.append(check(item))
                except ValueError as e:
                    raise ValueError(f"item {i}: {e}") from None
            if len(set(map(repr, out))) != len(out):
                raise ValueError(f"a sweep list must not repeat a value, got {v!r}")
            return out
        return check(v)

    return validate


def _name(v: Any) -> str:
    if not isinstance(v, str) or not v.strip():
        raise ValueError(f"expected a non-empty name, got {v!r}")
    return v.strip()


def _seed(v: Any) -> int:
    """A seed: the result tables store it as a signed 64-bit integer, so below 2^63."""
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 2**63:
        raise ValueError(f"a seed is a whole number in [0, 2^63), got {v!r}")
    return v


def _slug(v: Any) -> str:
    """A scenario name: it names the results folder (results/<name>), so no path separators, no
    leading dot (nor '..'), no control characters."""
    v = _name(v)
    if "/" in v or "\\" in v or v.startswith(".") or any(ord(c) < 32 or ord(c) == 127 for c in v) or len(v) > 200:
        raise ValueError(f"a scenario name names its results folder (results/<name>): no '/' or '\\', no leading "
                         f"'.', no control characters, at most 200 characters; got {v!r}")
    return v


def _scheduler(v: Any) -> str:
    """A registry name ("minrtt", "minrtt+rp"), a Python scheduler class (registered and kept as
    its "py:<class>" name, see `mpsched.sched`), "package.module:Class" (imported, then the
    same), or such a name already registered."""
    from mpsched.sched import PREFIX, _REGISTRY, is_class_reference, is_scheduler_class, load_class, register

    if isinstance(v, type) or (not isinstance(v, str) and is_scheduler_class(v)):
        try:
            return register(v)
        except TypeError as e:
            raise ValueError(str(e)) from None
    v = _name(v)
    if is_class_reference(v):  # "package.module:Class": a Python scheduler named in a file
        return register(load_class(v))
    if v.startswith(PREFIX):
        if v not in _REGISTRY:
            raise ValueError(f"Python scheduler {v!r} is not defined in this process; pass the class itself "
                             "(or, in a file, name it as \"package.module:Class\")")
        return v
    registry.check_scheduler(v)
    return v


def _cc(v: Any) -> str:
    if v not in registry.CC_NAMES:
        raise ValueError(f"unknown congestion control {v!r}; available: {', '.join(registry.CC_NAMES)}")
    return v


def _protocol(v: Any) -> str:
    if v not in ("mptcp", "tcp"):
        raise ValueError(f"protocol is 'mptcp' or 'tcp', got {v!r}")
    return v


def _flag(v: Any) -> bool:
    if not isinstance(v, bool):
        raise ValueError(f"expected true or false, got {v!r}")
    return v


#: When the client opens its additional subflows: at the MP_CAPABLE SYN-ACK (the out-of-tree
#: kernel) or once the connection is fully established (upstream Linux).
JOIN_TIMINGS = ("oot", "fully_established")


def _join_timing(v: Any) -> str:
    if v not in JOIN_TIMINGS:
        raise ValueError(f"join_timing is 'oot' or 'fully_established', got {v!r}")
    return v


#: Where a link's loss, delay and jitter act (the core's `Impairments`): before the queue, as
#: the kernel engine's NFQUEUE delayer does, or after the transmitter (the core's default).
IMPAIRMENTS = ("before_queue", "after_queue")
#: How a link without a token bucket releases packets (the core's `Transmitter`): serialised, as
#: a wire, or as Linux htb (the kernel engine's shaper) sends them: at once while the class owes
#: no tokens, the packet's time charged after it left.
TRANSMITTERS = ("serialise", "htb")
#: The subflows' loss detection (the core's `LossRecoveryConfig`): Linux's RACK-TLP or RFC 6675.
LOSS_RECOVERIES = ("rack_tlp", "rfc6675")


def _impairments(v: Any) -> str:
    if v not in IMPAIRMENTS:
        raise ValueError(f"impairments is 'before_queue' or 'after_queue', got {v!r}")
    return v


def _transmitter(v: Any) -> str:
    if v not in TRANSMITTERS:
        raise ValueError(f"transmitter is 'serialise' or 'htb', got {v!r}")
    return v


def _loss_recovery(v: Any) -> str:
    if v not in LOSS_RECOVERIES:
        raise ValueError(f"loss_recovery is 'rack_tlp' (Linux's default) or 'rfc6675', got {v!r}")
    return v


#: A burst of "none": no token bucket (a serialising link), so a sweep can compare both.
NO_BURST = "none"


def _burst(v: Any) -> Any:
    if isinstance(v, str) and v.strip() == NO_BURST:
        return NO_BURST
    return _checked(parse_size_bytes, positive=True)(v)


def _fattree_k(v: Any) -> int:
    """A FatTree's k: even (k/2 hosts per edge switch, k/2 edge and k/2 aggregation switches per
    pod), from 2 to 64 like the core's generator (crates/mpsched-sim/src/topology.rs)."""
    if isinstance(v, bool) or not isinstance(v, int) or not 2 <= v <= 64 or v % 2:
        raise ValueError(f"k must be even, from 2 to 64 (k=4 is the 16-host tree), got {v!r}")
    return v


def _ratio(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 1 <= v <= 1000:
        raise ValueError(f"an oversubscription ratio is a number from 1 (full bisection bandwidth) to 1000, got {v!r}")
    return v


def _subflows(v: Any) -> int:
    """Subflows of an MPTCP connection on a topology: the core opens at most 32
    (MAX_SUBFLOWS in crates/mpsched-sim/src/validate.rs)."""
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 32:
        raise ValueError(f"subflows is a whole number from 1 to 32, got {v!r}")
    return v


#: Upper bound of counts (flows per workload entry, initial window): far above any real study,
#: low enough that a typo cannot exhaust memory while flows are laid out.
MAX_COUNT = 1_000_000


def _count(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_COUNT:
        raise ValueError(f"expected a whole number from 1 to {MAX_COUNT:,}, got {v!r}")
    return v


def _loss(v: Any) -> Any:
    """A loss probability ("1%", 0.01) or a model table {model = "gilbert_elliott", ...}."""
    if isinstance(v, dict):
        model = v.get("model")
        fields = {"bernoulli": ("p",), "gilbert_elliott": ("p_good_bad", "p_bad_good", "loss_good", "loss_bad")}
        if not isinstance(model, str) or model not in fields:
            raise ValueError(f"loss model must be 'bernoulli' or 'gilbert_elliott', got {model!r}")
        want = set(fields[model])
        got = set(v) - {"model"}
        if got - want:
            raise ValueError(f"unknown key(s) {', '.join(sorted(got - want))} for loss model {model!r}; allowed: {', '.join(fields[model])}")
        if want - got:
            raise ValueError(f"loss model {model!r} needs {', '.join(sorted(want - got))}")
        for k in fields[model]:
            try:
                parse_fraction(v[k])
            except ValueError as e:
                raise ValueError(f"{k}: {e}") from None
        return dict(v)
    return _sweepable(_checked(parse_fraction))(v)


Rate = Annotated[Any, BeforeValidator(_sweepable(_rate_with_unit(_checked(parse_rate_bps, positive=True)))), SWEEP_RATE]
Time = Annotated[Any, BeforeValidator(_sweepable(_checked(parse_time_ns))), SWEEP_TIME]
PositiveTime = Annotated[Any, BeforeValidator(_sweepable(_checked(parse_time_ns, positive=True))), SWEEP_TIME]
Size = Annotated[Any, BeforeValidator(_sweepable(_checked(parse_size_bytes, positive=True))), SWEEP_SIZE]
Queue = Annotated[Any, BeforeValidator(_sweepable(_queue_with_unit(_checked(parse_queue)))),
                  SWEEP_QUEUE]
Loss = Annotated[Any, BeforeValidator(_loss), SWEEP_FRACTION]
Seed = Annotated[Any, BeforeValidator(_sweepable(_seed)), SWEEP_OTHER]
SchedulerName = Annotated[Any, BeforeValidator(_sweepable(_scheduler)), SWEEP_OTHER]
CcName = Annotated[Any, BeforeValidator(_sweepable(_cc)), SWEEP_OTHER]
Count = Annotated[Any, BeforeValidator(_sweepable(_count)), SWEEP_COUNT]
# Not sweepable: a single value of the same kinds.
FixedTime = Annotated[Any, BeforeValidator(_checked(parse_time_ns))]
FixedPositiveTime = Annotated[Any, BeforeValidator(_checked(parse_time_ns, positive=True))]
FixedRate = Annotated[Any, BeforeValidator(_rate_with_unit(_checked(parse_rate_bps)))]
FixedSize = Annotated[Any, BeforeValidator(_checked(parse_size_bytes, positive=True))]
Name = Annotated[str, BeforeValidator(_name)]
Slug = Annotated[str, BeforeValidator(_slug)]
Protocol = Annotated[Any, BeforeValidator(_sweepable(_protocol)), SWEEP_OTHER]
Flag = Annotated[Any, BeforeValidator(_sweepable(_flag)), SWEEP_OTHER]
JoinTiming = Annotated[Any, BeforeValidator(_sweepable(_join_timing)), SWEEP_OTHER]
FatTreeK = Annotated[Any, BeforeValidator(_sweepable(_fattree_k)), SWEEP_OTHER]
Ratio = Annotated[Any, BeforeValidator(_sweepable(_ratio)), SWEEP_OTHER]
Burst = Annotated[Any, BeforeValidator(_sweepable(_burst)), SWEEP_OTHER]
Overhead = Annotated[Any, BeforeValidator(_sweepable(_checked(parse_size_bytes))), SWEEP_SIZE]
ImpairmentPlace = Annotated[Any, BeforeValidator(_sweepable(_impairments)), SWEEP_OTHER]
TransmitterKind = Annotated[Any, BeforeValidator(_sweepable(_transmitter)), SWEEP_OTHER]
LossRecovery = Annotated[Any, BeforeValidator(_sweepable(_loss_recovery)), SWEEP_OTHER]
Fraction = Annotated[Any, BeforeValidator(_sweepable(_checked(parse_fraction, positive=True))), SWEEP_FRACTION]
