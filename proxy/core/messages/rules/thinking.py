"""Rules about thinking blocks: signatures, the thinking a provider wants on tool turns, the
final assistant message, and the open tool loop under ``thinking: enabled``."""

from __future__ import annotations

import re
from collections.abc import Sequence

from proxy.core.chat.fast import gets
from proxy.core.messages import index as fast
from proxy.core.messages.index import index_of
from proxy.core.messages.items import THINKING, Block, Messages, blocks, kinds
from proxy.core.messages.rules.common import (
    facts,
    last_turns,
    model_in,
    rule,
    thinking_type,
    turns,
    with_content,
)
from proxy.core.rule import Hit, Params

#: Shortest signature taken as whole: Anthropic's are long base64 strings, and a 24-character
#: one reproduces M18 (codex2api PR#613).
MIN_SIGNATURE = 32
#: Base64 in either alphabet, padding optional: a signature with anything else was mangled
#: (re-serialized, cut mid-escape); lenient so that a genuine one is never dropped.
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]+={0,2}")


def _unsigned(block: Block) -> bool:
    """No signature, an empty one, or one cut short or mangled (too short, not base64)."""
    signature = block.get("signature")
    if type(signature) is not str or len(signature) < MIN_SIGNATURE:
        return True
    return _BASE64.fullmatch(signature) is None


@rule(
    params={"signed_too": False},
    hint="Send thinking blocks back exactly as received, with their signature (or leave them out).",
)
def messages_unsigned_thinking(history: Messages, params: Params) -> list[Hit]:
    """A ``thinking`` block without a whole signature (missing, empty or truncated), sent where
    signatures are checked.

    Relays and transcripts lose signatures: Anthropic answers ``messages.{i}.content.{j}:
    Invalid `signature` in `thinking` block`` or ``….thinking.signature: Field required``
    (anthropic-messages.md M18; claude-code#10627, kaitranntt/ccs#415, codex2api PR#613;
    DeepSeek takes ``signature: ""``). The ``drop`` repair drops the block (prior-turn
    thinking may be omitted); a fake signature is never written (CLIProxyAPI PR#570). In the
    open tool loop under ``enabled``, ``messages_thinking_first`` then disables thinking.
    ``signed_too`` (set by repair on reject when the upstream called a signature invalid:
    minted by another provider, model or account, M34) drops signed blocks too.
    """
    signed_too = params.get("signed_too")
    if not signed_too and not facts(params).signed_thinking:
        return []
    index = index_of(history)
    if fast.FAST and not signed_too and _all_signed(index.blocks("thinking")):
        return []
    located = index.of("thinking")
    return [
        Hit(i, f".content[{j}]", "thinking block without a valid signature", j)
        for i, j, block in located
        if signed_too or _unsigned(block)
    ]


#: Signatures one a line, each whole base64 (:data:`_BASE64`).
_BASE64_LINES = re.compile(r"[A-Za-z0-9+/_-]+={0,2}(?:\n[A-Za-z0-9+/_-]+={0,2})*")


def _all_signed(thinking: list[Block]) -> bool:
    """Whether no thinking block is :func:`_unsigned`, read in a few C-level steps: the
    signatures are strings, none short, and joined one a line they are lines of base64 (one
    match, not one per block; no line break inside a signature)."""
    signatures = gets(thinking, "signature")
    if not signatures:
        return True
    try:
        joined = "\n".join(signatures)
    except TypeError:  # one is not a string
        return False
    return (
        min(map(len, signatures)) >= MIN_SIGNATURE
        and joined.count("\n") == len(signatures) - 1
        and _BASE64_LINES.fullmatch(joined) is not None
    )


@messages_unsigned_thinking.repair("drop")
def _drop_unsigned(history: Messages, hits: Sequence[Hit], params: Params) -> Messages:
    return _drop_blocks(history, {(h.index, h.data) for h in hits})


def _drop_blocks(history: Messages, places: set[tuple[int, int]]) -> Messages:
    changes = {}
    for i in {i for i, _ in places}:
        content = [b for j, b in enumerate(blocks(history.messages[i])) if (i, j) not in places]
        changes[i] = with_content(history.messages[i], content)
    return history.replace(changes)


