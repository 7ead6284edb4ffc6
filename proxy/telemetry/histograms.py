"""Speed trick, fenced: the GenAI client histograms aggregated here, exported through the SDK's
OTLP metric exporter.

A request records three measurements (its duration, its input and output tokens); through the
metrics SDK each costs a ``Measurement``, a context lookup, a view match, a frozen set of its
attributes and a lock, about 6 µs here, a third of what tracing may add to a small request
(issue 36). :class:`Histograms` keeps the same explicit-bucket histograms (cumulative, as the
OTLP exporter's default temporality asks) in a dict by attributes, all three updated under one
lock: each point's measurements are appended to its list and folded into it in C (``reduce``,
``sorted``, ``max``, ``bisect``: the same additions in the same order) every :data:`_FOLD`
measurements and before each export. It hands the SDK's ``MetricsData`` to its exporter every
``OTEL_METRIC_EXPORT_INTERVAL`` (60 s by default) from a thread of its own, and at shutdown.
Its plain twin is the SDK's ``MeterProvider``: ``tests/telemetry/test_histograms.py`` records
the same measurements into both and compares the points.
"""

from __future__ import annotations

import logging
import os
import threading
from bisect import bisect_right
from collections.abc import Mapping
from functools import partial, reduce
from operator import add, sub
from time import time_ns
from typing import Any

from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    Histogram,
    HistogramDataPoint,
    Metric,
    MetricExporter,
    MetricsData,
    ResourceMetrics,
    ScopeMetrics,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

LOGGER = logging.getLogger("toolcall_guard")

