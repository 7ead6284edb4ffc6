"""The endpoint's metric children, looked up once per label set (``.labels()`` takes a lock),
updated the fast way (:mod:`proxy.api.fastcount`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from proxy import metrics
from proxy.api.fastcount import Increment, Observe

T = TypeVar("T", Increment, Observe)


class Children(Generic[T]):
    """Cached labelled children of one metric, each wrapped by ``fast``."""

    def __init__(self, metric: Any, fast: Callable[[Any], T]) -> None:
        self._metric = metric
        self._fast: Callable[[Any], T] = fast
        self._cache: dict[tuple[str, ...], T] = {}

    def __call__(self, *labels: str) -> T:
        child = self._cache.get(labels)
        if child is None:
            child = self._cache[labels] = self._fast(self._metric.labels(*labels))
        return child


class Counters:
    """Every metric the endpoint touches per request."""

    def __init__(self) -> None:
        self.request = Children(metrics.REQUESTS, Increment)
        self.outcome = Children(metrics.OUTCOMES, Increment)
        self.ending = Children(metrics.ENDINGS, Increment)
        self.finding = Children(metrics.FINDINGS, Increment)
        self.upstream_rejected = Children(metrics.UPSTREAM_REJECTED, Increment)
        self.upstream_seconds = Children(metrics.UPSTREAM_SECONDS, Observe)
        self.retries = Children(metrics.RETRIES, Increment)
        self.retries_failed = Children(metrics.RETRIES_FAILED, Increment)
        self.sanitize = Observe(metrics.SANITIZE_SECONDS)
        self.overhead = Observe(metrics.OVERHEAD_SECONDS)
