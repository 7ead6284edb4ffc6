"""``plan_retry``: a catalogued refusal of a history the policy let through → the one retry."""

# ruff: noqa: E501 -- provider texts are quoted whole

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy.core.chat.messages import History
from proxy.core.policy import Policy, build_policy
from proxy.core.registry import ALL_RULES
from proxy.core.retry import field_pattern, parse_path, plan_retry, strip_field, unsafe_to_repeat
from tests.core.signature_texts import TEXTS
from tests.factories import broken_histories

OPENAI = build_policy("openai")
PASSTHROUGH = build_policy("passthrough")


def user(text: str = "hi") -> dict[str, Any]:
    return {"role": "user", "content": text}


def call(cid: str = "call_1", name: str = "read_file", **extra: Any) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": "{}"}, **extra}


def asks(*calls: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": list(calls), **extra}


def answer(cid: str = "call_1", content: str = "ok", **extra: Any) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": cid, "content": content, **extra}


def chat(*messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"model": "some-model", "messages": list(messages), **extra}


def openai_error(message: str, param: str | None = None) -> str:
    return json.dumps(
        {
            "error": {
                "message": message,
                "type": "invalid_request_error",
                "param": param,
                "code": None,
            }
        }
    )


def mistral_422(*locs: list[Any]) -> str:
    detail = [
        {
            "type": "extra_forbidden",
            "loc": loc,
            "msg": "Extra inputs are not permitted",
            "input": None,
        }
        for loc in locs
    ]
    return json.dumps(
        {
            "object": "error",
            "message": {"detail": detail},
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        }
    )


# (case id, policy, body, status, refusal, rule, path of the first finding, check on the new messages)
Case = tuple[str, Policy, dict[str, Any], int, str, str, str, Any]
CASES: list[Case] = [
    (
        "O12-index-everywhere",
        OPENAI,
        chat(
            user(), asks(call(index=0)), answer(), asks(call("call_2", index=0)), answer("call_2")
        ),
        400,
        openai_error("Unknown parameter: 'messages[1].tool_calls[0].index'."),
        "unknown_message_field",
        "messages[1].tool_calls[0].index",
        lambda m: all("index" not in c for x in m if "tool_calls" in x for c in x["tool_calls"]),
    ),
    (
        "MI7-loc",
        OPENAI,
        chat(user(), asks(call(name="f") | {"name": "f"}), answer()),
        422,
        mistral_422(["body", "messages", 1, "assistant", "tool_calls", 0, "name"]),
        "unknown_message_field",
        "messages[1].tool_calls[0].name",
        lambda m: (
            "name" not in m[1]["tool_calls"][0] and m[1]["tool_calls"][0]["function"]["name"] == "f"
        ),
    ),
    (
        "GR2-timestamp",
        OPENAI,
        chat(
            user() | {"timestamp": 1},
            {"role": "assistant", "content": "yo", "timestamp": 2},
            user() | {"timestamp": 3},
        ),
        400,
        "'messages.0' : for 'role:user' the following must be satisfied[('messages.0' : property 'timestamp' is unsupported)]",
        "unknown_message_field",
        "messages[0].timestamp",
        lambda m: all("timestamp" not in x for x in m),
    ),
    (
        "D4-reasoning",
        OPENAI,
        chat(user(), asks(call()), answer(), user("more")),
        400,
        openai_error(
            "The `reasoning_content` in the thinking mode must be passed back to the API."
        ),
        "missing_reasoning_content",
        "messages[1].reasoning_content",
        lambda m: m[1]["reasoning_content"] == "",
    ),
    (
        "KI3-at-index",
        OPENAI,
        chat(user(), asks(call()), answer(), asks(call("call_2")), answer("call_2")),
        400,
        "thinking is enabled but reasoning_content is missing in assistant tool call message at index 3",
        "missing_reasoning_content",
        "messages[1].reasoning_content",
        lambda m: m[1]["reasoning_content"] == m[3]["reasoning_content"] == "",
    ),
    (
        "D14-developer",
        OPENAI,
        chat({"role": "developer", "content": "be brief"}, user()),
        400,
        "Failed to deserialize the JSON body into the target type: messages[0].role: unknown variant `developer`, expected one of `system`, `user`, `assistant`, `tool`, `latest_reminder` at line 1 column 58",
        "developer_role",
        "messages[0].role",
        lambda m: m[0]["role"] == "system",
    ),
    (
        "D9-parts",
        OPENAI,
        chat(
            user(),
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            },
            user(),
        ),
        400,
        "Failed to deserialize the JSON body into the target type: messages[1]: invalid type: sequence, expected a string at line 1 column 45446",
        "content_parts_unsupported",
        "messages[1].content",
        lambda m: isinstance(m[1]["content"], str),
    ),
    (
        "MI1-ids",
        OPENAI,
        chat(user(), asks(call("turn1_0")), answer("turn1_0")),
        400,
        json.dumps(
            {
                "object": "error",
                "message": "Tool call id was turn1_0 but must be a-z, A-Z, 0-9, with a length of 9.",
                "type": "invalid_function_call",
                "param": None,
                "code": "3280",
            }
        ),
        "tool_call_id_format",
        "messages[1].tool_calls[0].id",
        lambda m: (
            len(m[1]["tool_calls"][0]["id"]) == 9
            and m[1]["tool_calls"][0]["id"].isalnum()
            and m[2]["tool_call_id"] == m[1]["tool_calls"][0]["id"]
        ),
    ),
    (
        "G1-signature",
        OPENAI,
        chat(user(), asks(call()), answer()),
        400,
        json.dumps(
            [
                {
                    "error": {
                        "code": 400,
                        "message": "Function call is missing a thought_signature in functionCall parts.",
                        "status": "INVALID_ARGUMENT",
                    }
                }
            ]
        ),
        "thought_signature",
        "messages[1].tool_calls[0].extra_content.google.thought_signature",
        lambda m: m[1]["tool_calls"][0]["extra_content"]["google"]["thought_signature"],
    ),
    (
        "XA1-name-on-system",
        OPENAI,
        chat({"role": "system", "content": "Be brief.", "name": "planner"}, user()),
        400,
        "Only messages of role 'user' can have a name.",
        "unknown_message_field",
        "messages[0].name",
        lambda m: "name" not in m[0],
    ),
    (
        "O1-orphan-at-param",
        PASSTHROUGH,
        chat(user(), answer("call_9"), user("again")),
        400,
        openai_error(
            "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
            "messages.[1].role",
        ),
        "orphan_tool_result",
        "messages[1]",
        lambda m: all(x["role"] != "tool" for x in m),
    ),
    (
        "O2-missing-via-openrouter",
        PASSTHROUGH,
        chat(user(), asks(call(), call("call_2")), answer(), user("next")),
        400,
        json.dumps(
            {
                "error": {
                    "message": "Provider returned error",
                    "code": 400,
                    "metadata": {
                        "raw": openai_error(
                            "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_2",
                            "messages.[1].role",
                        )
                    },
                }
            }
        ),
        "missing_tool_result",
        "messages[1].tool_calls[1]",
        lambda m: [x.get("tool_call_id") for x in m if x["role"] == "tool"] == ["call_1", "call_2"],
    ),
    (
        "QW1-dashscope",
        PASSTHROUGH,
        chat(user(), answer("call_9")),
        400,
        '<400> InternalError.Algo.InvalidParameter: messages with role "tool" must be a response to a preceeding message with "tool_calls".',
        "orphan_tool_result",
        "messages[1]",
        lambda m: all(x["role"] != "tool" for x in m),
    ),
]


