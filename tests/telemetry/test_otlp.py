"""The fenced speed tricks of tracing against their plain twins (issue 36): the hand-written
OTLP encoder (:mod:`proxy.telemetry.otlp`) against the SDK's ``encode_spans``, decoded and
byte for byte, over generated spans; the sampler decided without a call against the sampler
asked; the exporter's bytes reaching a collector."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")

from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    DEFAULT_OFF,
    DEFAULT_ON,
    Decision,
    ParentBased,
    TraceIdRatioBased,
)
from opentelemetry.trace import (
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    TraceFlags,
    TraceState,
    set_span_in_context,
)

from proxy.telemetry.otlp import FastSpanExporter, encode, fits, head
from proxy.telemetry.record import SCOPE, Finished, Pending, decided, root

RESOURCE = Resource.create({"service.name": "toolcall-guard", "deployment": "test"})
text = st.text(max_size=20)
scalar = st.one_of(
    st.none(),
    st.booleans(),
    text,
    st.text(min_size=129, max_size=200),  # longer than the table keeps
    st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1),
    st.floats(allow_nan=False),
)
value = st.one_of(scalar, st.lists(text, max_size=3).map(tuple), st.lists(st.integers(0, 9)))
attributes = st.dictionaries(st.sampled_from(["a", "b", "gen_ai.x", "ü", ""]) | text, value)
ids = st.integers(min_value=1, max_value=(1 << 64) - 1)


@st.composite
def fields(draw: st.DrawFn) -> dict[str, Any]:
    """What a span says (made in the test: a span draws its own id from ``random``)."""
    return {
        "name": draw(text),
        "kind": draw(st.sampled_from(list(SpanKind))),
        "trace_id": draw(st.integers(min_value=1, max_value=(1 << 128) - 1)),
        "parent_id": draw(st.just(0) | ids),
        "attributes": draw(attributes),
        "trace_state": draw(st.none() | st.just(TraceState([("vendor", "1"), ("b", "x-y")]))),
        "remote_parent": draw(st.booleans()),
        "span_id": draw(ids),
        "duration": draw(st.integers(0, 10**9)),
        "events": draw(st.lists(st.tuples(text, attributes, ids), max_size=3)),
        "error": draw(st.none() | text),
    }


def pending(found: dict[str, Any]) -> Pending:
    span = Pending(
        found["name"],
        found["kind"],
        found["trace_id"],
        found["parent_id"],
        found["attributes"],
        sampled=True,
        trace_state=found["trace_state"],
        remote_parent=found["remote_parent"],
    )
    span.span_id, span.end = found["span_id"], span.start + found["duration"]
    span.events, span.error = found["events"], found["error"]
    return span


@settings(max_examples=300, deadline=None)
@given(st.lists(fields(), min_size=1, max_size=4))
def test_the_encoder_writes_what_the_sdks_encoder_writes(drawn: list[dict[str, Any]]) -> None:
    spans = [pending(found) for found in drawn]
    ours = encode(spans, head(RESOURCE, SCOPE))
    plain = encode_spans([s.readable(RESOURCE) for s in spans])

    assert ExportTraceServiceRequest.FromString(ours) == plain
    assert ours == plain.SerializeToString(), drawn


def test_repeated_attributes_come_from_the_table_unchanged() -> None:
    span = Pending("chat m", SpanKind.CLIENT, 7, 9, {"server.port": 443, "x": "y"}, sampled=True)
    start = head(RESOURCE, SCOPE)
    first, again = encode([span], start), encode([span], start)
    assert first == again == encode_spans([span.readable(RESOURCE)]).SerializeToString()


@pytest.mark.parametrize("twin", [True, 1.0, ("1",), (1,)], ids=repr)
def test_a_value_equal_to_a_kept_one_keeps_its_own_type(twin: Any) -> None:
    """``1``, ``True`` and ``1.0`` are one key of a dict; their bytes differ."""
    start = head(RESOURCE, SCOPE)
    kept = Pending("a", SpanKind.CLIENT, 7, 9, {"n": 1, "t": ("1",)}, sampled=True)
    other = Pending("b", SpanKind.CLIENT, 7, 9, {"n": twin, "t": twin}, sampled=True)
    encode([kept], start)

    ours = encode([kept, other], start)

    spans = [kept.readable(RESOURCE), other.readable(RESOURCE)]
    assert ours == encode_spans(spans).SerializeToString()


def _remote(sampled: bool) -> Any:
    flags = TraceFlags(TraceFlags.SAMPLED if sampled else TraceFlags.DEFAULT)
    context = SpanContext(0xABC, 0xDEF, True, trace_flags=flags)
    return set_span_in_context(NonRecordingSpan(context))


@pytest.mark.parametrize(
    "sampler",
    [ALWAYS_ON, ALWAYS_OFF, DEFAULT_ON, DEFAULT_OFF, ParentBased(TraceIdRatioBased(0.5))],
    ids=["always_on", "always_off", "parentbased_on", "parentbased_off", "ratio"],
)
@pytest.mark.parametrize("parent", [None, True, False], ids=["new", "sampled", "not_sampled"])
def test_a_plain_sampler_is_decided_as_it_would_decide(sampler: Any, parent: bool | None) -> None:
    context = None if parent is None else _remote(parent)
    span = root(sampler, context, "POST /v1/chat/completions", {}, decided(sampler, None))
    if parent is None and isinstance(getattr(sampler, "_root", None), TraceIdRatioBased):
        assert decided(sampler, None) is None  # a new trace: the ratio is asked, not guessed
    asked = sampler.should_sample(context, span.trace_id, "POST", SpanKind.SERVER, {})
    assert span.sampled is (asked.decision is Decision.RECORD_AND_SAMPLE)
    if parent is not None:
        assert (span.trace_id, span.parent_id, span.remote_parent) == (0xABC, 0xDEF, True)


class _Collector(BaseHTTPRequestHandler):
    got: list[bytes]

    def do_POST(self) -> None:
        length = int(self.headers["content-length"])
        self.got.append(self.rfile.read(length))
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture
def collector() -> Iterator[tuple[str, list[bytes]]]:
    got: list[bytes] = []
    handler = type("Handler", (_Collector,), {"got": got})
    server = HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1/traces", got
    finally:
        server.shutdown()
        server.server_close()


def test_the_exporter_posts_the_encoded_spans(
    collector: tuple[str, list[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert fits()  # the installed SDK has what the fast exporter uses
    url, got = collector
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", url)
    exporter = FastSpanExporter()
    exporter.begin(RESOURCE, SCOPE)
    span = Pending("POST /v1/messages", SpanKind.SERVER, 5, 0, {"k": "v"}, sampled=True)

    assert exporter.export([Finished([span])]) is SpanExportResult.SUCCESS

    (body,) = got
    assert ExportTraceServiceRequest.FromString(body) == encode_spans([span.readable(RESOURCE)])
