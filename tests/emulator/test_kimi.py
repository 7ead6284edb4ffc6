"""Kimi emulator: exact status, shape and text per row; histories Kimi accepts pass."""

from __future__ import annotations

from typing import Any

import pytest

from proxy.emulator import validate
from tests.emulator import assistant, body, system, user
from tests.emulator.tier2 import answer, calls, fn_call, rejected, wire

K1 = (
    "an assistant message with 'tool_calls' must be followed by tool messages responding to each "
    "'tool_call_id'. The following tool_call_ids did not have response messages: "
)


def error(message: str) -> bytes:
    return wire({"error": {"message": message, "type": "invalid_request_error"}})


def thinking(*messages: Any) -> dict[str, Any]:
    return body(*messages, model="kimi-k2.5")


CASES: list[tuple[str, Any, bytes]] = [
    ("K1", body(user(), calls(fn_call("Shell:58")), user()), error(K1 + "Shell:58")),
    ("K1-two-missing", body(user(), calls(fn_call("Read:1"), fn_call("Agent:0"),
                                          fn_call("Read:2")), answer("Agent:0"), assistant()),
     error(K1 + "Read:1, Read:2")),
    ("K2-empty-id", body(user(), calls(fn_call("search_web:0")), answer("")),
     error("Invalid request: tool_call_id  is not found")),
    ("K2-orphan", body(user(), answer("search_web:0")),
     error("Invalid request: tool_call_id search_web:0 is not found")),
    ("K3", thinking(system(), user(), calls(fn_call("Shell:0")), answer("Shell:0"), user(),
                    calls(fn_call("Shell:1"), reasoning_content="r"), answer("Shell:1")),
     error("thinking is enabled but reasoning_content is missing in assistant tool call "
           "message at index 2")),
    ("K3-enabled-by-switch", body(user(), calls(fn_call("a:0")), answer("a:0"),
                                  model="kimi-k2-0905-preview", thinking={"type": "enabled"}),
     error("thinking is enabled but reasoning_content is missing in assistant tool call "
           "message at index 1")),
]  # fmt: skip


@pytest.mark.parametrize(("case", "request_body", "expected"), CASES, ids=[c[0] for c in CASES])
def test_rejection_is_kimis_byte_for_byte(case: str, request_body: Any, expected: bytes) -> None:
    assert rejected("kimi", request_body) == (400, expected, case.split("-", maxsplit=1)[0])


ACCEPTED = [
    ("ids-repeat-across-rounds", body(user(), calls(fn_call("search_web:0")),
                                      answer("search_web:0"), assistant(), user(),
                                      calls(fn_call("search_web:0")), answer("search_web:0"))),
    ("thinking-with-reasoning", thinking(user(), calls(fn_call("a:0"), reasoning_content="x"),
                                         answer("a:0"))),
    ("thinking-empty-reasoning", thinking(user(), calls(fn_call("a:0"), reasoning_content=""),
                                          answer("a:0"))),
    ("thinking-plain-turn", thinking(user(), assistant(), user())),
    ("thinking-disabled", body(user(), calls(fn_call("a:0")), answer("a:0"), model="kimi-k2.5",
                               thinking={"type": "disabled"})),
    ("non-thinking-model", body(user(), calls(fn_call("a:0")), answer("a:0"),
                                model="kimi-k2-0905-preview")),
    ("trailing-calls", body(user(), calls(fn_call("a:0")))),
    ("name-on-tool", body(user(), calls(fn_call("a:0")), answer("a:0", name="get_weather"))),
]  # fmt: skip


@pytest.mark.parametrize(("case", "request_body"), ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_history_kimi_accepts_is_accepted(case: str, request_body: Any) -> None:
    assert validate("kimi", request_body) is None
