"""POST /v1/chat/completions through the proxy: clean, repaired, rejected, malformed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from proxy.app import create_app
from proxy.core.chat.rules import RULES
from proxy.emulator import validate
from tests.e2e.conftest import Proxy, Upstream, proxy_settings
from tests.servers import running

USER = {"role": "user", "content": "Read a.txt"}
CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'},
}
ORPHAN = [
    USER,
    {"role": "assistant", "content": ""},
    {"role": "tool", "tool_call_id": "call_1", "content": "hello"},
]


def test_a_clean_history_reaches_the_upstream_byte_for_byte(
    proxy: Proxy, upstreams: dict[str, Upstream]
) -> None:
    # Odd spacing, key order and escapes: any re-serialisation would change these bytes.
    raw = (
        b'{ "messages" : [ {"content":"Read a.txt \\u00e9\\/", "role":"user"},\n'
        b' {"role":"assistant","content":null,"tool_calls":[{"type":"function","id":"call_1",'
        b'"function":{"name":"read_file","arguments":"{\\"path\\": \\"a.txt\\"}"}}]},'
        b' {"role":"tool","tool_call_id":"call_1","content":"hello"} ],\t"model":"gpt-4o" }'
    )
    response = proxy.chat(raw)
    assert response.status_code == 200, response.text
    assert response.headers["x-toolcall-guard-outcome"] == "clean"
    assert "x-toolcall-guard-rules" not in response.headers
    assert "x-toolcall-guard-record" not in response.headers
    [received] = upstreams["openai"].chats()
    assert received.body == raw
    assert received.headers["content-length"] == str(len(raw))


def test_a_broken_history_is_repaired_and_accepted(
    proxy: Proxy, upstreams: dict[str, Upstream]
) -> None:
    body = {"model": "gpt-4o", "messages": ORPHAN}
    assert validate("openai", body) is not None  # the upstream itself would refuse it

    response = proxy.chat(body)

    assert response.status_code == 200, response.text
    assert response.headers["x-toolcall-guard-outcome"] == "repaired"
    assert response.headers["x-toolcall-guard-rules"] == "orphan_tool_result=1"
    assert len(response.headers["x-toolcall-guard-record"]) == 36  # a UUID
    [received] = upstreams["openai"].chats()
    forwarded = orjson.loads(received.body)
    assert validate("openai", forwarded) is None
    assert forwarded["model"] == "gpt-4o"
    assert received.headers["content-length"] == str(len(received.body))
    assert response.json()["object"] == "chat.completion"


def test_an_impossible_history_is_rejected_naming_index_rule_and_fix(
    proxy: Proxy, upstreams: dict[str, Upstream]
) -> None:
    body = {"model": "gpt-4o", "messages": [USER, {"role": "robot", "content": "beep"}]}

    response = proxy.chat(body)

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["code"] == "invalid_tool_history"
    assert error["param"] == "messages[1].role"
    assert "messages[1]" in error["message"]
    assert "unknown_role" in error["message"]
    assert RULES["unknown_role"].hint in error["message"]
    assert error["findings"] == [
        {
            "rule": "unknown_role",
            "action": "reject",
            "path": "messages[1].role",
            "detail": error["findings"][0]["detail"],
            "hint": RULES["unknown_role"].hint,  # the shape of check --format json too
        }
    ]
    assert response.headers["x-toolcall-guard-outcome"] == "rejected"
    assert response.headers["x-toolcall-guard-rules"] == "unknown_role=1"
    assert "x-toolcall-guard-record" in response.headers
    assert upstreams["openai"].chats() == []


@pytest.mark.parametrize(
    ("body", "param", "words"),
    [
        (b'{"model": "gpt-4o", "messages": [', None, "not valid JSON"),
        (b"[1, 2]", None, "JSON object"),
        (b'{"model": "gpt-4o"}', "messages", "required"),
        (b'{"model": "gpt-4o", "messages": {}}', "messages", "array"),
        (b'{"model": "gpt-4o", "messages": []}', "messages", "empty"),
        (b'{"model": "gpt-4o", "messages": [{"role": "user"}, 3]}', "messages[1]", "object"),
        (b'{"model": "gpt-4o", "messages": [{"content": "x"}]}', "messages[0].role", "role"),
    ],
    ids=["not-json", "not-object", "no-messages", "not-list", "empty", "not-a-message", "no-role"],
)
def test_bodies_no_policy_can_work_on_get_400(
    proxy: Proxy,
    upstreams: dict[str, Upstream],
    body: bytes,
    param: str | None,
    words: str,
) -> None:
    response = proxy.chat(body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param
    assert words in error["message"]
    assert upstreams["openai"].received == []


def _nested(depth: int) -> bytes:
    return b'{"model":"gpt-4o","messages":[{"role":"user","content":"x","meta":' + (
        b"[" * depth + b"]" * depth + b"}]}"
    )


TIGHT = {
    "max_body_bytes": 4096,
    "max_messages": 3,
    "max_tool_calls_per_message": 2,
    "max_json_depth": 8,
    "allow_mode_header": True,
}


@pytest.fixture(scope="module")
def tight(emulators: dict[str, Upstream], http: httpx.Client) -> Iterator[tuple[Proxy, Upstream]]:
    """A proxy with small limits and the mode header allowed, in front of the openai emulator."""
    upstream = emulators["openai"]
    app = create_app(proxy_settings({"openai": upstream.url}, server=TIGHT))
    with running(app) as url:
        yield Proxy(url, app, http), upstream


@pytest.fixture
def limited(tight: tuple[Proxy, Upstream]) -> tuple[Proxy, Upstream]:
    tight[1].received.clear()
    return tight


@pytest.mark.parametrize(
    ("body", "status", "param"),
    [
        ({"model": "m", "messages": [USER], "pad": "x" * 5000}, 413, None),
        ({"model": "gpt-4o", "messages": [USER] * 4}, 413, "messages"),
        (
            {
                "model": "gpt-4o",
                "messages": [
                    USER,
                    {
                        "role": "assistant",
                        "tool_calls": [{**CALL, "id": f"c{i}"} for i in range(3)],
                    },
                ],
            },
            413,
            "messages[1].tool_calls",
        ),
        (_nested(6), 400, None),
    ],
    ids=["body-size", "messages", "tool-calls", "depth"],
)
def test_limits(limited: tuple[Proxy, Upstream], body: Any, status: int, param: str | None) -> None:
    proxy, upstream = limited
    response = proxy.chat(body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["param"] == param
    assert "server.max_" in error["message"]  # names the setting to change
    assert upstream.received == []


def test_nesting_within_the_limit_passes(limited: tuple[Proxy, Upstream]) -> None:
    proxy, upstream = limited
    # body {  messages [  message {  meta [[[[ ]]]] : 7 levels
    response = proxy.chat(_nested(4))
    assert response.headers["x-toolcall-guard-outcome"] in ("clean", "repaired")
    assert upstream.chats() != []


def test_mode_header_is_ignored_unless_allowed(
    proxy: Proxy, upstreams: dict[str, Upstream]
) -> None:
    body = {"model": "gpt-4o", "messages": ORPHAN}
    response = proxy.chat(body, headers={"x-toolcall-guard-mode": "off"})
    assert response.headers["x-toolcall-guard-outcome"] == "repaired"
    assert "x-toolcall-guard-mode" not in upstreams["openai"].chats()[0].headers


@pytest.mark.parametrize(
    ("mode", "status", "outcome"),
    [
        ("observe", 400, "warned"),
        ("strict", 400, "rejected"),
        ("off", 400, "clean"),
        ("repair", 200, "repaired"),
    ],
)
def test_mode_header_when_allowed(
    limited: tuple[Proxy, Upstream], mode: str, status: int, outcome: str
) -> None:
    proxy, upstream = limited
    body = {"model": "gpt-4o", "messages": ORPHAN}
    response = proxy.chat(body, headers={"x-toolcall-guard-mode": mode})
    assert response.status_code == status
    assert response.headers["x-toolcall-guard-outcome"] == outcome
    if mode in ("observe", "off"):  # forwarded unchanged: the upstream's own 400 comes back
        assert orjson.loads(upstream.chats()[0].body) == body
        assert "preceeding" in response.json()["error"]["message"]


def test_unknown_mode_is_400_when_allowed(limited: tuple[Proxy, Upstream]) -> None:
    proxy, _ = limited
    body = {"model": "gpt-4o", "messages": [USER]}
    response = proxy.chat(body, headers={"x-toolcall-guard-mode": "yolo"})
    assert response.status_code == 400
    assert "repair, observe, strict, off" in response.json()["error"]["message"]
