"""One request's spans, read from its :class:`~proxy.api.state.RequestState` (the one writer
of a request's fate): a SERVER span from its start to its end, and a CLIENT span per upstream
attempt, in the GenAI semantic conventions (attribute names in :mod:`proxy.telemetry.names`).

- The SERVER span continues the client's W3C ``traceparent``/``tracestate``; it carries
  ``toolcall_guard.outcome`` (:meth:`RequestState.status`), ``toolcall_guard.record_id``, the
  status, ``error.type`` on an error, and one ``toolcall_guard.repair`` event per finding
  (``toolcall_guard.rule``, ``…path``, ``…action``): the policy's, learned strips', a retry's.
- A CLIENT span per attempt, named ``{gen_ai.operation.name} {gen_ai.request.model}``; the
  upstream gets a ``traceparent`` whose trace id is the client's and whose parent is that span
  (the client's own ``traceparent``/``tracestate`` are replaced, not sent twice). The last
  attempt's answer is read as it is relayed (:class:`~proxy.telemetry.answer.AnswerReader`).
  A request refused before anything was sent has none.
- ``gen_ai.conversation.id`` only when the client named its conversation
  (:func:`~proxy.telemetry.names.client_conversation`); ``toolcall_guard.conversation`` is the
  repair log's key (:func:`proxy.repairlog.conversation.conversation_key`), always.
- Content (``gen_ai.input.messages``, ``gen_ai.system_instructions``,
  ``gen_ai.output.messages`` of a JSON answer) only when :attr:`Tracing.content`, in the
  conventions' schema (the row's :attr:`~proxy.core.wire.Wire.genai`), with the request's keys
  scrubbed.

The request's spans go to the batch processor together when it ends
(:class:`~proxy.telemetry.record.Finished`); its metrics to
:class:`~proxy.telemetry.histograms.Histograms`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from operator import itemgetter
from time import perf_counter, time_ns
from typing import TYPE_CHECKING, Any

import orjson
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from proxy.core.forward import found_at
from proxy.core.wire import WIRES, Wire
from proxy.relay.base import RawHeaders
from proxy.repairlog.conversation import conversation_key
from proxy.telemetry.answer import AnswerReader
from proxy.telemetry.histograms import METRIC_KEYS
from proxy.telemetry.names import client_conversation
from proxy.telemetry.record import CLIENT, Finished, Pending, root

if TYPE_CHECKING:
    from proxy.api.attempt import Attempt
    from proxy.api.state import RequestState
    from proxy.telemetry.otel import Tracing

LOGGER = logging.getLogger("toolcall_guard")
PROPAGATOR = TraceContextTextMapPropagator()
_CONTEXT_HEADERS = frozenset((b"traceparent", b"tracestate"))
_NAME = itemgetter(0)  # a raw header's name


class RequestTrace:
    """The spans of one request (``state.trace`` while tracing is on)."""

    __slots__ = (
        "context_sent",
        "current",
        "ended",
        "generative",
        "reader",
        "recorded",
        "server",
        "tracing",
    )

    def __init__(self, tracing: Tracing, state: RequestState) -> None:
        self.tracing = tracing
        sent = None
        headers = state.scope["headers"]
        if not _CONTEXT_HEADERS.isdisjoint(map(_NAME, headers)):  # looked for in C: mostly not
            sent = {
                k.decode("latin-1"): v.decode("latin-1")
                for k, v in headers
                if k in _CONTEXT_HEADERS
            }
        #: Whether the client sent a trace context (its forwarded headers carry it, then).
        self.context_sent = sent is not None
        method, path = state.scope["method"], state.log.path
        self.server = root(
            tracing.sampler,
            PROPAGATOR.extract(sent) if sent else None,
            f"{method} {path}",
            {"http.request.method": method, "url.path": path},
            tracing.fresh,
        )
        #: The open attempt's span, its index in ``state.attempts`` (None: relayed unchecked),
        #: and when it started.
        self.current: tuple[Pending, int | None, float] | None = None
        self.generative = False  # whether the open attempt is a GenAI operation (metrics)
        self.reader: AnswerReader | None = None
        self.ended = Finished()  # its spans that ended, handed over together when it ends
        #: Whether anything is recorded: a request the sampler leaves out costs no attribute,
        #: unless the metrics (which count every request) need them.
        self.recorded = tracing.histograms is not None or self.server.sampled

    def attempt(
        self, state: RequestState, upstream: str, url: str, headers: RawHeaders
    ) -> RawHeaders:
        """An attempt goes out: its CLIENT span starts; the headers to send it with."""
        if self.current is not None:
            self._end_client(state, final=False)
        if not self.recorded:  # sampled out: the upstream still continues the trace
            return _continued(headers, self.server.child("", CLIENT, {}), self.context_sent)
        index = len(state.attempts) - 1 if state.attempts else None
        wire = WIRES.get(state.api) if state.api is not None else None
        model = state.log.model or ""
        name, attrs = self.tracing.client(upstream, url, wire, model, state.scope["method"])
        if wire is not None:
            conversation = client_conversation(state.data)
            if conversation is not None:
                attrs["gen_ai.conversation.id"] = conversation
            scope = (upstream, state.client)
            key = conversation_key(state.log.path, state.data, scope, wire)
            if key is not None:
                attrs["toolcall_guard.conversation"] = key
        self.generative = wire is not None
        span = self.server.child(name, CLIENT, attrs)
        if wire is not None and index is not None and self.tracing.content:
            span.attributes |= _content(state, wire, state.attempts[index].forwarded)
        self.current = (span, index, perf_counter())
        return _continued(headers, span, self.context_sent)

    def reading(self, sse: bool) -> Callable[[bytes], None] | None:
        """What to feed the answer the client gets, chunk by chunk as it is relayed (``sse``:
        a stream), to read its attributes; None: nothing to read."""
        if not self.recorded:
            return None
        self.reader = AnswerReader(sse)
        return self.reader.feed

    def end(self, state: RequestState) -> None:
        """The request is over: its spans end with what its state says. Never raises."""
        if not self.recorded:
            return
        try:
            self._end_client(state, final=True)
            self._end_server(state)
        except Exception:  # telemetry never fails a request
            LOGGER.warning("tracing failed for request %s", state.log.request_id, exc_info=True)

    def _end_server(self, state: RequestState) -> None:
        span, log = self.server, state.log
        found = span.attributes
        found["http.response.status_code"] = log.status
        if state.api is not None:
            found["toolcall_guard.outcome"] = state.status()
        if state.record_id is not None:
            found["toolcall_guard.record_id"] = state.record_id
        if state.ending is not None:
            found["toolcall_guard.ending"] = state.ending
        if log.upstream is not None:
            found["toolcall_guard.upstream"] = log.upstream
        if state.outcome is not None:
            for finding in state.outcome.findings:
                _repair(span, finding.as_dict())
        for extra in state.extra_findings:
            _repair(span, extra)
        error = log.error or (str(log.status) if log.status and log.status >= 400 else None)
        if error is not None:
            found["error.type"] = span.error = error
        if found["http.response.status_code"] is None:
            del found["http.response.status_code"]
        self._ended(span)
        self.tracing.emit(self.ended)

    def _ended(self, span: Pending) -> None:
        span.end = time_ns()
        if span.sampled:
            self.ended.append(span)

    def _end_client(self, state: RequestState, *, final: bool) -> None:
        if self.current is None:
            return
        span, index, started = self.current
        self.current = None
        attempt = state.attempts[index] if index is not None else None
        status = attempt.status if attempt is not None else state.log.status if final else None
        found = span.attributes
        if status is not None:
            found["http.response.status_code"] = status
        reader = self.reader if final else None
        if reader is not None:
            reader.close()
            self._answer(state, reader, found)
        error = _attempt_error(state, attempt, status)
        if error is not None:
            span.error = found["error.type"] = error
        self._ended(span)
        histograms = self.tracing.histograms
        if histograms is None or not self.generative:
            return
        kept = tuple(map(found.get, METRIC_KEYS))  # span attributes are never None
        tokens = (reader.input_tokens, reader.output_tokens) if reader else (None, None)
        histograms.measured(perf_counter() - started, kept, *tokens)

    def _answer(self, state: RequestState, reader: AnswerReader, found: dict[str, Any]) -> None:
        """What the answer said of itself, into ``found`` (what it did not say is left out)."""
        if reader.response_model is not None:
            found["gen_ai.response.model"] = reader.response_model
        if reader.response_id is not None:
            found["gen_ai.response.id"] = reader.response_id
        if reader.input_tokens is not None:
            found["gen_ai.usage.input_tokens"] = reader.input_tokens
        if reader.output_tokens is not None:
            found["gen_ai.usage.output_tokens"] = reader.output_tokens
        if reader.finish_reasons:
            found["gen_ai.response.finish_reasons"] = tuple(reader.finish_reasons)
        if reader.answer is None or not self.tracing.content or state.api is None:
            return
        wire = WIRES.get(state.api)
        converter = wire.genai if wire is not None else None
        if converter is not None:
            found["gen_ai.output.messages"] = _text(state, converter.output(reader.answer))


def _repair(span: Pending, finding: dict[str, Any]) -> None:
    span.event(
        "toolcall_guard.repair",
        {
            "toolcall_guard.rule": finding.get("rule", ""),
            "toolcall_guard.path": finding.get("path", ""),
            "toolcall_guard.action": finding.get("action", ""),
        },
    )


def _continued(headers: RawHeaders, span: Pending, replaced: bool) -> RawHeaders:
    """``headers`` with the trace context naming ``span`` as the parent (the client's own
    ``traceparent``/``tracestate``, when it sent them (``replaced``), replaced, not sent
    twice: the headers forwarded are the client's and the upstream's key)."""
    sent = [(k, v) for k, v in headers if k not in _CONTEXT_HEADERS] if replaced else [*headers]
    sent.append((b"traceparent", span.traceparent().encode()))
    if span.trace_state:
        sent.append((b"tracestate", span.trace_state.to_header().encode("latin-1")))
    return sent


def _attempt_error(state: RequestState, attempt: Attempt | None, status: int | None) -> str | None:
    """An attempt's ``error.type``: the catalogued refusal, the status, the stream's error."""
    if status is None:  # no answer: unreachable, timed out, cancelled
        return state.log.error or "_OTHER"
    if status >= 400:
        return (attempt.error_kind if attempt is not None else None) or str(status)
    if attempt is not None and attempt.error is not None:  # an error event mid-stream
        return attempt.error_kind or "stream_error"
    return None


def _content(state: RequestState, wire: Wire, body: Any) -> dict[str, str]:
    """The request's content in the conventions' schema (the row's
    :attr:`~proxy.core.wire.Wire.genai`)."""
    converter = wire.genai
    if converter is None or type(body) is not dict:
        return {}
    where = wire.location(body)
    holder = found_at(body, where[:-1]) if len(where) > 1 else body
    holder = holder if type(holder) is dict else {}
    items = holder.get(where[-1])
    items = [items] if type(items) is str else wire.items(body)  # Responses' string input
    found = {"gen_ai.input.messages": _text(state, converter.input(items))}
    system = [holder[k] for k in wire.system_keys if k in holder]
    if system:
        parts = [part for value in system for part in converter.system(value)]
        found["gen_ai.system_instructions"] = _text(state, parts)
    return found


def _text(state: RequestState, value: Any) -> str:
    """``value`` as JSON, without the keys the request carried."""
    return state.scrub(orjson.dumps(value, default=str).decode(), None)
