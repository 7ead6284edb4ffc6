"""proxy.relay.eager: each coroutine stepped by hand does what its plain twin does with asyncio's
own tools (a task, a timeout): results, exceptions, cancellations, clean-up."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import pytest

from proxy.relay.eager import Stop, detached, detached_plain, within, within_plain

Within = Callable[[Coroutine[Any, Any, Any], float], Awaitable[Any]]
Detached = Callable[[Coroutine[Any, Any, Any], Callable[[Any], None]], Stop]
_WITHIN = pytest.mark.parametrize("run", [within, within_plain], ids=["eager", "plain"])
_DETACHED = pytest.mark.parametrize("run", [detached, detached_plain], ids=["eager", "plain"])


def _in_a_loop(test: Callable[[Any], Coroutine[Any, Any, None]]) -> Callable[[Any], None]:
    """The test in a fresh loop, which must report no error of its own (a callback that
    raised, a task's exception never retrieved)."""

    @functools.wraps(test)
    def run_it(run: Any) -> None:
        errors: list[dict[str, Any]] = []

        async def main() -> None:
            asyncio.get_running_loop().set_exception_handler(lambda _, error: errors.append(error))
            await test(run)

        asyncio.run(main())
        assert errors == []

    return run_it


def WITHIN(test: Callable[[Any], Coroutine[Any, Any, None]]) -> Any:
    return _WITHIN(_in_a_loop(test))


def DETACHED(test: Callable[[Any], Coroutine[Any, Any, None]]) -> Any:
    return _DETACHED(_in_a_loop(test))


async def _at_once() -> str:
    return "body"


async def _after(event: asyncio.Event, value: str = "body") -> str:
    await event.wait()
    return value


async def _after_turns(turns: int) -> int:
    for _ in range(turns):
        await asyncio.sleep(0)  # a bare yield
    return turns


async def _failing(event: asyncio.Event | None = None) -> str:
    if event is not None:
        await event.wait()
    raise ValueError("broken receive")


@WITHIN
async def test_within_returns_what_finished_at_once(run: Within) -> None:
    assert await run(_at_once(), 0.5) == "body"


@WITHIN
async def test_within_waits_for_what_suspends(run: Within) -> None:
    event = asyncio.Event()
    asyncio.get_running_loop().call_soon(event.set)
    assert await run(_after(event), 5) == "body"
    assert await run(_after_turns(3), 5) == 3


@WITHIN
async def test_within_times_out_and_leaves_no_waiter(run: Within) -> None:
    event = asyncio.Event()
    with pytest.raises(TimeoutError):
        await run(_after(event), 0.01)
    assert not event._waiters  # type: ignore[attr-defined]  # the coroutine's finally ran


@WITHIN
async def test_within_passes_exceptions_on(run: Within) -> None:
    with pytest.raises(ValueError, match="broken"):
        await run(_failing(), 5)
    event = asyncio.Event()
    asyncio.get_running_loop().call_soon(event.set)
    with pytest.raises(ValueError, match="broken"):
        await run(_failing(event), 5)


@WITHIN
async def test_within_is_cancelled_with_its_task(run: Within) -> None:
    event = asyncio.Event()
    task = asyncio.ensure_future(run(_after(event), 5))
    await asyncio.sleep(0)  # the task waits on the event now
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not event._waiters  # type: ignore[attr-defined]


@WITHIN
async def test_within_is_cancelled_even_as_what_it_awaits_completes(run: Within) -> None:
    event = asyncio.Event()
    task = asyncio.ensure_future(run(_after(event), 5))
    await asyncio.sleep(0)
    event.set()  # the task is woken with the result...
    task.cancel()  # ...and cancelled before it runs: the cancellation wins
    with pytest.raises(asyncio.CancelledError):
        await task


async def _settled() -> None:
    """A few turns of the loop: whatever was scheduled has run."""
    for _ in range(5):
        await asyncio.sleep(0)


@DETACHED
async def test_detached_reports_a_result_at_once_or_later(run: Detached) -> None:
    got: list[Any] = []
    run(_at_once(), got.append)
    event = asyncio.Event()
    run(_after(event, "disconnect"), got.append)
    run(_after_turns(2), got.append)
    future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    run(future, got.append)  # any awaitable, not only a coroutine
    await _settled()
    assert sorted(map(str, got)) == ["2", "body"]
    event.set()
    future.set_result("future")
    await _settled()
    assert sorted(map(str, got)) == ["2", "body", "disconnect", "future"]


@DETACHED
async def test_a_stopped_detached_coroutine_reports_nothing_and_leaves_no_waiter(
    run: Detached,
) -> None:
    got: list[Any] = []
    event = asyncio.Event()
    stop = run(_after(event), got.append)
    await _settled()
    stop()
    await _settled()
    assert not event._waiters  # type: ignore[attr-defined]
    event.set()
    await _settled()
    assert got == []


@DETACHED
async def test_a_detached_coroutine_that_fails_reports_nothing(run: Detached) -> None:
    got: list[Any] = []
    event = asyncio.Event()
    run(_failing(), got.append)
    run(_failing(event), got.append)
    event.set()
    await _settled()
    assert got == []


@DETACHED
async def test_a_detached_coroutine_whose_future_is_cancelled_reports_nothing(
    run: Detached,
) -> None:
    got: list[Any] = []
    future: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def waiting() -> str:
        return await future

    run(waiting(), got.append)
    await _settled()
    future.cancel()
    await _settled()
    assert got == []
