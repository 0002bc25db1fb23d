"""What a user writes about the application: `[[workload]]` (`WorkloadSpec`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, StrictBool
from pydantic import model_validator

from mpsched.scenario.units import parse_size_bytes
from mpsched.scenario.fields import (
    SWEEP_OTHER, Count, FixedSize, FixedTime, Fraction, Name, PositiveTime, Rate, Size, Time, _count, _FieldError,
    _given, _Model, _sweepable,
)


#: Workload kinds that move data between the hosts of a `[topology]` (`mpsched.scenario.datacenter`).
DATACENTER_KINDS = ("query", "short_message", "background", "empirical", "permutation")


def _hz(v: Any) -> float:
    """A message rate in messages per second (positive; at most 1e9, one a nanosecond)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1e9:
        raise ValueError(f"rate_hz is a positive number of messages per second, e.g. 50, got {v!r}")
    return v


class WorkloadSpec(_Model):
    """What the application does.

    * ``kind = "sized"``: flows of `size` bytes (sweepable), or of each of `sizes` in turn within
      one run, `repeat` times, each on a fresh connection. Arrivals: ``"periodic"`` (a flow
      every `interval`; one flow needs none), ``"poisson"`` (exponential gaps with mean `mean_gap`, drawn from the
      run seed) or ``"back_to_back"`` (the next flow starts `gap` after the previous one ends;
      simulator only). With ``reuse_connection = true`` the transfers run one after another on
      one long-lived connection instead (back to back: each written once the previous one is
      acknowledged; periodic or poisson: each written at its arrival time); the flow record's
      `units` column counts them and the `blocks` table holds each transfer's times.
    * ``kind = "bulk"``: `count` flows sending without end from `start` until `stop` (default:
      the scenario duration).
    * ``kind = "web"``: page fetches as wget / curl do them, `repeat` times (periodic or poisson
      arrivals; one fetch needs no interval), each on a fresh connection: a request goes up, the
      object comes down, one object at a time. The page is a `page` preset (see
      `mpsched.scenario.pages.PAGES`: the four pages of the CFS paper's Table 5 and a median web
      page), a single file of `size`, or a list of `objects` sizes.
    * ``kind = "cbr"``: `count` constant-bit-rate flows of `rate` in blocks of `block` bytes
      (8 KiB by default) from `start` until `stop`; each block's application delay is recorded.
    * ``kind = "messages"``: `count` real-time message streams (a VoIP frame, game state): one
      message of `size` every `interval` (or `rate_hz` messages a second) from `start` until
      `stop` (default: the duration) or for `messages` messages; a message delivered more than
      `deadline` after it was sent misses it (the `blocks` table: `deadline_ns`,
      `deadline_missed`).
    * ``kind = "rpc"``: `count` request / response streams, each on one connection: `requests`
      requests of `request` bytes (300 B by default), written into the connection's
      client-to-server stream (segmented, scheduled, acknowledged and retransmitted like any
      data), each answered by `response` bytes down once it has arrived whole; open loop (one
      every `interval`, or `rate_hz` a second) or closed loop (`concurrency` outstanding, 1 by
      default: the next leaves when a response is complete); each request's latency (its write
      to the last byte of its response) is in `blocks`, with `deadline` as for messages.

    ``nodelay`` (any kind): whether the application sets ``TCP_NODELAY`` on its sockets (Nagle
    off). Without it, each kind does what the kernel engine's mpxfer does: rpc and messages set
    it, sized and bulk transfers leave Nagle on; the simulator-only cbr and web set it, and the
    data-center kinds (sized and endless flows) leave Nagle on. Both engines honour it.

    On a `[topology]` (see `mpsched.scenario.datacenter`): ``"query"`` (2-20 KB), ``"short_message"``
    (50 KB-1 MB) and ``"background"`` (1-50 MB) flows of `003_` §3.3 from `senders` to
    `receivers` with Poisson arrivals of mean `mean_gap` per receiver (``"background"`` without
    `mean_gap`: a `fraction` of the receivers each get one flow sending without end);
    ``"empirical"``: the same with sizes from `distribution` (``"dctcp"``, ``"vl2"``, ``"fb"``);
    ``"permutation"``: every host sends without end to one other host; ``"bulk"`` on a dumbbell:
    the `pairs` listed (default all) send without end through the bottleneck.
    `size_range = [low, high]` draws the sizes uniformly in that range instead of the class's
    (`003_` §5.2.1 runs its queries at 1-16 KB). ``pairing = "permutation"``: each of `senders`
    sends only to its partner in one permutation of all the hosts, shared by the run's
    workloads (Raiciu et al.'s one-to-one traffic matrix, `003_` §4.1): one workload's senders
    run the background, another's the short flows; the paired workloads' senders must not
    overlap.
    """

    kind: Literal["sized", "bulk", "web", "cbr", "messages", "rpc", "query", "short_message", "background", "empirical", "permutation"] = "sized"
    connection: Name | None = None
    direction: Literal["download", "upload"] = "download"
    size: Size | None = None
    sizes: list[FixedSize] | None = None
    repeat: Count = 1
    arrival: Literal["periodic", "poisson", "back_to_back"] = "periodic"
    interval: PositiveTime | None = None
    mean_gap: PositiveTime | None = None
    gap: Time | None = None
    start: FixedTime = 0
    stop: FixedTime | None = None
    count: Annotated[Any, BeforeValidator(_count)] = 1
    reuse_connection: bool = False
    page: Name | None = None
    objects: list[FixedSize] | None = None
    rate: Rate | None = None
    block: FixedSize | None = None
    distribution: Literal["dctcp", "vl2", "fb"] | None = None
    fraction: Fraction | None = None
    senders: list[Annotated[int, Field(ge=0)]] | None = None
    receivers: list[Annotated[int, Field(ge=0)]] | None = None
    pairs: list[Annotated[int, Field(ge=0)]] | None = None
    pairing: Literal["permutation"] | None = None
    size_range: list[FixedSize] | None = None
    rate_hz: Annotated[Any, BeforeValidator(_sweepable(_hz)), SWEEP_OTHER] | None = None
    deadline: PositiveTime | None = None
    messages: Annotated[Any, BeforeValidator(_count)] | None = None
    request: FixedSize | None = None
    response: Size | None = None
    requests: Annotated[Any, BeforeValidator(_count)] | None = None
    concurrency: Annotated[Any, BeforeValidator(_count)] | None = None
    nodelay: StrictBool | None = None

    @model_validator(mode="after")
    def _consistent(self) -> WorkloadSpec:
        if self.kind in DATACENTER_KINDS:
            return self._datacenter()
        for f in ("distribution", "fraction", "senders", "receivers", "pairing", "size_range") + (
                ("pairs",) if self.kind != "bulk" else ()):
            if getattr(self, f) is not None:
                raise _FieldError(f, f"a {self.kind} workload does not take this field (it belongs to the "
                                  f"data-center kinds: {', '.join(DATACENTER_KINDS)})")
        if self.kind == "messages":
            return self._messages()
        if self.kind == "rpc":
            return self._rpc()
        for f in ("rate_hz", "deadline", "messages", "request", "response", "requests", "concurrency"):
            if getattr(self, f) is not None:
                raise _FieldError(f, "only a messages or rpc workload takes this field")
        if self.kind in ("web", "cbr"):
            return self._web_or_cbr()
        for f in ("page", "objects", "rate", "block"):
            if getattr(self, f) is not None:
                raise _FieldError(f, f"only a {'web' if f in ('page', 'objects') else 'cbr'} workload takes this field")
        if self.reuse_connection and self.kind != "sized":
            raise _FieldError("reuse_connection", "only a sized workload runs its transfers on one connection")
        if self.reuse_connection and self.gap is not None:
            raise _FieldError("gap", "transfers on one connection follow each other without a gap")
        if self.kind == "sized":
            if (self.size is None) == (self.sizes is None):
                raise _FieldError("size", "a sized workload needs exactly one of size (sweepable) or sizes (a list within one run)")
            if self.sizes is not None and not self.sizes:
                raise _FieldError("sizes", "give at least one size")
            one_flow = self.repeat == 1 and (self.sizes is None or len(self.sizes) == 1)
            if self.arrival == "periodic" and self.interval is None and not one_flow:
                raise _FieldError("interval", "periodic arrivals of more than one flow need an interval, e.g. interval = \"2s\"")
            if self.arrival == "poisson" and self.mean_gap is None:
                raise _FieldError("mean_gap", "poisson arrivals need a mean_gap, e.g. mean_gap = \"500ms\"")
            if self.gap is not None and self.arrival != "back_to_back":
                raise _FieldError("gap", "gap is the pause between back-to-back flows; use interval or mean_gap here")
        else:
            for f in ("size", "sizes", "interval", "mean_gap", "gap"):
                if getattr(self, f) is not None:
                    hint = (" (a bulk workload writes until stop: for transfers of a given size use kind = \"sized\")"
                            if self.kind == "bulk" and f in ("size", "sizes") else "")
                    raise _FieldError(f, f"only a sized workload takes this field, not a {self.kind} one{hint}")
        return self

    def _datacenter(self) -> WorkloadSpec:
        """Flows between the hosts of a topology: Poisson arrivals per receiver, or without end."""
        allowed = {"kind", "connection", "start", "stop", "mean_gap", "senders", "receivers", "direction", "nodelay"}
        allowed |= {"empirical": {"distribution"}, "background": {"fraction"}}.get(self.kind, set())
        if self.kind in ("query", "short_message", "background"):
            allowed |= {"size", "size_range"}  # every flow of this size, or uniform in this range
        if self.kind != "permutation":
            allowed |= {"pairing"}
        if self.kind == "permutation":
            allowed -= {"mean_gap", "senders", "receivers"}
        for f in sorted(_given(self) - allowed, key=list(type(self).model_fields).index):
            raise _FieldError(f, f"a {self.kind} workload does not take this field; it takes "
                              f"{', '.join(sorted(allowed - {'kind'}))}")
        if self.direction != "download":
            raise _FieldError("direction", "data-center flows go from sender to receiver; choose them with senders / receivers")
        if self.kind == "empirical" and self.distribution is None:
            raise _FieldError("distribution", "an empirical workload needs a distribution: \"dctcp\" (web search), "
                              "\"vl2\" (data mining) or \"fb\"")
        if self.kind in ("query", "short_message", "empirical") and self.mean_gap is None:
            raise _FieldError("mean_gap", f"{self.kind} flows arrive as a Poisson process per receiver; give its "
                              "mean_gap, e.g. mean_gap = \"200ms\"")
        if self.kind == "background" and self.mean_gap is None and self.size is not None:
            raise _FieldError("size", "endless background flows have no size; give mean_gap for Poisson background "
                              "flows of this size")
        if self.kind == "background" and self.mean_gap is not None and self.fraction is not None:
            raise _FieldError("fraction", "background flows are either Poisson (mean_gap) or one endless flow to a "
                              "fraction of the receivers, not both")
        if self.size is not None and self.size_range is not None:
            raise _FieldError("size_range", "give either size (every flow) or size_range (uniform in [low, high]), not both")
        if self.size_range is not None:
            if self.kind == "background" and self.mean_gap is None:
                raise _FieldError("size_range", "endless background flows have no size; give mean_gap for Poisson "
                                  "background flows with sizes in this range")
            if len(self.size_range) != 2 or parse_size_bytes(self.size_range[0]) > parse_size_bytes(self.size_range[1]):
                raise _FieldError("size_range", "give [low, high] with low <= high, e.g. size_range = [\"1KB\", \"16KB\"]")
        if self.pairing is not None:
            # one fixed partner per sender (a permutation of every host, shared by the run's
            # workloads): Raiciu et al.'s one-to-one traffic matrix, as 003_ §4.1 runs it
            for f in ("receivers", "fraction"):
                if getattr(self, f) is not None:
                    raise _FieldError(f, "with pairing = \"permutation\" each sender sends to its one partner in the "
                                      "run's permutation of the hosts; leave out receivers and fraction")
            if self.senders is None:
                raise _FieldError("senders", "pairing = \"permutation\" needs the hosts that send this workload, "
                                  "e.g. senders = [0, 3, 6, 9, 12]")
        return self

    def _messages(self) -> WorkloadSpec:
        """Real-time messages: `size` every `interval` (or `rate_hz` a second) until `stop` or
        for `messages` messages, each with an optional `deadline`."""
        allowed = {"kind", "connection", "direction", "size", "interval", "rate_hz", "deadline", "messages", "start",
                   "stop", "count", "nodelay"}
        for f in sorted(_given(self) - allowed, key=list(type(self).model_fields).index):
            raise _FieldError(f, f"a messages workload does not take this field; it takes "
                              f"{', '.join(sorted(allowed - {'kind'}))}")
        if self.size is None:
            raise _FieldError("size", "a messages workload needs the size of one message, e.g. size = \"160B\"")
        if (self.interval is None) == (self.rate_hz is None):
            raise _FieldError("interval", "give exactly one of interval (e.g. \"20ms\") or rate_hz (e.g. 50)")
        if self.messages is not None and self.stop is not None:
            raise _FieldError("messages", "give either messages (how many) or stop (until when), not both")
        return self

    def _rpc(self) -> WorkloadSpec:
        """Requests and responses: `requests` of them, open loop (`interval` / `rate_hz`) or
        closed loop (`concurrency`)."""
        allowed = {"kind", "connection", "direction", "request", "response", "requests", "interval", "rate_hz",
                   "concurrency", "deadline", "start", "count", "nodelay"}
        for f in sorted(_given(self) - allowed, key=list(type(self).model_fields).index):
            raise _FieldError(f, f"an rpc workload does not take this field; it takes "
                              f"{', '.join(sorted(allowed - {'kind'}))}")
        if self.response is None:
            raise _FieldError("response", "an rpc workload needs the size of one response, e.g. response = \"4KB\"")
        if self.requests is None:
            raise _FieldError("requests", "an rpc workload needs how many requests it sends, e.g. requests = 1000")
        if self.interval is not None and self.rate_hz is not None:
            raise _FieldError("interval", "give at most one of interval (e.g. \"20ms\") or rate_hz (e.g. 50)")
        if self.concurrency is not None and (self.interval is not None or self.rate_hz is not None):
            raise _FieldError("concurrency", "concurrency is for a closed loop; an open loop (interval or rate_hz) "
                              "sends each request at its time")
        if self.direction != "download":
            raise _FieldError("direction", "an rpc is a download: requests go up, responses come down")
        return self

    def _web_or_cbr(self) -> WorkloadSpec:
        allowed = {"web": {"size", "interval", "mean_gap", "page", "objects"}, "cbr": {"rate", "block"}}[self.kind]
        for f in ("size", "sizes", "interval", "mean_gap", "gap", "page", "objects", "rate", "block"):
            if f not in allowed and getattr(self, f) is not None:
                raise _FieldError(f, f"a {self.kind} workload does not take this field")
        if self.reuse_connection:
            raise _FieldError("reuse_connection", "only a sized workload runs its transfers on one connection")
        if self.kind == "cbr":
            if self.rate is None:
                raise _FieldError("rate", "a cbr workload needs a rate, e.g. rate = \"4Mbit\"")
            return self
        given = [f for f in ("page", "size", "objects") if getattr(self, f) is not None]
        if len(given) != 1:
            raise _FieldError("page", "a web workload needs exactly one of page (a preset), size (one file) or objects (a list)")
        if self.objects is not None and not self.objects:
            raise _FieldError("objects", "give at least one object size")
        if self.page is not None:
            from mpsched.scenario.pages import PAGES

            if self.page not in PAGES:
                raise _FieldError("page", f"unknown page {self.page!r}; presets: {', '.join(PAGES)}")
        if self.direction != "download":
            raise _FieldError("direction", "a web page is a download")
        if self.arrival == "back_to_back":
            raise _FieldError("arrival", "web fetches arrive periodically or as a Poisson process")
        if self.arrival == "periodic" and self.interval is None and self.repeat != 1:
            raise _FieldError("interval", "periodic arrivals need an interval, e.g. interval = \"2s\"")
        if self.arrival == "poisson" and self.mean_gap is None:
            raise _FieldError("mean_gap", "poisson arrivals need a mean_gap, e.g. mean_gap = \"500ms\"")
        return self
