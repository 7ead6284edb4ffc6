"""Mistral emulator: exact status, shape and text per row; histories Mistral accepts pass."""

from __future__ import annotations

from typing import Any

import pytest

from proxy.emulator import validate
from tests.emulator import assistant, body, system, user
from tests.emulator.tier2 import answer, calls, fn_call, rejected, wire

A, B = "aB3dE5gH7", "Zy9xW8vU7"


def error(message: str, type_: str, code: str | None) -> bytes:
    return wire({"object": "error", "message": message, "type": type_, "param": None,
                 "code": code})  # fmt: skip


def order(message: str) -> bytes:
    return error(message, "invalid_request_message_order", "3230")


def detail(*items: dict[str, Any]) -> bytes:
    return wire({"object": "error", "message": {"detail": list(items)},
                 "type": "invalid_request_error", "param": None, "code": None})  # fmt: skip


def extra(loc: list[Any], value: Any) -> dict[str, Any]:
    return {"type": "extra_forbidden", "loc": ["body", "messages", *loc],
            "msg": "Extra inputs are not permitted", "input": value}  # fmt: skip


BAD_ID = "Tool call id was {} but must be a-z, A-Z, 0-9, with a length of 9."
COUNTS = "Not the same number of function calls and responses"

# (id, request, status, exact body)
CASES: list[tuple[str, Any, int, bytes]] = [
    ("M1-call-id", body(user(), calls(fn_call("turn1_0")), answer("turn1_0")), 400,
     error(BAD_ID.format("turn1_0"), "invalid_function_call", "3280")),
    ("M1-result-id", body(user(), calls(fn_call(A)), answer("call_98660886")), 400,
     error(BAD_ID.format("call_98660886"), "invalid_function_call", "3280")),
    ("M2-user-after-tool", body(user(), calls(fn_call(A)), answer(A), user()), 400,
     order("Unexpected role 'user' after role 'tool'")),
    ("M2-tool-after-user", body(user(), answer(A)), 400,
     order("Unexpected role 'tool' after role 'user'")),
    ("M2-tool-after-system", body(system(), answer(A)), 400,
     order("Unexpected role 'tool' after role 'system'")),
    ("M3-missing-result", body(user(), calls(fn_call(A), fn_call(B)), answer(A)), 400,
     order(COUNTS)),
    ("M3-reused-id", body(user(), calls(fn_call(A)), answer(A), answer(A)), 400, order(COUNTS)),
    ("M4-neither", body(user(), {"role": "assistant", "content": ""}, user()), 400,
     error("Assistant message must have either content or tool_calls, but not none.",
           "invalid_request_error", None)),
    ("M5-last-assistant", body(user(), assistant()), 400,
     order("Expected last role User or Tool (or Assistant with prefix True) for serving but got "
           "assistant")),
    ("M6-tool-call-name", body(user(), calls({**fn_call(A), "name": None}), answer(A)), 422,
     detail(extra([1, "assistant", "tool_calls", 0, "name"], None))),
    ("M6-reasoning-content", body(user(), calls(fn_call(A), reasoning_content="\n"), answer(A)),
     422, detail(extra([1, "assistant", "reasoning_content"], "\n"))),
    ("M6-all-listed", body({**user(), "name": ""}, {**assistant(), "metadata": {"a": 1}},
                           user()), 422,
     detail(extra([0, "user", "name"], ""), extra([1, "assistant", "metadata"], {"a": 1}))),
]  # fmt: skip


@pytest.mark.parametrize(("case", "request_body", "status", "expected"), CASES,
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_rejection_is_mistrals_byte_for_byte(
    case: str, request_body: Any, status: int, expected: bytes
) -> None:
    got_status, got_body, rule = rejected("mistral", request_body)
    assert (got_status, got_body) == (status, expected)
    assert rule == case.split("-", maxsplit=1)[0]


def test_the_reported_loc_of_the_zeroclaw_history() -> None:
    # zeroclaw-labs/zeroclaw#2693: a "name" inside tool_calls[0] of messages[6]
    history = [system(), user(), calls(fn_call(A)), answer(A), assistant(), user(),
               calls({**fn_call(B), "name": None}), answer(B)]  # fmt: skip
    status, raw, _ = rejected("mistral", body(*history))
    assert status == 422
    assert raw == detail(extra([6, "assistant", "tool_calls", 0, "name"], None))


ACCEPTED = [
    ("round-trip", [system(), user(), calls(fn_call(A)), answer(A)]),
    ("parallel", [user(), calls(fn_call(A), fn_call(B)), answer(B), answer(A)]),
    ("then-text-then-user", [user(), calls(fn_call(A)), answer(A), assistant(), user()]),
    ("content-null-with-calls", [user(), calls(fn_call(A), content=None), answer(A)]),
    ("content-and-calls", [user(), calls(fn_call(A), content="Let me check."), answer(A)]),
    ("tool-name-and-index", [user(), calls(fn_call(A, index=0)), answer(A, name="get_weather")]),
    ("object-arguments", [user(), calls(fn_call(A, arguments={"city": "Paris"})), answer(A)]),
    ("prefix-assistant-last", [user(), {**assistant(), "prefix": True}]),
    ("two-users", [system(), user(), user()]),
    ("single-system", [system()]),
]  # fmt: skip


@pytest.mark.parametrize(("case", "messages"), ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_history_mistral_accepts_is_accepted(case: str, messages: list[Any]) -> None:
    assert validate("mistral", body(*messages, model="mistral-large-latest")) is None