def _thinks(history: Messages, params: Params) -> bool:
    """Whether the request runs in thinking mode on a provider that wants thinking on tool
    turns (M21): always-thinking models, else the request's switch, else the model's
    default."""
    known = facts(params)
    if model_in(history, known.thinking_always_models):
        return True
    kind = thinking_type(history.request)
    if kind in ("enabled", "disabled"):
        return kind == "enabled" and bool(
            known.thinking_default_models or known.thinking_always_models
        )
    return model_in(history, known.thinking_default_models)


@rule(
    tools_only=True,
    params={"thinks": False},
    hint="In thinking mode, send every assistant tool_use message back with its thinking block.",
)
def messages_thinking_on_tool_turns(history: Messages, params: Params) -> list[Hit]:
    """Thinking mode on DeepSeek or Kimi: an assistant message with ``tool_use`` but no
    thinking block.

    DeepSeek answers ``The `content[].thinking` in the thinking mode must be passed back to
    the API.`` (in OpenAI's shape), Kimi ``thinking is enabled but reasoning_content is missing
    in assistant tool call message at index {i}`` (anthropic-messages.md M21; aether#31,
    CSSwitch PR#72/#73, claudian#759, claude-code#37757). The ``add`` repair puts an empty
    thinking block first in the message (DeepSeek accepts empty thinking, Kimi inferred).
    ``thinks`` (set by repair on reject when the upstream said it thinks) skips the model
    check.
    """
    if not (params.get("thinks") or _thinks(history, params)):
        return []
    index = index_of(history)
    merges = facts(params).merges_same_role  # Kimi merges, DeepSeek not
    if fast.FAST and (not merges or index.alternates()):  # a turn per message
        unthinking = index.holders("tool_use") - index.holders("thinking")
        detail = "tool_use message without thinking in thinking mode"
        roles = index.roles
        return [Hit(i, ".content", detail) for i in sorted(unthinking) if roles[i] == "assistant"]
    hits = []
    for turn in turns(history, merges):
        members = turn.members
        if (
            turn.role == "assistant"
            and index.in_messages(members, "tool_use")
            and not index.in_messages(members, "thinking")
        ):
            detail = "tool_use message without thinking in thinking mode"
            hits.append(Hit(turn.first, ".content", detail))
    return hits


@messages_thinking_on_tool_turns.repair("add")
def _add_thinking(history: Messages, hits: Sequence[Hit], params: Params) -> Messages:
    empty: Block = {"type": "thinking", "thinking": ""}
    return history.replace(
        {
            h.index: with_content(
                history.messages[h.index], [empty, *blocks(history.messages[h.index])]
            )
            for h in hits
        }
    )


@rule(
    hint="End a prefill (final assistant message) with text, without trailing whitespace, and "
    "without thinking unless thinking is on.",
)
def messages_final_assistant(history: Messages, params: Params) -> list[Hit]:
    """A final (prefill) assistant message with thinking while thinking is off, ending in a
    thinking block, or ending in whitespace.

    Anthropic answers ``When thinking is disabled, an `assistant` message in the final
    position cannot contain `thinking`.``, ``The final block in an assistant message cannot
    be `thinking`.`` and ``final assistant content cannot end with trailing whitespace``
    (anthropic-messages.md M19, M20, M14; forgecode#1853, #2107, #1872, opencode#1295). The
    ``trim`` repair drops the thinking blocks (M19) or the trailing thinking block (M20) and
    strips the trailing whitespace of the last text (a text left empty goes).
    """
    if not facts(params).signed_thinking or history.roles[-1] != "assistant":
        return []
    i = len(history) - 1
    earlier = _earlier_thinking(history, params)
    content = history.messages[i]["content"]
    if type(content) is str:
        ends = content != content.rstrip()
        return earlier + (
            [Hit(i, ".content", "final assistant content ends in whitespace")] if ends else []
        )
    return earlier + _final_hits(history, i, content)


