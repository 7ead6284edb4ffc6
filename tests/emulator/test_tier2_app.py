"""The seven second-tier emulators through the ASGI app and, for Mistral and Groq, through the
real openai SDK over a real socket."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from proxy.__main__ import _parser
from proxy.emulator import create_emulator_app, validate
from proxy.emulator.app import PREFIXES
from tests.emulator import body, user
from tests.emulator.test_app import chunks_of, send
from tests.emulator.test_sdk import TOOLS, serving
from tests.emulator.tier2 import answer, calls, fn_call

TIER2 = ("kimi", "mistral", "groq", "xai", "qwen", "vllm", "ollama")
MODELS = {"kimi": "kimi-k2.5", "mistral": "mistral-small-latest", "groq": "openai/gpt-oss-20b",
          "xai": "grok-4", "qwen": "qwen-plus", "vllm": "Qwen/Qwen3-8B",
          "ollama": "mistral-small3.2"}  # fmt: skip
# the message text of each provider's error body
TEXT = {"xai": lambda e: e["error"], "mistral": lambda e: e["message"]}


def message_of(provider: str, payload: Any) -> str:
    return str(TEXT.get(provider, lambda e: e["error"]["message"])(payload))


@pytest.mark.parametrize("provider", TIER2)
def test_every_prefix_answers_a_completion_that_replays(provider: str) -> None:
    app = create_emulator_app(provider)
    for prefix in PREFIXES[provider]:
        request = body(user(), model=MODELS[provider], tools=TOOLS)
        response = send(app, "POST", f"{prefix}/chat/completions", json=request)
        assert response.status_code == 200
        message = response.json()["choices"][0]["message"]
        [tool_call] = message["tool_calls"]
        replay = body(user(), message, answer(tool_call["id"], name="get_weather"),
                      model=MODELS[provider])  # fmt: skip
        if provider == "xai":  # only user messages may carry a name on xAI (X1)
            del replay["messages"][2]["name"]
        assert validate(provider, replay) is None
        assert send(app, "GET", f"{prefix}/models").json()["data"]


@pytest.mark.parametrize("provider", TIER2)
def test_stream_ends_with_done(provider: str) -> None:
    app = create_emulator_app(provider, chunks=2)
    request = body(user("hello"), model=MODELS[provider], stream=True)
    response = send(app, "POST", f"{PREFIXES[provider][0]}/chat/completions", json=request)
    events = chunks_of(response)
    text = "".join(e["choices"][0]["delta"].get("content") or "" for e in events)
    assert text == f"Emulated {provider} answer to: hello"


@pytest.mark.parametrize("provider", TIER2)
@pytest.mark.parametrize("status", [404, 429])
def test_forced_and_unknown_path_errors_keep_the_providers_shape(
    provider: str, status: int
) -> None:
    app = create_emulator_app(provider)
    if status == 404:
        response = send(app, "GET", "/v1/nope")
    else:
        response = send(app, "POST", f"{PREFIXES[provider][0]}/chat/completions",
                        json=body(user()), headers={"x-emulator-status": "429"})  # fmt: skip
        assert response.headers["retry-after"] == "1"
    assert response.status_code == status
    assert response.headers["content-type"] == "application/json"
    assert message_of(provider, response.json())


@pytest.mark.parametrize("provider", TIER2)
def test_non_json_body_is_a_400_in_the_providers_shape(provider: str) -> None:
    app = create_emulator_app(provider)
    response = send(app, "POST", f"{PREFIXES[provider][0]}/chat/completions", content=b"not json")
    assert response.status_code == 400
    assert message_of(provider, response.json())


@pytest.fixture(scope="module", params=["mistral", "groq"])
def sdk(request: pytest.FixtureRequest) -> Iterator[tuple[str, openai.OpenAI]]:
    with (
        serving(request.param) as url,
        openai.OpenAI(base_url=url, api_key="x", max_retries=0) as client,
    ):
        yield request.param, client


def test_sdk_tool_round_trip_over_a_socket(sdk: tuple[str, openai.OpenAI]) -> None:
    provider, client = sdk
    model = MODELS[provider]
    messages: list[Any] = [user()]
    first = client.chat.completions.create(model=model, messages=messages, tools=TOOLS)
    message = first.choices[0].message
    assert message.tool_calls is not None
    call_id = message.tool_calls[0].id
    messages += [message, {"role": "tool", "tool_call_id": call_id, "content": "18 C",
                           "name": "get_weather"}]  # fmt: skip
    second = client.chat.completions.create(model=model, messages=messages, tools=TOOLS)
    assert "18 C" in (second.choices[0].message.content or "")


MISTRAL_ORDER = {
    "object": "error",
    "message": "Unexpected role 'user' after role 'tool'",
    "type": "invalid_request_message_order",
    "param": None,
    "code": "3230",
}
GROQ_SCHEMA = {"error": {"message": "'messages.0' : for 'role:user' the following must be "
                         "satisfied[('messages.0' : property 'timestamp' is unsupported)]",
                         "type": "invalid_request_error"}}  # fmt: skip


def test_sdk_surfaces_the_providers_error(sdk: tuple[str, openai.OpenAI]) -> None:
    provider, client = sdk
    if provider == "mistral":
        history: list[Any] = [user(), calls(fn_call("aB3dE5gH7")), answer("aB3dE5gH7"), user()]
        expected: Any = MISTRAL_ORDER
    else:
        history, expected = [{**user(), "timestamp": 1}], GROQ_SCHEMA
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model=MODELS[provider], messages=history)
    assert caught.value.status_code == 400
    assert caught.value.body == (expected if provider == "mistral" else expected["error"])


def test_sdk_gets_mistrals_422_detail_list() -> None:
    history: list[Any] = [user(), {"role": "assistant", "content": "x", "reasoning_content": "r"},
                          user()]  # fmt: skip
    with (
        serving("mistral") as url,
        openai.OpenAI(base_url=url, api_key="x", max_retries=0) as client,
        pytest.raises(openai.UnprocessableEntityError) as caught,
    ):
        client.chat.completions.create(model="mistral-large-latest", messages=history)
    detail = json.loads(caught.value.response.content)["message"]["detail"]
    assert detail == [{"type": "extra_forbidden", "loc": ["body", "messages", 1, "assistant",
                                                          "reasoning_content"],
                       "msg": "Extra inputs are not permitted", "input": "r"}]  # fmt: skip


@pytest.mark.parametrize("provider", TIER2)
def test_cli_emulate_accepts_every_provider(provider: str) -> None:
    args = _parser().parse_args(["emulate", "--provider", provider])
    assert args.provider == provider


def test_cli_emulate_prints_the_base_url_and_serves_it() -> None:
    with socket.socket() as probe:  # a free port (released just before the child binds it)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "proxy", "emulate", "--provider", "groq", "--port", str(port)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as child:
        try:
            assert child.stdout is not None
            line = child.stdout.readline()  # printed before uvicorn starts; bounded by its exit
            assert line == f"emulating groq at http://127.0.0.1:{port}/openai/v1\n"
            models = _get_when_up(f"{line.split(' at ')[1].strip()}/models", deadline=20)
            assert models["data"][0]["id"] == "llama-3.3-70b-versatile"
        finally:
            child.terminate()
            child.wait(10)


def _get_when_up(url: str, deadline: float) -> Any:
    end = time.monotonic() + deadline
    while True:
        try:
            return httpx.get(url, timeout=2).json()
        except httpx.TransportError:
            assert time.monotonic() < end, "the emulator did not start"
            time.sleep(0.05)
