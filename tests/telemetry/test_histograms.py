"""The fenced GenAI histograms (:mod:`proxy.telemetry.histograms`) against their plain twin,
the metrics SDK: the same measurements recorded into both give the same points (count, sum,
buckets, min, max, attributes), and they reach the exporter."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")

from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.metrics import AlwaysOffExemplarFilter, MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricsData
from opentelemetry.sdk.resources import Resource

from proxy.telemetry.histograms import METRIC_KEYS, METRICS, Exporting, Histograms
from proxy.telemetry.record import SCOPE
from tests.telemetry.conftest import Kept

RESOURCE = Resource.create({"service.name": "toolcall-guard"})
attributes = st.fixed_dictionaries(
    {"gen_ai.operation.name": st.just("chat"), "gen_ai.request.model": st.sampled_from("ab")},
    optional={"error.type": st.just("500")},
)
tokens = st.none() | st.integers(0, 1 << 27)
requests = st.lists(
    st.tuples(st.floats(0, 100, allow_nan=False), attributes, tokens, tokens), max_size=30
)


def points(data: MetricsData | None) -> dict[tuple[str, Any], tuple[Any, ...]]:
    found = {}
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                for p in metric.data.data_points:
                    key = (metric.name, frozenset((p.attributes or {}).items()))
                    bounds = tuple(p.explicit_bounds)
                    found[key] = (p.count, p.sum, tuple(p.bucket_counts), bounds, p.min, p.max)
    return found


def sdk_twin(recorded: list[Any]) -> MetricsData | None:
    reader = InMemoryMetricReader()
    provider = MeterProvider([reader], RESOURCE, exemplar_filter=AlwaysOffExemplarFilter())
    meter = provider.get_meter(SCOPE.name)
    duration, usage = (
        meter.create_histogram(n, unit=u, description=d, explicit_bucket_boundaries_advisory=b)
        for n, u, d, b in METRICS
    )
    for seconds, attrs, input_tokens, output_tokens in recorded:
        duration.record(seconds, attrs)
        for kind, count in (("input", input_tokens), ("output", output_tokens)):
            if count is not None:
                usage.record(count, {**attrs, "gen_ai.token.type": kind})
    return reader.get_metrics_data()


@settings(max_examples=200, deadline=None)
@given(requests)
def test_the_histograms_hold_what_the_sdk_would(recorded: list[Any]) -> None:
    ours = Histograms(RESOURCE, SCOPE)
    for request in recorded:
        ours.request(*request)

    assert points(ours.collect()) == points(sdk_twin(recorded))


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0, 100, allow_nan=False), attributes, tokens, tokens),
        min_size=150,
        max_size=300,
    )
)
def test_measurements_folded_in_batches_hold_what_the_sdk_would(recorded: list[Any]) -> None:
    """More measurements than a point holds before folding them: some are folded while
    recording, in C, the rest at export; the sums are the SDK's, to the last bit."""
    ours = Histograms(RESOURCE, SCOPE)
    for request in recorded:
        ours.request(*request)
    ours.collect()  # a first export folds what waits; the second adds nothing
    for request in recorded:
        ours.request(*request)

    assert points(ours.collect()) == points(sdk_twin(recorded + recorded))


@settings(max_examples=100, deadline=None)
@given(requests)
def test_attributes_given_by_their_values_hold_the_same_points(recorded: list[Any]) -> None:
    by_dict, by_values = Histograms(RESOURCE, SCOPE), Histograms(RESOURCE, SCOPE)
    for seconds, attrs, input_tokens, output_tokens in recorded:
        by_dict.request(seconds, attrs, input_tokens, output_tokens)
        values = tuple(map(attrs.get, METRIC_KEYS))
        by_values.measured(seconds, values, input_tokens, output_tokens)

    assert points(by_values.collect()) == points(by_dict.collect())


def test_the_points_reach_the_exporter_at_shutdown() -> None:
    histograms, kept = Histograms(RESOURCE, SCOPE), Kept()
    exporting = Exporting(histograms, kept)
    histograms.request(0.05, {"gen_ai.operation.name": "chat"}, 11, 3)

    exporting.shutdown()

    (data,) = kept.exported
    metric = data.resource_metrics[0].scope_metrics[0].metrics[0]
    assert metric.name == "gen_ai.client.operation.duration"
    assert metric.unit == "s"
    assert points(data) == points(sdk_twin([(0.05, {"gen_ai.operation.name": "chat"}, 11, 3)]))


def test_models_a_client_names_cannot_grow_the_points_without_bound() -> None:
    from proxy.telemetry.histograms import DURATION, MAX_POINTS, OVERFLOW

    histograms = Histograms(RESOURCE, SCOPE)
    for n in range(MAX_POINTS + 500):
        histograms.request(0.05, {"gen_ai.request.model": f"m{n}"}, None, None)
    histograms.collect()  # what waits is folded into the points

    kept = [key for which, key in histograms.points if which == DURATION]
    assert len(kept) == MAX_POINTS
    assert histograms.points[DURATION, OVERFLOW].count == 501  # none lost, none kept apart
    assert sum(p.count for (w, _), p in histograms.points.items() if w == DURATION) == 2500
