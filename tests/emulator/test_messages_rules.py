"""The Messages emulators refuse each broken form with the provider's exact status, shape and
text (anthropic-messages.md §2/§3), and accept the valid forms each provider accepts."""

from __future__ import annotations

import json
from typing import Any

import pytest

from proxy.emulator.messages import validate_messages
from tests.emulator.messages_builders import (
    MODELS,
    PROVIDERS,
    READ,
    assistant,
    request,
    result,
    text,
    thinking,
    use,
    user,
    users,
)

M1 = (
    "messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: "
    "{ids}. Each `tool_use` block must have a corresponding `tool_result` block in the next "
    "message."
)
M2 = (
    "messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. "
    "Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
)
GLM_1214 = "messages 参数非法。请检查文档。"
LOOP = (user(), assistant(use()), users(result()))
#: Broken histories: (id, provider, request, status, rule, message).
BROKEN: list[tuple[str, str, dict[str, Any], int, str, str]] = [
    ("A-M1-interrupt", "anthropic", request(*LOOP[:2], user("go on")), 400, "M1",
     M1.format(i=1, ids="toolu_01A")),
    ("A-M1-trailing", "anthropic", request(*LOOP[:2]), 400, "M1", M1.format(i=1, ids="toolu_01A")),
    ("A-M1-two", "anthropic", request(user(), assistant(use("toolu_a"), use("toolu_b")),
                                      users(result("toolu_b"))), 400, "M1",
     M1.format(i=1, ids="toolu_a")),
    ("A-M3-text-first", "anthropic",
     request(user(), assistant(use()), users(text("see"), result())), 400, "M1",
     M1.format(i=1, ids="toolu_01A")),
    # merged: the user text and the orphan result become one message (SDK snapshot f59a9391)
    ("A-M2-merged", "anthropic", request(user(), users(result())), 400, "M2",
     M2.format(i=0, j=1, id="toolu_01A")),
    ("A-M4", "anthropic", request(*LOOP[:2], users(result(), result())), 400, "M4",
     "messages.2.content.1: each tool_use must have a single result. Found multiple "
     "`tool_result` blocks with id: toolu_01A"),
    ("A-M5-whole-request", "anthropic", request(*LOOP, assistant(use()), users(result())), 400,
     "M5", "messages.3.content.0: `tool_use` ids must be unique"),
    ("A-M7", "anthropic", request(user(), assistant(use("functions.read:0")),
                                  users(result("functions.read:0"))), 400, "M7",
     "messages.1.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"),
    ("A-M8", "anthropic", request(user(), assistant(use(name="")), users(result())), 400, "M8",
     "messages.1.content.0.tool_use.name: String should have at least 1 character"),
    ("A-M10", "anthropic", request(user(), assistant(
        {"type": "advisor_tool_result", "tool_use_id": "srvtoolu_01", "content": {}}), user()),
     400, "M10", "messages.1.content.0: unexpected `tool_use_id` found in `advisor_tool_result` "
     "blocks: srvtoolu_01. Each `advisor_tool_result` block must have a corresponding "
     "`server_tool_use` block before it."),
    ("A-M11", "anthropic", request(users(text(""))), 400, "M11",
     "messages: text content blocks must be non-empty"),
    ("A-M12", "anthropic", request(users(text(" \n"))), 400, "M12",
     "messages: text content blocks must contain non-whitespace text"),
    ("A-M13", "anthropic", request(user(), assistant(), user()), 400, "M13",
     "messages.1: all messages must have non-empty content except for the optional final "
     "assistant message"),
    ("A-M14", "anthropic", request(user(), assistant(text("Sure, "))), 400, "M14",
     "messages: final assistant content cannot end with trailing whitespace"),
    ("A-M15", "anthropic", request(users(text("", cache_control={"type": "ephemeral"}))), 400,
     "M15", "messages.0.content.0.text: cache_control cannot be set for empty text blocks"),
    ("A-M16", "anthropic", request(users(*[text(f"t{k}", cache_control={"type": "ephemeral"})
                                           for k in range(5)])), 400, "M16",
     "A maximum of 4 blocks with cache_control may be provided. Found 5."),
    ("A-M17", "anthropic", request(*LOOP, thinking={"type": "enabled", "budget_tokens": 2048}),
     400, "M17", "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but "
     "found `tool_use`. When `thinking` is enabled, a final `assistant` message must start with "
     "a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We "
     "recommend you include thinking blocks from previous turns. To avoid this requirement, "
     "disable `thinking`. Please consult our documentation at "
     "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"),
    ("A-M18-empty", "anthropic", request(user(), assistant(thinking(signature=""), use()),
                                         users(result())), 400, "M18",
     "messages.1.content.0: Invalid `signature` in `thinking` block"),
    ("A-M18-mangled", "anthropic", request(user(), assistant(
        thinking(signature='RW11bGF0ZWQgc2lnbmF0dXJlIG9mIGEg\\"dGhpbmtpbmc='), use()),
        users(result())), 400, "M18",
     "messages.1.content.0: Invalid `signature` in `thinking` block"),
    ("A-M18-missing", "anthropic", request(user(), assistant(
        {"type": "thinking", "thinking": "t"}, use()), users(result())), 400, "M18",
     "messages.1.content.0.thinking.signature: Field required"),
    ("A-M19", "anthropic", request(user(), assistant(thinking(), text("So"))), 400, "M19",
     "messages.1.content.0: When thinking is disabled, an `assistant` message in the final "
     "position cannot contain `thinking`. To use thinking blocks, enable `thinking` in your "
     "request."),
    ("A-M20", "anthropic", request(user(), assistant(thinking()),
                                   thinking={"type": "enabled", "budget_tokens": 2048}),
     400, "M20", "messages.1: The final block in an assistant message cannot be `thinking`."),
    ("A-M24", "anthropic", request(user(), {"role": "system", "content": "Be brief."}), 400,
     "M24", "role 'system' is not supported on this model"),
    ("A-M26", "anthropic", request(user(), {"role": "tool", "content": "42"}), 400, "M26",
     'messages: Unexpected role "tool". Allowed roles are "user" or "assistant". For '
     "instructions on how to use tools, see "
     "https://platform.claude.com/docs/en/agents-and-tools/tool-use/overview."),
    ("A-M28", "anthropic", {**request(user(), assistant(text("{"))), "model": "claude-opus-4-6"},
     400, "M28", "This model does not support assistant message prefill. The conversation must "
     "end with a user message."),
    ("A-M29", "anthropic", request(user(), tools=[READ, READ]), 400, "M29",
     "tools: Tool names must be unique."),
    ("A-max_tokens", "anthropic", {"model": "claude-sonnet-4-5", "messages": [user()]}, 400, "S1",
     "max_tokens: Field required"),
    ("A-M25-first", "anthropic", {**request({"role": "system", "content": "x"}, user()),
                                  "model": "claude-opus-4-8"}, 400, "M25",
     "messages.0: a system message must follow a user message and be the last message or be "
     "followed by an assistant message"),
    ("A-M27", "anthropic", request(user(), assistant(use()), assistant(result()), user()), 400,
     "M27", "messages.1.content.1: `tool_result` blocks are not allowed in `assistant` messages"),
    ("A-M9", "anthropic", request(user(), assistant(use(input="{}")), users(result())), 400, "M9",
     "messages.1.content.0.tool_use.input: Input should be a valid dictionary"),
    ("G-M9-crash", "glm", request(user(), assistant(use(input=[])), users(result()),
                                  provider="glm"), 500, "M9",
     "[500]['ClaudeContentBlockToolResult' object has no attribute 'id'][emulator]"),
    ("G-max_tokens-crash", "glm", {"model": "glm-4.6", "messages": [user()]}, 500, "S1",
     "[500][max_tokens][emulator]"),
    ("K-M5-in-one-message", "kimi", request(user(), assistant(use(), use()), users(result()),
                                            provider="kimi"), 400, "M5",
     "messages.1.content.1: `tool_use` ids must be unique"),
    ("MM-M4", "minimax", request(*LOOP[:2], users(result(), result()), provider="minimax"), 400,
     "M4", "invalid params, tool result's tool id(toolu_01A) is duplicated (2013)"),
    ("MM-output_config", "minimax", request(user(), provider="minimax",
                                            output_config={"effort": "high"}), 400,
     "M-output_config", "invalid params, output_config (2013)"),
    ("DS-M26", "deepseek", request(user(), {"role": "tool", "content": "x"}, provider="deepseek"),
     400, "M26", "Failed to deserialize the JSON body into the target type: messages[1].role: "
     "unknown variant `tool`, expected `user` or `assistant` at line 1 column 113"),
    ("DS-M6-split", "deepseek", request(user(), assistant(use("a"), use("b")), users(result("a")),
                                        users(result("b")), provider="deepseek"), 400, "M6",
     M1.format(i=1, ids="b")),
    ("DS-M21", "deepseek", request(*LOOP, provider="deepseek", thinking={"type": "enabled"}), 400,
     "M21", "The `content[].thinking` in the thinking mode must be passed back to the API."),
    ("DS-M21-by-default", "deepseek", {**request(*LOOP, provider="deepseek"), "thinking": None},
     400, "M21", "The `content[].thinking` in the thinking mode must be passed back to the API."),
    ("DS-M22", "deepseek", request(user(), assistant({"type": "redacted_thinking", "data": "x"},
                                                     text("ok")), user(), provider="deepseek"),
     400, "M22", "Failed to deserialize the JSON body into the target type: messages[1]."
     "content[0]: unknown variant `redacted_thinking`, expected one of `text`, `thinking`, "
     "`tool_use`, `server_tool_use`, `web_search_tool_result` at line 1 column 169"),
    ("DS-M24", "deepseek", request(user(), {"role": "system", "content": "x"}, provider="deepseek"),
     400, "M24", "Failed to deserialize the JSON body into the target type: messages[1].role: "
     "unknown variant `system`, expected `user` or `assistant` at line 1 column 115"),
    ("DS-M29", "deepseek", request(user(), provider="deepseek", tools=[READ, READ]), 400, "M29",
     "Tool names must be unique."),
    ("DS-M31", "deepseek", request(user(), provider="deepseek", tools=[{**READ, "type": "custom"}]),
     400, "M31", "Failed to deserialize the JSON body into the target type: tools[0]: unknown "
     "variant `custom`, expected `web_search_20250305` or `web_search_20260209` at line 1 "
     "column 298"),
    ("K-M1", "kimi", request(*LOOP[:2], user("go on"), provider="kimi"), 400, "M1",
     M1.format(i=1, ids="toolu_01A")),
    ("K-M21", "kimi", {**request(*LOOP, provider="kimi"), "model": "kimi-k2.5"}, 400, "M21",
     "thinking is enabled but reasoning_content is missing in assistant tool call message at "
     "index 1"),
    ("K-M23", "kimi", request(user(), assistant(use()), users(result(content=[
        {"type": "tool_reference", "tool_name": "Read"}])), provider="kimi"), 400, "M23",
     "failed to convert tool result content: unsupported content type in "
     "ContentBlockParamUnion: tool_reference"),
    ("K-M30", "kimi", request(user(), provider="kimi", tools=[{**READ, "name": f"t{k}"}
                                                              for k in range(129)]),
     400, "M30", "a max of 128 tools can be supported"),
    ("K-M32", "kimi", {**request(user(), provider="kimi"), "model": "kimi-k3",
                       "thinking": {"type": "adaptive"}}, 400, "M32",
     "invalid thinking: only type=enabled is allowed for this model"),
    ("G-M1", "glm", request(*LOOP[:2], user("go on"), provider="glm"), 400, "M1", GLM_1214),
    ("G-M2", "glm", request(user(), users(result()), provider="glm"), 400, "M2", GLM_1214),
    ("G-M24", "glm", request(user(), {"role": "system", "content": "x"}, provider="glm"), 422,
     "M24", "Input should be 'user' or 'assistant'"),
    ("MM-M1", "minimax", request(*LOOP[:2], user("go on"), provider="minimax"), 400, "M1",
     "invalid params, tool call result does not follow tool call (2013)"),
    ("MM-M2", "minimax", request(user(), users(result("toolu_X")), provider="minimax"), 400,
     "M2", "invalid params, tool result's tool id(toolu_X) not found (2013)"),
    ("MM-M24", "minimax", request(user(), {"role": "system", "content": "x"}, provider="minimax"),
     400, "M24", "invalid params, chat content has invalid message role: system (2013)"),
    ("MM-M36", "minimax", request(user(), provider="minimax", tools=[
        {"type": "web_search_20250305", "name": "web_search"}]), 400, "M36",
     "invalid params, function name or parameters is empty (2013)"),
]  # fmt: skip


