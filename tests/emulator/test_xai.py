"""xAI emulator: exact status, shape and text per row."""

from __future__ import annotations

from typing import Any

import pytest

from proxy.emulator import validate
from tests.emulator import assistant, body, system, user
from tests.emulator.tier2 import answer, calls, fn_call, rejected, wire

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]


def error(message: str) -> bytes:
    return wire({"code": "Client specified an invalid argument", "error": message})


def bad_arguments(call_id: str, serde: str) -> bytes:
    return error(f"The arguments to a tool_call with ID '{call_id}' are not a valid JSON string. "
                 f"Parsing error: {serde}")  # fmt: skip


CASES: list[tuple[str, Any, bytes]] = [
    ("X1-system", body({**system(), "name": "sys"}, user()),
     error("Only messages of role 'user' can have a name.")),
    ("X1-tool", body(user(), calls(fn_call("call_a")), answer("call_a", name="get_weather")),
     error("Only messages of role 'user' can have a name.")),
    ("X2-empty", body(user(), calls(fn_call("initial_list_datasets", arguments="")),
                      answer("initial_list_datasets")),
     bad_arguments("initial_list_datasets",
                   'Error("EOF while parsing a value", line: 1, column: 0)')),
    ("X2-truncated", body(user(), calls(fn_call("call_a", arguments='{"path": "/tm')),
                          answer("call_a")),
     bad_arguments("call_a", 'Error("EOF while parsing a string", line: 1, column: 13)')),
    ("X3", body({"role": "user", "content": [{"type": "text", "text": "a"},
                                             {"type": "text", "text": "b"}]}),
     error("The model expects a single `text` element per message.")),
    ("X4", body({"role": "user", "content": []}),
     error("Invalid request content: Each message must have at least one content element.")),
    ("X4-caller", body(user(), calls(fn_call("call_a"), content=None), answer("call_a")),
     error("Invalid request content: Each message must have at least one content element.")),
    ("X5", body(user(), tool_choice="auto"),
     error("Invalid request content: A tool_choice was set on the request but no tools were "
           "specified.")),
]  # fmt: skip


@pytest.mark.parametrize(("case", "request_body", "expected"), CASES, ids=[c[0] for c in CASES])
def test_rejection_is_xais_byte_for_byte(case: str, request_body: Any, expected: bytes) -> None:
    assert rejected("xai", request_body) == (400, expected, case.split("-", maxsplit=1)[0])


ACCEPTED = [
    ("round-trip", body(system(), {**user(), "name": "ann"}, calls(fn_call("call_a"),
                                                                   content=""),
                        answer("call_a"), assistant(), user(), tools=TOOLS, tool_choice="auto")),
    ("json-arguments", body(user(), calls(fn_call("call_a", arguments='{"a": [1, 2]}')),
                            answer("call_a"))),
    ("text-and-image", body({"role": "user", "content": [
        {"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "x"}}]})),
]  # fmt: skip


@pytest.mark.parametrize(("case", "request_body"), ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_history_xai_accepts_is_accepted(case: str, request_body: Any) -> None:
    assert validate("xai", request_body) is None
