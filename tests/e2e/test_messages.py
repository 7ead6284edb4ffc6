"""``POST /v1/messages`` over real sockets: routing to each upstream's ``anthropic_base_url``,
keys and Anthropic headers, the proxy's errors in Anthropic's shape, valid histories byte for
byte (issue 21 §3), and the stream relayed unchanged and unbuffered (§4, below).

Upstreams: the strict Anthropic and DeepSeek Messages emulators, and a scripted raw ASGI
upstream where a test must see the headers or pace the stream.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson
import pytest

from proxy.app import create_app
from proxy.core.registry import ALL_RULES
from proxy.core.signatures import SIGNATURES
from proxy.emulator import ReceivedRequest, create_emulator_app
from proxy.settings import load_settings
from tests.e2e.conftest import Proxy
from tests.servers import running

KEY_ENV = "TOOLCALL_GUARD_TEST_ANTHROPIC_KEY"
CLIENT_KEYS_ENV = "TOOLCALL_GUARD_TEST_MESSAGES_CLIENT_KEYS"
HEADERS = {"anthropic-version": "2023-06-01", "anthropic-beta": "prompt-caching-2024-07-31"}


def body(model: str = "claude-sonnet-4-5", **extra: Any) -> dict[str, Any]:
    messages = [
        {"role": "user", "content": "Read config.py."},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading it."},
                {"type": "tool_use", "id": "toolu_01A", "name": "read", "input": {"p": "c.py"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_01A", "content": "x = 1"}],
        },
    ]
    system = [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
    return {"model": model, "max_tokens": 256, "system": system, "messages": messages, **extra}


@dataclass
class Scripted:
    """A raw ASGI upstream: keeps each request's path, query and headers, answers ``events``
    as SSE (each after ``gate`` opens, when given) or a JSON message."""

    events: list[bytes] = field(default_factory=list)
    gate: threading.Event | None = None
    seen: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    disconnected: threading.Event = field(default_factory=threading.Event)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        self.seen.append((scope["path"], scope["query_string"].decode(), headers))
        if not self.events:
            data = orjson.dumps({"type": "message", "content": []})
            head = [(b"content-type", b"application/json")]
            await send({"type": "http.response.start", "status": 200, "headers": head})
            await send({"type": "http.response.body", "body": data})
            return
        head = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": head})
        gone = asyncio.ensure_future(receive())
        for i, event in enumerate(self.events):
            if i == 1 and self.gate is not None:
                while not self.gate.is_set() and not gone.done():
                    await asyncio.wait({gone}, timeout=0.01)
            if gone.done():
                self.disconnected.set()
                return
            await send({"type": "http.response.body", "body": event, "more_body": True})
        await send({"type": "http.response.body", "body": b""})


@dataclass
class Upstreams:
    anthropic: str
    deepseek: str
    scripted_url: str
    received: dict[str, list[ReceivedRequest]]
    scripted: Scripted


@pytest.fixture
def messages_upstreams() -> Iterator[Upstreams]:
    received: dict[str, list[ReceivedRequest]] = {"anthropic": [], "deepseek": []}
    scripted = Scripted()
    with ExitStack() as stack:
        urls = {
            name: stack.enter_context(running(create_emulator_app(name, received=got)))
            for name, got in received.items()
        }
        url = stack.enter_context(running(scripted))
        yield Upstreams(urls["anthropic"], urls["deepseek"], url, received, scripted)


Start = Callable[..., Proxy]


@pytest.fixture
def messages_proxy(messages_upstreams: Upstreams, http: httpx.Client) -> Iterator[Start]:
    """``messages_proxy(**settings)``: a proxy in front of anthropic (claude-*), deepseek
    (deepseek-*), scripted (by prefix; ``scripted={…}`` adds keys) and openai (no
    anthropic_base_url; the default route)."""
    with ExitStack() as stack:

        def start(**overrides: Any) -> Proxy:
            scripted = overrides.pop("scripted", {})
            anthropic = overrides.pop("anthropic", {})
            tables = {
                "openai": {"base_url": messages_upstreams.scripted_url + "/openai/v1"},
                "anthropic": {
                    "base_url": messages_upstreams.anthropic + "/v1",
                    "anthropic_base_url": messages_upstreams.anthropic + "/v1",
                    "models": ["claude-*"],
                    "policy": "anthropic",
                    **anthropic,
                },
                "deepseek": {
                    "base_url": messages_upstreams.deepseek + "/v1",
                    "anthropic_base_url": messages_upstreams.deepseek + "/anthropic/v1",
                    "models": ["deepseek-*"],
                    "policy": "deepseek",
                },
                "scripted": {
                    "base_url": messages_upstreams.scripted_url + "/v1",
                    "anthropic_base_url": messages_upstreams.scripted_url + "/anthropic/v1",
                    "policy": "anthropic",
                    **scripted,
                },
            }
            repair_log = {"url": "memory://", "flush_interval": 0.05}
            settings = load_settings(upstreams=tables, repair_log=repair_log, **overrides)
            app = create_app(settings)
            return Proxy(stack.enter_context(running(app)), app, http)

        yield start


def post(proxy: Proxy, payload: Any, path: str = "/v1/messages", **headers: str) -> httpx.Response:
    content = payload if isinstance(payload, bytes) else orjson.dumps(payload)
    sent = {"content-type": "application/json", **HEADERS, **headers}
    return proxy.http.post(proxy.url + path, content=content, headers=sent)


# --- routing -----------------------------------------------------------------------------------


def test_a_claude_model_goes_to_anthropic_byte_for_byte(
    messages_proxy: Start, messages_upstreams: Upstreams
) -> None:
    proxy = messages_proxy()
    sent = orjson.dumps(body())
    answer = post(proxy, sent, "/v1/messages?beta=true")
    assert answer.status_code == 200, answer.text
    assert answer.json()["type"] == "message"
    assert answer.headers["x-toolcall-guard-outcome"] == "clean"
    (received,) = messages_upstreams.received["anthropic"]
    assert received.path == "/v1/messages"
    assert received.body == sent  # a valid history goes out as its very bytes
    assert received.headers["anthropic-version"] == HEADERS["anthropic-version"]
    assert received.headers["anthropic-beta"] == HEADERS["anthropic-beta"]
    metrics = proxy.http.get(proxy.url + "/metrics").text
    assert 'toolcall_guard_outcomes_total{api="messages",outcome="clean",upstream="anthropic"}' in (
        metrics
    )


def test_a_path_prefix_routes_to_that_upstreams_anthropic_base(
    messages_proxy: Start, messages_upstreams: Upstreams
) -> None:
    proxy = messages_proxy()
    no_thinking = body("claude-opus-4-8", thinking={"type": "disabled"})
    answer = post(proxy, no_thinking, "/deepseek/v1/messages")
    assert answer.status_code == 200, answer.text
    (received,) = messages_upstreams.received["deepseek"]
    assert received.path == "/anthropic/v1/messages"
    assert not messages_upstreams.received["anthropic"]


def test_the_upstream_header_routes_too(
    messages_proxy: Start, messages_upstreams: Upstreams
) -> None:
    proxy = messages_proxy()
    no_thinking = body(thinking={"type": "disabled"})
    answer = post(proxy, no_thinking, **{"x-toolcall-guard-upstream": "deepseek"})
    assert answer.status_code == 200, answer.text
    assert [r.path for r in messages_upstreams.received["deepseek"]] == ["/anthropic/v1/messages"]


def test_count_tokens_is_routed_and_relayed_unchecked(
    messages_proxy: Start, messages_upstreams: Upstreams
) -> None:
    proxy = messages_proxy()
    payload = {k: v for k, v in body().items() if k != "max_tokens"}
    answer = post(proxy, payload, "/v1/messages/count_tokens")
    assert answer.status_code == 200, answer.text
    assert "input_tokens" in answer.json()
    (received,) = messages_upstreams.received["anthropic"]
    assert received.path == "/v1/messages/count_tokens"
    assert "x-toolcall-guard-outcome" not in answer.headers


def test_an_upstream_without_an_anthropic_base_is_named_in_anthropics_shape(
    messages_proxy: Start, messages_upstreams: Upstreams
) -> None:
    proxy = messages_proxy()
    for path in ("/openai/v1/messages", "/openai/v1/messages/count_tokens"):
        answer = post(proxy, body("gpt-5"), path)
        assert answer.status_code == 400
        error = answer.json()
        assert error["type"] == "error"
        assert error["error"]["type"] == "invalid_request_error"
        assert "'openai'" in error["error"]["message"]
        assert "anthropic_base_url" in error["error"]["message"]
    assert not messages_upstreams.scripted.seen


def test_a_malformed_body_is_refused_in_anthropics_shape_before_anything_is_sent(
    messages_proxy: Start, messages_upstreams: Upstreams
) -> None:
    proxy = messages_proxy()
    broken = {**body(), "messages": [{"role": "user", "content": [{"text": "no type"}]}]}
    for payload in (b"{nope", {"model": "claude-sonnet-4-5", "messages": []}, broken):
        answer = post(proxy, payload)
        assert answer.status_code == 400, answer.text
        assert answer.json()["type"] == "error"
        assert answer.json()["error"]["type"] == "invalid_request_error"
    assert "messages[0].content[0]" in answer.json()["error"]["message"]
    assert not messages_upstreams.received["anthropic"]


# --- keys --------------------------------------------------------------------------------------


def _scripted_headers(proxy: Proxy, upstreams: Upstreams, **headers: str) -> dict[str, str]:
    answer = post(proxy, body(), "/scripted/v1/messages", **headers)
    assert answer.status_code == 200, answer.text
    path, _, seen = upstreams.scripted.seen[-1]
    assert path == "/anthropic/v1/messages"
    return seen


def test_without_a_proxy_key_the_clients_keys_pass_through(
    messages_proxy: Start, messages_upstreams: Upstreams
) -> None:
    proxy = messages_proxy()
    seen = _scripted_headers(proxy, messages_upstreams, **{"x-api-key": "sk-ant-client-1"})
    assert seen["x-api-key"] == "sk-ant-client-1"
    assert seen["anthropic-version"] == HEADERS["anthropic-version"]
    seen = _scripted_headers(proxy, messages_upstreams, authorization="Bearer client-token-2")
    assert seen["authorization"] == "Bearer client-token-2"


def test_the_proxys_key_goes_as_x_api_key_and_the_clients_are_dropped(
    messages_proxy: Start, messages_upstreams: Upstreams, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-ant-proxy-key")
    proxy = messages_proxy(scripted={"api_key_env": KEY_ENV})
    headers = {"x-api-key": "sk-ant-client-1", "authorization": "Bearer client-token-2"}
    seen = _scripted_headers(proxy, messages_upstreams, **headers)
    assert seen["x-api-key"] == "sk-ant-proxy-key"
    assert "authorization" not in seen


def test_a_client_key_may_come_as_x_api_key_and_is_never_forwarded(
    messages_proxy: Start, messages_upstreams: Upstreams, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CLIENT_KEYS_ENV, "proxy-client-key")
    proxy = messages_proxy(server={"client_keys_env": CLIENT_KEYS_ENV})
    seen = _scripted_headers(proxy, messages_upstreams, **{"x-api-key": "proxy-client-key"})
    assert "x-api-key" not in seen
    assert "authorization" not in seen
    refused = post(proxy, body(), "/scripted/v1/messages", **{"x-api-key": "wrong"})
    assert refused.status_code == 401
    assert refused.json()["error"]["type"] == "authentication_error"
    assert "x-api-key" in refused.json()["error"]["message"]


def test_refusals_before_the_endpoint_come_in_anthropics_shape_too(
    messages_proxy: Start, messages_upstreams: Upstreams
) -> None:
    proxy = messages_proxy()
    answer = post(proxy, body(), host="evil.example")  # a foreign Host: the browser guard
    assert answer.status_code >= 400
    assert answer.json()["type"] == "error"
    assert set(answer.json()["error"]) >= {"type", "message"}
    assert not messages_upstreams.received["anthropic"]


# --- repair on reject ------------------------------------------------------------------------

MISSING = "messages_missing_tool_result"


def test_a_refusal_the_catalogue_knows_is_repaired_and_retried_once(
    messages_proxy: Start, messages_upstreams: Upstreams
) -> None:
    if MISSING not in ALL_RULES or not any(s.rule == MISSING for s in SIGNATURES):
        pytest.skip(f"{MISSING} and its refusal texts are not registered yet")
    policies = {"lenient": {"base": "anthropic", "rules": {MISSING: "warn"}}}
    proxy = messages_proxy(policies=policies, anthropic={"policy": "lenient"})
    interrupted = {
        **body(),
        "messages": [*body()["messages"][:2], {"role": "user", "content": "Go on."}],
    }
    answer = post(proxy, interrupted)
    assert answer.status_code == 200, answer.text
    assert answer.headers["x-toolcall-guard-retried"] == MISSING
    first, second = messages_upstreams.received["anthropic"]
    assert orjson.loads(first.body) == interrupted  # warned: sent as it was, and refused
    repaired = orjson.loads(second.body)["messages"]
    assert repaired[2]["content"][0]["type"] == "tool_result"
    assert repaired[2]["content"][0]["tool_use_id"] == "toolu_01A"
