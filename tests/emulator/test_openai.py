"""OpenAI emulator: one minimal broken history per provider-rules.md row, exact status and body."""

from __future__ import annotations

import json
from typing import Any

import pytest

from proxy.emulator import validate
from tests.emulator import Msg, asks, assistant, body, call, result, system, user

IMAGE = {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}
O1 = (
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
    "with 'tool_calls'."
)
O2 = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
    "'tool_call_id'. The following tool_call_ids did not have response messages: "
)


def error(message: str, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    return {"message": message, "type": "invalid_request_error", "param": param, "code": code}


def many_calls(n: int) -> list[Msg]:
    return [call(f"{k:03d}") for k in range(n)]


# (id, request body, expected error object)
CASES: list[tuple[str, Any, dict[str, Any]]] = [
    ("O1", body(user(), result("a")), error(O1, "messages.[1].role")),
    ("O1-after-user", body(user(), asks(call("a")), result("a"), user(), result("a")),
     error(O1, "messages.[4].role")),
    ("O2", body(user(), asks(call("a"), call("b"), call("c")), result("b"), user()),
     error(O2 + "call_a, call_c", "messages.[1].role")),
    ("O2-system-between", body(user(), asks(call("a")), system(), result("a")),
     error(O2 + "call_a", "messages.[1].role")),
    ("O3", body(user(), asks(call("a")), result("zzz")),
     error("Invalid parameter: 'tool_call_id' of 'call_zzz' not found in 'tool_calls' of "
           "previous message.", "messages.[2].tool_call_id")),
    ("O4", body(user(), asks(call("a"), call("b")), result("a"), result("a")),
     error("Invalid parameter: Duplicate value for 'tool_call_id' of 'call_a', in messages[2] "
           "and messages[3].", "messages.[3].tool_call_id")),
    ("O5", body(user(), asks(call("a", arguments={"city": "Paris"})), result("a")),
     error("Invalid type for 'messages[1].tool_calls[0].function.arguments': expected a string, "
           "but got an object instead.", "messages[1].tool_calls[0].function.arguments",
           "invalid_type")),
    ("O7", body(user(), {"role": "assistant", "content": "x", "tool_calls": []}),
     error("Invalid 'messages[1].tool_calls': empty array. Expected an array with minimum "
           "length 1, but got an empty array instead.", "messages[1].tool_calls", "empty_array")),
    ("O8", body(user(), asks(*many_calls(129))),
     error("Invalid 'messages[1].tool_calls': array too long. Expected an array with maximum "
           "length 128, but got an array with length 129 instead.", "messages[1].tool_calls",
           "array_above_max_length")),
    ("O10", body(user(), asks(call("x" * 36)), result("x" * 36)),
     error("Invalid 'messages[1].tool_calls[0].id': string too long. Expected a string with "
           "maximum length 40, but got a string with length 41 instead.",
           "messages[1].tool_calls[0].id", "string_above_max_length")),
    ("O11", body(user(), asks(call("a", name="")), result("a")),
     error("Invalid 'messages[1].tool_calls[0].function.name': empty string. Expected a string "
           "with minimum length 1, but got an empty string instead.",
           "messages[1].tool_calls[0].function.name", "empty_string")),
    ("O12-index", body(user(), asks(call("a", index=0)), result("a")),
     error("Unknown parameter: 'messages[1].tool_calls[0].index'.",
           "messages[1].tool_calls[0].index", "unknown_parameter")),
    ("O12-reasoning", body(user(), {**assistant(), "reasoning_content": "hmm"}),
     error("Unknown parameter: 'messages[1].reasoning_content'.",
           "messages[1].reasoning_content", "unknown_parameter")),
    ("O12-tool-call-id-on-user", body({**user(), "tool_call_id": "call_a"}),
     error("Unknown parameter: 'messages[0].tool_call_id'.", "messages[0].tool_call_id",
           "unknown_parameter")),
    ("O13", body({"role": "developer", "content": [
        {"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}]}, user()),
     error("Unknown parameter: 'messages[0].content[0].cache_control'.",
           "messages[0].content[0].cache_control", "unknown_parameter")),
    ("O14", body({"role": "user", "content": None}),
     error("Invalid value for 'content': expected a string, got null.", "messages.[0].content")),
    ("O14-plain-assistant", body(user(), {"role": "assistant", "content": None}),
     error("Invalid value for 'content': expected a string, got null.", "messages.[1].content")),
    ("O15", body(), error("Invalid 'messages': empty array. Expected an array with minimum "
                          "length 1, but got an empty array instead.", "messages", "empty_array")),
    ("O18-tool", body(user(), asks(call("a")), {**result("a"), "content": [IMAGE]}),
     error("Invalid 'messages[2]'. Image URLs are only allowed for messages with role 'user', "
           "but this message with role 'tool' contains an image URL.", "messages[2]")),
    ("O18-assistant", body(user(), {"role": "assistant", "content": [IMAGE]}),
     error("Invalid 'messages[1]'. Image URLs are only allowed for messages with role 'user', "
           "but this message with role 'assistant' contains an image URL.", "messages[1]")),
    ("O21", body(user(), {"role": "assistant", "content": None,
                          "function_call": {"name": "f", "arguments": "{}"}},
                 {"role": "function", "name": "f", "content": "1"}, model="o3"),
     error("Unsupported value: 'messages[2].role' does not support 'function' with this model.",
           "messages[2].role", "unsupported_value")),
    ("schema-role", body({"role": "bogus", "content": "x"}),
     error("Invalid value: 'bogus'. Supported values are: 'system', 'assistant', 'user', "
           "'function', 'tool', and 'developer'.", "messages[0].role", "invalid_value")),
    ("schema-no-role", body({"content": "x"}),
     error("Missing required parameter: 'messages[0].role'.", "messages[0].role",
           "missing_required_parameter")),
    ("schema-no-type", body(user(), asks({"id": "call_a", "function": {"name": "f",
                                                                       "arguments": "{}"}})),
     error("Missing required parameter: 'messages[1].tool_calls[0].type'.",
           "messages[1].tool_calls[0].type", "missing_required_parameter")),
    ("schema-no-call-id", body(user(), asks(call("a")), {"role": "tool", "content": "x"}),
     error("Missing required parameter: 'messages[2].tool_call_id'.", "messages[2].tool_call_id",
           "missing_required_parameter")),
    ("schema-content-object", body({"role": "tool", "tool_call_id": "x", "content": {"a": 1}}),
     error("Invalid type for 'messages[0].content': expected one of a string or array of "
           "objects, but got an object instead.", "messages[0].content", "invalid_type")),
    ("schema-call-id-null", body(user(), asks({**call("a"), "id": None})),
     error("Invalid type for 'messages[1].tool_calls[0].id': expected a string, but got null "
           "instead.", "messages[1].tool_calls[0].id", "invalid_type")),
    ("schema-no-messages", {"model": "gpt-4o"},
     error("Missing required parameter: 'messages'.", "messages", "missing_required_parameter")),
    ("schema-not-object", [1, 2], error(
        "We could not parse the JSON body of your request. (HINT: This likely means you aren't "
        "using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was "
        "sent was not valid JSON. If you have trouble figuring out how to fix this, please "
        "contact us through our help center at help.openai.com.)")),
]  # fmt: skip


def expected_rule(case: str) -> str:
    if case.startswith("O"):
        return case.split("-", maxsplit=1)[0]
    return "O-json" if case == "schema-not-object" else "O-schema"


@pytest.mark.parametrize(("case", "request_body", "expected"), CASES, ids=[c[0] for c in CASES])
def test_broken_history_gets_openais_exact_error(
    case: str, request_body: Any, expected: dict[str, Any]
) -> None:
    rejection = validate("openai", request_body)
    assert rejection is not None
    assert rejection.status == 400
    assert rejection.rule == expected_rule(case)
    assert json.loads(rejection.body) == {"error": expected}
    assert rejection.message == expected["message"]


def test_rule_ids_name_the_rows() -> None:
    rules = {validate("openai", case[1]).rule for case in CASES}  # type: ignore[union-attr]
    rows = {"O1", "O2", "O3", "O4", "O5", "O7", "O8", "O10", "O11", "O12", "O13", "O14", "O15"}
    assert rows | {"O18", "O21", "O-schema", "O-json"} == rules


def test_body_is_pretty_printed_like_api_openai_com() -> None:
    rejection = validate("openai", body(user(), result("a")))
    assert rejection is not None
    assert rejection.body.startswith(b'{\n    "error": {\n        "message": "Invalid parameter')
    assert rejection.body.endswith(b'"code": null\n    }\n}\n')


ACCEPTED = [
    ("name-on-tool-message", body(user(), asks(call("a")), result("a"))),
    ("trailing-unanswered-calls-O23", body(user(), asks(call("a"), call("b")))),
    ("content-null-with-tool-calls", body(user(), {**asks(call("a")), "content": None},
                                          result("a"))),
    ("no-content-with-tool-calls", body(user(), {"role": "assistant",
                                                 "tool_calls": [call("a")]}, result("a"))),
    ("function-role-on-gpt-4o", body(user(), {"role": "assistant", "content": None,
                                              "function_call": {"name": "f", "arguments": "{}"}},
                                     {"role": "function", "name": "f", "content": "1"},
                                     model="gpt-4o")),
    ("128-calls", body(user(), asks(*many_calls(128)), *[result(f"{k:03d}") for k in range(128)])),
    ("40-char-id", body(user(), asks(call("x" * 35)), result("x" * 35))),
    ("user-image", body({"role": "user", "content": [{"type": "text", "text": "what?"}, IMAGE]})),
    ("developer-role", body({"role": "developer", "content": "be brief"}, user())),
    ("response-message-appended-back", body(user(), {
        "role": "assistant", "content": "hi", "refusal": None, "annotations": [], "audio": None,
        "function_call": None, "tool_calls": None}, user())),
]  # fmt: skip


@pytest.mark.parametrize(("case", "request_body"), ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_valid_history_is_accepted(case: str, request_body: Any) -> None:
    assert validate("openai", request_body) is None


def test_schema_errors_come_before_pairing_errors() -> None:
    # an orphan tool result at [1] and an unknown key at [3]: OpenAI's schema pass wins
    broken = body(user(), result("a"), user(), {**user(), "metadata": {}})
    rejection = validate("openai", broken)
    assert rejection is not None
    assert rejection.rule == "O12"
    assert rejection.message == "Unknown parameter: 'messages[3].metadata'."
