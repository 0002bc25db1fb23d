"""Human units in scenario files, parsed into the core's base units (bit/s, ns, bytes).

Conventions (also in scenarios/README.md, "Units"):

* Rates use SI decimal prefixes: ``"150Mbit"`` = ``"150Mbit/s"`` = ``"150Mbps"`` = 150e6 bit/s.
  Byte rates are written with a capital ``B``: ``"10MB/s"`` = 80e6 bit/s. The parser reads a bare
  number as bit/s, but a scenario refuses one (`mpsched.scenario.fields`): write the unit.
* Times: ``ns``, ``us``, ``ms``, ``s``, ``min``. A bare number is **seconds**.
* Sizes: ``B``; SI ``kB``/``KB`` = 1000 B, ``MB`` = 1e6 B, ``GB`` = 1e9 B; binary ``KiB`` = 1024 B,
  ``MiB``, ``GiB``. A bare number is bytes. (The CFS paper's "64 KB ... 1 MB" flows are powers of
  two, so the example scenario writes them as ``"64KiB"`` ... ``"1MiB"``.)
* Fractions: ``"10%"`` or a number in [0, 1].

Every parser raises ``ValueError`` with a message that says what was given and what is allowed;
the scenario model turns it into an error naming the field.
"""

from __future__ import annotations

import math
import re

__all__ = [
    "parse_rate_bps",
    "parse_time_ns",
    "parse_size_bytes",
    "parse_fraction",
    "parse_queue",
    "QueueLimit",
]

_NUMBER = r"(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)"
_UNIT_RE = re.compile(rf"^\s*{_NUMBER}\s*(?P<unit>[A-Za-z%/]*)\s*$")

_RATE_PREFIX = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_TIME_UNITS = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9, "sec": 1e9, "min": 60e9}
_SIZE_UNITS = {
    "B": 1,
    "byte": 1,
    "bytes": 1,
    "kB": 1000,
    "KB": 1000,
    "MB": 1000**2,
    "GB": 1000**3,
    "KiB": 1024,
    "MiB": 1024**2,
    "GiB": 1024**3,
}


def _split(value: object, what: str, example: str) -> tuple[float, str]:
    """Split `value` into (number, unit text); a bool or a non-finite number is refused."""
    if isinstance(value, bool):
        raise ValueError(f"expected {what} like {example}, got {value!r}")
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise ValueError(f"expected a finite number for {what}, got {value!r}")
        return float(value), ""
    if not isinstance(value, str):
        raise ValueError(f"expected {what} like {example}, got {value!r}")
    m = _UNIT_RE.match(value)
    if m is None:
        raise ValueError(f"expected {what} like {example}, got {value!r}")
    return float(m.group("num")), m.group("unit")


def _non_negative(x: float, value: object, what: str) -> None:
    if x < 0:
        raise ValueError(f"{what} must not be negative, got {value!r}")


#: Largest value in base units: the core stores u64, the result tables Int64.
MAX_BASE_UNITS = 2**63 - 1


def _to_int(x: float, value: object, what: str) -> int:
    """Round to base units, refusing what the core's integers cannot hold."""
    if not math.isfinite(x) or abs(x) > MAX_BASE_UNITS:
        raise ValueError(f"{what} {value!r} is too large")
    return round(x)


def parse_rate_bps(value: object) -> int:
    """A rate in bit/s: ``"150Mbit"``, ``"1.5 Gbit/s"``, ``"500kbps"``, ``"10MB/s"``, or a number."""
    x, unit = _split(value, "a rate", "'150Mbit' or '1.5Gbit/s'")
    m = re.fullmatch(r"(?P<p>[kKMGT]?)(?P<u>bit/s|bit|bps|b/s|B/s|Bps|byte/s)?", unit)
    if m is None or (unit and m.group("u") is None):
        raise ValueError(
            f"unknown rate unit {unit!r} in {value!r}; use bit/s with an SI prefix "
            "(e.g. '150Mbit', '150Mbit/s', '150Mbps') or bytes/s ('10MB/s')"
        )
    _non_negative(x, value, "a rate")
    scale = _RATE_PREFIX[m.group("p")]
    if m.group("u") in ("B/s", "Bps", "byte/s"):
        scale *= 8
    return _to_int(x * scale, value, "the rate")


