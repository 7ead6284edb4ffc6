"""Speed trick, fenced: finished spans written straight to OTLP protobuf bytes.

The SDK's OTLP exporter builds a protobuf message per span, attribute and value
(``opentelemetry.exporter.otlp.proto.common.trace_encoder.encode_spans``): about 35 µs a span
here, more than the rest of a request's tracing together and over the 10 % a request may
spend on it (issue 36). :func:`encode` writes the same ``ExportTraceServiceRequest`` by hand,
field by field in field-number order as protobuf serialises it, with the bytes of each
attribute that repeats from request to request (its name and a short string or int value)
kept in a bounded table. Its plain twin is the SDK's encoder:
``tests/telemetry/test_otlp.py`` checks both give the same payload, decoded and byte for byte,
over generated spans.

:class:`SpanExporter` is the SDK's OTLP/HTTP exporter (its endpoint, headers, timeout,
compression, TLS and session from the same variables) whose ``export`` sends these bytes, with
its retry policy (408 and 5xx retried with jittered backoff until the timeout). It leans on the
exporter's ``_export(data, timeout_sec)``; where an SDK lacks it, :func:`span_exporter` hands
back the plain exporter.

Field numbers: opentelemetry-proto's ``trace/v1/trace.proto``, ``common/v1/common.proto``,
``resource/v1/resource.proto``, ``collector/trace/v1/trace_service.proto``.
"""

from __future__ import annotations

import inspect
import logging
import random
import struct
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import requests
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanKind

from proxy.telemetry.record import Pending

LOGGER = logging.getLogger("toolcall_guard")

_BYTE = [bytes((n,)) for n in range(128)]
_FIXED64 = struct.Struct("<Q").pack
_FIXED32 = struct.Struct("<I").pack
_DOUBLE = struct.Struct("<d").pack
#: Attributes whose bytes are kept, by (name, value), and the longest string value kept.
_TABLE_SIZE, _TABLE_VALUE = 4096, 128
_table: dict[tuple[str, Any], bytes] = {}
_KEYED = frozenset({str, int, tuple})


def _varint(n: int) -> bytes:
    if 0 <= n < 0x80:
        return _BYTE[n]
    if 0 < n < 0x4000:  # a span's or an attribute's length: two bytes
        return bytes((n & 0x7F | 0x80, n >> 7))
    n &= 0xFFFFFFFFFFFFFFFF  # int64 as protobuf writes it: two's complement, ten bytes
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited field: its tag, its length, its bytes."""
    return tag + _varint(len(payload)) + payload


def _str(tag: bytes, text: str | None) -> bytes:
    """A string field, left out when empty (proto3 does not write defaults)."""
    return _field(tag, text.encode()) if text else b""


def _value(value: Any) -> bytes:
    """An ``AnyValue``'s fields (the SDK's ``_encode_value`` rules, in its order)."""
    if value is None:
        return b""
    if isinstance(value, bool):
        return b"\x10\x01" if value else b"\x10\x00"
    for kind, encode in _SCALARS:
        if isinstance(value, kind):
            return encode(value)
    if isinstance(value, Sequence):
        return _field(b"\x2a", b"".join(_field(b"\x0a", _value(v)) for v in value))
    if isinstance(value, Mapping):
        pairs = b"".join(_field(b"\x0a", _pair(str(k), v)) for k, v in value.items())
        return _field(b"\x32", pairs)
    raise TypeError(f"Invalid type {type(value)} of value {value}")


def _int(value: int) -> bytes:
    if not -(1 << 63) <= value < 1 << 63:
        raise ValueError(f"{value} is out of int64 range")
    return b"\x18" + _varint(value)


#: ``AnyValue``'s scalar fields, in the order the SDK tests the types (after ``bool``).
_SCALARS: tuple[tuple[type, Callable[[Any], bytes]], ...] = (
    (str, lambda v: _field(b"\x0a", v.encode())),
    (int, _int),
    (float, lambda v: b"\x21" + _DOUBLE(v)),
    (bytes, lambda v: _field(b"\x3a", v)),
)


def _pair(key: str, value: Any) -> bytes:
    """A ``KeyValue``'s fields."""
    return _str(b"\x0a", key) + _field(b"\x12", _value(value))