#: The conventions' bucket boundaries (gen-ai-metrics.md).
DURATION_BUCKETS: tuple[float, ...] = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64)
DURATION_BUCKETS += (1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
TOKEN_BUCKETS = tuple(4**n for n in range(14))  # 1, 4, 16 … 67108864
#: (name, unit, description, boundaries) of each histogram, by index.
METRICS = (
    ("gen_ai.client.operation.duration", "s", "GenAI operation duration.", DURATION_BUCKETS),
    (
        "gen_ai.client.token.usage",
        "{token}",
        "Number of input and output tokens used.",
        TOKEN_BUCKETS,
    ),
)
DURATION, TOKENS = 0, 1
_INPUT = frozenset({("gen_ai.token.type", "input")})
_OUTPUT = frozenset({("gen_ai.token.type", "output")})
Key = frozenset[tuple[str, Any]]  # a point's attributes, in any order (as the SDK keys them)
#: Points kept per histogram: the request and response models are the client's and the
#: upstream's to name, so distinct attribute sets are bounded; past the limit, measurements go
#: to one point marked ``otel.metric.overflow`` (the metrics SDK's specification, and its
#: default limit).
MAX_POINTS = 2000
OVERFLOW: Key = frozenset({("otel.metric.overflow", True)})
#: The attributes the metrics keep (the conventions' low-cardinality ones).
METRIC_KEYS = (
    "gen_ai.operation.name",
    "gen_ai.provider.name",
    "gen_ai.request.model",
    "gen_ai.response.model",
    "server.address",
    "server.port",
    "error.type",
)
#: Attribute orders remembered (:attr:`Histograms.found`), a few per point.
_FOUND_SIZE = 4 * MAX_POINTS
#: Measurements a point holds before they are folded into it.
_FOLD = 64


class _Point:
    """A histogram point, and the measurements (:attr:`waiting`) not yet folded into it."""

    __slots__ = ("boundaries", "buckets", "count", "high", "low", "total", "waiting")

    def __init__(self, boundaries: tuple[float, ...]) -> None:
        self.count, self.total, self.low, self.high = 0, 0.0, float("inf"), float("-inf")
        self.boundaries = boundaries
        self.buckets = [0] * (len(boundaries) + 1)
        self.waiting: list[float] = []

    def fold(self) -> None:
        """The waiting measurements added one after the other, in C: the same sum (the same
        float additions in the same order), bounds and counts as adding each in turn."""
        values, self.waiting = self.waiting, []
        if not values:
            return
        self.count += len(values)
        self.total = reduce(add, values, self.total)
        ordered = sorted(values)  # stable: the first of equal lows first, as min keeps it
        self.low = min(self.low, ordered[0])
        self.high = max(self.high, *values)  # as in turn: max keeps the first of equals
        # A measurement's bucket is the first whose boundary it does not pass (the SDK's
        # bisect_left): how many are at most each boundary, bisected in the sorted values,
        # less those at most the boundary before.
        upto = [*map(partial(bisect_right, ordered), self.boundaries), len(ordered)]
        self.buckets = [*map(add, self.buckets, [upto[0], *map(sub, upto[1:], upto)])]


class _Points:
    """The points one set of attributes adds to (its token points made when first used)."""

    __slots__ = ("duration", "input", "items", "output")

    def __init__(self, duration: _Point, items: tuple[tuple[str, Any], ...]) -> None:
        self.duration, self.items = duration, items
        self.input: _Point | None = None
        self.output: _Point | None = None


class Histograms:
    """The two histograms, their points by (histogram, attributes)."""

    def __init__(self, resource: Resource, scope: InstrumentationScope) -> None:
        self.resource, self.scope = resource, scope
        self.start = time_ns()
        self.points: dict[tuple[int, Key], _Point] = {}
        self.counts = [0] * len(METRICS)  # points per histogram
        self.lock = threading.Lock()
        #: Each histogram's point by the attributes as given, in their order (a tuple hashes
        #: faster than a frozenset is built).
        self.found: dict[tuple[tuple[str, Any], ...], _Points] = {}
        #: The same by the values of :data:`METRIC_KEYS` (:meth:`measured`).
        self.by_values: dict[tuple[Any, ...], _Points] = {}

    def request(
        self,
        duration: float,
        attributes: Mapping[str, Any],
        input_tokens: int | None,
        output_tokens: int | None,
    ) -> None:
        """One operation: its duration, and the tokens its answer said it used."""
        items = tuple(attributes.items())
        with self.lock:
            found = self.found.get(items)
            if found is None:
                found = self._remember(self.found, items, items)
            self._add(found, duration, input_tokens, output_tokens)

    def measured(
        self,
        duration: float,
        values: tuple[Any, ...],
        input_tokens: int | None,
        output_tokens: int | None,
    ) -> None:
        """:meth:`request` with the attributes given as the values of :data:`METRIC_KEYS`, in
        that order, None where absent (a span's, read in one call of C: ``map(found.get,
        METRIC_KEYS)``)."""
        with self.lock:
            found = self.by_values.get(values)
            if found is None:
                named = zip(METRIC_KEYS, values, strict=True)
                items = tuple((k, v) for k, v in named if v is not None)
                found = self._remember(self.by_values, values, items)
            self._add(found, duration, input_tokens, output_tokens)

    def _remember(
        self, table: dict[Any, _Points], key: Any, items: tuple[tuple[str, Any], ...]
    ) -> _Points:
        """The points of the attributes ``items``, kept in ``table`` under ``key``."""
        if len(table) >= _FOUND_SIZE:
            table.clear()
        found = table[key] = _Points(self._point(DURATION, frozenset(items)), items)
        return found

    def _add(
        self, found: _Points, duration: float, input_tokens: int | None, output_tokens: int | None
    ) -> None:
        waiting = found.duration.waiting
        waiting.append(duration)
        if len(waiting) >= _FOLD:
            found.duration.fold()
        if input_tokens is not None:
            if found.input is None:
                found.input = self._point(TOKENS, frozenset(found.items) | _INPUT)
            waiting = found.input.waiting
            waiting.append(input_tokens)
            if len(waiting) >= _FOLD:
                found.input.fold()
        if output_tokens is not None:
            if found.output is None:
                found.output = self._point(TOKENS, frozenset(found.items) | _OUTPUT)
            waiting = found.output.waiting
            waiting.append(output_tokens)
            if len(waiting) >= _FOLD:
                found.output.fold()

    def _point(self, which: int, key: Key) -> _Point:
        """The point of ``key`` in histogram ``which``, made when new (the overflow point past
        :data:`MAX_POINTS`)."""
        point = self.points.get((which, key))
        if point is None:
            if self.counts[which] >= MAX_POINTS - 1:  # one left for the overflow point
                key = OVERFLOW
                point = self.points.get((which, key))
            if point is None:
                point = self.points[which, key] = _Point(METRICS[which][3])
                self.counts[which] += 1
        return point

    def collect(self) -> MetricsData | None:
        """The points so far, as the SDK's exporters take them (None: nothing recorded)."""
        now = time_ns()
        with self.lock:
            found: list[list[HistogramDataPoint]] = [[] for _ in METRICS]
            for (which, key), p in self.points.items():
                p.fold()
                found[which].append(
                    HistogramDataPoint(
                        attributes=dict(key),
                        start_time_unix_nano=self.start,
                        time_unix_nano=now,
                        count=p.count,
                        sum=p.total,
                        bucket_counts=tuple(p.buckets),
                        explicit_bounds=METRICS[which][3],
                        min=p.low,
                        max=p.high,
                    )
                )
        metrics = [
            Metric(name, description, unit, Histogram(points, AggregationTemporality.CUMULATIVE))
            for (name, unit, description, _), points in zip(METRICS, found, strict=True)
            if points
        ]
        if not metrics:
            return None
        scope = ScopeMetrics(self.scope, metrics, self.scope.schema_url or "")
        return MetricsData([ResourceMetrics(self.resource, [scope], self.resource.schema_url)])


class Exporting:
    """:class:`Histograms` exported every interval by a thread of its own, then at shutdown."""

    def __init__(self, histograms: Histograms, exporter: MetricExporter) -> None:
        self.histograms, self.exporter = histograms, exporter
        interval = os.environ.get("OTEL_METRIC_EXPORT_INTERVAL", "").strip()
        self.interval = (float(interval) if interval else 60000.0) / 1000
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name="toolcall-guard-metrics", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stopped.wait(self.interval):
            self.export()

    def export(self) -> None:
        data = self.histograms.collect()
        if data is None:
            return
        try:
            self.exporter.export(data)
        except Exception:  # a collector's failure never stops the next export
            LOGGER.warning("OpenTelemetry metrics export failed", exc_info=True)

    def shutdown(self) -> None:
        self.stopped.set()
        self.thread.join(timeout=5)
        self.export()
        self.exporter.shutdown()
