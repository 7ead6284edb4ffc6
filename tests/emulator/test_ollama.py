"""Ollama emulator (/v1): argument types, conversion errors, Mistral-family result ids."""

from __future__ import annotations

from typing import Any

import pytest

from proxy.emulator import validate
from tests.emulator import assistant, body, system, user
from tests.emulator.tier2 import answer, calls, fn_call, rejected, wire

MISTRAL = "mistral-small3.2"


def error(message: str) -> bytes:
    return wire({"error": {"message": message, "type": "invalid_request_error", "param": None,
                           "code": None}})  # fmt: skip


CASES: list[tuple[str, Any, bytes]] = [
    ("L1", body(user(), calls(fn_call("call_a", arguments={"city": "Paris"})), answer("call_a")),
     error("json: cannot unmarshal object into Go struct field "
           ".messages.tool_calls.function.arguments of type string")),
    ("L1-before-any-conversion", body({"role": "user", "content": None},
                                      calls(fn_call("call_a", arguments=[1]))),
     error("json: cannot unmarshal array into Go struct field "
           ".messages.tool_calls.function.arguments of type string")),
    ("L2", body(user(), calls(fn_call("call_a", arguments="")), answer("call_a")),
     error("invalid tool call arguments")),
    ("L2-not-an-object", body(user(), calls(fn_call("call_a", arguments="[1]"))),
     error("invalid tool call arguments")),
    ("L3", body(user(), calls(fn_call("a1b2c3d4e")), answer("b87624841"), model=MISTRAL),
     error("Unexpected tool call id b87624841 in tool results")),
    ("L4", body({"role": "user", "content": None}), error("invalid message content type: <nil>")),
    ("L4-part", body({"role": "user", "content": [{"type": "input_audio"}]}),
     error("invalid message format")),
]  # fmt: skip


@pytest.mark.parametrize(("case", "request_body", "expected"), CASES, ids=[c[0] for c in CASES])
def test_rejection_is_ollamas_byte_for_byte(case: str, request_body: Any, expected: bytes) -> None:
    assert rejected("ollama", request_body) == (400, expected, case.split("-", maxsplit=1)[0])


ACCEPTED = [
    ("round-trip", body(system(), user(), calls(fn_call("call_a"), content=None),
                        answer("call_a"), assistant(), user(), model="llama3.2")),
    ("null-arguments", body(user(), calls(fn_call("call_a", arguments="null")), answer("call_a"))),
    ("llama-foreign-result-id", body(user(), calls(fn_call("call_a")), answer("call_b"),
                                     model="llama3.2")),
    ("mistral-matching-ids", body(user(), calls(fn_call("a1b2c3d4e")), answer("a1b2c3d4e"),
                                  model=MISTRAL)),
    ("unknown-keys-ignored", body({**user(), "timestamp": 1})),
]  # fmt: skip


@pytest.mark.parametrize(("case", "request_body"), ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_history_ollama_accepts_is_accepted(case: str, request_body: Any) -> None:
    assert validate("ollama", request_body) is None