@pytest.mark.parametrize(
    ("policy", "body", "status", "text", "rule", "path", "check"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_catalogued_refusal_gives_one_retry(  # noqa: PLR0917 -- one argument per table column
    policy: Policy, body: dict[str, Any], status: int, text: str, rule: str, path: str, check: Any
) -> None:
    before = copy.deepcopy(body)
    plan = plan_retry("chat", body, status, text, policy)
    assert plan is not None
    assert body == before  # never mutated
    assert plan.rule == rule
    assert plan.findings[0].rule == rule
    assert plan.findings[0].path == path
    assert plan.body != body
    assert check(plan.body["messages"])
    assert {k: v for k, v in plan.body.items() if k != "messages"} == {
        k: v for k, v in body.items() if k != "messages"
    }
    assert plan_retry("chat", plan.body, status, text, policy) is None  # idempotent


def test_field_refusals_yield_the_pattern_to_learn() -> None:
    body = chat(user(), asks(call(index=0)), answer())
    plan = plan_retry(
        "chat", body, 400, "Unknown parameter: 'messages[1].tool_calls[0].index'.", OPENAI
    )
    assert plan is not None
    assert plan.learned == "messages[*].tool_calls[*].index"
    top = plan_retry(
        "chat",
        chat(user(), store=True),
        400,
        "property 'store' is unsupported, did you mean 'stop'?",
        OPENAI,
    )
    assert top is not None
    assert "store" not in top.body
    assert top.learned == "store"
    # a name that breaks a pattern is stripped where it is, never learned
    named = plan_retry(
        "chat",
        chat(user() | {"name": "a b"}),
        400,
        "Invalid 'messages[0].name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
        OPENAI,
    )
    assert named is not None
    assert named.learned is None
    assert "name" not in named.body["messages"][0]


def test_protected_request_keys_go_only_while_empty() -> None:
    refusal = "Value error, `tools` must not be an empty array."
    plan = plan_retry("chat", chat(user(), tools=[]), 400, refusal, OPENAI)
    assert plan is not None
    assert "tools" not in plan.body
    assert plan.learned is None
    tools = [{"type": "function", "function": {"name": "f"}}]
    assert plan_retry("chat", chat(user(), tools=tools), 400, refusal, OPENAI) is None


def test_the_named_place_confirms_the_rule_which_then_repairs_every_hit() -> None:
    """DeepSeek names the first offending message only; the one retry fixes them all."""
    body = chat(user(), asks(call()), answer(), asks(call("call_2")), answer("call_2"))
    refusal = "Missing `reasoning_content` field in the assistant message at message index 1."
    plan = plan_retry("chat", body, 400, refusal, OPENAI)
    assert plan is not None
    paths = ["messages[1].reasoning_content", "messages[3].reasoning_content"]
    assert [f.path for f in plan.findings] == paths
    assert plan.body["messages"][3]["reasoning_content"] == ""
    # a place where the rule finds nothing: text and detector disagree, no guess
    elsewhere = refusal.replace("index 1", "index 2")
    assert plan_retry("chat", body, 400, elsewhere, OPENAI) is None


SAFE_REFUSAL = openai_error(
    "The `reasoning_content` in the thinking mode must be passed back to the API."
)
BROKEN = chat(user(), asks(call()), answer())


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        ({"background": True}, "background job"),
        ({"conversation": "conv_1"}, "conversation appends items"),
        ({"tools": [{"type": "web_search"}]}, "server tool"),
        (
            {
                "tools": [
                    {"type": "function", "function": {"name": "f"}},
                    {"type": "mcp", "server_label": "x"},
                ]
            },
            "mcp",
        ),
        (
            {"tools": [{"type": "code_interpreter", "container": {"type": "auto"}}]},
            "code interpreter",
        ),
        ({"tools": [{"type": "tool_search"}]}, "server tool search"),
        ({"web_search_options": {}}, "chat web search"),
        ({"tools": [{"type": "web_fetch_20250910", "name": "web_fetch"}]}, "Messages web fetch"),
        ({"tools": [{"type": "code_execution_20250825", "name": "x"}]}, "Messages code exec"),
        ({"mcp_servers": [{"type": "url", "url": "https://x", "name": "x"}]}, "MCP connector"),
    ],
)
def test_never_for_requests_that_must_not_run_twice(extra: dict[str, Any], why: str) -> None:
    assert unsafe_to_repeat({**BROKEN, **extra}), why
    assert plan_retry("chat", {**BROKEN, **extra}, 400, SAFE_REFUSAL, OPENAI) is None, why