def parse_time_ns(value: object) -> int:
    """A duration in ns: ``"200ms"``, ``"1.5s"``, ``"10us"``, ``"2min"``, or a number of seconds."""
    x, unit = _split(value, "a time", "'200ms' or '1.5s'")
    if unit == "":
        scale = 1e9  # a bare number is seconds
    elif unit in _TIME_UNITS:
        scale = _TIME_UNITS[unit]
    else:
        raise ValueError(
            f"unknown time unit {unit!r} in {value!r}; use one of ns, us, ms, s, min "
            "(a bare number is seconds)"
        )
    _non_negative(x, value, "a time")
    return _to_int(x * scale, value, "the time")


def parse_size_bytes(value: object) -> int:
    """A size in bytes: ``"64KiB"`` (65536), ``"64KB"`` (64000), ``"1.5MB"``, ``"1500B"``, or a number."""
    x, unit = _split(value, "a size", "'64KiB', '1.5MB' or '1500B'")
    if unit == "":
        scale = 1
    elif unit in _SIZE_UNITS:
        scale = _SIZE_UNITS[unit]
    else:
        raise ValueError(
            f"unknown size unit {unit!r} in {value!r}; use B, kB/KB/MB/GB (powers of 1000) "
            "or KiB/MiB/GiB (powers of 1024)"
        )
    _non_negative(x, value, "a size")
    return _to_int(x * scale, value, "the size")


def parse_fraction(value: object) -> float:
    """A probability: ``"10%"`` or a number in [0, 1]."""
    x, unit = _split(value, "a fraction", "'1%' or 0.01")
    if unit == "%":
        x /= 100.0
    elif unit != "":
        raise ValueError(f"expected a fraction like '1%' or 0.01, got {value!r}")
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"a fraction must lie in [0, 1] (0% to 100%), got {value!r}")
    return x


class QueueLimit:
    """A parsed drop-tail queue limit: exactly one of bytes, packets, BDP multiple, buffering time,
    or unlimited."""

    __slots__ = ("bytes", "packets", "bdp", "time_ns")

    def __init__(self, *, bytes: int | None = None, packets: int | None = None, bdp: float | None = None,
                 time_ns: int | None = None):
        self.bytes = bytes
        self.packets = packets
        self.bdp = bdp
        self.time_ns = time_ns

    @property
    def unlimited(self) -> bool:
        return self.bytes is None and self.packets is None and self.bdp is None and self.time_ns is None

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"QueueLimit(bytes={self.bytes}, packets={self.packets}, bdp={self.bdp}, time_ns={self.time_ns})"


_QUEUE_EXAMPLE = "'250KB', '100 packets', '1BDP', '50ms' or 'unlimited'"


def parse_queue(value: object) -> QueueLimit:
    """A queue limit: a size (``"250KB"``), packets (``"100 packets"``, ``"100pkt"``), a multiple of
    the path's bandwidth-delay product (``"1BDP"``, ``"0.5 bdp"``), buffering time at the link's
    rate (``"50ms"``: the bytes the link sends in 50 ms, as Paasch et al. give their buffers) or
    ``"unlimited"``."""
    if isinstance(value, str) and value.strip().lower() in ("unlimited", "inf", "none"):
        return QueueLimit()
    x, unit = _split(value, "a queue limit", _QUEUE_EXAMPLE)
    _non_negative(x, value, "a queue limit")
    low = unit.lower()
    if low in ("p", "pkt", "pkts", "packet", "packets"):
        if x != int(x) or x > MAX_BASE_UNITS:
            raise ValueError(f"a queue in packets must be a whole number (and not absurdly large), got {value!r}")
        if x == 0:
            raise ValueError(f"a queue of 0 packets holds nothing; the smallest is '1 packet' (or 'unlimited'), got {value!r}")
        return QueueLimit(packets=int(x))
    if low == "bdp":
        if x <= 0:
            raise ValueError(f"a queue in BDP must be positive, got {value!r}")
        return QueueLimit(bdp=x)
    if unit in _TIME_UNITS:
        return QueueLimit(time_ns=parse_time_ns(value))
    try:
        q = QueueLimit(bytes=parse_size_bytes(value))
    except ValueError:
        raise ValueError(f"expected a queue limit like {_QUEUE_EXAMPLE}, got {value!r}") from None
    if q.bytes == 0:
        raise ValueError(f"a queue of 0 bytes holds nothing; give a positive limit like {_QUEUE_EXAMPLE}, got {value!r}")
    return q