def _attributes(tag: bytes, attributes: Mapping[str, Any] | None) -> bytes:
    """Each attribute as a ``KeyValue`` field ``tag``; one that cannot be encoded is left out
    and logged, as the SDK does."""
    out = []
    for key, value in (attributes or {}).items():
        try:
            out.append(_field(tag, _pair(key, value)))
        except (TypeError, ValueError):
            LOGGER.exception("Failed to encode key %s", key)
    return b"".join(out)


def _span_attributes(attributes: Mapping[str, Any]) -> bytes:
    """A span's attributes (field 9), looked up in the table at C speed when every value is
    of a type it keys exactly (``1``, ``1.0`` and ``True`` are equal keys, their bytes are
    not: only ``str``, ``int`` and tuples of ``str`` are kept, so only those are looked up)."""
    if not _KEYED.issuperset(map(type, attributes.values())):
        return _attributes(b"\x4a", attributes)
    try:  # a miss is a None the join refuses; a tuple holding something unhashable, a get
        return b"".join(map(_table.get, attributes.items()))  # type: ignore[arg-type]
    except TypeError:
        pass
    found: list[bytes] = []
    for item in attributes.items():
        try:
            kept = _table.get(item)
        except TypeError:
            kept = None
        found.append(_remember(item) if kept is None else kept)
    return b"".join(found)


def _remember(item: tuple[str, Any]) -> bytes:
    """An attribute's bytes, kept in the table when its value is short and exactly typed."""
    encoded = _attributes(b"\x4a", dict((item,)))
    value = item[1]
    kind = type(value)
    if kind is str:
        kept = len(value) <= _TABLE_VALUE
    else:
        kept = kind is int or all(type(v) is str for v in value)
    if kept:
        if len(_table) >= _TABLE_SIZE:
            _table.clear()
        _table[item] = encoded
    return encoded


def _span(span: Pending) -> bytes:
    """A ``Span`` field (its tag, its length, its fields)."""
    trace_id = span.trace_id
    found = _IDS(0x0A10, trace_id >> 64, trace_id & _LOW, 0x1208, span.span_id)
    if span.trace_state:
        found += _str(b"\x1a", ",".join(f"{k}={v}" for k, v in span.trace_state.items()))
    parent = span.parent_id
    if parent:
        found += _PARENT(0x2208, parent)
    if span.name:
        found += _names.get(span.name) or _name(span.name)
    kind = span.kind  # SpanKind hashes in Python: its two usual values are told by identity
    found += _SERVER if kind is _SERVER_KIND else _CLIENT if kind is _CLIENT_KIND else _KINDS[kind]
    start, end = span.start, span.end
    if start and end:
        found += _TIMES(0x39, start, 0x41, end)
    elif start or end:
        found += b"\x39" + _FIXED64(start) if start else b"\x41" + _FIXED64(end)
    found += _span_attributes(span.attributes)
    for name_, attributes, when in span.events:
        event = b"\x09" + _FIXED64(when) + _str(b"\x12", name_) + _attributes(b"\x1a", attributes)
        found += _field(b"\x5a", event)
    error = span.error
    if error:
        found += _field(b"\x7a", _str(b"\x12", error) + b"\x18\x02")
        found += _REMOTE if parent and span.remote_parent else _LOCAL
    else:
        found += _OK_REMOTE if parent and span.remote_parent else _OK_LOCAL
    size = len(found)
    if size < 0x4000:  # a span's length: two bytes at most, mostly
        return (_BYTE[size] if size < 0x80 else bytes((size & 0x7F | 0x80, size >> 7))).join(
            (b"\x12", found)
        )
    return b"\x12" + _varint(size) + found


def _name(name: str) -> bytes:
    """A span name's field, kept (names are an operation and a model, or a method and path)."""
    encoded = name.encode()
    field = b"\x2a" + _varint(len(encoded)) + encoded
    if len(name) <= _TABLE_VALUE:
        if len(_names) >= _TABLE_SIZE:
            _names.clear()
        _names[name] = field
    return field


