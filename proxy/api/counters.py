"""The endpoint's metric children, looked up once per label set (``.labels()`` takes a lock)."""

from __future__ import annotations

from typing import Any

from proxy import metrics


class Children:
    """Cached labelled children of one metric."""

    def __init__(self, metric: Any) -> None:
        self._metric = metric
        self._cache: dict[tuple[str, ...], Any] = {}

    def __call__(self, *labels: str) -> Any:
        child = self._cache.get(labels)
        if child is None:
            child = self._cache[labels] = self._metric.labels(*labels)
        return child


class Counters:
    """Every metric the endpoint touches per request."""

    def __init__(self) -> None:
        self.request = Children(metrics.REQUESTS)
        self.outcome = Children(metrics.OUTCOMES)
        self.ending = Children(metrics.ENDINGS)
        self.finding = Children(metrics.FINDINGS)
        self.upstream_rejected = Children(metrics.UPSTREAM_REJECTED)
        self.upstream_seconds = Children(metrics.UPSTREAM_SECONDS)
        self.retries = Children(metrics.RETRIES)
        self.retries_failed = Children(metrics.RETRIES_FAILED)
        self.sanitize = metrics.SANITIZE_SECONDS
        self.overhead = metrics.OVERHEAD_SECONDS
