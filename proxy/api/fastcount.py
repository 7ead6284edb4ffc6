"""Counter and histogram updates without prometheus-client's per-call checks: a speed trick,
fenced here.

``Counter.inc`` checks on every call that the metric is observable (a labelled child always
is) and that the amount is not negative (it is 1), then increments the child's value;
``Histogram.observe`` makes the same check, adds to the sum, and walks the buckets in Python to
the first bound at or above the amount. The proxy makes about six such updates per request, a
measurable share of a small request's cost. :class:`Increment` and :class:`Observe` hold the
child's value objects (prometheus-client 0.26: ``_value``; ``_sum``, ``_buckets``,
``_upper_bounds``, the same in multiprocess mode) and update them directly, the bucket found
by :func:`bisect.bisect_left`: the same values, so ``/metrics`` reads the same. Their plain
twins are the library's own ``inc()`` and ``observe()``; ``tests/api/test_fastcount.py`` holds
each pair equal (and fails if prometheus-client's internals move).
"""

from __future__ import annotations

from bisect import bisect_left
from functools import partial
from typing import Any


class Increment:
    """``child.inc()`` of one counter child (``child``: a counter without labels, or one
    labelled child)."""

    __slots__ = ("inc",)

    def __init__(self, child: Any) -> None:
        self.inc = partial(child._value.inc, 1)


class Observe:
    """``child.observe(amount)`` of one histogram child, for amounts that are numbers (the
    proxy's are durations: never NaN, which the library counts in no bucket)."""

    __slots__ = ("_bounds", "_buckets", "_sum")

    def __init__(self, child: Any) -> None:
        self._sum = child._sum
        self._buckets = child._buckets
        self._bounds = child._upper_bounds  # ascending, +Inf last: every number has a bucket

    def observe(self, amount: float) -> None:
        self._sum.inc(amount)
        self._buckets[bisect_left(self._bounds, amount)].inc(1)