_names: dict[str, bytes] = {}
#: The trace and span id fields (their tags, the ids big-endian), the parent id field, the
#: start and end time fields (tag, fixed64).
_IDS = struct.Struct(">HQQHQ").pack
_PARENT = struct.Struct(">HQ").pack
_TIMES = struct.Struct("<BQBQ").pack
_LOW = (1 << 64) - 1
#: ``Span.kind`` (the SDK's ``SpanKind`` value plus one), ``Span.flags`` (whether the
#: parent's remoteness is known; whether it is remote), and the empty status before them.
_KINDS = {kind: b"\x30" + _BYTE[kind.value + 1] for kind in SpanKind}
_SERVER_KIND, _CLIENT_KIND = SpanKind.SERVER, SpanKind.CLIENT
_SERVER, _CLIENT = _KINDS[SpanKind.SERVER], _KINDS[SpanKind.CLIENT]
_LOCAL, _REMOTE = b"\x85\x01" + _FIXED32(0x100), b"\x85\x01" + _FIXED32(0x300)
_OK_LOCAL, _OK_REMOTE = b"\x7a\x00" + _LOCAL, b"\x7a\x00" + _REMOTE


Start = tuple[bytes, bytes, bytes, bytes]


def head(resource: Resource, scope: InstrumentationScope) -> Start:
    """What every export of a process holds alike, written once: its ``Resource`` field and
    ``schema_url``, its scope's field and ``schema_url``."""
    scope_bytes = _str(b"\x0a", scope.name) + _str(b"\x12", scope.version)
    scope_bytes += _attributes(b"\x1a", scope.attributes)
    return (
        _field(b"\x0a", _attributes(b"\x0a", resource.attributes)),
        _str(b"\x1a", resource.schema_url),
        _field(b"\x0a", scope_bytes),
        _str(b"\x1a", scope.schema_url),
    )


def encode(spans: Sequence[Pending], start: Start) -> bytes:
    """The ``ExportTraceServiceRequest`` of ``spans``, serialised: one ``ResourceSpans`` and
    one ``ScopeSpans`` (``start``, from :func:`head`), as the SDK's encoder groups them."""
    resource, resource_schema, scope, scope_schema = start
    scope_spans = [scope, *map(_span, spans), scope_schema]
    inner = _field(b"\x12", b"".join(scope_spans))
    return _field(b"\x0a", resource + inner + resource_schema)


_MAX_TRIES = 6


class FastSpanExporter(OTLPSpanExporter):
    """The SDK's OTLP/HTTP span exporter, sending :func:`encode`'s bytes of requests'
    :class:`~proxy.telemetry.record.Finished` spans."""

    start: Start | None = None

    def begin(self, resource: Resource, scope: InstrumentationScope) -> None:
        """The resource and scope of every span it will be given."""
        self.start = head(resource, scope)

    def export(self, spans: Sequence[Any]) -> SpanExportResult:
        if self._shutdown or self.start is None:
            return SpanExportResult.FAILURE
        data = encode([s for finished in spans for s in finished], self.start)
        deadline = time.time() + self._timeout
        for attempt in range(_MAX_TRIES):
            backoff = 2**attempt * random.uniform(0.8, 1.2)
            try:
                response = self._export(data, deadline - time.time())
                if response.ok:
                    return SpanExportResult.SUCCESS
                reason: Any = response.status_code
                retryable = response.status_code == 408 or 500 <= response.status_code < 600
            except requests.exceptions.RequestException as error:
                reason, retryable = error, isinstance(error, requests.exceptions.ConnectionError)
            last = attempt + 1 == _MAX_TRIES or backoff > deadline - time.time()
            if not retryable or last or self._shutdown:
                LOGGER.error("Failed to export %d spans: %s", len(spans), reason)
                return SpanExportResult.FAILURE
            if self._shutdown_in_progress.wait(backoff):
                break
        return SpanExportResult.FAILURE


def fits() -> bool:
    """Whether the installed exporter has what :class:`FastSpanExporter` uses."""
    export = getattr(OTLPSpanExporter, "_export", None)
    if export is None:
        return False
    return "timeout_sec" in inspect.signature(export).parameters


def span_exporter() -> OTLPSpanExporter:
    """The OTLP/HTTP span exporter: :class:`FastSpanExporter`, or the SDK's own (its plain
    twin, fed ``ReadableSpan``) where the installed SDK lacks what it uses."""
    return FastSpanExporter() if fits() else OTLPSpanExporter()
