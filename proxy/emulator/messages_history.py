"""The turns of a Messages history and its tool pairing (M1-M6, M10 of anthropic-messages.md §3).

Anthropic merges consecutive same-role messages before it validates, so its indexes count
merged messages (SDK snapshot f59a9391, picoclaw#1792); Kimi, GLM and MiniMax accept results
split over consecutive user messages (matrix M6: inferred to merge too); DeepSeek does not merge
(AstrBot#7871), so a turn's results split over two user messages break M1 there (M6).
``role: system`` messages (M24) never merge.

Faults are neutral (`Fault`); each provider words them (`messages_validate`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from proxy.emulator.messages_shape import blocks_of

Block = dict[str, Any]


@dataclass(slots=True)
class Turn:
    """One (merged) message: its role, its blocks and where it came from."""

    role: str
    blocks: list[Block]
    sources: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Fault:
    """A rule broken at ``messages.{index}`` (block `block`), with the ids it names."""

    rule: str
    index: int
    block: int = 0
    ids: tuple[str, ...] = ()


def turns_of(messages: list[dict[str, Any]], *, merge: bool) -> list[Turn]:
    """The history as the provider validates it (shape already checked)."""
    turns: list[Turn] = []
    for message in messages:
        role, blocks = message["role"], blocks_of(message)
        if merge and turns and turns[-1].role == role and role != "system":
            turns[-1].blocks.extend(blocks)
            turns[-1].sources.append(message)
        else:
            turns.append(Turn(role, blocks, [message]))
    return turns


def call_ids(turn: Turn | None) -> list[str]:
    """The ``tool_use`` ids of an assistant turn (none for any other turn)."""
    if turn is None or turn.role != "assistant":
        return []
    return [b["id"] for b in turn.blocks if b["type"] == "tool_use"]


def leading_results(turn: Turn | None) -> set[str]:
    """The ids answered by the ``tool_result`` blocks that open a user turn (M3)."""
    answered: set[str] = set()
    for block in turn.blocks if turn is not None and turn.role == "user" else ():
        if block["type"] != "tool_result":
            break
        answered.add(block["tool_use_id"])
    return answered


def pairing_fault(
    turns: list[Turn], *, whole_request_ids: bool, single_result: bool
) -> Fault | None:
    """The first pairing fault: duplicate call ids (M5, across the whole request when
    `whole_request_ids`), unanswered calls (M1, M3, M6), orphan results (M2) and duplicate
    results (M4, unless not `single_result`)."""
    seen: set[str] = set()
    for i, turn in enumerate(turns):
        if turn.role == "assistant":
            found = _duplicate_call(turn, i, seen if whole_request_ids else set())
            found = found or _unanswered(turns, i)
        elif turn.role == "user":
            previous = turns[i - 1] if i > 0 else None
            found = _orphan_results(turn, i, set(call_ids(previous)), single_result)
        else:
            found = None
        if found is not None:
            return found
    return None


def _duplicate_call(turn: Turn, i: int, seen: set[str]) -> Fault | None:
    for j, block in enumerate(turn.blocks):
        if block["type"] == "tool_use":
            if block["id"] in seen:
                return Fault("M5", i, j, (block["id"],))
            seen.add(block["id"])
    return None


def _unanswered(turns: list[Turn], i: int) -> Fault | None:
    following = turns[i + 1] if i + 1 < len(turns) else None
    answered = leading_results(following)
    missing = [call for call in call_ids(turns[i]) if call not in answered]
    return Fault("M1", i, ids=tuple(dict.fromkeys(missing))) if missing else None


def _orphan_results(turn: Turn, i: int, calls: set[str], single: bool) -> Fault | None:
    answered: set[str] = set()
    for j, block in enumerate(turn.blocks):
        if block["type"] != "tool_result":
            continue
        call = block["tool_use_id"]
        if call not in calls:
            return Fault("M2", i, j, (call,))
        if call in answered and single:
            return Fault("M4", i, j, (call,))
        answered.add(call)
    return None


def server_result_fault(turns: list[Turn]) -> Fault | None:
    """M10: a server tool's ``*_tool_result`` follows its ``server_tool_use`` in the same turn
    (Anthropic; the ids it names are the result's)."""
    for i, turn in enumerate(turns):
        started: set[str] = set()
        for j, block in enumerate(turn.blocks):
            kind = block["type"]
            if kind in ("server_tool_use", "mcp_tool_use") and isinstance(block.get("id"), str):
                started.add(block["id"])
            elif _server_result(kind, turn.role) and block.get("tool_use_id") not in started:
                return Fault("M10", i, j, (str(block.get("tool_use_id")), kind))
    return None


def _server_result(kind: str, role: str) -> bool:
    return kind.endswith("_tool_result") and kind != "tool_result" and role != "user"
