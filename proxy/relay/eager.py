"""Coroutines of the request path stepped by hand, without a task or a timer they do not need.

A speed layer, fenced here. Every request awaits its body under a deadline and watches its
client for a disconnect while the upstream answers. Done the plain way, that is a timer
(``asyncio.timeout``) armed and cancelled around a body that is, nearly always, already there
when the app starts (it came with the head), and a :class:`asyncio.Task` created, stepped,
cancelled and stepped again around a ``receive()`` that nearly always ends with the exchange:
a few microseconds of the proxy's own CPU per request, for nothing. Here the coroutine is
stepped by hand, the way a task steps it (:pep:`380`'s delegation, asyncio's future protocol),
only as far as it goes:

- :func:`within` runs it to its first suspension and returns at once when it did not suspend;
  only a coroutine that waits gets the deadline;
- :func:`detached` steps it from the callbacks of the futures it waits on, no task at all.

Each has a plain twin (:func:`within_plain`, :func:`detached_plain`) that says the same with
asyncio's own tools; ``tests/relay/test_eager.py`` holds each pair to the same results,
exceptions, cancellations and clean-up.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Generator
from typing import Any, Generic, TypeVar

T = TypeVar("T")

#: Stops a :func:`detached` coroutine: closed where it waits; its callback never runs after.
Stop = Callable[[], None]


async def within(awaitable: Awaitable[T], seconds: float) -> T:
    """``await awaitable``, :class:`TimeoutError` when it takes more than ``seconds`` in all;
    no timer is armed when it finishes without suspending."""
    steps = awaitable.__await__()
    try:
        awaited = steps.send(None)
    except StopIteration as finished:
        result: T = finished.value
        return result
    async with asyncio.timeout(seconds):
        return await _Rest(steps, awaited)


async def within_plain(awaitable: Awaitable[T], seconds: float) -> T:
    """:func:`within` the plain way."""
    async with asyncio.timeout(seconds):
        return await awaitable


class _Rest(Generic[T]):
    """The rest of an awaitable suspended on ``awaited``, awaited as ``await`` would go on
    (the task waits on ``awaited`` first, then every send and throw goes to ``steps``)."""

    __slots__ = ("awaited", "steps")

    def __init__(self, steps: Generator[Any, Any, T], awaited: Any) -> None:
        self.steps = steps
        self.awaited = awaited

    def __await__(self) -> Generator[Any, Any, T]:
        coro, value = self.steps, self.awaited
        while True:
            try:
                sent = yield value
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:  # what the task throws in (a cancellation): passed on
                try:
                    value = coro.throw(exc)
                except StopIteration as finished:
                    result: T = finished.value
                    return result
            else:
                try:
                    value = coro.send(sent)
                except StopIteration as finished:
                    result = finished.value
                    return result


def detached(awaitable: Awaitable[T], done: Callable[[T], None]) -> Stop:
    """Run ``awaitable`` beside the current task, as a task of its own would, without one:
    ``done`` gets its result; an exception it raises ends it unseen. Stepped at once, then
    from the callbacks of the futures it waits on (a bare ``yield``: at the loop's next turn)."""
    return _Detached(awaitable.__await__(), done).stop


class _Detached(Generic[T]):
    __slots__ = ("coro", "done", "stopped", "waiting")

    def __init__(self, steps: Generator[Any, Any, T], done: Callable[[T], None]) -> None:
        self.coro = steps
        self.done = done
        self.stopped = False
        self.waiting: asyncio.Future[Any] | None = None
        self._step(None)

    def _step(self, _: object) -> None:
        self.waiting = None
        if self.stopped:
            return
        try:
            awaited = self.coro.send(None)
        except StopIteration as finished:
            self.done(finished.value)
            return
        except (Exception, asyncio.CancelledError):  # ends unseen, as a task nobody awaits
            return
        blocking = getattr(awaited, "_asyncio_future_blocking", None)
        if blocking:  # a future, as asyncio's task protocol yields it
            awaited._asyncio_future_blocking = False
            self.waiting = awaited
            awaited.add_done_callback(self._step)
        elif awaited is None:  # a bare yield (``asyncio.sleep(0)``): go on at the next turn
            asyncio.get_running_loop().call_soon(self._step, None)
        else:  # a yield a task refuses (it throws in a RuntimeError): it ends here
            self.coro.close()

    def stop(self) -> None:
        self.stopped = True
        if self.waiting is not None:
            self.waiting.remove_done_callback(self._step)
            self.waiting = None
        self.coro.close()  # its ``finally`` runs where it waits (a waiter list is left clean)


def detached_plain(awaitable: Awaitable[T], done: Callable[[T], None]) -> Stop:
    """:func:`detached` the plain way: a task."""
    task = asyncio.ensure_future(awaitable)
    stopped = False

    def fired(task: asyncio.Future[T]) -> None:
        if not stopped and not task.cancelled() and task.exception() is None:
            done(task.result())

    def stop() -> None:
        nonlocal stopped
        stopped = True
        task.cancel()

    task.add_done_callback(fired)
    return stop
