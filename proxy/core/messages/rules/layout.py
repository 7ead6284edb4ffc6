"""Rules about how turns are laid out around tool results: results split over messages an
upstream does not merge, and server-tool results cut from their call."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from proxy.core.messages import index as fast
from proxy.core.messages.index import index_of
from proxy.core.messages.items import Messages, as_blocks, blocks
from proxy.core.messages.rules.common import facts, rule, turns, with_content
from proxy.core.messages.rules.turns import rebuild
from proxy.core.rule import Hit, Params


@rule(
    tools_only=True,
    hint="Send all results of one assistant turn in the one user message right after it.",
)
def messages_split_tool_results(history: Messages, params: Params) -> list[Hit]:
    """Tool results of one turn split over consecutive user messages, sent to an upstream that
    does not merge them.

    Anthropic merges consecutive same-role messages before validating; DeepSeek does not, and
    answers M1's ``tool_use ids were found without tool_result blocks immediately after``
    (anthropic-messages.md M6; AstrBotDevs/AstrBot#7871, deepseek-ai/DeepSeek-V3#967). The
    ``merge`` repair joins the run of user messages into one, as Anthropic would.
    """
    if facts(params).merges_same_role:
        return []
    index = index_of(history)
    if fast.FAST and index.alternates():
        return []  # no two user messages in a row
    hits = []
    roles, start = index.roles, 0
    for i in range(1, len(roles)):
        if roles[i] != "user" or roles[i - 1] != "user":
            start = i
            continue
        if i in index.holders("tool_result"):
            hits.append(Hit(i, "", f"tool results split from {history.path(start)}", start))
    return hits


@messages_split_tool_results.repair("merge")
def _merge(history: Messages, hits: Sequence[Hit], params: Params) -> Messages:
    ends: dict[int, int] = {}  # run start -> last message of the run holding results
    for hit in hits:
        ends[hit.data] = max(ends.get(hit.data, hit.index), hit.index)
    entries: list[tuple[dict[str, object], int | None]] = []
    i = 0
    while i < len(history):
        end = ends.get(i, i)
        message = history.messages[i]
        if end > i:
            content = [b for k in range(i, end + 1) for b in as_blocks(history.messages[k])]
            message = with_content(message, content)
        entries.append((message, i))
        i = end + 1
    return history.rebuild(entries)


@rule(
    hint="Keep each server tool result right after its server_tool_use, in the same message.",
)
def messages_orphan_server_tool_result(history: Messages, params: Params) -> list[Hit]:
    """A server tool's result (``web_search_tool_result``, ``advisor_tool_result``…) with no
    ``server_tool_use`` before it in its turn.

    Anthropic answers ``messages.{i}.content.{j}: unexpected `tool_use_id` found in
    `advisor_tool_result` blocks: {id}. Each `advisor_tool_result` block must have a
    corresponding `server_tool_use` block before it.`` (anthropic-messages.md M10;
    claude-code#64383, #66548, #65726). The ``drop`` repair drops it: its content is the
    server's encrypted data, which the model cannot read without the call.
    """
    merges = facts(params).merges_same_role
    if fast.FAST and not any(_server_result(kind) for kind in index_of(history).by_type):
        return []
    hits = []
    for turn in turns(history, merges):
        started: set[object] = set()
        for i in turn.members:
            for j, block in enumerate(blocks(history.messages[i])):
                kind = block["type"]
                if kind == "server_tool_use":
                    started.add(block.get("id"))
                elif _server_result(kind) and not _started(block.get("tool_use_id"), started):
                    hits.append(Hit(i, f".content[{j}]", f"{kind} without its call", (i, j)))
    return hits


def _started(call_id: Any, started: set[object]) -> bool:
    """Whether ``call_id`` names a call started before (an id that is no string names none:
    the calls' ids are strings)."""
    return type(call_id) is str and call_id in started


def _server_result(kind: str) -> bool:
    return kind.endswith("_tool_result") and kind != "tool_result"


@messages_orphan_server_tool_result.repair("drop")
def _drop_server_result(history: Messages, hits: Sequence[Hit], params: Params) -> Messages:
    merges = facts(params).merges_same_role
    return rebuild(history, merges, {}, {}, {h.data for h in hits})
