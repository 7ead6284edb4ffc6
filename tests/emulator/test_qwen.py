"""DashScope (Qwen) emulator: OpenAI's rules under DashScope's prefix and shape."""

from __future__ import annotations

import json
from typing import Any

import pytest

from proxy.emulator import validate
from tests.emulator import assistant, body, system, user
from tests.emulator.tier2 import answer, calls, fn_call, rejected

PREFIX = "<400> InternalError.Algo.InvalidParameter: "
Q1 = 'messages with role "tool" must be a response to a preceeding message with "tool_calls".'
Q2 = (
    'An assistant message with "tool_calls" must be followed by tool messages responding to each '
    '"tool_call_id". The following tool_call_ids did not have response messages: '
)

CASES: list[tuple[str, Any, str]] = [
    ("Q1", body(user(), answer("call_a")), Q1),
    ("Q1-unknown-id", body(user(), calls(fn_call("call_a")), answer("call_b")), Q1),
    ("Q2", body(system(), user(), calls(fn_call("call_a")), user()),
     Q2 + "message[2].role"),
    ("Q3", body({"role": "developer", "content": "x"}, user()),
     "developer is not one of ['system', 'assistant', 'user', 'tool', 'function'] - "
     "'messages.[0].role'"),
    ("Q4", body(user(), {"role": "assistant", "content": "x", "tool_calls": []}),
     "Empty tool_calls is not supported in message"),
    ("Q5", body({"role": "user", "content": {"text": "x"}}),
     "Invalid type for 'messages.[0].content': expected one of a string or array of objects, "
     "but got an object instead."),
]  # fmt: skip


@pytest.mark.parametrize(("case", "request_body", "text"), CASES, ids=[c[0] for c in CASES])
def test_rejection_is_dashscopes(case: str, request_body: Any, text: str) -> None:
    status, raw, rule = rejected("qwen", request_body)
    assert (status, rule) == (400, case.split("-", maxsplit=1)[0])
    payload = json.loads(raw)
    assert list(payload) == ["error", "id", "request_id"]
    assert payload["error"] == {"message": PREFIX + text, "type": "invalid_request_error",
                                "param": None, "code": "invalid_parameter_error"}  # fmt: skip
    assert payload["id"].startswith("chatcmpl-")
    assert raw.startswith(b'{"error":{"message":"<400> InternalError.Algo.InvalidParameter: ')


ACCEPTED = [
    ("round-trip", [system(), user(), calls(fn_call("call_a")), answer("call_a"), assistant()]),
    ("function-role", [user(), {"role": "function", "name": "f", "content": "x"}]),
    ("content-parts", [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]),
    ("trailing-calls", [user(), calls(fn_call("call_a"), content=None)]),
    ("unknown-keys", [user(), {**assistant(), "reasoning_content": "r"}, user()]),
]  # fmt: skip


@pytest.mark.parametrize(("case", "messages"), ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_history_dashscope_accepts_is_accepted(case: str, messages: list[Any]) -> None:
    assert validate("qwen", body(*messages, model="qwen-plus")) is None
