"""A span as plain data, from its start to its export: the SDK's live ``Span`` (a lock,
attribute cleaning, a sampler call per span) and even its ``ReadableSpan`` and ``SpanContext``
cost more than the rest of a request's tracing, and nothing here needs them (no other code
reads the current span; the proxy's attributes are of the types OTLP takes).

A request's :class:`Pending` spans go to the SDK's batch processor together when it ends, as
one item (:class:`Finished`: its queue and batch sizes count requests); the OTLP/HTTP exporter
(:mod:`proxy.telemetry.otlp`) writes them as they are, and any other exporter (gRPC, the SDK's
in-memory one) gets them as ``ReadableSpan`` (:class:`Readable`), made on the exporter's
thread.

The sampler is asked once per request, for its SERVER span (``OTEL_TRACES_SAMPLER``: parent
based by default, so a client's sampled ``traceparent`` is honoured; that default is decided
here without the call, :func:`root`); its CLIENT spans follow that decision, as a parent-based
sampler would decide for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from random import getrandbits
from time import time_ns
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    Decision,
    ParentBased,
    Sampler,
)
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import (
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    TraceState,
    get_current_span,
)

SCOPE = InstrumentationScope("toolcall_guard")
#: A W3C ``traceparent``: version, trace id, parent id, flags (one format call, not three).
_TRACEPARENT = "00-%032x-%016x-%s"
SERVER, CLIENT = SpanKind.SERVER, SpanKind.CLIENT


class Pending:
    """A span being recorded: what it will say when it ends."""

    __slots__ = (
        "attributes",
        "end",
        "error",
        "events",
        "kind",
        "name",
        "parent_id",
        "remote_parent",
        "sampled",
        "span_id",
        "start",
        "trace_id",
        "trace_state",
    )

    def __init__(
        self,
        name: str,
        kind: SpanKind,
        trace_id: int,
        parent_id: int,
        attributes: dict[str, Any],
        *,
        sampled: bool,
        trace_state: TraceState | None = None,
        remote_parent: bool = False,
    ) -> None:
        self.name, self.kind, self.attributes = name, kind, attributes
        span_id = getrandbits(64) or _span_id()  # zero is the invalid id (one in 2**64)
        self.trace_id, self.span_id, self.parent_id = trace_id, span_id, parent_id
        self.sampled, self.trace_state, self.remote_parent = sampled, trace_state, remote_parent
        self.start, self.end = time_ns(), 0
        self.events: list[tuple[str, dict[str, Any], int]] = []
        self.error: str | None = None

    def event(self, name: str, attributes: dict[str, Any]) -> None:
        self.events.append((name, attributes, time_ns()))

    def traceparent(self) -> str:
        """The W3C ``traceparent`` naming this span as the parent."""
        return _TRACEPARENT % (self.trace_id, self.span_id, "01" if self.sampled else "00")

    def child(self, name: str, kind: SpanKind, attributes: dict[str, Any]) -> Pending:
        return Pending(
            name,
            kind,
            self.trace_id,
            self.span_id,
            attributes,
            sampled=self.sampled,
            trace_state=self.trace_state,
        )

    @property
    def context(self) -> SpanContext:
        """Its ``SpanContext`` (the batch processor reads whether it is sampled)."""
        flags = TraceFlags(TraceFlags.SAMPLED if self.sampled else TraceFlags.DEFAULT)
        return SpanContext(
            self.trace_id, self.span_id, False, trace_flags=flags, trace_state=self.trace_state
        )

    def readable(self, resource: Resource) -> ReadableSpan:
        """The span as the SDK's exporters take it."""
        parent = None
        if self.parent_id:
            flags = TraceFlags(TraceFlags.SAMPLED if self.sampled else TraceFlags.DEFAULT)
            parent = SpanContext(
                self.trace_id,
                self.parent_id,
                self.remote_parent,
                trace_flags=flags,
                trace_state=self.trace_state,
            )
        status = Status(StatusCode.ERROR, self.error) if self.error else Status(StatusCode.UNSET)
        return ReadableSpan(
            self.name,
            context=self.context,
            parent=parent,
            resource=resource,
            attributes=self.attributes,
            events=[Event(n, a, t) for n, a, t in self.events],
            kind=self.kind,
            status=status,
            start_time=self.start,
            end_time=self.end,
            instrumentation_scope=SCOPE,
        )


def _span_id() -> int:
    found = getrandbits(64)
    while not found:  # zero is the invalid id
        found = getrandbits(64)
    return found


def _trace_id() -> int:
    found = getrandbits(128)
    while not found:
        found = getrandbits(128)
    return found


def root(
    sampler: Sampler,
    parent: Context | None,
    name: str,
    attributes: dict[str, Any],
    fresh: bool | None = None,
) -> Pending:
    """A request's SERVER span: continuing ``parent`` (the client's context) when valid.
    ``fresh``: what ``sampler`` decides for a new trace, when known (``decided(sampler,
    None)``, worked out once)."""
    if parent is None and fresh is not None:  # a new trace, the sampler plain: mostly
        return Pending(name, SERVER, _trace_id(), 0, attributes, sampled=fresh)
    remote = get_current_span(parent).get_span_context() if parent is not None else None
    if remote is not None and not remote.is_valid:
        remote = None
    trace_id = remote.trace_id if remote is not None else _trace_id()
    sampled = fresh if remote is None and fresh is not None else decided(sampler, remote)
    trace_state = remote.trace_state if remote is not None else None
    if sampled is None:  # a sampler of the operator's: asked
        decision = sampler.should_sample(parent, trace_id, name, SERVER, attributes)
        sampled = decision.decision is Decision.RECORD_AND_SAMPLE
        trace_state = decision.trace_state
    return Pending(
        name,
        SERVER,
        trace_id,
        remote.span_id if remote is not None else 0,
        attributes,
        sampled=sampled,
        trace_state=trace_state or None,
        remote_parent=remote is not None,
    )


def decided(sampler: Sampler, remote: SpanContext | None) -> bool | None:
    """What a plain sampler decides, without asking it: ``always_on``, ``always_off``, and the
    parent-based ones with the default delegates (the parent's flag; the root sampler's for a
    new trace). None: ask the sampler."""
    if sampler is ALWAYS_ON or sampler is ALWAYS_OFF:
        return sampler is ALWAYS_ON
    if type(sampler) is not ParentBased:
        return None
    delegates = (
        sampler._remote_parent_sampled,
        sampler._remote_parent_not_sampled,
        sampler._local_parent_sampled,
        sampler._local_parent_not_sampled,
    )
    if delegates != (ALWAYS_ON, ALWAYS_OFF, ALWAYS_ON, ALWAYS_OFF):
        return None
    if remote is not None:
        return remote.trace_flags.sampled
    return decided(sampler._root, None)


_SAMPLED = SpanContext(1, 1, False, trace_flags=TraceFlags(TraceFlags.SAMPLED))


class Finished(list[Pending]):
    """A request's ended spans, sampled: one item of the batch processor's queue (which reads
    its ``context`` to tell a sampled span), one request's spans for the exporter."""

    context = _SAMPLED


class Readable(SpanExporter):
    """An exporter of the SDK's fed :class:`Finished` requests' spans as ``ReadableSpan``."""

    def __init__(self, exporter: SpanExporter, resource: Resource) -> None:
        self.exporter, self.resource = exporter, resource

    def export(self, spans: Sequence[Any]) -> SpanExportResult:
        return self.exporter.export([s.readable(self.resource) for f in spans for s in f])

    def shutdown(self) -> None:
        self.exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.exporter.force_flush(timeout_millis)
