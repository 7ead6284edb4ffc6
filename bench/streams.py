"""Stream timing from the client's side (aiohttp, in the bench's own process): time to first
chunk, the gaps between SSE events, and many streams held open at once."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import aiohttp

HEADERS = {"Content-Type": "application/json", "Authorization": "Bearer sk-bench"}
_DONE = b"data: [DONE]"


@dataclass
class Stream:
    """What one client saw of one SSE answer."""

    ttfc_ms: float = 0.0
    gaps_ms: list[float] = field(default_factory=list)
    events: int = 0
    status: int = 0


async def _read(
    session: aiohttp.ClientSession,
    url: str,
    body: bytes,
    headers: dict[str, str],
    first: Callable[[], None] | None = None,
) -> Stream:
    seen = Stream()
    stamps: list[float] = []
    buffer = b""
    start = time.perf_counter()
    async with session.post(url, data=body, headers=headers) as response:
        seen.status = response.status
        async for data in response.content.iter_any():
            now = time.perf_counter()
            buffer += data
            *events, buffer = buffer.split(b"\n\n")
            for event in events:
                if event != _DONE:
                    stamps.append(now)
                    if first is not None and len(stamps) == 1:
                        first()
    seen.events = len(stamps)
    if stamps:
        seen.ttfc_ms = (stamps[0] - start) * 1000
        seen.gaps_ms = [(b - a) * 1000 for a, b in itertools.pairwise(stamps)]
    return seen


def _shape(chunks: int, pace_ms: float) -> dict[str, str]:
    return {**HEADERS, "x-bench-chunks": str(chunks), "x-bench-pace-ms": f"{pace_ms:g}"}


async def paced(
    url: str, body: bytes, *, requests: int, chunks: int, pace_ms: float
) -> list[Stream]:
    """``requests`` streams one after the other (concurrency 1), each ``chunks`` events
    ``pace_ms`` apart upstream."""
    headers = _shape(chunks, pace_ms)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1)) as session:
        await _read(session, url, body, headers)  # connect outside the measurement
        return [await _read(session, url, body, headers) for _ in range(requests)]


@dataclass
class Held:
    """Many concurrent streams: how many opened and completed, and the proxy's memory."""

    opened: int
    completed: int
    open_seconds: float
    rss_open: int
    rss_peak_during: int


async def hold_open(
    url: str, body: bytes, *, count: int, chunks: int, pace_ms: float, rss: Callable[[], int]
) -> Held:
    """Open ``count`` streams at once; sample ``rss()`` once all are open and while they run."""
    headers = _shape(chunks, pace_ms)
    opened = asyncio.Event()
    state = {"open": 0}

    def first() -> None:
        state["open"] += 1
        if state["open"] == count:
            opened.set()

    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=None, sock_read=60)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        start = time.perf_counter()
        tasks = [
            asyncio.ensure_future(_read(session, url, body, headers, first)) for _ in range(count)
        ]
        budget = chunks * pace_ms / 1000
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(opened.wait(), timeout=budget)
        open_seconds = time.perf_counter() - start
        rss_open = rss()
        peak = rss_open
        while not all(t.done() for t in tasks):
            await asyncio.sleep(0.25)
            peak = max(peak, rss())
        results = await asyncio.gather(*tasks, return_exceptions=True)
    completed = sum(isinstance(r, Stream) and r.events == chunks for r in results)
    return Held(state["open"], completed, open_seconds, rss_open, peak)
