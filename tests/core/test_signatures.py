"""The signature catalogue against every text it claims, in every envelope providers use."""

# ruff: noqa: E501 -- provider paths are quoted whole

from __future__ import annotations

import json
from typing import Any

import pytest

from proxy.core.errortext import Signature, candidates, loc_path, normal_path
from proxy.core.registry import ALL_RULES
from proxy.core.signatures import SIGNATURES, match
from tests.core.signature_texts import TEXTS, UNKNOWN, Text

#: Rule names catalogued for rules another engineer has not registered yet (Responses R15, R16).
#: When one lands, the test below fails until its name leaves this list.
PENDING = frozenset({"responses_upstream_tool_types", "responses_reasoning_passback"})


def envelopes(t: Text) -> dict[str, str]:
    """The text as providers send it: plain, OpenAI's object (with ``param``), Gemini's list,
    OpenRouter's ``metadata.raw``, DashScope's prefix, Ollama's string ``error``."""
    openai = {"error": {"message": t.text, "type": "invalid_request_error", "param": t.param}}
    gemini = [{"error": {"code": t.status, "message": t.text, "status": "INVALID_ARGUMENT"}}]
    relay = {
        "error": {
            "message": "Provider returned error",
            "code": t.status,
            "metadata": {"raw": json.dumps(openai), "provider_name": "Some"},
        }
    }
    shapes = {
        "plain": t.text,
        "openai": json.dumps(openai),
        "gemini": json.dumps(gemini),
        "openrouter": json.dumps(relay),
        "dashscope": "<400> InternalError.Algo.InvalidParameter: " + t.text,
        "ollama": json.dumps({"error": t.text}),
    }
    if t.text.startswith("{"):
        del shapes["dashscope"]  # a JSON body behind DashScope's prefix is not seen
    return shapes


def _covers(signature: Signature, row: str) -> bool:
    """Whether ``row`` (an evidence row of a test text) is the signature's or one it cites."""
    return row == signature.id or row in signature.evidence


def _id(t: Text) -> str:
    return f"{t.row}-{TEXTS.index(t)}"


@pytest.mark.parametrize("t", TEXTS, ids=_id)
def test_each_text_matches_its_row_in_every_envelope(t: Text) -> None:
    for shape, body in envelopes(t).items():
        found = match(t.status, body, t.api)
        assert found is not None, shape
        assert _covers(found.signature, t.row), (shape, found.signature.id)
        assert found.signature.statuses.count(t.status) == 1


@pytest.mark.parametrize("t", TEXTS, ids=_id)
def test_each_text_names_its_place(t: Text) -> None:
    """The place comes from the text, else from the envelope's ``param``."""
    for shape in ("openai", "openrouter"):
        found = match(t.status, envelopes(t)[shape].encode(), t.api)
        assert found is not None
        assert (found.index, found.field) == (t.index, t.field), shape


def test_every_row_is_tested_by_a_text() -> None:
    untested = [s.id for s in SIGNATURES if not any(_covers(s, t.row) for t in TEXTS)]
    assert untested == []
    assert len({s.id for s in SIGNATURES}) == len(SIGNATURES)  # ids are unique


def test_rules_are_registered_and_of_the_rows_api() -> None:
    named = {s.rule for s in SIGNATURES if s.rule is not None}
    assert named - set(ALL_RULES) == PENDING
    for s in SIGNATURES:
        if s.rule in ALL_RULES:
            expected = ALL_RULES[s.rule].api
            assert s.api in (expected, "any"), s.id
    assert {s.rule for s in SIGNATURES if s.strip} == {"unknown_message_field"}


@pytest.mark.parametrize(("status", "text"), UNKNOWN)
def test_texts_no_row_claims(status: int, text: str) -> None:
    assert match(status, text) is None


def test_api_keeps_its_own_rows_and_the_field_refusals() -> None:
    r2 = "No tool call found for function call output with call_id call_x."
    assert match(400, r2, "responses") is not None
    assert match(400, r2, "chat") is None
    unknown = "Unknown parameter: 'input[3].status'."
    found = match(400, unknown, "responses")
    assert found is not None
    assert (found.index, found.field) == (3, "input[3].status")


MISTRAL_422: dict[str, Any] = {
    "object": "error",
    "message": {
        "detail": [
            {
                "type": "extra_forbidden",
                "loc": ["body", "messages", 6, "assistant", "tool_calls", 0, "name"],
                "msg": "Extra inputs are not permitted",
                "input": None,
            },
            {
                "type": "extra_forbidden",
                "loc": ["body", "messages", 3, "assistant", "reasoning_content"],
                "msg": "Extra inputs are not permitted",
                "input": "…",
            },
        ]
    },
    "type": "invalid_request_error",
    "param": None,
    "code": None,
}


def test_mistral_422_loc_names_the_field() -> None:
    """providers-second-tier.md B1 (Mistral): the first ``loc`` is the place; the role tag
    pydantic puts after the index is not a key."""
    for body in (MISTRAL_422, {"detail": MISTRAL_422["message"]["detail"]}):
        found = match(422, json.dumps(body))
        assert found is not None
        assert found.signature.id == "MI7"
        assert (found.index, found.field) == (6, "messages[6].tool_calls[0].name")
    tools = {"detail": [{"type": "extra_forbidden", "loc": ["body", "tools"], "msg": "Extra "
                         "inputs are not permitted", "input": []}]}  # fmt: skip
    found = match(422, json.dumps(tools))
    assert found is not None
    assert found.field == "tools"


@pytest.mark.parametrize(
    ("loc", "path"),
    [
        (["body", "messages", 6, "assistant", "tool_calls", 0, "name"], "messages[6].tool_calls[0].name"),
        (["body", "messages", 2, "user", "metadata"], "messages[2].metadata"),
        (["body", "tools"], "tools"),
        (["messages", 0, "content", 1, "cache_control"], "messages[0].content[1].cache_control"),
    ],
)  # fmt: skip
def test_loc_path(loc: list[Any], path: str) -> None:
    assert loc_path(loc) == path


@pytest.mark.parametrize(
    ("given", "normal"),
    [
        ("messages.[3].role", "messages[3].role"),
        ("messages.2", "messages[2]"),
        ("messages.1.content.0", "messages[1].content[0]"),
        ("tools.8.type", "tools[8].type"),
        ("input[95].call_id", "input[95].call_id"),
        ("'messages[0].role'", "messages[0].role"),
    ],
)
def test_normal_path(given: str, normal: str) -> None:
    assert normal_path(given) == normal


def test_bodies_that_are_not_json_or_too_deep_or_huge() -> None:
    assert match(400, b"\xff\xfe\x00garbage") is None
    assert match(400, b"") is None
    assert candidates(b"") == []
    sentence = "Invalid assistant message: content or tool_calls must be set"
    deep = "[" * 100 + json.dumps(sentence) + "]" * 100
    assert len(candidates(deep)) == 1  # not opened beyond MAX_DEPTH: the raw text only
    assert match(400, deep) is not None  # which still holds the sentence
    nested = sentence
    for _ in range(6):  # a relay's raw in a relay's raw …
        nested = json.dumps(
            {"error": {"message": "Provider returned error", "metadata": {"raw": nested}}}
        )
    found = match(400, nested)
    assert found is not None
    assert found.text == sentence
    assert match(400, "[" * 60_000) is None  # the parser's own recursion limit
    late = b"x" * 1_000_000 + b"insufficient tool messages following tool_calls message"
    assert match(400, late) is None  # only the head is read