def _earlier_thinking(history: Messages, params: Params) -> list[Hit]:
    """M19 in the messages before the last one of a final assistant run the upstream merges
    into one (thinking off)."""
    if thinking_type(history.request) in ("enabled", "adaptive"):
        return []
    index = index_of(history)
    if fast.FAST and not index.has(THINKING):
        return []
    final = last_turns(history, facts(params).merges_same_role, 1)[-1]
    return [
        Hit(k, f".content[{j}]", "thinking in a final assistant message, thinking off", (k, j))
        for k in final.members[:-1]
        if index.holds(k, THINKING)
        for j, b in enumerate(blocks(history.messages[k]))
        if b["type"] in THINKING
    ]


def _final_hits(history: Messages, i: int, content: list[Block]) -> list[Hit]:
    on = thinking_type(history.request) in ("enabled", "adaptive")
    thinking = [j for j, b in enumerate(content) if b["type"] in THINKING]
    if thinking and not on:
        return [
            Hit(i, f".content[{j}]", "thinking in a final assistant message, thinking off")
            for j in thinking
        ]
    if content and content[-1]["type"] == "thinking":
        return [Hit(i, f".content[{len(content) - 1}]", "final assistant message ends in thinking")]
    last = content[-1] if content else None
    if last is not None and last["type"] == "text" and last["text"] != last["text"].rstrip():
        return [
            Hit(i, f".content[{len(content) - 1}]", "final assistant content ends in whitespace")
        ]
    return []


@messages_final_assistant.repair("trim")
def _trim(history: Messages, hits: Sequence[Hit], params: Params) -> Messages:
    earlier = {h.data for h in hits if h.data is not None}
    history = _drop_blocks(history, earlier) if earlier else history
    i = len(history) - 1
    message = history.messages[i]
    content = message["content"]
    if type(content) is str:
        return history.replace({i: {**message, "content": content.rstrip()}})
    on = thinking_type(history.request) in ("enabled", "adaptive")
    kept = [b for b in content if on or b["type"] not in THINKING]
    while kept and kept[-1]["type"] == "thinking":
        kept.pop()
    if kept and kept[-1]["type"] == "text":
        text = kept[-1]["text"].rstrip()
        kept[-1:] = [{**kept[-1], "text": text}] if text else []
    return history.replace({i: with_content(message, kept)})


@rule(
    tools_only=True,
    hint="With thinking enabled, send the open tool loop's assistant message back starting with "
    "its thinking block (or disable thinking).",
)
def messages_thinking_first(history: Messages, params: Params) -> list[Hit]:
    """``thinking: enabled``, and the assistant message of the open tool loop does not start
    with a thinking block.

    Anthropic answers ``messages.{i}.content.0.type: Expected `thinking` or
    `redacted_thinking`, but found `{type}`. When `thinking` is enabled, a final `assistant`
    message must start with a thinking block … To avoid this requirement, disable
    `thinking`.`` (anthropic-messages.md M17; haystack-core-integrations#2146, mastra#7799,
    kilocode#5219, opencode#3077). The ``disable`` repair sets ``thinking: {"type":
    "disabled"}`` for this request, the error's own advice; thinking is never made up.
    """
    if not facts(params).signed_thinking or thinking_type(history.request) != "enabled":
        return []
    ts = last_turns(history, facts(params).merges_same_role, 2)
    if len(ts) < 2 or ts[-1].role != "user" or ts[-2].role != "assistant":
        return []
    if not any(kinds(history.messages[i]).count("tool_result") for i in ts[-1].members):
        return []  # the last turn answers no call: no tool loop is open
    call = history.messages[ts[-2].first]
    first = blocks(call)[0]["type"] if blocks(call) else "text"
    if first in THINKING:
        return []
    return [Hit(ts[-2].first, ".content[0].type", f"expected thinking, found {first}")]


@messages_thinking_first.repair("disable")
def _disable(history: Messages, hits: Sequence[Hit], params: Params) -> Messages:
    return history.with_fields({"thinking": {"type": "disabled"}})


RULES = (
    messages_unsigned_thinking,
    messages_thinking_on_tool_turns,
    messages_final_assistant,
    messages_thinking_first,
)
