"""Gemini emulator: one minimal broken history per provider-rules.md row, exact status and body."""

from __future__ import annotations

import json
from typing import Any

import pytest

from proxy.emulator import validate
from tests.emulator import asks, assistant, body, call, result, signed, system, user

GENERIC = "Request contains an invalid argument."
G3 = "gemini-3-pro-preview"
G6 = (
    "Please ensure that function call turn comes immediately after a user turn or after a "
    "function response turn."
)
G7 = (
    "Please ensure that the number of function response parts is equal to the number of "
    "function call parts of the function call turn."
)
G8 = "Please ensure that function response turn comes immediately after a function call turn."
G11 = (
    "Unable to submit request because it has an empty text parameter. Add a value to the "
    "parameter and try again. Learn more: "
    "https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/gemini"
)


def g1(name: str, position: int) -> str:
    return (
        "Function call is missing a thought_signature in functionCall parts. This is required "
        "for tools to work correctly, and missing thought_signature may lead to degraded model "
        f"performance. Additional data, function call `default_api:{name}` , position "
        f"{position}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures "
        "for more details."
    )


CASES: list[tuple[str, str, dict[str, Any], str]] = [
    ("unsigned", "G1", body(user(), asks(call("a")), result("a"), model=G3), g1("get_weather", 1)),
    ("unsigned-second-step", "G1", body(system(), user(), asks(signed("a")), result("a"),
                                        asks(call("b", name="read_file")), result("b"),
                                        model="models/gemini-3-flash"),
     g1("read_file", 3)),
    ("empty-signature", "G1", body(user(), asks(signed("a", "")), result("a"), model=G3),
     g1("get_weather", 1)),
    ("calls-first", "G6", body(system(), asks(call("a")), result("a"), user()), G6),
    ("calls-after-text", "G6", body(user(), assistant(), asks(call("a")), result("a")), G6),
    ("missing-result", "G7", body(user(), asks(call("a"), call("b")), result("a"), user()), G7),
    ("extra-result", "G7", body(user(), asks(call("a")), result("a"), result("b")), G7),
    ("trailing-calls", "G7", body(user(), asks(call("a"))), G7),
    ("orphan-result", "G8", body(user(), result("a")), G8),
    ("content-null", "G9", body(user(), {**asks(call("a")), "content": None}, result("a")),
     "Expected string or list of content parts, got: null"),
    ("empty-tool-text", "G11", body(user(), asks(call("a")), result("a", content="")), G11),
    ("empty-text-part", "G11", body({"role": "user", "content": [{"type": "text", "text": ""}]}),
     G11),
    ("no-parts", "G12", body(user(), {"role": "assistant"}, user()),
     "* GenerateContentRequest.contents[1].parts: contents.parts must not be empty."),
    ("tool-content-parts", "G-schema", body(user(), asks(call("a")),
                                            result("a", content=[{"type": "text", "text": "1"}])),
     GENERIC),
    ("top-level-reasoning", "G14", body(user(), reasoning={"effort": "low"}),
     'Invalid JSON payload received. Unknown name "reasoning": Cannot find field.'),
    ("top-level-google", "G14", body(user(), google={"thinking_config": {}}),
     'Invalid JSON payload received. Unknown name "google": Cannot find field.'),
    ("function-role", "G-schema", body(user(), {"role": "function", "name": "f", "content": "1"}),
     GENERIC),
    ("dict-arguments", "G-schema", body(user(), asks(call("a", arguments={"x": 1})), result("a")),
     GENERIC),
    ("arguments-not-json-object", "G-schema",
     body(user(), asks(call("a", arguments='{"x": 1')), result("a")), GENERIC),
    ("empty-messages", "G-schema", body(), GENERIC),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "rule", "request_body", "message"), CASES, ids=[c[0] for c in CASES]
)
def test_broken_history_gets_geminis_exact_error(
    case: str, rule: str, request_body: dict[str, Any], message: str
) -> None:
    rejection = validate("gemini", request_body)
    assert rejection is not None
    assert (rejection.rule, rejection.status, rejection.message) == (rule, 400, message)
    [envelope] = json.loads(rejection.body)
    error = envelope["error"]
    assert error.pop("details", None) is not None or rule != "G14"
    assert error == {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}


def test_body_is_a_one_element_array_printed_like_google() -> None:
    rejection = validate("gemini", body(user(), result("a")))
    assert rejection is not None
    assert rejection.body == (
        b'[{\n  "error": {\n    "code": 400,\n    "message": "' + G8.encode() + b'",\n'
        b'    "status": "INVALID_ARGUMENT"\n  }\n}\n]'
    )


def test_unknown_field_carries_google_rpc_bad_request_details() -> None:
    rejection = validate("gemini", body(user(), thinking={"type": "enabled"}))
    assert rejection is not None
    [envelope] = json.loads(rejection.body)
    assert envelope["error"]["details"] == [
        {
            "@type": "type.googleapis.com/google.rpc.BadRequest",
            "fieldViolations": [
                {"description": 'Invalid JSON payload received. Unknown name "thinking": '
                 "Cannot find field."}
            ],
        }
    ]  # fmt: skip


ACCEPTED = [
    ("gemini-2.5-needs-no-signature", body(user(), asks(call("a")), result("a"),
                                           model="gemini-2.5-flash")),
    ("dummy-signature", body(user(), asks(signed("a")), result("a"), model=G3)),
    ("other-dummy", body(user(), asks(signed("a", "context_engineering_is_the_way_to_go")),
                         result("a"), model=G3)),
    ("parallel-signature-on-first-only", body(user(), asks(signed("a"), call("b")), result("a"),
                                              result("b"), model=G3)),
    ("previous-turn-unsigned", body(user(), asks(call("a")), result("a"), assistant(), user(),
                                    asks(signed("b")), result("b"), model=G3)),
    ("system-between-call-and-result", body(user(), asks(call("a")), system(), result("a"))),
    ("no-content-key-on-call-turn", body(user(), {"role": "assistant",
                                                  "tool_calls": [call("a")]}, result("a"))),
    ("empty-content-on-call-turn", body(user(), asks(call("a")), result("a"))),
    ("ids-are-not-matched", body(user(), asks(call("a")), result("other"))),
    ("extra-body-google", body(user(), extra_body={"google": {"thinking_config": {}}})),
    ("developer-role", body({"role": "developer", "content": "x"}, user())),
    ("unknown-key-in-message", body({**user(), "reasoning_content": "x"})),
    ("tool-without-name", body(user(), asks(call("a")),
                               {"role": "tool", "tool_call_id": "call_a", "content": "1"})),
]  # fmt: skip


@pytest.mark.parametrize(("case", "request_body"), ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_valid_history_is_accepted(case: str, request_body: dict[str, Any]) -> None:
    assert validate("gemini", request_body) is None
