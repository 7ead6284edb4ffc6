"""A span as plain data while its request runs, handed to the SDK's span processor whole when
it ends: the SDK's live ``Span`` (a lock, attribute cleaning, a sampler call per span) costs
more than the rest of a request's tracing together, and nothing here needs a live span (no
other code reads the current span; the proxy's attributes are of the types OTLP takes).

The sampler is asked once per request, for its SERVER span (``OTEL_TRACES_SAMPLER``: parent
based by default, so a client's sampled ``traceparent`` is honoured); its CLIENT spans follow
that decision, as a parent-based sampler would decide for them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from time import time_ns
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.sdk.trace.sampling import Decision, Sampler
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import (
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    get_current_span,
)

SCOPE = InstrumentationScope("toolcall_guard")
_IDS = RandomIdGenerator()
_SAMPLED, _NOT_SAMPLED = TraceFlags(TraceFlags.SAMPLED), TraceFlags(TraceFlags.DEFAULT)


@dataclass(slots=True)
class Pending:
    """A span being recorded: what it will say when it ends."""

    name: str
    kind: SpanKind
    context: SpanContext
    parent: SpanContext | None
    attributes: dict[str, Any]
    start: int = field(default_factory=time_ns)
    events: list[Event] = field(default_factory=list)
    error: str | None = None

    def event(self, name: str, attributes: dict[str, Any]) -> None:
        self.events.append(Event(name, attributes))

    def traceparent(self) -> str:
        """The W3C ``traceparent`` naming this span as the parent."""
        ctx = self.context
        return f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"

    def child(self, name: str, kind: SpanKind, attributes: dict[str, Any]) -> Pending:
        ctx = self.context
        own = SpanContext(
            ctx.trace_id,
            _IDS.generate_span_id(),
            False,
            trace_flags=ctx.trace_flags,
            trace_state=ctx.trace_state,
        )
        return Pending(name, kind, own, ctx, attributes)

    def finished(self, resource: Any) -> ReadableSpan:
        """The span as the processors take it, ended now."""
        status = Status(StatusCode.ERROR, self.error) if self.error else Status(StatusCode.UNSET)
        return ReadableSpan(
            self.name,
            context=self.context,
            parent=self.parent,
            resource=resource,
            attributes=self.attributes,
            events=self.events,
            kind=self.kind,
            status=status,
            start_time=self.start,
            end_time=time_ns(),
            instrumentation_scope=SCOPE,
        )


def root(
    sampler: Sampler, parent: Context | None, name: str, attributes: dict[str, Any]
) -> Pending:
    """A request's SERVER span: continuing ``parent`` (the client's context) when valid."""
    remote = get_current_span(parent).get_span_context() if parent is not None else None
    if remote is None or not remote.is_valid:
        remote = None
    trace_id = remote.trace_id if remote is not None else _IDS.generate_trace_id()
    decision = sampler.should_sample(parent, trace_id, name, SpanKind.SERVER, attributes)
    sampled = decision.decision in (Decision.RECORD_AND_SAMPLE,)
    flags = _SAMPLED if sampled else _NOT_SAMPLED
    span_id = _IDS.generate_span_id()
    own = SpanContext(trace_id, span_id, False, trace_flags=flags, trace_state=decision.trace_state)
    return Pending(name, SpanKind.SERVER, own, remote, attributes)
