"""vLLM emulator: arguments, empty tools, Gemma alternation, mistral-common on Mistral models."""

from __future__ import annotations

from typing import Any

import pytest

from proxy.emulator import validate
from tests.emulator import assistant, body, system, user
from tests.emulator.tier2 import answer, calls, fn_call, rejected, wire

GEMMA, QWEN, DEVSTRAL = "google/gemma-3-27b-it", "Qwen/Qwen3-8B", "mistralai/Devstral-Small-2507"
PAIRS = "TypeError: Can only get item pairs from a mapping."


def error(message: str) -> bytes:
    return wire({"error": {"message": message, "type": "BadRequestError", "param": None,
                           "code": 400}})  # fmt: skip


CASES: list[tuple[str, Any, bytes]] = [
    ("V1", body(user(), calls(fn_call("call_a", arguments='{"path": "/tmp')), answer("call_a"),
                model=QWEN),
     error("json.decoder.JSONDecodeError: Unterminated string starting at: line 1 column 10 "
           "(char 9)")),
    ("V1-empty", body(user(), calls(fn_call("call_a", arguments="")), answer("call_a")),
     error("json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)")),
    ("V2-list", body(user(), calls(fn_call("call_a", arguments="[1]")), answer("call_a")),
     error(PAIRS)),
    ("V2-string", body(user(), calls(fn_call("call_a", arguments='"x"')), answer("call_a")),
     error(PAIRS)),
    ("V3", body(user(), tools=[]), error("Value error, `tools` must not be an empty array.")),
    ("V4-two-users", body(system(), user(), user(), model=GEMMA),
     error("Conversation roles must alternate user/assistant/user/assistant/...")),
    ("V4-tool-turn", body(user(), calls(fn_call("call_a")), answer("call_a"), model=GEMMA),
     error("Conversation roles must alternate user/assistant/user/assistant/...")),
    ("M2", body(user(), calls(fn_call("aB3dE5gH7")), answer("aB3dE5gH7"), user(),
                model=DEVSTRAL),
     error("Unexpected role 'user' after role 'tool'")),
    ("M1", body(user(), calls(fn_call("call_49c89af0")), answer("call_49c89af0"),
                model=DEVSTRAL),
     error("Tool call id was call_49c89af0 but must be a-z, A-Z, 0-9, with a length of 9.")),
]  # fmt: skip


@pytest.mark.parametrize(("case", "request_body", "expected"), CASES, ids=[c[0] for c in CASES])
def test_rejection_is_vllms_byte_for_byte(case: str, request_body: Any, expected: bytes) -> None:
    assert rejected("vllm", request_body) == (400, expected, case.split("-", maxsplit=1)[0])


ACCEPTED = [
    ("qwen-any-order", body(user(), answer("x"), user(), assistant(), assistant(), model=QWEN)),
    ("object-arguments", body(user(), calls(fn_call("call_a", arguments='{"a": 1}')),
                              answer("call_a"), model=QWEN)),
    ("dict-arguments", body(user(), calls(fn_call("call_a", arguments={"a": 1})),
                            answer("call_a"), model=QWEN)),
    ("gemma-alternating", body(system(), user(), assistant(), user(), model=GEMMA)),
    ("devstral-round-trip", body(system(), user(), calls(fn_call("aB3dE5gH7")),
                                 answer("aB3dE5gH7"), model=DEVSTRAL)),
    ("devstral-extra-keys", body(user(), {**assistant(), "reasoning_content": "r"}, user(),
                                 model=DEVSTRAL)),
]  # fmt: skip


@pytest.mark.parametrize(("case", "request_body"), ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_history_vllm_accepts_is_accepted(case: str, request_body: Any) -> None:
    assert validate("vllm", request_body) is None
