"""Streams over real sockets: relayed as they arrive, cancelled with the client, ended cleanly."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable

import httpx
import openai
import pytest

from tests.e2e.conftest import (
    EndlessStream,
    PacedEvents,
    Proxy,
    SilentUpstream,
    StallingUpstream,
    Upstream,
)
from tests.servers import running

PACING_MS = 50
CHUNKS = 8


def test_a_streamed_answer_arrives_incrementally(
    proxy: Proxy, upstreams: dict[str, Upstream]
) -> None:
    client = openai.OpenAI(base_url=proxy.v1, api_key="sk-test", max_retries=0)
    started = time.perf_counter()
    stream = client.chat.completions.create(
        model="gpt-4o",
        messages=[{"role": "user", "content": "one two three four five six seven eight"}],
        stream=True,
        extra_headers={"x-emulator-pacing-ms": str(PACING_MS), "x-emulator-chunks": str(CHUNKS)},
    )
    arrivals = []
    text = []
    for chunk in stream:
        arrivals.append(time.perf_counter() - started)
        if chunk.choices and chunk.choices[0].delta.content:
            text.append(chunk.choices[0].delta.content)
    assert "".join(text).startswith("Emulated openai answer")
    spread = arrivals[-1] - arrivals[0]
    # The emulator sleeps PACING_MS between frames: buffering anywhere would bunch them up.
    assert spread >= (len(arrivals) - 1) * PACING_MS / 1000 * 0.8
    assert arrivals[0] < arrivals[-1] - 0.25
    gaps = [b - a for a, b in itertools.pairwise(arrivals)]
    assert sum(gap > PACING_MS / 1000 / 2 for gap in gaps) >= len(gaps) - 2


def test_the_async_sdk_streams_too(proxy: Proxy, upstreams: dict[str, Upstream]) -> None:
    async def consume() -> list[str | None]:
        async with openai.AsyncOpenAI(
            base_url=proxy.v1, api_key="sk-test", max_retries=0
        ) as client:
            stream = await client.chat.completions.create(
                model="deepseek-chat",
                messages=[{"role": "user", "content": "stream me"}],
                stream=True,
                extra_headers={"x-emulator-chunks": "3"},
            )
            return [c.choices[0].delta.content async for c in stream if c.choices]

    pieces = asyncio.run(consume())
    assert "".join(p for p in pieces if p).startswith("Emulated deepseek answer")
    assert upstreams["deepseek"].chats() != []


@pytest.mark.parametrize("path", ["/responses", "/completions"])
def test_other_paths_stream_untouched_and_incrementally(
    http: httpx.Client, start_proxy: Callable[..., Proxy], path: str
) -> None:
    upstream = PacedEvents(count=5, pace=0.1)
    with running(upstream, lifespan="off") as url:
        proxy = start_proxy({"openai": url + "/v1"})
        body = b'{"model": "gpt-4o", "input": "hi", "stream": true}'
        arrivals, received = [], b""
        started = time.perf_counter()
        with http.stream("POST", proxy.v1 + path + "?trace=1", content=body) as response:
            for chunk in response.iter_raw():
                arrivals.append(time.perf_counter() - started)
                received += chunk
    assert upstream.requests == [("POST", "/v1" + path, body)]
    assert received.count(b"event: response.delta") == 5
    assert arrivals[0] < 0.3  # the first event long before the last is even sent (~0.4 s)
    assert arrivals[-1] - arrivals[0] > 0.3


def test_a_client_disconnect_closes_the_upstream_connection(
    http: httpx.Client, start_proxy: Callable[..., Proxy]
) -> None:
    upstream = EndlessStream()
    with running(upstream, lifespan="off") as url:
        proxy = start_proxy({"openai": url + "/v1"})
        body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "go"}], "stream": True}
        with http.stream("POST", proxy.v1 + "/chat/completions", json=body) as response:
            assert response.status_code == 200
            first = next(response.iter_raw())
            assert first.startswith(b"data: ")
        assert upstream.streaming.is_set()
        # Leaving the block closed the client's connection; the proxy must close its own.
        assert upstream.disconnected.wait(5), "the upstream never saw the proxy hang up"


def test_a_client_that_gives_up_before_the_answer_cancels_the_upstream_request(
    http: httpx.Client, start_proxy: Callable[..., Proxy]
) -> None:
    upstream = SilentUpstream()
    with running(upstream, lifespan="off") as url:
        proxy = start_proxy({"openai": url + "/v1"})
        body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "think long"}]}
        with pytest.raises(httpx.ReadTimeout):
            http.post(proxy.v1 + "/chat/completions", json=body, timeout=0.5)
        assert upstream.asked.is_set()
        assert upstream.disconnected.wait(5), "the upstream request outlived its client"


@pytest.mark.parametrize("sse_boundary", [True, False])
def test_a_stream_that_stalls_ends_cleanly_with_an_error_event(
    http: httpx.Client, start_proxy: Callable[..., Proxy], sse_boundary: bool
) -> None:
    events = b'data: {"n": 1}\n\ndata: {"n": 2}\n\n'
    sent = len(events) if sse_boundary else len(events) - 5
    upstream = StallingUpstream(events * 2, sent, sized=False, content_type=b"text/event-stream")
    with running(upstream, lifespan="off") as url:
        proxy = start_proxy({"openai": url + "/v1"}, upstream_overrides={"read_timeout": 0.3})
        body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "go"}], "stream": True}
        started = time.perf_counter()
        response = http.post(proxy.v1 + "/chat/completions", json=body)
        assert time.perf_counter() - started < 5
    assert response.status_code == 200
    assert response.content.startswith(events[:sent])
    tail = response.content[sent:]
    if sse_boundary:  # an error event the SDKs raise on, then a clean end
        assert tail.startswith(b'data: {"error":')
        assert b"upstream_timeout" in tail
    else:  # mid-event: no event could be added without corrupting the cut one
        assert tail == b""


def test_a_sized_body_that_stalls_is_cut_off_not_passed_as_whole(
    http: httpx.Client, start_proxy: Callable[..., Proxy]
) -> None:
    upstream = StallingUpstream(
        b'{"x": "' + b"a" * 100 + b'"}', 20, sized=True, content_type=b"application/json"
    )
    with running(upstream, lifespan="off") as url:
        proxy = start_proxy({"openai": url + "/v1"}, upstream_overrides={"read_timeout": 0.3})
        with pytest.raises(httpx.RemoteProtocolError):
            http.post(proxy.v1 + "/models")


def test_the_sdk_raises_on_a_stalled_stream(start_proxy: Callable[..., Proxy]) -> None:
    chunk = b'{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[]}'
    events = b"data: " + chunk + b"\n\n"
    upstream = StallingUpstream(
        events * 2, len(events), sized=False, content_type=b"text/event-stream"
    )
    with running(upstream, lifespan="off") as url:
        proxy = start_proxy({"openai": url + "/v1"}, upstream_overrides={"read_timeout": 0.3})
        client = openai.OpenAI(base_url=proxy.v1, api_key="sk-test", max_retries=0)
        stream = client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "go"}], stream=True
        )
        with pytest.raises(openai.APIError, match="stopped sending"):
            list(stream)
