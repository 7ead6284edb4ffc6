"""DeepSeek emulator: a minimal broken history per provider-rules.md row, exact status and body."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

from proxy.emulator import validate
from tests.emulator import asks, assistant, body, call, result, system, user

DESER = "Failed to deserialize the JSON body into the target type: "
D1 = "Messages with role 'tool' must be a response to a preceding message with 'tool_calls'"
D2 = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to "
    "each 'tool_call_id'. (insufficient tool messages following tool_calls message)"
)
D4 = "The `reasoning_content` in the thinking mode must be passed back to the API."
D7 = (
    "The reasoning_content is an intermediate result for display purposes only and will not "
    "be included in the context for inference. Please remove the reasoning_content from your "
    "message to reduce network traffic."
)
D12 = "Invalid assistant message: content or tool_calls must be set"
VARIANTS = "`system`, `user`, `assistant`, `tool`, `latest_reminder`"
IMAGE = {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}


def after_message(request: dict[str, Any], i: int) -> str:
    """serde's position just past ``messages[i]``'s ``}`` in the compact serialization.

    Computed independently of the emulator: `messages` is the body's last key, so the
    serialization of the body cut after message i ends with ``]}`` right after that ``}``.
    """
    cut = {**request, "messages": request["messages"][: i + 1]}
    return f" at line 1 column {len(orjson.dumps(cut)) - 2}"


def after_role(request: dict[str, Any], i: int) -> str:
    """serde's position just past the role string of ``messages[i]`` (role its first key)."""
    role_only = {"role": request["messages"][i]["role"]}
    cut = {**request, "messages": [*request["messages"][:i], role_only]}
    return f" at line 1 column {len(orjson.dumps(cut)) - 3}"


def thinking(*messages: dict[str, Any], model: str = "deepseek-reasoner") -> dict[str, Any]:
    return body(*messages, model=model)


# (id, rule, request body, message); a trailing "@i" stands for the position past messages[i],
# "^i" for the position past the role string of messages[i]
CASES: list[tuple[str, str, dict[str, Any], str]] = [
    ("orphan", "D1", body(user(), result("a")), D1),
    ("unknown-id", "D1", body(user(), asks(call("a")), result("b")), D1),
    ("answered-twice", "D1", body(user(), asks(call("a")), result("a"), result("a")), D1),
    ("partial", "D2", body(user(), asks(call("a"), call("b")), result("a"), user()), D2),
    ("system-between", "D2", body(user(), asks(call("a")), system(), result("a")), D2),
    ("trailing", "D2", body(user(), asks(call("a"))), D2),
    ("reasoner", "D4", thinking(user(), asks(call("a")), result("a")), D4),
    ("v4", "D4", thinking(user(), asks(call("a")), result("a"), model="deepseek-v4-flash"), D4),
    ("thinking-enabled", "D4", body(user(), asks(call("a")), result("a"), model="deepseek-chat",
                                    thinking={"type": "enabled"}), D4),
    ("r1", "D7", body(user(), {**assistant(), "reasoning_content": "I thought"}, user(),
                      model="deepseek-r1"), D7),
    ("reasoner-r1", "D7", body(user(), {**assistant(), "reasoning_content": ""}, user(),
                               model="deepseek-reasoner-r1"), D7),
    ("r1-successive", "D8", body(system(), user(), user(), model="deepseek-r1"),
     "deepseek-reasoner does not support successive user or assistant messages (messages[1] and "
     "messages[2] in your input). You should interleave the user/assistant messages in the "
     "message sequence."),
    ("r1-first-assistant", "D8", body(system(), assistant(), user(), model="deepseek-r1"),
     "The first message (except the system message) of deepseek-reasoner must be a user message, "
     "but an assistant message detected."),
    ("system-parts", "D9", body({"role": "system", "content": [{"type": "text", "text": "x"}]}),
     DESER + "messages[0]: invalid type: sequence, expected a string@0"),
    ("assistant-empty-parts", "D9", body(user(), {**asks(call("a")), "content": []}, result("a")),
     DESER + "messages[1]: invalid type: sequence, expected a string@1"),
    ("user-text-parts", "D9", body({"role": "user", "content": [{"type": "text", "text": "x"}]}),
     DESER + "messages[0]: invalid type: sequence, expected a string@0"),
    ("user-image", "D10", body({"role": "user", "content": [IMAGE]}),
     DESER + "messages[0]: data did not match any variant of untagged enum "
     "ChatCompletionRequestContent@0"),
    ("no-content", "D11", body(user(), {"role": "assistant", "tool_calls": [call("a")]}),
     DESER + "messages[1]: missing field `content`@1"),
    ("no-content-no-calls", "D12", body(user(), {"role": "assistant", "content": None}), D12),
    ("tool-null", "D13", body(user(), asks(call("a")), {**result("a"), "content": None}),
     DESER + "messages[2]: invalid type: null, expected a string@2"),
    ("developer", "D14", body({"role": "developer", "content": "x"}, user(),
                              model="deepseek-chat"),
     DESER + f"messages[0].role: unknown variant `developer`, expected one of {VARIANTS}"
     " at line 1 column 56"),
    ("function", "D14", body(user(), {"role": "function", "name": "f", "content": "1"}),
     DESER + f"messages[1].role: unknown variant `function`, expected one of {VARIANTS}^1"),
    ("dict-arguments", "D-schema", body(user(), asks(call("a", arguments={"x": 1}))),
     DESER + "messages[1]: invalid type: map, expected a string@1"),
    ("call-without-id", "D-schema", body(user(), asks({"type": "function", "function": {
        "name": "f", "arguments": "{}"}})), DESER + "messages[1]: missing field `id`@1"),
    ("no-role", "D-schema", body({"content": "x"}), DESER + "messages[0]: missing field `role`@0"),
    ("no-messages", "D-schema", {"model": "deepseek-chat"},
     DESER + "missing field `messages` at line 1 column 25"),
    ("empty", "D-schema", body(), "Messages must not be empty"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "rule", "request_body", "message"), CASES, ids=[c[0] for c in CASES]
)
def test_broken_history_gets_deepseeks_exact_error(
    case: str, rule: str, request_body: dict[str, Any], message: str
) -> None:
    if "@" in message:
        message, index = message.rsplit("@", 1)
        message += after_message(request_body, int(index))
    elif "^" in message:
        message, index = message.rsplit("^", 1)
        message += after_role(request_body, int(index))
    rejection = validate("deepseek", request_body)
    assert rejection is not None
    assert rejection.rule == rule
    assert rejection.status == 400
    assert rejection.message == message
    expected = {
        "message": message,
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_request_error",
    }
    assert json.loads(rejection.body) == {"error": expected}


