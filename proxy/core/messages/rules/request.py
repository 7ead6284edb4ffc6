"""Rules about the request as a whole: roles, tool definitions and switches no repair can
guess (rejected before anything is sent), and tool lists a repair can clean."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from proxy.core.messages import index as fast
from proxy.core.messages.facts import ROLES
from proxy.core.messages.index import index_of
from proxy.core.messages.items import Messages
from proxy.core.messages.rules.common import facts, model_in, rule, thinking_type
from proxy.core.rule import Hit, Params


@rule(
    hint="Use roles 'user' and 'assistant' only; tool results are tool_result blocks in a user "
    "message.",
)
def messages_unknown_role(history: Messages, params: Params) -> list[Hit]:
    """A message whose role is not ``user``, ``assistant`` or ``system``.

    OpenAI-shaped histories sent to a Messages endpoint carry ``role: "tool"``: Anthropic
    answers ``messages: Unexpected role "tool". Allowed roles are "user" or "assistant".``,
    DeepSeek ``messages[4].role: unknown variant `tool` `` (anthropic-messages.md M26,
    NyarchAssistant#157, EchoBird#155). No repair knows which call it answers: rejected.
    """
    index = index_of(history)
    if fast.FAST and ROLES.issuperset(index.role_set()):
        return []
    roles = index.roles
    return [
        Hit(i, ".role", f"role {role!r} is not a Messages role", fatal=True)
        for i, role in enumerate(roles)
        if role not in ROLES
    ]


_CALLS = frozenset({"tool_use", "server_tool_use"})


@rule(
    tools_only=True,
    hint="Send every tool_use with a non-empty 'name' and an object 'input'.",
)
def messages_tool_use_shape(history: Messages, params: Params) -> list[Hit]:
    """A ``tool_use`` whose ``name`` is empty or missing, or whose ``input`` is not an object.

    Anthropic answers ``messages.{i}.content.{j}.tool_use.name: String should have at least 1
    character`` (anthropic-messages.md M8, OmniRoute#191) and refuses a non-object ``input``;
    GLM crashes with a 500 (M9, zai-coding-plugins#14). Which tool was called, or with what,
    cannot be guessed: rejected.
    """
    index = index_of(history)
    calls = index.odd_calls if fast.FAST else index.of_any(_CALLS)  # the others are fine
    hits = []
    for i, j, block in calls:
        name = block.get("name")
        if type(name) is not str or not name:
            hits.append(Hit(i, f".content[{j}].name", "tool_use without a name", fatal=True))
        if type(block.get("input")) is not dict:
            detail = "tool_use input is not an object"
            hits.append(Hit(i, f".content[{j}].input", detail, fatal=True))
    return hits


@rule(
    hint='Send thinking: {"type": "enabled", "budget_tokens": …} (or no \'thinking\') to this '
    "model.",
)
def messages_thinking_type(history: Messages, params: Params) -> list[Hit]:
    """A ``thinking.type`` other than ``enabled`` for a model that only takes ``enabled``.

    Kimi K2.7-code and K3 answer ``invalid thinking: only type=enabled is allowed for this
    model`` (anthropic-messages.md M32, MoonshotAI/Kimi-K2#141). Turning thinking on is the
    client's call, not the proxy's: rejected.
    """
    kind = thinking_type(history.request)
    if kind is None or kind == "enabled":
        return []
    if not model_in(history, facts(params).thinking_enabled_only_models):
        return []
    return [
        Hit(-1, "thinking.type", f"thinking type {kind!r} is refused by this model", fatal=True)
    ]


@rule(
    hint="Send at most as many tools as the upstream takes (Kimi: 128).",
)
def messages_too_many_tools(history: Messages, params: Params) -> list[Hit]:
    """More tool definitions than the upstream takes.

    Kimi answers ``a max of 128 tools can be supported`` (anthropic-messages.md M30,
    MoonshotAI/Kimi-K2#90). Which tools the model can do without is the client's call:
    rejected.
    """
    limit, tools = facts(params).max_tools, history.request.get("tools")
    if not limit or type(tools) is not list or len(tools) <= limit:
        return []
    return [Hit(-1, "tools", f"{len(tools)} tools, the upstream takes {limit}", fatal=True)]


@rule(
    hint="Define each tool once (one name, one definition).",
)
def messages_duplicate_tool_name(history: Messages, params: Params) -> list[Hit]:
    """Two tool definitions with one name, where the upstream wants names unique.

    Anthropic answers ``tools: Tool names must be unique.``, DeepSeek ``Tool names must be
    unique.`` (anthropic-messages.md M29, LibreChat#13162, claude-code#10687, 9router PR#3333);
    Kimi, GLM and MiniMax take duplicates. The ``drop`` repair drops identical duplicates
    (later copies); two different definitions under one name are rejected (which one the
    model should see is the client's call).
    """
    tools = history.request.get("tools")
    if not facts(params).unique_tool_names or type(tools) is not list:
        return []
    seen: dict[Any, Any] = {}
    hits = []
    for k, tool in enumerate(tools):
        name = tool.get("name") if type(tool) is dict else None
        if name is None:
            continue
        if name in seen:
            same = seen[name] == tool
            detail = f"tool name {name!r} is defined more than once"
            hits.append(Hit(-1, f"tools[{k}]", detail, data=k, fatal=not same))
        else:
            seen[name] = tool
    return hits


@messages_duplicate_tool_name.repair("drop")
def _drop_duplicates(history: Messages, hits: Sequence[Hit], params: Params) -> Messages:
    dropped = {h.data for h in hits if not h.fatal}
    tools = [t for k, t in enumerate(history.request["tools"]) if k not in dropped]
    return history.with_fields({"tools": tools}) if dropped else history


@rule(
    hint="Leave 'type' out of client tool definitions for this upstream (absent means custom).",
)
def messages_custom_tool_type(history: Messages, params: Params) -> list[Hit]:
    """A tool definition with ``"type": "custom"`` where the upstream knows only server tools
    by type.

    DeepSeek answers ``tools[0]: unknown variant `custom`, expected `web_search_20250305` or
    `web_search_20260209` `` (anthropic-messages.md M31, 9router#3905); an absent ``type``
    means a client tool there. The ``strip`` repair removes ``"type": "custom"``; another
    unknown type is rejected.
    """
    known, tools = facts(params).tool_types, history.request.get("tools")
    if known is None or type(tools) is not list:
        return []
    hits = []
    for k, tool in enumerate(tools):
        kind = tool.get("type") if type(tool) is dict else None
        if kind is not None and kind not in known:
            detail = f"tool type {kind!r} is unknown to the upstream"
            hits.append(Hit(-1, f"tools[{k}].type", detail, data=k, fatal=kind != "custom"))
    return hits


@messages_custom_tool_type.repair("strip")
def _strip_custom(history: Messages, hits: Sequence[Hit], params: Params) -> Messages:
    fixed = {h.data for h in hits if not h.fatal}
    if not fixed:
        return history
    tools = [
        {k: v for k, v in t.items() if k != "type"} if n in fixed else t
        for n, t in enumerate(history.request["tools"])
    ]
    return history.with_fields({"tools": tools})


@rule(
    hint="Leave out request fields the upstream refuses (MiniMax: output_config).",
)
def messages_unsupported_field(history: Messages, params: Params) -> list[Hit]:
    """A top-level request field the upstream refuses.

    Claude Code sends ``output_config: {"effort": …}``; MiniMax refuses it (``invalid params``,
    2013; anthropic-messages.md §1 request fields, MiniMax-AI/MiniMax-M2.7#17). The ``strip``
    repair removes the field: the upstream cannot honour it anyway.
    """
    refused = facts(params).refused_fields
    return [
        Hit(-1, name, f"{name!r} is refused by the upstream", name)
        for name in sorted(refused & history.request.keys())
    ]


@messages_unsupported_field.repair("strip")
def _strip_fields(history: Messages, hits: Sequence[Hit], params: Params) -> Messages:
    return history.without_fields(frozenset(h.data for h in hits))


@rule(
    hint="End the conversation with a user message: this model takes no assistant prefill.",
)
def messages_prefill(history: Messages, params: Params) -> list[Hit]:
    """A final assistant message (a prefill) sent to a model that refuses prefills.

    Opus 4.6+, Sonnet 4.6+, Opus/Sonnet 5, Fable and Mythos answer ``This model does not
    support assistant message prefill. The conversation must end with a user message.``
    (anthropic-messages.md M28, vscode-unify-chat-provider#249, magic-context#511,
    copilot-api PR#261). Dropping what the client wrote is no repair: rejected.
    """
    last = len(history) - 1
    if history.roles[last] != "assistant":
        return []
    if not model_in(history, facts(params).prefill_refused_models):
        return []
    return [Hit(last, "", "final assistant message (prefill) refused by this model", fatal=True)]