def raw_of(body: dict[str, Any]) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode()


@pytest.mark.parametrize(
    ("provider", "body", "status", "rule", "message"),
    [case[1:] for case in BROKEN],
    ids=[case[0] for case in BROKEN],
)
def test_broken_form_is_refused_with_the_providers_text(
    provider: str, body: dict[str, Any], status: int, rule: str, message: str
) -> None:
    rejection = validate_messages(provider, body, raw_of(body))
    assert rejection is not None, "accepted"
    assert (rejection.status, rejection.rule, rejection.message) == (status, rule, message)
    assert message in strings(json.loads(rejection.body)), "the text is not in the body"


def strings(value: Any) -> list[str]:
    """Every string inside a JSON value."""
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [s for item in items for s in strings(item)]


SHAPES = {
    "anthropic": lambda m: {"type": "error", "error": {"type": "invalid_request_error",
                                                       "message": m}},
    "kimi": lambda m: {"error": {"type": "invalid_request_error", "message": m}, "type": "error"},
    "glm": lambda m: {"type": "error", "error": {"type": "invalid_request_error", "code": "1214",
                                                 "message": m}},
    "minimax": lambda m: {"type": "error", "error": {"type": "invalid_request_error",
                                                     "message": m}},
    "deepseek": lambda m: {"type": "error", "error": {"type": "invalid_request_error",
                                                      "message": m}},
}  # fmt: skip


