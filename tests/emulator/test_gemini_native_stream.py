"""``:streamGenerateContent`` over real sockets (gemini-native.md §6): ``alt=sse`` events
(``data: …\\r\\n\\r\\n``, no event names, no ``[DONE]``), the JSON-array stream without it, Code
Assist's wrapped chunks, errors before the stream (arrays where the stream is an array) and the
mid-stream 503 knob; chunks leave paced, one by one."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from proxy.emulator.gemini_native import create_gemini_native_app
from tests.emulator.gemini_native_builders import (
    ENDPOINTS,
    READ,
    answer,
    call,
    model,
    path,
    results,
    user,
    wire,
)
from tests.servers import running

SCRIPTED = 'Read. [[tool_use read_file {"path": "a"}]] & [[tool_use read_file {"path": "b"}]]'


@pytest.fixture(scope="module")
def bases() -> Iterator[dict[str, str]]:
    with (
        running(create_gemini_native_app("aistudio")) as aistudio,
        running(create_gemini_native_app("vertex")) as vertex,
        running(create_gemini_native_app("code-assist")) as code_assist,
    ):
        yield {"aistudio": aistudio, "vertex": vertex, "code-assist": code_assist}


def stream(
    bases: dict[str, str],
    endpoint: str,
    request: dict[str, Any],
    model_id: str = "gemini-2.5-flash",
    sse: bool = True,
    **headers: str,
) -> httpx.Response:
    url = bases[endpoint] + path(endpoint, model_id, "streamGenerateContent")
    url += "?alt=sse" if sse else ""
    body = wire(endpoint, model_id, request)
    return httpx.post(url, json=body, headers=headers, timeout=10)


def events(response: httpx.Response) -> list[dict[str, Any]]:
    """The SSE events, checking their framing."""
    assert response.headers["content-type"] == "text/event-stream"
    frames = response.text.split("\r\n\r\n")
    assert frames[-1] == ""
    assert all(f.startswith("data: ") and "\n" not in f for f in frames[:-1])
    return [json.loads(f.removeprefix("data: ")) for f in frames[:-1]]


def inner(endpoint: str, chunk: dict[str, Any]) -> dict[str, Any]:
    if endpoint == "code-assist":
        assert set(chunk) == {"response", "traceId"}
        result: dict[str, Any] = chunk["response"]
        return result
    return chunk


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_sse_text_deltas_then_a_final_chunk(bases: dict[str, str], endpoint: str) -> None:
    response = stream(bases, endpoint, {"contents": [user("Say hello to the world.")]})
    assert response.status_code == 200
    chunks = [inner(endpoint, c) for c in events(response)]
    assert len(chunks) > 3
    texts = [c["candidates"][0]["content"]["parts"][0]["text"] for c in chunks]
    assert "".join(texts) == "Emulated gemini answer to: Say hello to the world."
    assert all(c["candidates"][0]["content"]["role"] == "model" for c in chunks)
    assert [("finishReason" in c["candidates"][0]) for c in chunks] == [False] * (
        len(chunks) - 1
    ) + [True]
    assert "usageMetadata" in chunks[-1]
    assert "usageMetadata" not in chunks[0]


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_sse_function_calls_arrive_whole(bases: dict[str, str], endpoint: str) -> None:
    request = {"contents": [user(SCRIPTED)], "tools": [READ]}
    chunks = [
        inner(endpoint, c) for c in events(stream(bases, endpoint, request, "gemini-3-pro-preview"))
    ]
    parts = [c["candidates"][0]["content"]["parts"] for c in chunks]
    assert [len(p) for p in parts] == [1, 1]
    first, second = parts[0][0], parts[1][0]
    assert first["functionCall"]["args"] == {"path": "a"}
    assert "thoughtSignature" in first
    assert second["functionCall"]["args"] == {"path": "b"}
    assert "thoughtSignature" not in second
    assert chunks[1]["candidates"][0]["finishReason"] == "STOP"
    history = [user(SCRIPTED), model(first, second), results(answer(), answer())]
    request = {"contents": history, "tools": [READ]}
    follow = events(stream(bases, endpoint, request, "gemini-3-pro-preview"))
    texts = [inner(endpoint, c)["candidates"][0]["content"]["parts"][0]["text"] for c in follow]
    assert "".join(texts) == 'The tool returned: {"output": "42"} | {"output": "42"}'


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_json_array_stream_without_alt(bases: dict[str, str], endpoint: str) -> None:
    response = stream(bases, endpoint, {"contents": [user("One two three.")]}, sse=False)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json; charset=UTF-8"
    raw = response.text
    assert raw.startswith("[{")
    assert raw.endswith("}\n]")
    assert raw.count("\n,\r\n") == len(json.loads(raw)) - 1 > 1
    chunks = [inner(endpoint, c) for c in json.loads(raw)]
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize("sse", [True, False])
def test_mid_stream_error_after_the_first_chunk(
    bases: dict[str, str], endpoint: str, sse: bool
) -> None:
    request = {"contents": [user("A long answer please.")]}
    response = stream(bases, endpoint, request, sse=sse, **{"x-emulator-stream-error": "503"})
    assert response.status_code == 200
    chunks = events(response) if sse else json.loads(response.text)
    assert len(chunks) == 2
    assert "candidates" in inner(endpoint, chunks[0])
    error = {"code": 503, "message": "The model is overloaded. Please try again later.",
             "status": "UNAVAILABLE"}  # fmt: skip
    assert chunks[1] == {"error": error}
    if sse:
        assert response.text.endswith('data: {"error":{"code":503,"message":"The model is '
                                      'overloaded. Please try again later.","status":'
                                      '"UNAVAILABLE"}}\r\n\r\n')  # fmt: skip


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize("sse", [True, False])
def test_refusals_before_the_stream(bases: dict[str, str], endpoint: str, sse: bool) -> None:
    """An ordinary HTTP error; a JSON array where the stream is one (and on Code Assist)."""
    contents = [user(), model(call()), user("Next.")]
    response = stream(bases, endpoint, {"contents": contents}, sse=sse)
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/json; charset=UTF-8"
    array = not sse or endpoint == "code-assist"
    payload = response.json()
    error = payload[0]["error"] if array else payload["error"]
    assert response.text.startswith("[{" if array else "{")
    assert error["message"].startswith("Please ensure that the number of function response")


def test_chunks_leave_one_by_one(bases: dict[str, str]) -> None:
    """With pacing, the first event reaches the client long before the last (no buffering)."""
    url = bases["aistudio"] + path("aistudio", "gemini-2.5-flash", "streamGenerateContent")
    headers = {"x-emulator-pacing-ms": "150", "x-emulator-chunks": "4"}
    request = {"contents": [user("Stream this slowly please.")]}
    started = time.monotonic()
    arrivals = []
    with httpx.stream("POST", url + "?alt=sse", json=request, headers=headers, timeout=10) as r:
        for line in r.iter_lines():
            if line.startswith("data: "):
                arrivals.append(time.monotonic() - started)
    assert len(arrivals) == 4
    assert arrivals[-1] - arrivals[0] >= 0.3


def test_thought_deltas_keep_their_flag(bases: dict[str, str]) -> None:
    config = {"thinkingConfig": {"includeThoughts": True}}
    request = {"contents": [user("Hi.")], "generationConfig": config}
    parts = [
        c["candidates"][0]["content"]["parts"][0]
        for c in events(stream(bases, "aistudio", request))
    ]
    thoughts = "".join(p["text"] for p in parts if p.get("thought") is True)
    answer_text = "".join(p["text"] for p in parts if "thought" not in p)
    assert thoughts == "Emulated reasoning: the request is valid."
    assert answer_text == "Emulated gemini answer to: Hi."
