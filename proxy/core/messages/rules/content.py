"""Rules about content blocks: types the upstream cannot read, empty text, empty messages,
and cache breakpoints."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from proxy.core.messages import index as fast
from proxy.core.messages.index import index_of, marked_at
from proxy.core.messages.items import Block, Messages, blocks
from proxy.core.messages.rules.common import facts, reference_text, rule, with_content
from proxy.core.rule import Hit, Params

#: User blocks with no text equivalent (their content is binary or encrypted).
_OPAQUE = frozenset({"image", "document"})


@rule(
    hint="Send only the content blocks the upstream knows (DeepSeek: no redacted_thinking, "
    "document or search_result).",
)
def messages_unsupported_block(history: Messages, params: Params) -> list[Hit]:
    """A content block of a type the upstream does not know.

    DeepSeek deserializes blocks into a closed enum: user ``text``/``image``/``tool_result``,
    assistant ``text``/``thinking``/``tool_use``/``server_tool_use``/``web_search_tool_result``;
    anything else fails with ``messages[i].content[j]: unknown variant `redacted_thinking` ``
    (anthropic-messages.md M22, api-docs.deepseek.com/api/create-message, free-claude-code#326).
    The ``convert`` repair drops ``redacted_thinking`` (encrypted reasoning only Anthropic can
    read) and turns a text document or a search result into text; other blocks (a PDF, an
    unknown server tool's result) cannot be converted without loss: rejected.
    """
    known = facts(params).block_types
    if known is None:
        return []
    index = index_of(history)
    if fast.FAST and all(
        known.get(role) is None or kinds <= known[role]
        for role, kinds in index.role_kinds().items()
    ):
        return []
    hits = []
    for i, j, block in history.blocks_at():
        allowed = known.get(index.roles[i])
        kind = block["type"]
        if allowed is None or kind in allowed:
            continue
        fatal = _converted(block) is None and kind != "redacted_thinking"
        hits.append(Hit(i, f".content[{j}]", f"{kind} block unknown to the upstream", j, fatal))
    return hits


def _converted(block: Block) -> Block | None:
    """The block as text, when it has a text form."""
    source = block.get("source")
    if block["type"] == "document" and type(source) is dict and source.get("type") == "text":
        return {"type": "text", "text": str(source.get("data", ""))}
    if block["type"] == "search_result":
        parts = [c.get("text", "") for c in block.get("content") or [] if type(c) is dict]
        header = f"{block.get('title', '')} ({block.get('source', '')})".strip()
        return {"type": "text", "text": "\n".join([header, *parts])}
    return None


@messages_unsupported_block.repair("convert")
def _convert(history: Messages, hits: Sequence[Hit], params: Params) -> Messages:
    return _each_block(history, hits, _converted)


def _each_block(
    history: Messages, hits: Sequence[Hit], change: Callable[[Block], Block | None]
) -> Messages:
    """Replace the block of each hit (``hit.data``: its index in the message) by ``change`` of
    it (None drops it); fatal hits are left alone, and a message left empty stays for the
    empty-message rule to judge."""
    found: dict[int, dict[int, Block | None]] = {}
    for hit in hits:
        if not hit.fatal:
            block = blocks(history.messages[hit.index])[hit.data]
            found.setdefault(hit.index, {})[hit.data] = change(block)
    changes = {}
    for i, per_block in found.items():
        content: list[Block] = []
        for j, block in enumerate(blocks(history.messages[i])):
            new = per_block.get(j, block) if j in per_block else block
            if new is not None:
                content.append(new)
        changes[i] = with_content(history.messages[i], content)
    return history.replace(changes)


@rule(
    tools_only=True,
    hint="Send tool_reference results as text naming the tool to this upstream.",
)
def messages_tool_reference(history: Messages, params: Params) -> list[Hit]:
    """A ``tool_reference`` block (Claude Code's ToolSearch) inside a ``tool_result``, sent to
    an upstream that cannot read one.

    Kimi answers ``failed to convert tool result content: unsupported content type in
    ContentBlockParamUnion: tool_reference`` (anthropic-messages.md M23, MoonshotAI/Kimi-K2#118).
    The ``text`` repair replaces it by a text block naming the tool.
    """
    if facts(params).tool_reference:
        return []
    hits = []
    for i, j, block in index_of(history).of("tool_result"):
        content = block.get("content")
        if type(content) is not list:
            continue
        for k, part in enumerate(content):
            if type(part) is dict and part.get("type") == "tool_reference":
                hits.append(Hit(i, f".content[{j}].content[{k}]", "tool_reference block", j))
    return hits


@messages_tool_reference.repair("text")
def _reference_text(history: Messages, hits: Sequence[Hit], params: Params) -> Messages:
    return _each_block(history, hits, _references_as_text)


def _references_as_text(result: Block) -> Block:
    content = [
        reference_text(p) if type(p) is dict and p.get("type") == "tool_reference" else p
        for p in result["content"]
    ]
    return {**result, "content": content}


@rule(
    hint="Leave out empty and whitespace-only text blocks.",
)
def messages_empty_text(history: Messages, params: Params) -> list[Hit]:
    """An empty or whitespace-only text block (with or without ``cache_control``).

    Anthropic answers ``messages: text content blocks must be non-empty``, ``…must contain
    non-whitespace text`` and ``messages.{i}.content.{j}.text: cache_control cannot be set for
    empty text blocks`` (anthropic-messages.md M11, M12, M15; claude-code#59812, #23440,
    #54013, opencode#31259). The ``drop`` repair drops the block (it says nothing); no
    placeholder is written (placeholders leak into answers, litellm#24498).
    """
    if not facts(params).strict_text:
        return []
    return [Hit(i, f".content[{j}]", "empty text block", j) for i, j in index_of(history).blank]


@messages_empty_text.repair("drop")
def _drop_text(history: Messages, hits: Sequence[Hit], params: Params) -> Messages:
    return _each_block(history, hits, lambda _: None)


@rule(
    hint="Leave out messages without content (only a final assistant message may be empty).",
)
def messages_empty_message(history: Messages, params: Params) -> list[Hit]:
    """A message with no content (``""``, whitespace, ``[]``) that is not the final assistant
    message.

    Anthropic answers ``messages.{i}: all messages must have non-empty content except for the
    optional final assistant message`` (anthropic-messages.md M13; claude-code#6774, #3196,
    zypher-agent PR#122). The ``drop`` repair drops the message (its neighbours then merge,
    as Anthropic merges them).
    """
    if not facts(params).strict_text:
        return []
    last, index = len(history) - 1, index_of(history)
    return [
        Hit(i, ".content", "message without content")
        for i in index.empty
        if not (i == last and index.roles[i] == "assistant")
    ]


@messages_empty_message.repair("drop")
def _drop_message(history: Messages, hits: Sequence[Hit], params: Params) -> Messages:
    return history.without({h.index for h in hits})


@rule(
    hint="Mark at most 4 blocks with cache_control (tools, system and messages together).",
)
def messages_cache_control_limit(history: Messages, params: Params) -> list[Hit]:
    """More than 4 ``cache_control`` breakpoints over tools, system and message blocks.

    Anthropic answers ``A maximum of 4 blocks with cache_control may be provided. Found
    {n}.`` (anthropic-messages.md M16; sub2api#176 injected breakpoints, GCMP PR#83). The
    ``unmark`` repair removes ``cache_control`` from the oldest message blocks until 4
    remain (the newest breakpoints cache the longest prefix); when tools and system alone
    hold more than 4, rejected.
    """
    if not facts(params).strict_text:
        return []
    request = history.request
    fixed = sum(marked_at(b) for key in ("tools", "system") for b in _list(request.get(key)))
    marked = index_of(history).marked
    total = fixed + sum(marks for _, _, marks in marked)
    if total <= 4:
        return []
    if fixed > 4:
        return [Hit(-1, "system", f"{total} cache_control breakpoints, at most 4", fatal=True)]
    excess, hits = total - 4, []
    for i, j, marks in marked:
        if excess <= 0:
            break
        excess -= marks
        hits.append(Hit(i, f".content[{j}]", f"{total} cache_control breakpoints, at most 4", j))
    return hits


def _list(value: Any) -> list[Any]:
    return value if type(value) is list else []


@messages_cache_control_limit.repair("unmark")
def _unmark(history: Messages, hits: Sequence[Hit], params: Params) -> Messages:
    return _each_block(history, hits, _unmarked)


def _unmarked(block: Block) -> Block:
    new = {k: v for k, v in block.items() if k != "cache_control"}
    if type(new.get("content")) is list:
        new["content"] = [
            {k: v for k, v in b.items() if k != "cache_control"} if type(b) is dict else b
            for b in new["content"]
        ]
    return new