@pytest.mark.parametrize("provider", PROVIDERS)
def test_pairing_errors_come_in_the_providers_shape(provider: str) -> None:
    body = request(*LOOP[:2], user("go on"), provider=provider)
    rejection = validate_messages(provider, body, raw_of(body))
    assert rejection is not None
    payload = json.loads(rejection.body)
    request_id = payload.pop("request_id", None)
    assert payload == SHAPES[provider](rejection.message)
    if provider in ("anthropic", "minimax"):
        assert request_id
    if provider == "anthropic":
        assert request_id.startswith("req_")
        assert dict(rejection.headers)[b"request-id"] == request_id.encode()


#: Valid histories per provider, including forms only some providers take.
VALID: list[tuple[str, str, dict[str, Any]]] = [
    *[(f"{p}-loop", p, request(*LOOP, provider=p)) for p in PROVIDERS],
    *[(f"{p}-parallel", p, request(user(), assistant(text("Reading."), use("toolu_a"),
                                                     use("toolu_b")),
                                   users(result("toolu_a"), result("toolu_b"), text("more")),
                                   provider=p)) for p in PROVIDERS],
    # compaction as the SDK's tool runner sends it: two consecutive user messages
    ("A-merge-results", "anthropic", request(user(), assistant(use()), user("note"),
                                             users(result())) | {"messages": [
        user(), assistant(use()), users(result()), user("note")]}),
    ("A-split-results", "anthropic", request(user(), assistant(use("toolu_a"), use("toolu_b")),
                                             users(result("toolu_a")), users(result("toolu_b")))),
    ("A-signed-thinking-loop", "anthropic", request(user(), assistant(thinking(), use()),
                                                    users(result()),
                                                    thinking={"type": "enabled",
                                                              "budget_tokens": 2048})),
    ("A-urlsafe-unpadded-signature", "anthropic", request(
        user(), assistant(thinking(signature="RW11bGF0ZWQ_c2lnbmF0dXJl-b2YgYSB0aGlua2luZyBibG9jaw"),
                          use()), users(result()))),
    ("A-adaptive-no-thinking", "anthropic", request(*LOOP, thinking={"type": "adaptive"})),
    ("A-prefill-old-model", "anthropic", request(user(), assistant(text("{")))),
    ("A-system-message-opus-4-8", "anthropic",
     {**request(user(), {"role": "system", "content": "Be brief."}), "model": "claude-opus-4-8"}),
    ("A-server-tool-pause", "anthropic", request(user(), assistant(
        {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {}}))),
    ("DS-empty-signature", "deepseek", request(user(), assistant(thinking(signature=""), use()),
                                               users(result()), provider="deepseek",
                                               thinking={"type": "enabled"})),
    ("DS-thinking-by-default", "deepseek", {"model": "deepseek-chat", "max_tokens": 1024,
                                            "messages": [user(), assistant(thinking(signature=""),
                                                                           use()),
                                                         users(result())]}),
    ("DS-duplicate-ids-across-turns", "deepseek", request(*LOOP, assistant(use()),
                                                          users(result()), provider="deepseek")),
    ("K-system-message", "kimi", request(user(), {"role": "system", "content": "x"},
                                         provider="kimi")),
    ("K-ids", "kimi", request(user(), assistant(use("functions.read_file:0")),
                              users(result("functions.read_file:0")), provider="kimi")),
    ("G-duplicate-result", "glm", request(*LOOP[:2], users(result(), result()), provider="glm")),
]  # fmt: skip