def test_client_tools_do_not_block_a_retry() -> None:
    tools = [
        {"type": "function", "function": {"name": "f"}},
        {"type": "custom", "name": "x"},
        {"type": "tool_search", "execution": "client"},
    ]
    assert (
        plan_retry(
            "chat", {**BROKEN, "tools": tools, "background": False}, 400, SAFE_REFUSAL, OPENAI
        )
        is not None
    )


@pytest.mark.parametrize(
    ("status", "text"),
    [
        (400, "Something nobody catalogued."),
        (
            400,
            "Invalid 'tools': array too long. Expected an array with maximum length 128, but got an array with length 325 instead.",
        ),  # O9: known, no rule
        (500, SAFE_REFUSAL),
        (429, SAFE_REFUSAL),
        (401, SAFE_REFUSAL),
        (
            424,
            "Missing required parameter: 'messages[1].tool_calls[0].type'.",
        ),  # AZ1: not a retry status
    ],
)
def test_no_retry_without_a_catalogued_rule_or_on_other_statuses(status: int, text: str) -> None:
    assert plan_retry("chat", BROKEN, status, text, OPENAI) is None


def test_no_retry_when_nothing_changes_or_the_body_is_not_a_history() -> None:
    fine = chat(user(), asks(call(), reasoning_content="thought"), answer())
    assert plan_retry("chat", fine, 400, SAFE_REFUSAL, OPENAI) is None
    assert plan_retry("chat", {"model": "x"}, 400, SAFE_REFUSAL, OPENAI) is None
    assert plan_retry("chat", [1, 2], 400, SAFE_REFUSAL, OPENAI) is None
    assert plan_retry("other", BROKEN, 400, SAFE_REFUSAL, OPENAI) is None
    responses_text = "No tool call found for function call output with call_id call_1."
    assert plan_retry("chat", BROKEN, 400, responses_text, OPENAI) is None  # another API's row


