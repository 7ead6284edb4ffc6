"""Content, thinking, placement and tool-list rules of the Messages emulators (anthropic-messages.md
§3; the provider matrix says which provider enforces which).

Each check takes the merged `Turn`s (or the body) and returns a `Finding` (rule, text) or None.
Texts are the providers' own (V or R in §3) unless the docstring says ``ours``.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from proxy.emulator.messages_history import Turn

_ID = re.compile(r"[a-zA-Z0-9_-]+")
_SERVER_ID = re.compile(r"srvtoolu_[a-zA-Z0-9_]+")
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]+={0,2}")
_NO_PREFILL = re.compile(r"claude-(?:(?:opus|sonnet)-4-[6-9]|opus-5|sonnet-5|fable|mythos)")
_THINKING_BLOCKS = ("thinking", "redacted_thinking")
#: Shortest signature taken as genuine: codex2api PR#613 reproduced M18 with an empty and a
#: 24-character signature; real ones run to hundreds of characters (the bound is ours).
MIN_SIGNATURE = 32
M17_TEXT = (
    "messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{found}`. "
    "When `thinking` is enabled, a final `assistant` message must start with a thinking block "
    "(preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you "
    "include thinking blocks from previous turns. To avoid this requirement, disable "
    "`thinking`. Please consult our documentation at "
    "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
)
M19_TEXT = (
    "messages.{i}.content.{j}: When thinking is disabled, an `assistant` message in the final "
    "position cannot contain `thinking`. To use thinking blocks, enable `thinking` in your "
    "request."
)
M28_TEXT = (
    "This model does not support assistant message prefill. The conversation must end with a "
    "user message."
)


class Finding(NamedTuple):
    rule: str
    text: str


def thinking_type(body: dict[str, Any]) -> str | None:
    thinking = body.get("thinking")
    kind = thinking.get("type") if isinstance(thinking, dict) else None
    return kind if isinstance(kind, str) else None


def anthropic_blocks(turns: list[Turn]) -> Finding | None:
    """M27 (ours), M7, M15, M11, M12, M18 per block, then M13 per turn."""
    for i, turn in enumerate(turns):
        for j, block in enumerate(turn.blocks):
            found = _misplaced(block, turn.role, i, j) or _block_rules(block, i, j)
            if found is not None:
                return found
        if not turn.blocks and not (i == len(turns) - 1 and turn.role == "assistant"):
            text = f"messages.{i}: all messages must have non-empty content except for the "
            return Finding("M13", text + "optional final assistant message")
    return None


def _misplaced(block: dict[str, Any], role: str, i: int, j: int) -> Finding | None:
    """M27 (I): results only in user turns, calls and thinking only in assistant turns; ours."""
    kind = block["type"]
    wrong = (role == "assistant" and kind == "tool_result") or (
        role == "user" and kind in ("tool_use", "server_tool_use", *_THINKING_BLOCKS)
    )
    if not wrong:
        return None
    return Finding("M27", f"messages.{i}.content.{j}: `{kind}` blocks are not allowed in "
                   f"`{role}` messages")  # fmt: skip


def _block_rules(block: dict[str, Any], i: int, j: int) -> Finding | None:
    kind, path = block["type"], f"messages.{i}.content.{j}"
    if kind == "tool_use" and not _ID.fullmatch(block["id"]):
        return Finding("M7", f"{path}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'")
    if kind == "tool_result" and not _ID.fullmatch(block["tool_use_id"]):  # ours: same pattern
        text = f"{path}.tool_result.tool_use_id: String should match pattern '^[a-zA-Z0-9_-]+$'"
        return Finding("M7", text)
    if kind == "server_tool_use" and not _SERVER_ID.fullmatch(block["id"]):
        text = f"{path}.server_tool_use.id: String should match pattern '^srvtoolu_[a-zA-Z0-9_]+$'"
        return Finding("M7", text)
    if kind == "text":
        return _text_rules(block, path)
    if kind == "thinking" and not genuine(block["signature"]):
        return Finding("M18", f"{path}: Invalid `signature` in `thinking` block")
    return None


def _text_rules(block: dict[str, Any], path: str) -> Finding | None:
    text = block["text"]
    if not text and block.get("cache_control") is not None:
        return Finding("M15", f"{path}.text: cache_control cannot be set for empty text blocks")
    if not text:
        return Finding("M11", "messages: text content blocks must be non-empty")
    if not text.strip():
        return Finding("M12", "messages: text content blocks must contain non-whitespace text")
    return None


def genuine(signature: str) -> bool:
    """A signature Anthropic would take: not empty, not cut short, base64 in either alphabet
    with optional padding (criteria ours: the signatures are opaque; a mangled one shows)."""
    return len(signature) >= MIN_SIGNATURE and _BASE64.fullmatch(signature) is not None


def anthropic_final(turns: list[Turn], body: dict[str, Any]) -> Finding | None:
    """M28, M19, M20, M14 on a final assistant turn; M17 on an open tool loop."""
    last, i = turns[-1], len(turns) - 1
    if last.role == "user":
        return _loop_thinking(turns, body)
    if last.role != "assistant":
        return None
    if _NO_PREFILL.match(str(body.get("model"))):
        return Finding("M28", M28_TEXT)
    return _final_blocks(last, i, body)


def _final_blocks(last: Turn, i: int, body: dict[str, Any]) -> Finding | None:
    """M19, M20, M14 on the final assistant turn."""
    kinds = [b["type"] for b in last.blocks]
    thinking = [j for j, kind in enumerate(kinds) if kind in _THINKING_BLOCKS]
    if thinking and thinking_type(body) not in ("enabled", "adaptive"):
        return Finding("M19", M19_TEXT.format(i=i, j=thinking[0]))
    if kinds and kinds[-1] == "thinking":
        return Finding(
            "M20", f"messages.{i}: The final block in an assistant message cannot be `thinking`."
        )
    if (
        kinds
        and kinds[-1] == "text"
        and last.blocks[-1]["text"] != last.blocks[-1]["text"].rstrip()
    ):
        return Finding(
            "M14", "messages: final assistant content cannot end with trailing whitespace"
        )
    return None


def _loop_thinking(turns: list[Turn], body: dict[str, Any]) -> Finding | None:
    """M17: under ``thinking: enabled``, the assistant turn of an open tool loop starts with
    thinking (adaptive models take a turn without it: codex2api PR#613)."""
    if thinking_type(body) != "enabled" or len(turns) < 2:
        return None
    if not any(b["type"] == "tool_result" for b in turns[-1].blocks):
        return None
    i, call = len(turns) - 2, turns[-2]
    first = call.blocks[0]["type"] if call.blocks else "none"
    if call.role != "assistant" or first in _THINKING_BLOCKS:
        return None
    return Finding("M17", M17_TEXT.format(i=i, found=first))


def cache_breakpoints(body: dict[str, Any]) -> Finding | None:
    """M16: at most 4 ``cache_control`` over tools, system and message blocks."""
    count = sum(_marked(tool) for tool in _list(body.get("tools")))
    count += sum(_marked(block) for block in _list(body.get("system")))
    for message in body["messages"]:
        for block in _list(message.get("content")):
            count += _marked(block) + sum(_marked(part) for part in _list(block.get("content")))
    if count <= 4:
        return None
    return Finding(
        "M16", f"A maximum of 4 blocks with cache_control may be provided. Found {count}."
    )


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _marked(block: Any) -> int:
    return int(isinstance(block, dict) and block.get("cache_control") is not None)


def system_placement(turns: list[Turn]) -> Finding | None:
    """M25 on models that take ``role: system`` messages (texts ours): not first, after a user
    turn (or an assistant turn ending in server tool use), last or before an assistant turn,
    text only."""
    for i, turn in enumerate(turns):
        if turn.role != "system":
            continue
        before = turns[i - 1] if i else None
        after = turns[i + 1] if i + 1 < len(turns) else None
        placed = before is not None and (
            before.role == "user"
            or (
                before.role == "assistant"
                and bool(before.blocks)
                and before.blocks[-1]["type"] == "server_tool_use"
            )
        )
        if not placed or (after is not None and after.role != "assistant"):
            text = f"messages.{i}: a system message must follow a user message and be the last "
            return Finding("M25", text + "message or be followed by an assistant message")
        if any(block["type"] != "text" for block in turn.blocks):
            return Finding("M25", f"messages.{i}: system messages may only contain text blocks")
    return None


def unique_tool_names(body: dict[str, Any], text: str) -> Finding | None:
    """M29 (Anthropic, DeepSeek)."""
    names = [tool.get("name") for tool in _list(body.get("tools")) if isinstance(tool, dict)]
    return Finding("M29", text) if len(names) != len(set(map(str, names))) else None


def missing_loop_thinking(turns: list[Turn]) -> int | None:
    """M21 (DeepSeek, Kimi): the first assistant turn with ``tool_use`` but no thinking block."""
    for i, turn in enumerate(turns):
        kinds = {b["type"] for b in turn.blocks}
        if turn.role == "assistant" and "tool_use" in kinds and not kinds & {"thinking"}:
            return i
    return None


def tool_reference(turns: list[Turn]) -> Finding | None:
    """M23 (Kimi): ``tool_reference`` inside a ``tool_result`` (MoonshotAI/Kimi-K2#118)."""
    for turn in turns:
        for block in turn.blocks:
            parts = _list(block.get("content")) if block["type"] == "tool_result" else []
            if any(isinstance(p, dict) and p.get("type") == "tool_reference" for p in parts):
                text = "failed to convert tool result content: unsupported content type in "
                return Finding("M23", text + "ContentBlockParamUnion: tool_reference")
    return None
