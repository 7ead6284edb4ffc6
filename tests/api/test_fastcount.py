"""The fast metric updates (proxy.api.fastcount) against prometheus-client's own: same samples."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Counter, Histogram

from proxy.api.counters import Children
from proxy.api.fastcount import Increment, Observe
from proxy.metrics import _FAST, _SLOW

#: Durations: finite numbers (the bounds themselves included), never NaN.
BOUNDS = st.sampled_from([*_FAST, *_SLOW, 0.0, -0.0, -1.0])
AMOUNTS = st.floats(allow_nan=False, allow_infinity=False) | BOUNDS


def _samples(registry: CollectorRegistry) -> list[tuple[str, dict[str, str], float]]:
    return [
        (s.name, s.labels, s.value)
        for metric in registry.collect()
        for s in metric.samples
        if not s.name.endswith("_created")
    ]


def _pair(make: Any) -> tuple[Any, Any, CollectorRegistry, CollectorRegistry]:
    plain, fast = CollectorRegistry(), CollectorRegistry()
    return make(plain), make(fast), plain, fast


@pytest.mark.parametrize("buckets", [_FAST, _SLOW], ids=["fast", "slow"])
@given(amounts=st.lists(AMOUNTS, max_size=20))
def test_observe_is_the_librarys(buckets: tuple[float, ...], amounts: list[float]) -> None:
    plain, fast, a, b = _pair(lambda r: Histogram("h", "h", ["u"], buckets=buckets, registry=r))
    observed, child = Observe(fast.labels("x")), plain.labels("x")
    for amount in amounts:
        child.observe(amount)
        observed.observe(amount)
    assert _samples(b) == _samples(a)


@given(times=st.integers(0, 30))
def test_increment_is_the_librarys(times: int) -> None:
    plain, fast, a, b = _pair(lambda r: Counter("c", "c", ["u", "v"], registry=r))
    children = Children(fast, Increment)
    for _ in range(times):
        plain.labels("x", "y").inc()
        children("x", "y").inc()
    assert _samples(b) == _samples(a)


def test_unlabelled_histogram() -> None:
    plain, fast, a, b = _pair(lambda r: Histogram("h", "h", buckets=_FAST, registry=r))
    Observe(fast).observe(0.0003)
    plain.observe(0.0003)
    assert _samples(b) == _samples(a)
    assert [v for name, _, v in _samples(b) if name == "h_bucket"][:4] == [0, 0, 0, 1]