@pytest.mark.parametrize("action", ["off", "reject"])
def test_a_rule_the_user_pinned_off_or_reject_is_never_applied(action: str) -> None:
    policy = build_policy("mine", base="openai", overrides={"missing_reasoning_content": action})
    assert (
        plan_retry("chat", BROKEN, 400, SAFE_REFUSAL, policy, pinned={"missing_reasoning_content"})
        is None
    )
    # the same action from the preset (not pinned) does not stop the retry
    assert plan_retry("chat", BROKEN, 400, SAFE_REFUSAL, policy, pinned=()) is not None
    # a policy that carries its own pins is read when none are passed
    pinned = _Pinned(policy, frozenset({"missing_reasoning_content"}))
    assert plan_retry("chat", BROKEN, 400, SAFE_REFUSAL, pinned) is None  # type: ignore[arg-type]
    field = "Unknown parameter: 'messages[1].tool_calls[0].index'."
    strip = build_policy("mine", base="openai", overrides={"unknown_message_field": action})
    body = chat(user(), asks(call(index=0)), answer())
    assert plan_retry("chat", body, 400, field, strip, pinned={"unknown_message_field"}) is None


class _Pinned:
    """A policy with ``pinned`` (the addition proposed to the owner of ``proxy.core.policy``)."""

    def __init__(self, policy: Policy, pinned: frozenset[str]) -> None:
        self.settings = policy.settings
        self.pinned = pinned


def test_a_users_repair_choice_is_kept() -> None:
    policy = build_policy("mine", base="passthrough", overrides={"orphan_tool_result": "drop"})
    refusal = openai_error(
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
        "messages.[1].role",
    )
    plan = plan_retry("chat", chat(user(), answer("call_9"), user("again")), 400, refusal, policy)
    assert plan is not None
    assert plan.findings[0].action == "drop"
    assert [m["role"] for m in plan.body["messages"]] == ["user", "user"]