@pytest.mark.parametrize(("provider", "body"), [c[1:] for c in VALID], ids=[c[0] for c in VALID])
def test_valid_history_is_accepted(provider: str, body: dict[str, Any]) -> None:
    rejection = validate_messages(provider, body, raw_of(body))
    assert rejection is None, rejection.message if rejection else ""


def test_deepseek_does_not_merge_but_anthropic_does() -> None:
    split = [user(), assistant(use("a"), use("b")), users(result("a")), users(result("b"))]
    assert validate_messages("anthropic", request(*split)) is None
    refused = validate_messages("deepseek", request(*split, provider="deepseek"))
    assert refused is not None
    assert refused.rule == "M6"


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("value", [None, 1, "x", [], {}, {"messages": "x"},
                                   {"model": "m", "max_tokens": 1, "messages": [1, [], {}]},
                                   {"model": "m", "max_tokens": 1, "messages": [
                                       {"role": "user", "content": [1, {"type": 2}, {}]}]},
                                   {"model": "m", "max_tokens": 1, "messages": [
                                       {"role": ["x"], "content": "x"}]}])  # fmt: skip
def test_malformed_bodies_are_refused_never_raise(provider: str, value: Any) -> None:
    rejection = validate_messages(provider, value)
    assert rejection is not None
    assert 400 <= rejection.status < 600


def test_models_table_matches_builders() -> None:
    assert set(MODELS) == {"anthropic", "deepseek", "kimi", "glm", "minimax"}