def test_body_is_compact_json() -> None:
    rejection = validate("deepseek", body(user(), result("a")))
    assert rejection is not None
    assert rejection.body == (
        b'{"error":{"message":"' + D1.encode() + b'","type":"invalid_request_error",'
        b'"param":null,"code":"invalid_request_error"}}'
    )


def test_positions_follow_serde_on_the_raw_bytes() -> None:
    # pretty-printed body as cline sent it: the error points past the message's closing brace
    request = body(user(), {"role": "user", "content": [{"type": "text", "text": "x"}]})
    raw = json.dumps(request, indent=2).encode()
    rejection = validate("deepseek", request, raw=raw)
    assert rejection is not None
    lines = raw.decode().splitlines()
    closing = next(n for n, line in enumerate(lines) if line == "    }" and n > 8)
    assert rejection.message.endswith(f" at line {closing + 1} column 5")


def test_unknown_role_position_is_just_past_the_role_string() -> None:
    raw = b'{"model": "deepseek-chat",\n "messages": [{"role": "developer", "content": "x"}]}'
    rejection = validate("deepseek", json.loads(raw), raw=raw)
    assert rejection is not None
    column = raw.split(b"\n")[1].index(b'"developer"') + len(b'"developer"')
    assert rejection.message.endswith(f"at line 2 column {column}")


ACCEPTED = [
    ("name-on-tool-and-index-ignored", body(user(), asks(call("a", index=0)), result("a"))),
    ("content-null-with-calls", body(user(), {**asks(call("a")), "content": None}, result("a"))),
    ("empty-content-no-calls", body(user(), {"role": "assistant", "content": ""}, user())),
    ("chat-without-reasoning", body(user(), asks(call("a")), result("a"), model="deepseek-chat")),
    ("reasoner-with-empty-reasoning", thinking(user(), asks(call("a"), reasoning_content=""),
                                               result("a"))),
    ("reasoner-plain-turn-without-reasoning", thinking(user(), assistant(), user())),
    ("v4-thinking-disabled", body(user(), asks(call("a")), result("a"),
                                  model="deepseek-v4-flash", thinking={"type": "disabled"})),
    ("reasoner-echoes-reasoning", thinking(user(), {**assistant(), "reasoning_content": "r"},
                                           user())),
    ("r1-plain", body(system(), user(), assistant(), user(), model="deepseek-r1")),
    ("latest-reminder-role", body({"role": "latest_reminder", "content": "x"}, user())),
]  # fmt: skip


@pytest.mark.parametrize(("case", "request_body"), ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_valid_history_is_accepted(case: str, request_body: dict[str, Any]) -> None:
    assert validate("deepseek", request_body) is None


def test_deserialization_errors_come_before_pairing_errors() -> None:
    rejection = validate(
        "deepseek", body(user(), result("a"), {"role": "developer", "content": ""})
    )
    assert rejection is not None
    assert rejection.rule == "D14"
