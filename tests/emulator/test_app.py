"""The emulator ASGI app in process: routes, recording, errors, answers, SSE frames."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from proxy.emulator import ReceivedRequest, create_emulator_app, validate
from tests.emulator import asks, body, call, result, user

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]
ORIGINAL = ("openai", "deepseek", "gemini")  # the others: test_tier2_app.py
MODELS = {"openai": "gpt-4o", "deepseek": "deepseek-chat", "gemini": "gemini-2.5-flash"}
CHAT = {"openai": "/v1/chat/completions", "deepseek": "/v1/chat/completions",
        "gemini": "/v1beta/openai/chat/completions"}  # fmt: skip


def send(app: Any, method: str, path: str, **kwargs: Any) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://emulator") as client:
            return await client.request(method, path, **kwargs)

    return asyncio.run(go())


def chat(provider: str, request: Any, **kwargs: Any) -> httpx.Response:
    content = request if isinstance(request, bytes) else json.dumps(request).encode()
    app = create_emulator_app(provider, **kwargs)
    return send(app, "POST", CHAT[provider], content=content)


def frames(response: httpx.Response) -> list[str]:
    events = response.text.split("\n\n")
    assert events[-1] == ""
    assert all(event.startswith("data: ") for event in events[:-1])
    return [event.removeprefix("data: ") for event in events[:-1]]


def chunks_of(response: httpx.Response) -> list[dict[str, Any]]:
    data = frames(response)
    assert data[-1] == "[DONE]"
    return [json.loads(item) for item in data[:-1]]


@pytest.mark.parametrize("provider", ORIGINAL)
def test_valid_request_gets_a_chat_completion(provider: str) -> None:
    response = chat(provider, body(user("hello there"), model=MODELS[provider]))
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    answer = response.json()
    assert answer["object"] == "chat.completion"
    assert answer["model"] == MODELS[provider]
    assert answer["choices"][0]["message"]["content"].endswith("answer to: hello there")
    assert answer["choices"][0]["finish_reason"] == "stop"
    usage = answer["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] > 0


def test_answers_are_deterministic_and_ids_follow_the_body() -> None:
    first = chat("openai", body(user("a")))
    assert first.content == chat("openai", body(user("a"))).content
    assert first.json()["id"] != chat("openai", body(user("b"))).json()["id"]


@pytest.mark.parametrize("path", ["/v1beta/openai/chat/completions", "/v1/chat/completions"])
def test_gemini_serves_both_prefixes(path: str) -> None:
    app = create_emulator_app("gemini")
    response = send(app, "POST", path, json=body(user()))
    assert response.status_code == 200
    assert send(app, "GET", path.replace("chat/completions", "models")).json()["data"]


@pytest.mark.parametrize(
    ("provider", "expected"),
    [
        ("openai", {"error": {"message": "Invalid URL (GET /v1/nope)",
                              "type": "invalid_request_error", "param": None, "code": None}}),
        ("deepseek", {"error": {"message": "Not Found", "type": "invalid_request_error",
                                "param": None, "code": None}}),
        ("gemini", [{"error": {"code": 404, "message": "Requested entity was not found.",
                               "status": "NOT_FOUND"}}]),
    ],
)  # fmt: skip
def test_unknown_path_is_a_404_in_the_providers_shape(provider: str, expected: Any) -> None:
    response = send(create_emulator_app(provider), "GET", "/v1/nope")
    assert response.status_code == 404
    assert response.json() == expected


def test_models_lists_the_switch_models() -> None:
    listing = send(create_emulator_app("deepseek"), "GET", "/v1/models").json()
    assert listing["object"] == "list"
    ids = [model["id"] for model in listing["data"]]
    assert {"deepseek-chat", "deepseek-reasoner", "deepseek-r1"} <= set(ids)


def test_every_request_is_recorded_byte_for_byte() -> None:
    received: list[ReceivedRequest] = []
    app = create_emulator_app("openai", received=received)
    raw = b'{"model": "gpt-4o",  "messages": [{"role": "user", "content": "x"}]}'
    headers = {"Authorization": "Bearer sk-test", "X-Custom": "1"}
    send(app, "POST", "/v1/chat/completions", content=raw, headers=headers)
    send(app, "GET", "/v1/models")
    assert [(r.method, r.path) for r in received] == [
        ("POST", "/v1/chat/completions"),
        ("GET", "/v1/models"),
    ]
    assert received[0].body == raw
    assert received[0].headers["authorization"] == "Bearer sk-test"
    assert received[0].headers["x-custom"] == "1"


@pytest.mark.parametrize(
    ("provider", "message"),
    [
        ("openai", "We could not parse the JSON body of your request."),
        ("deepseek", "Failed to parse the request body as JSON: expected value at line 1 column 1"),
        ("gemini", "Invalid JSON payload received. Unexpected token."),
    ],
)
def test_non_json_body_is_the_providers_400(provider: str, message: str) -> None:
    response = chat(provider, b"not json")
    assert response.status_code == 400
    assert message in response.text


@pytest.mark.parametrize("provider", ORIGINAL)
def test_rejection_is_sent_as_validate_built_it(provider: str) -> None:
    request = body(user(), result("a"), model=MODELS[provider])
    response = chat(provider, request)
    rejection = validate(provider, request, raw=json.dumps(request).encode())
    assert rejection is not None
    assert (response.status_code, response.content) == (rejection.status, rejection.body)


@pytest.mark.parametrize("provider", ORIGINAL)
def test_status_knob_forces_an_error_with_retry_after(provider: str) -> None:
    app = create_emulator_app(provider)
    response = send(app, "POST", CHAT[provider], json=body(user()),
                    headers={"x-emulator-status": "429"})  # fmt: skip
    assert response.status_code == 429
    assert response.headers["retry-after"] == "1"
    error = response.json()[0]["error"] if provider == "gemini" else response.json()["error"]
    assert error["message"]


def test_tool_call_answer_round_trips_through_the_same_validator() -> None:
    request = body(user(), model="gpt-4o", tools=TOOLS)
    message = chat("openai", request).json()["choices"][0]["message"]
    [tool_call] = message["tool_calls"]
    assert tool_call["id"].startswith("call_")
    assert tool_call["function"] == {"name": "get_weather", "arguments": "{}"}
    follow_up = body(user(), message, {"role": "tool", "tool_call_id": tool_call["id"],
                                       "content": "18 C"}, model="gpt-4o", tools=TOOLS)  # fmt: skip
    answer = chat("openai", follow_up).json()["choices"][0]
    assert answer["finish_reason"] == "stop"
    assert "18 C" in answer["message"]["content"]


def test_gemini_3_tool_call_carries_a_thought_signature_that_validates() -> None:
    request = body(user(), model="gemini-3-pro-preview", tools=TOOLS)
    message = chat("gemini", request).json()["choices"][0]["message"]
    signature = message["tool_calls"][0]["extra_content"]["google"]["thought_signature"]
    assert signature
    replay = {k: v for k, v in message.items() if v is not None}  # Gemini rejects content: null
    follow_up = body(user(), replay, result_for(message), model="gemini-3-pro-preview")
    assert validate("gemini", follow_up) is None
    stripped = body(user(), asks(call("a")), result("a"), model="gemini-3-pro-preview")
    assert validate("gemini", stripped) is not None


def result_for(message: dict[str, Any]) -> dict[str, Any]:
    call_id = message["tool_calls"][0]["id"]
    return {"role": "tool", "tool_call_id": call_id, "name": "get_weather", "content": "18 C"}


def test_deepseek_thinking_answer_has_reasoning_content() -> None:
    request = body(user(), model="deepseek-reasoner", tools=TOOLS)
    message = chat("deepseek", request).json()["choices"][0]["message"]
    assert message["reasoning_content"]
    assert message["tool_calls"][0]["id"].startswith("call_00_")
    assert validate("deepseek", body(user(), message, result_for(message),
                                     model="deepseek-reasoner")) is None  # fmt: skip


def test_tool_choice_none_answers_text() -> None:
    request = body(user(), tools=TOOLS, tool_choice="none")
    message = chat("openai", request).json()["choices"][0]["message"]
    assert "tool_calls" not in message
    assert message["content"].startswith("Emulated openai answer")


def test_stream_splits_the_content_into_chunks() -> None:
    request = body(user("hello"), stream=True, stream_options={"include_usage": True})
    response = chat("openai", request, chunks=3)
    assert response.headers["content-type"] == "text/event-stream"
    events = chunks_of(response)
    assert all(event["object"] == "chat.completion.chunk" for event in events)
    assert events[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    pieces = [e["choices"][0]["delta"]["content"] for e in events[1:4]]
    whole = chat("openai", {**request, "stream": False}).json()["choices"][0]["message"]
    assert "".join(pieces) == whole["content"]
    assert events[4]["choices"][0] == {"index": 0, "delta": {}, "logprobs": None,
                                       "finish_reason": "stop"}  # fmt: skip
    assert events[5]["choices"] == []
    assert events[5]["usage"]["total_tokens"] > 0
    assert len(events) == 6


def test_stream_without_chunks_sends_one_piece_per_word() -> None:
    events = chunks_of(chat("deepseek", body(user("a b c"), stream=True)))
    content = [e["choices"][0]["delta"].get("content") for e in events[1:-1]]
    assert content == ["Emulated ", "deepseek ", "answer ", "to: ", "a ", "b ", "c"]


def test_stream_tool_call_deltas_carry_index_like_openai() -> None:
    request = body(user(), model="gemini-3-flash", tools=TOOLS, stream=True)
    events = chunks_of(chat("gemini", request, chunks=2))
    deltas = [e["choices"][0]["delta"] for e in events]
    header = deltas[1]["tool_calls"][0]
    assert header["index"] == 0
    assert header["function"] == {"name": "get_weather", "arguments": ""}
    assert header["extra_content"]["google"]["thought_signature"]
    arguments = "".join(d["tool_calls"][0]["function"]["arguments"] for d in deltas[2:4])
    assert arguments == "{}"
    assert events[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_chunks_knob_header_overrides_the_app_setting() -> None:
    app = create_emulator_app("openai", chunks=2)
    response = send(app, "POST", "/v1/chat/completions", json=body(user(), stream=True),
                    headers={"x-emulator-chunks": "5"})  # fmt: skip
    assert len(chunks_of(response)) == 1 + 5 + 1
