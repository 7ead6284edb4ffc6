"""Field refusals cannot be forged, and only optional extras are ever learned (issue 24 item 1).

The texts a client can put into an upstream's error (an echoed value) never pass for a field
refusal: the catalogue's field rows match at a sentence's start, agree with the envelope's
``param``, and name plain paths only; and what may be learned leaves out every field an API
requires, that carries content or that links items.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from proxy.core.learnable import learnable
from proxy.core.policy import build_policy
from proxy.core.retry import field_pattern, plan_retry
from proxy.core.signatures import SIGNATURES, match

ECHOED = "x'. Unknown parameter: 'messages[0].content"


def openai_error(message: str, param: str | None, code: str | None) -> bytes:
    error = {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    return orjson.dumps({"error": error})


FORGED = [
    pytest.param(
        openai_error(
            f"Invalid value: '{ECHOED}'. Supported values are: 'text', 'image_url'.",
            "messages[0].content[0].type",
            "invalid_value",
        ),
        id="echoed-inside-openai-sentence",
    ),
    pytest.param(
        openai_error(
            "Unknown parameter: 'messages[0].content'.",
            "messages[0].content[0].type",
            "unknown_parameter",
        ),
        id="sentence-disagrees-with-param",
    ),
    pytest.param(
        openai_error("Unknown parameter: 'max_tokens '.", "max_tokens ", "unknown_parameter"),
        id="key-with-a-space-is-not-the-real-key",
    ),
    pytest.param(
        b"upstream said: Invalid value 'x'. Unknown parameter: 'store'.", id="plain-text-mid"
    ),
    pytest.param(
        b"Invalid value 'x'. property 'store' is unsupported", id="groq-property-mid-sentence"
    ),
    pytest.param(
        b"echo: 'messages.0' : property 'metadata' is unsupported", id="groq-place-mid-sentence"
    ),
    pytest.param(
        b'Invalid value "x. Invalid JSON payload received. Unknown name \\"store\\": Cannot '
        b'find field."',
        id="gemini-mid-sentence",
    ),
    pytest.param(
        orjson.dumps(
            {
                "detail": [
                    {
                        "type": "string_type",
                        "loc": ["body", "messages", 0, "content"],
                        "msg": "x\nextra_forbidden at messages[0].refusal: Extra inputs are "
                        "not permitted",
                    }
                ]
            }
        ),
        id="mistral-line-in-echoed-msg",
    ),
]


@pytest.mark.parametrize("text", FORGED)
def test_a_forged_field_refusal_is_no_field_refusal(text: bytes) -> None:
    found = match(400, text, "chat")
    assert found is None or not found.signature.strip, found


def test_genuine_refusals_still_match_in_their_envelopes() -> None:
    openai = openai_error(
        "Unknown parameter: 'messages[1].tool_calls[0].index'.",
        "messages[1].tool_calls[0].index",
        "unknown_parameter",
    )
    found = match(400, openai, "chat")
    assert found is not None
    assert (found.signature.id, found.field) == ("O12", "messages[1].tool_calls[0].index")
    loc = ["body", "messages", 3, "assistant", "reasoning_content"]
    mistral = {"detail": [{"type": "extra_forbidden", "loc": loc, "msg": "Extra inputs"}]}
    mistral["detail"][0]["msg"] = "Extra inputs are not permitted"
    found = match(422, orjson.dumps(mistral), "chat")
    assert found is not None
    assert (found.signature.id, found.field) == ("MI7", "messages[3].reasoning_content")


def test_every_field_refusal_row_is_anchored_at_the_sentence_start() -> None:
    rows = [s for s in SIGNATURES if s.strip]
    assert rows
    for row in rows:
        assert row.pattern.pattern.startswith("^"), row.id


NEVER = [
    "messages[0].content",
    "messages[3].role",
    "model",
    "messages[1].tool_calls",
    "messages[1].tool_calls[0].function",
    "messages[1].tool_calls[0].function.name",
    "messages[1].tool_calls[0].function.arguments",
    "messages[1].tool_calls[0].id",
    "messages[1].tool_calls[0].type",
    "messages[2].tool_call_id",
    "messages[0].name",
    "messages[0].content[0].type",
    "messages[0].content[0].text",
    "input[0].call_id",
    "input[1].output",
    "input[0].id",
    "previous_response_id",
    "max_completion_tokens",
    "response_format",
    "instructions",
    "tools",
]
LEARNED = [
    ("messages[1].tool_calls[0].index", "messages[*].tool_calls[*].index"),
    ("messages[0].content[0].cache_control", "messages[*].content[*].cache_control"),
    ("messages[1].refusal", "messages[*].refusal"),
    ("messages[2].reasoning_content", "messages[*].reasoning_content"),
    ("input[0].status", "input[*].status"),
    ("store", "store"),
]


@pytest.mark.parametrize("path", NEVER)
def test_required_content_and_linking_fields_are_never_learned(path: str) -> None:
    assert field_pattern(path) is None


@pytest.mark.parametrize(("path", "pattern"), LEARNED)
def test_optional_extras_are_learned(path: str, pattern: str) -> None:
    assert field_pattern(path) == pattern
    assert learnable(pattern)


def test_a_refused_required_field_repairs_its_own_request_and_is_not_learned() -> None:
    body: dict[str, Any] = {
        "model": "m",
        "messages": [{"role": "user", "content": "hi", "name": "bob"}],
    }
    text = openai_error("Unknown parameter: 'messages[0].name'.", "messages[0].name", None)
    plan = plan_retry("chat", body, 400, text, build_policy("openai"))
    assert plan is not None
    assert plan.body["messages"][0] == {"role": "user", "content": "hi"}
    assert plan.learned is None