# --- Responses ------------------------------------------------------------------------------


def test_responses_refusal_repairs_the_input_items() -> None:
    if "responses_orphan_output" not in ALL_RULES:
        pytest.fail("responses_orphan_output is not registered")
    body = {
        "model": "gpt-5",
        "input": [
            {"role": "user", "content": "hi"},
            {"type": "function_call_output", "call_id": "call_gone", "output": "ok"},
        ],
    }
    text = openai_error(
        "No tool call found for function call output with call_id call_gone.", "input"
    )
    plan = plan_retry("responses", body, 400, text, PASSTHROUGH)
    assert plan is not None
    assert plan.rule == "responses_orphan_output"
    assert all(i.get("type") != "function_call_output" for i in plan.body["input"])
    assert plan.body["model"] == "gpt-5"
    assert plan_retry("responses", plan.body, 400, text, PASSTHROUGH) is None
    assert (
        plan_retry("responses", {**body, "tools": [{"type": "web_search"}]}, 400, text, PASSTHROUGH)
        is None
    )
    assert plan_retry("responses", {**body, "background": True}, 400, text, PASSTHROUGH) is None
    field = plan_retry(
        "responses",
        {**body, "input": [{"role": "user", "content": "hi", "status": "x"}]},
        400,
        "Unknown parameter: 'input[0].status'.",
        PASSTHROUGH,
    )
    assert field is not None
    assert field.body["input"] == [{"role": "user", "content": "hi"}]
    assert field.learned == "input[*].status"


# --- paths ------------------------------------------------------------------------------------


def test_paths() -> None:
    assert parse_path("messages[1].tool_calls[*].index") == [
        "messages",
        1,
        "tool_calls",
        None,
        "index",
    ]
    assert parse_path("store") == ["store"]
    assert parse_path("messages[x]") == []
    assert parse_path("") == []
    assert (
        field_pattern("messages[12].content[0].cache_control")
        == "messages[*].content[*].cache_control"
    )
    assert field_pattern("tools") is None
    body = chat(user() | {"a": 1}, user() | {"a": 2})
    new, removed = strip_field(body, "messages[*].a")
    assert removed == ["messages[0].a", "messages[1].a"]
    assert new["messages"] == [user(), user()]
    assert body["messages"][0]["a"] == 1
    same, none = strip_field(body, "messages[5].a")
    assert same is body
    assert none == []


# --- properties -------------------------------------------------------------------------------

REFUSALS = [t for t in TEXTS if t.status in (400, 404, 422)]
PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(
    messages=broken_histories("openai"),
    refusal=st.sampled_from(REFUSALS),
    preset=st.sampled_from(["openai", "passthrough"]),
    index=st.integers(0, 12),
)
def test_plans_change_the_body_and_are_idempotent(
    messages: list[dict[str, Any]], refusal: Any, preset: str, index: int
) -> None:
    policy = {"openai": OPENAI, "passthrough": PASSTHROUGH}[preset]
    body = chat(*messages)
    text = openai_error(refusal.text, refusal.param or f"messages.[{index}].role")
    before = copy.deepcopy(body)
    plan = plan_retry("chat", body, refusal.status, text, policy)
    assert body == before
    if plan is None:
        return
    assert plan.body != body
    assert plan_retry("chat", plan.body, refusal.status, text, policy) is None
    History(plan.body["messages"])  # still a history


@PROPERTY
@given(messages=broken_histories("openai"), refusal=st.sampled_from(REFUSALS))
def test_never_applies_a_pinned_off_rule(messages: list[dict[str, Any]], refusal: Any) -> None:
    rules = {s for s in ALL_RULES}
    policy = build_policy("pins", base="openai", overrides=dict.fromkeys(rules, "off"))
    assert (
        plan_retry(
            "chat",
            chat(*messages),
            refusal.status,
            openai_error(refusal.text),
            policy,
            pinned=rules,
        )
        is None
    )
