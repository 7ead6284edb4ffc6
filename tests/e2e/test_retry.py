"""Repair on reject over real sockets: a history the policy let through, refused by a strict
emulator for a catalogued reason, comes back 200 after exactly one retry (issue 15 items 5, 6).

Each case routes the ``openai`` preset to another provider's emulator (or sets the rule to
``warn``), so the refusal really comes from the upstream; the signature rows are those of
:mod:`proxy.core.signatures` (provider-rules.md, providers-second-tier.md, responses-api.md).
Also: a refusal no signature knows is relayed as it is and counted; a second refusal is relayed,
never retried again; the switches that turn the retry off (repair-on-reject.md C2).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from proxy.emulator.validators import validate
from tests.e2e.conftest import Upstream
from tests.e2e.test_retry_helpers import (
    RECORD,
    RETRIED,
    Guarded,
    assert_retried_once,
    metric,
    posts,
    stored,
)

pytest_plugins = ["tests.e2e.test_retry_helpers"]


def user(text: str = "Read a.txt") -> dict[str, Any]:
    return {"role": "user", "content": text}


def call(cid: str = "call_1", args: str = "{}", name: str = "read_file") -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


def asks(*calls: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": list(calls), **extra}


def answer(cid: str = "call_1", **extra: Any) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": cid, "content": "hello", **extra}


DEVELOPER = [{"role": "developer", "content": "Be brief."}, user()]
#: A thinking-mode tool turn without ``reasoning_content`` (DeepSeek D4, Kimi KI3).
THINKING = [user(), asks(call()), answer(), user("And b.txt?")]

Check = Callable[[dict[str, Any]], bool]


def ids_of(body: dict[str, Any]) -> tuple[str, str]:
    messages = body["messages"]
    return messages[1]["tool_calls"][0]["id"], messages[2]["tool_call_id"]


def mistral_ids(body: dict[str, Any]) -> bool:
    call_id, answered = ids_of(body)
    return call_id == answered and len(call_id) == 9 and call_id.isalnum()


def reasoning(body: dict[str, Any]) -> bool:
    return body["messages"][1].get("reasoning_content") == ""


def no_refusal(body: dict[str, Any]) -> bool:
    return "refusal" not in body["messages"][1]


def json_arguments(body: dict[str, Any]) -> bool:
    arguments = body["messages"][1]["tool_calls"][0]["function"]["arguments"]
    return arguments.startswith("{") and arguments.endswith("}")


def role_is_system(body: dict[str, Any]) -> bool:
    return body["messages"][0]["role"] == "system"


def signed(body: dict[str, Any]) -> bool:
    google = body["messages"][1]["tool_calls"][0].get("extra_content", {}).get("google", {})
    return bool(google.get("thought_signature"))


def answered(body: dict[str, Any]) -> bool:
    return [i["type"] for i in body["input"]].count("function_call_output") == 1


# (id, provider, model, body, rule, refused status, check on the retried body, policy overrides)
Case = tuple[str, str, str, dict[str, Any], str, int, Check, dict[str, Any] | None]
CASES: list[Case] = [
    ("D4-deepseek-thinking", "deepseek", "deepseek-reasoner", {"messages": THINKING},
     "missing_reasoning_content", 400, reasoning, None),
    ("D14-deepseek-developer", "deepseek", "deepseek-chat", {"messages": DEVELOPER},
     "developer_role", 400, role_is_system, None),
    ("D9-deepseek-parts", "deepseek", "deepseek-chat",
     {"messages": [user(), {"role": "assistant", "content": [{"type": "text", "text": "a"}]},
                   user()]},
     "content_parts_unsupported", 400, lambda b: b["messages"][1]["content"] == "a", None),
    ("G1-gemini-3-signature", "gemini", "gemini-3-pro-preview",
     {"messages": [user(), asks(call(), content=""), answer()]},
     "thought_signature", 400, signed, None),
    ("MI1-mistral-ids", "mistral", "mistral-large-latest",
     {"messages": [user(), asks(call()), answer()]},
     "tool_call_id_format", 400, mistral_ids, None),
    ("MI7-mistral-extra-forbidden", "mistral", "mistral-large-latest",
     {"messages": [user(), asks(call("abcdefghi"), refusal=None), answer("abcdefghi")]},
     "unknown_message_field", 422, no_refusal, None),
    ("MI5-mistral-empty-assistant", "mistral", "mistral-large-latest",
     {"messages": [user(), {"role": "assistant", "content": ""}, user("Again")]},
     "empty_assistant_message", 400, lambda b: len(b["messages"]) < 3, None),
    ("GR1-groq-unsupported-property", "groq", "llama-3.3-70b-versatile",
     {"messages": [user(), asks(call(), refusal=None), answer()]},
     "unknown_message_field", 400, no_refusal, None),
    ("GR5-groq-gpt-oss-tool-name", "groq", "openai/gpt-oss-120b", {"messages": THINKING},
     "tool_message_name", 400, lambda b: b["messages"][2].get("name") == "read_file", None),
    ("KI3-kimi-thinking", "kimi", "kimi-k2-thinking", {"messages": THINKING},
     "missing_reasoning_content", 400, reasoning, None),
    ("XA2-xai-arguments-json", "xai", "grok-4",
     {"messages": [user(), asks(call(args=""), content=""), answer(), user("Go on")]},
     "arguments_invalid_json", 400, json_arguments, None),
    ("XA1-xai-tool-name", "xai", "grok-4",
     {"messages": [user(), asks(call(), content=""), answer(name="read_file"), user("Go on")]},
     "unknown_message_field", 400, lambda b: "name" not in b["messages"][2], None),
    ("VL2-vllm-arguments-json", "vllm", "Qwen/Qwen3-8B",
     {"messages": [user(), asks(call(args='{"path":')), answer(), user("Go on")]},
     "arguments_invalid_json", 400, json_arguments, None),
    ("VL1-vllm-empty-tools", "vllm", "Qwen/Qwen3-8B", {"messages": [user()], "tools": []},
     "unknown_message_field", 400, lambda b: "tools" not in b, None),
    ("VL6-vllm-gemma-alternation", "vllm", "google/gemma-3-27b-it",
     {"messages": [user(), user("Again")]},
     "consecutive_same_role", 400, lambda b: len(b["messages"]) == 1, None),
    ("OL3-ollama-arguments", "ollama", "llama3.2",
     {"messages": [user(), asks(call(args="")), answer(), user("Go on")]},
     "arguments_invalid_json", 400, json_arguments, None),
    ("R1-responses-missing-output", "openai", "gpt-4o",
     {"input": [{"type": "message", "role": "user", "content": "Read a.txt"},
                {"type": "function_call", "call_id": "call_1", "name": "read_file",
                 "arguments": "{}"},
                {"type": "message", "role": "user", "content": "Go on"}]},
     "responses_missing_output", 400, answered, {"responses_missing_output": "warn"}),
]  # fmt: skip

#: Developer-role refusals: the rows name their provider's preset, whose dialect refuses the
#: role (with the openai dialect the detector would find nothing at the named place).
DEVELOPER_CASES = [
    pytest.param("qwen", "qwen-plus", 400, id="QW3-qwen-developer"),
    pytest.param("mistral", "mistral-large-latest", 422, id="MI11-mistral"),
    pytest.param("kimi", "kimi-k2-0905-preview", 400, id="KI4-kimi-developer"),
]


def send(guard: Any, body: dict[str, Any], **headers: str) -> Any:
    path = "/responses" if "input" in body else "/chat/completions"
    content_type = {"content-type": "application/json"}
    return guard.http.post(guard.v1 + path, json=body, headers=content_type | headers)


@pytest.mark.parametrize(
    ("provider", "model", "body", "rule", "refused", "check", "rules"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_a_catalogued_refusal_ends_200_after_one_retry(  # noqa: PLR0917 -- table row
    guarded: Guarded,
    emulated: dict[str, Upstream],
    provider: str,
    model: str,
    body: dict[str, Any],
    rule: str,
    refused: int,
    check: Check,
    rules: dict[str, Any] | None,
) -> None:
    guard = guarded(provider, rules=rules)
    upstream = emulated[provider]
    retries = metric(guard, "toolcall_guard_retries_total", upstream=provider, rule=rule)

    response = send(guard, {"model": model, **body})

    record, sent = assert_retried_once(guard, upstream, response, rule, refused)
    assert not check(sent[0]), "the first attempt went as the policy left it"
    assert check(sent[1]), "the retry carries the repair"
    assert record["attempts"][0]["upstream_error_kind"] == rule
    assert metric(guard, "toolcall_guard_retries_total", upstream=provider, rule=rule) == (
        retries + 1
    )


@pytest.mark.parametrize(("provider", "model", "refused"), DEVELOPER_CASES)
def test_a_developer_role_refusal_is_retried_as_system(
    guarded: Guarded, emulated: dict[str, Upstream], provider: str, model: str, refused: int
) -> None:
    guard = guarded(provider)
    response = send(guard, {"model": model, "messages": DEVELOPER})
    _, sent = assert_retried_once(guard, emulated[provider], response, "developer_role", refused)
    assert role_is_system(sent[1])


def test_a_refusal_no_signature_knows_is_relayed_unchanged_and_counted(
    guarded: Guarded, emulated: dict[str, Upstream]
) -> None:
    """Mistral's function-name rule (M7, no public report) is in no catalogue row: no retry,
    the answer as it came."""
    guard = guarded("mistral")
    named = call("abcdefghi", name="read.file")
    messages = [user(), asks(named), answer("abcdefghi")]
    body = {"model": "mistral-large-latest", "messages": messages}
    expected = validate("mistral", body)
    assert expected is not None
    labels = {"upstream": "mistral", "api": "chat", "kind": "unknown"}
    unknown = metric(guard, "toolcall_guard_upstream_rejected_total", **labels)

    response = send(guard, body)

    assert response.status_code == 400
    assert response.content == expected.body
    assert RETRIED not in response.headers
    assert len(posts(emulated["mistral"])) == 1
    assert metric(guard, "toolcall_guard_upstream_rejected_total", **labels) == unknown + 1
    record = stored(guard, response.headers[RECORD])
    assert record["outcome"] == "upstream_rejected"
    assert record["attempts"] is None


def test_a_second_refusal_is_relayed_never_retried_again(
    guarded: Guarded, emulated: dict[str, Upstream]
) -> None:
    """xAI names one fault at a time: the system message's ``name`` (XA1), then, once the xAI
    dialect repaired what it can (the null content too), two text parts in one message (XA4:
    catalogued, no rule repairs it). The second refusal is relayed: never a second retry."""
    guard = guarded("xai")
    two_texts = [{"type": "text", "text": "Go"}, {"type": "text", "text": "on"}]
    messages = [{"role": "system", "content": "Be brief.", "name": "planner"}, user()]
    messages += [asks(call(), content=None), answer(), {"role": "user", "content": two_texts}]
    failed = metric(
        guard, "toolcall_guard_retries_failed_total", upstream="xai", rule="unknown_message_field"
    )

    response = send(guard, {"model": "grok-4", "messages": messages})

    assert response.status_code == 400
    assert "single `text` element" in response.json()["error"]
    assert response.headers[RETRIED] == "unknown_message_field"
    sent = posts(emulated["xai"])
    assert len(sent) == 2
    assert "name" not in sent[1]["messages"][0]
    assert sent[1]["messages"][2]["content"] == ""  # the dialect's repair: xAI's X4 too
    assert metric(
        guard, "toolcall_guard_retries_failed_total", upstream="xai", rule="unknown_message_field"
    ) == (failed + 1)
    record = stored(guard, response.headers[RECORD])
    assert record["outcome"] == "upstream_rejected"
    statuses = [a["upstream_status"] for a in record["attempts"]]
    assert statuses == [400, 400]
    assert record["attempts"][1]["upstream_error_kind"] == "other"
    assert record["attempts"][1]["retried_rule"] is None


@pytest.mark.parametrize(
    ("overrides", "headers"),
    [
        pytest.param({"upstream_overrides": {"retry_on_reject": False}}, {}, id="retry-off"),
        pytest.param(
            {"server": {"allow_mode_header": True}},
            {"x-toolcall-guard-mode": "observe"},
            id="observe-mode",
        ),
        pytest.param(
            {"server": {"allow_mode_header": True}}, {"x-toolcall-guard-mode": "off"}, id="off-mode"
        ),
        pytest.param({"rules": {"missing_reasoning_content": "off"}}, {}, id="rule-off"),
        pytest.param({"rules": {"missing_reasoning_content": "reject"}}, {}, id="rule-reject"),
    ],
)
def test_no_retry_when_the_user_turned_it_off(
    guarded: Guarded,
    emulated: dict[str, Upstream],
    overrides: dict[str, Any],
    headers: dict[str, str],
) -> None:
    guard = guarded("deepseek", **overrides)
    body = {"model": "deepseek-reasoner", "messages": THINKING}
    response = send(guard, body, **headers)

    assert response.status_code == 400
    assert "must be passed back to the API" in response.json()["error"]["message"]
    assert RETRIED not in response.headers
    assert len(posts(emulated["deepseek"])) == 1


def test_a_mode_header_the_config_ignores_does_not_stop_the_retry(
    guarded: Guarded, emulated: dict[str, Upstream]
) -> None:
    guard = guarded("deepseek")  # allow_mode_header off: the header is not applied anywhere
    body = {"model": "deepseek-reasoner", "messages": THINKING}
    response = send(guard, body, **{"x-toolcall-guard-mode": "observe"})

    assert response.status_code == 200, response.text
    assert "x-toolcall-guard-mode-ignored" in response.headers
    assert response.headers[RETRIED] == "missing_reasoning_content"
    assert len(posts(emulated["deepseek"])) == 2
