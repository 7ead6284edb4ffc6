"""The real openai SDK against the emulators served by a real uvicorn on loopback."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import openai
import pytest
import uvicorn

from proxy.emulator import create_emulator_app
from tests.emulator import result, user

TOOLS: list[Any] = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
]
O1 = (
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
    "with 'tool_calls'."
)


@contextmanager
def serving(provider: str, **kwargs: Any) -> Iterator[str]:
    """The emulator on a free 127.0.0.1 port; yields its base URL with the provider prefix."""
    app = create_emulator_app(provider, **kwargs)
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", ws="none")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:  # a condition with a bound, not a guess
        assert thread.is_alive(), "uvicorn stopped"
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.005)
    port = server.servers[0].sockets[0].getsockname()[1]
    prefix = "/v1beta/openai" if provider == "gemini" else "/v1"
    try:
        yield f"http://127.0.0.1:{port}{prefix}"
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.fixture(scope="module")
def openai_url() -> Iterator[str]:
    with serving("openai") as url:
        yield url


@pytest.fixture
def client(openai_url: str) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=openai_url, api_key="x", max_retries=0) as sdk:
        yield sdk


def test_sdk_parses_a_completion(client: openai.OpenAI) -> None:
    completion = client.chat.completions.create(model="gpt-4o", messages=[user("hi")])
    assert completion.choices[0].message.content == "Emulated openai answer to: hi"
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None
    assert completion.usage.total_tokens > 0


def test_sdk_parses_a_stream(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(
        model="gpt-4o", messages=[user("hi")], stream=True, stream_options={"include_usage": True}
    )
    text, finish, usage = "", None, None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
    assert (text, finish) == ("Emulated openai answer to: hi", "stop")
    assert usage is not None
    assert usage.prompt_tokens > 0


def test_sdk_tool_call_round_trip(client: openai.OpenAI) -> None:
    messages: list[Any] = [user()]
    first = client.chat.completions.create(model="gpt-4o", messages=messages, tools=TOOLS)
    message = first.choices[0].message
    assert first.choices[0].finish_reason == "tool_calls"
    assert message.tool_calls is not None
    [tool_call] = message.tool_calls
    assert tool_call.type == "function"
    assert (tool_call.function.name, tool_call.function.arguments) == ("get_weather", "{}")
    # the SDK's own response model goes back in as it is: the strict emulator must accept it
    messages += [message, {"role": "tool", "tool_call_id": tool_call.id, "content": "18 C"}]
    second = client.chat.completions.create(model="gpt-4o", messages=messages, tools=TOOLS)
    assert "18 C" in (second.choices[0].message.content or "")


def test_sdk_streamed_tool_call_accumulates(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(
        model="gpt-4o", messages=[user()], tools=TOOLS, stream=True
    )
    calls: dict[int, dict[str, str]] = {}
    for chunk in stream:
        for delta_call in chunk.choices[0].delta.tool_calls or [] if chunk.choices else []:
            entry = calls.setdefault(delta_call.index, {"id": "", "name": "", "arguments": ""})
            entry["id"] += delta_call.id or ""
            function = delta_call.function
            entry["name"] += (function.name or "") if function else ""
            entry["arguments"] += (function.arguments or "") if function else ""
    assert list(calls) == [0]
    assert calls[0]["id"].startswith("call_")
    assert (calls[0]["name"], calls[0]["arguments"]) == ("get_weather", "{}")


def test_sdk_raises_bad_request_with_openais_message(client: openai.OpenAI) -> None:
    broken: list[Any] = [user(), result("a")]
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="gpt-4o", messages=broken)
    error = caught.value
    assert error.status_code == 400
    assert error.message == f"Error code: 400 - {O1}"
    assert (error.param, error.code, error.type) == ("messages.[1].role", None,
                                                     "invalid_request_error")  # fmt: skip


def test_sdk_raises_bad_request_for_gemini_array_errors() -> None:
    with (
        serving("gemini") as url,
        openai.OpenAI(base_url=url, api_key="x", max_retries=0) as sdk,
        pytest.raises(openai.BadRequestError) as caught,
    ):
        sdk.chat.completions.create(model="gemini-2.5-flash", messages=[user(), result("a")])
    assert caught.value.body == [{"error": {
        "code": 400, "status": "INVALID_ARGUMENT",
        "message": "Please ensure that function response turn comes immediately after a "
                   "function call turn."}}]  # fmt: skip


def test_sdk_reads_deepseek_reasoning_from_the_stream() -> None:
    with (
        serving("deepseek") as url,
        openai.OpenAI(base_url=url, api_key="x", max_retries=0) as sdk,
    ):
        stream = sdk.chat.completions.create(model="deepseek-reasoner", messages=[user("hi")],
                                             stream=True)  # fmt: skip
        deltas = [chunk.choices[0].delta for chunk in stream if chunk.choices]
    reasoning = "".join((d.model_extra or {}).get("reasoning_content") or "" for d in deltas)
    assert reasoning == "Emulated reasoning: the request is valid."
    assert "".join(d.content or "" for d in deltas) == "Emulated deepseek answer to: hi"


def test_stream_frames_arrive_paced_and_unbuffered() -> None:
    pacing, pieces = 0.04, 5
    frames = 1 + pieces + 1 + 1  # role, content pieces, finish, [DONE]
    payload = {"model": "gpt-4o", "stream": True, "messages": [user("pace me")]}
    with (
        serving("openai", pacing_ms=pacing * 1000, chunks=pieces) as url,
        httpx.Client(timeout=10) as http,
        http.stream("POST", f"{url}/chat/completions", json=payload) as response,
    ):
        headers_at = time.monotonic()
        arrivals = [time.monotonic() for line in response.iter_lines() if line.startswith("data")]
    assert len(arrivals) == frames
    # the first frame is not held back until the stream ends ...
    assert arrivals[0] - headers_at < (frames - 1) * pacing / 2
    # ... and the frames keep their spacing (a lower bound: sleeps never end early)
    assert arrivals[-1] - arrivals[0] >= (frames - 1) * pacing * 0.9
