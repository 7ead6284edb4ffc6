"""``messages_system_message``: a ``role: system`` message where the model refuses it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from proxy.core.messages.index import index_of
from proxy.core.messages.items import Block, Messages, as_blocks, blocks
from proxy.core.messages.rules.common import facts, model_in, rule, with_content
from proxy.core.rule import Hit, Params


@rule(
    params={"refused": False},
    hint="Put system text in the top-level 'system' field (or a <system-reminder> in the user "
    "message) for this model.",
)
def messages_system_message(history: Messages, params: Params) -> list[Hit]:
    """A ``role: system`` message the model refuses, or placed where it may not stand.

    Claude Code (2.1.154+) sends mid-conversation system messages; only Opus 4.8, Opus 5,
    Fable 5 and Mythos 5 take them: other Claude models answer ``role 'system' is not
    supported on this model``, DeepSeek ``messages[1].role: unknown variant `system` ``, GLM a
    422 ``Input should be 'user' or 'assistant'``, MiniMax ``invalid message role: system
    (2013)`` (anthropic-messages.md M24; claude-code#61412, aattaran/deepclaude#29,
    zai-org/GLM-5#74, MiniMax-M2.7#43). Where the model takes them, one must follow a user
    message, be last or before an assistant message, not follow another, and hold only text
    (M25, platform.claude.com mid-conversation-system-messages). The ``move`` repair appends
    its text to the previous user message as ``<system-reminder>…</system-reminder>`` (Claude
    Code's own fallback), or to the top-level ``system`` when no user message precedes it.
    ``refused`` (set by repair on reject when the upstream refused the role) skips the model
    check.
    """
    if "system" not in index_of(history).role_set():
        return []
    accepted = not params.get("refused") and model_in(history, facts(params).system_role_models)
    placement = facts(params).system_placement
    hits = []
    for i, role in enumerate(history.roles):
        if role != "system":
            continue
        if not accepted:
            hits.append(Hit(i, ".role", "role 'system' is not supported on this model"))
        elif placement and _misplaced(history, i):
            hits.append(Hit(i, ".role", "system message placed where the model refuses it"))
    return hits


def _misplaced(history: Messages, i: int) -> bool:
    """M25: after a user message (or an assistant one ending in server tool use), last or
    before an assistant message, text only."""
    roles = history.roles
    before = history.messages[i - 1] if i else None
    ok_before = before is not None and (
        roles[i - 1] == "user" or (roles[i - 1] == "assistant" and _ends_in_server_tool(before))
    )
    ok_after = i + 1 == len(roles) or roles[i + 1] == "assistant"
    text_only = all(b.get("type") == "text" for b in blocks(history.messages[i]))
    return not (ok_before and ok_after and text_only)


def _ends_in_server_tool(message: dict[str, Any]) -> bool:
    content = blocks(message)
    return bool(content) and content[-1].get("type") == "server_tool_use"


@messages_system_message.repair("move")
def _move(history: Messages, hits: Sequence[Hit], params: Params) -> Messages:
    moved = {h.index for h in hits}
    entries: list[tuple[dict[str, Any], int | None]] = []
    system_texts: list[str] = []
    for i, message in enumerate(history.messages):
        if i not in moved:
            entries.append((message, i))
            continue
        text = _text(message)
        target = _previous_user(entries)
        if target is None:
            system_texts.append(text)
            continue
        previous, source = entries[target]
        reminder = {"type": "text", "text": f"<system-reminder>{text}</system-reminder>"}
        entries[target] = (with_content(previous, [*as_blocks(previous), reminder]), source)
    result = history.rebuild(entries)
    if system_texts:
        result = result.with_fields(
            {"system": _system(history.request.get("system"), system_texts)}
        )
    return result


def _previous_user(entries: list[tuple[dict[str, Any], int | None]]) -> int | None:
    """The position in ``entries`` of the last user message, when it is the last message or
    only assistant messages follow it."""
    for k in range(len(entries) - 1, -1, -1):
        if entries[k][0].get("role") == "user":
            return k
    return None


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if type(content) is str:
        return content
    parts = [b.get("text") for b in as_blocks(message)]
    return "\n\n".join(p for p in parts if type(p) is str)


def _system(current: Any, texts: list[str]) -> Any:
    """The top-level ``system`` with ``texts`` appended (a string stays a string)."""
    joined = "\n\n".join(texts)
    if current is None or current == "":
        return joined
    if type(current) is str:
        return f"{current}\n\n{joined}"
    extra: list[Block] = [{"type": "text", "text": t} for t in texts]
    return [*current, *extra] if type(current) is list else joined
