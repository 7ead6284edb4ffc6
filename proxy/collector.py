"""The garbage collector of a serving process (``serve``, its workers, ``serve --emulate``).

Nothing here runs on import: the in-process test servers keep CPython's defaults.
"""

from __future__ import annotations

import gc

#: The collector's thresholds in a serving process: the youngest generation is collected after
#: this many net new container objects rather than CPython's 700, the older ones as by default.
#: A request in flight holds its parsed body (a 200-message history is ~2,000 containers)
#: across awaits, so at 700 a collection runs every few requests, promotes live request data
#: and, in turn, starts full collections of the whole heap: 175-330 µs of collector time per
#: request at concurrency 10 on the 31 KB history, under 15 µs with this threshold
#: (``gc.callbacks`` timing, bench/results/latest.md).
GC_THRESHOLD = (20_000, 10, 10)


def tune_gc() -> None:
    """Set a serving process's collector: what start-up built (modules, settings, the app) is
    frozen out of its sight, never to be scanned again, and :data:`GC_THRESHOLD` applies."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLD)
