"""Groq emulator: the per-role schema errors, exact status, shape and text."""

from __future__ import annotations

from typing import Any

import pytest

from proxy.emulator import validate
from tests.emulator import assistant, body, system, user
from tests.emulator.tier2 import answer, calls, fn_call, rejected, wire


def error(message: str) -> bytes:
    return wire({"error": {"message": message, "type": "invalid_request_error"}})


def satisfied(i: int, role: str, path: str, problem: str) -> bytes:
    return error(f"'messages.{i}' : for 'role:{role}' the following must be satisfied"
                 f"[('{path}' : {problem})]")  # fmt: skip


CASES: list[tuple[str, Any, bytes]] = [
    ("GQ1-reasoning-content", body(user(), {**assistant(), "reasoning_content": "r"}, user()),
     satisfied(1, "assistant", "messages.1", "property 'reasoning_content' is unsupported")),
    ("GQ1-timestamp", body({**user(), "timestamp": 1}),
     satisfied(0, "user", "messages.0", "property 'timestamp' is unsupported")),
    ("GQ1-tool-calls-on-user", body({**user(), "tool_calls": []}),
     satisfied(0, "user", "messages.0",
               "property 'tool_calls' is unsupported, did you mean 'tool_call_id'?")),
    ("GQ1-id", body({**user(), "id": "m1"}),
     satisfied(0, "user", "messages.0", "property 'id' is unsupported, did you mean 'role'?")),
    ("GQ1-index-in-call", body(user(), calls(fn_call("call_a", index=0)), answer("call_a")),
     satisfied(1, "assistant", "messages.1.tool_calls.0", "property 'index' is unsupported")),
    ("GQ2-tool-call-id", body(user(), calls(fn_call("call_a")),
                              {"role": "tool", "content": "x"}),
     satisfied(2, "tool", "messages.2.tool_call_id", "property 'tool_call_id' is missing")),
    ("GQ2-type", body(user(), calls({"id": "call_a", "function": {"name": "f",
                                                                    "arguments": "{}"}})),
     satisfied(1, "assistant", "messages.1.tool_calls.0.type", "property 'type' is missing")),
    ("GQ3", body({**system(), "name": "sys"}, user()),
     satisfied(0, "system", "messages.0", "property 'name' is unsupported")),
    ("GQ4", body(user(), calls(fn_call("call_a")), answer("call_a"),
                 model="openai/gpt-oss-120b"), error("Tools should have a name!")),
    ("GQ5", body(user(), calls(fn_call("call_a")), answer("call_a") | {"content": None}),
     satisfied(2, "tool", "messages.2.content", "value must be a string")),
]  # fmt: skip


@pytest.mark.parametrize(("case", "request_body", "expected"), CASES, ids=[c[0] for c in CASES])
def test_rejection_is_groqs_byte_for_byte(case: str, request_body: Any, expected: bytes) -> None:
    assert rejected("groq", request_body) == (400, expected, case.split("-", maxsplit=1)[0])


ACCEPTED = [
    ("round-trip", body(system(), user(), calls(fn_call("call_a"), content=None),
                        answer("call_a"), assistant(), user())),
    ("gpt-oss-named-results", body(user(), calls(fn_call("call_a")),
                                   answer("call_a", name="get_weather"),
                                   model="openai/gpt-oss-20b")),
    ("content-parts", body({"role": "user", "content": [{"type": "text", "text": "hi"}]})),
]  # fmt: skip


@pytest.mark.parametrize(("case", "request_body"), ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_history_groq_accepts_is_accepted(case: str, request_body: Any) -> None:
    assert validate("groq", request_body) is None
