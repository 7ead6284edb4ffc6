"""Rules pairing ``tool_use`` blocks with their ``tool_result`` blocks, turn by turn (see
:mod:`.turns` for the terms). They run in this order, each on the output of the one before:
split results are joined, duplicates settled, misplaced results moved, orphans salvaged as
text, and calls left without a result answered with an error saying the output was lost.
"""

from __future__ import annotations

from collections.abc import Sequence

from proxy.core.messages.items import Block, Messages, as_blocks, blocks
from proxy.core.messages.rules.common import facts, turn_blocks, turns, with_content
from proxy.core.messages.rules.turns import (
    DUPLICATE_TEXT,
    LOST_TEXT,
    SALVAGE_TEXT,
    Place,
    lost_result,
    pairing,
    rebuild,
    salvaged,
    turn_content,
)
from proxy.core.rule import Hit, Params, rule


@rule(
    "messages_split_tool_results",
    api="messages",
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
    hits = []
    roles, start = history.roles, 0
    for i in range(1, len(roles)):
        if roles[i] != "user" or roles[i - 1] != "user":
            start = i
            continue
        if any(b["type"] == "tool_result" for b in blocks(history.messages[i])):
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
    "messages_duplicate_tool_result",
    api="messages",
    tools_only=True,
    params={"text": DUPLICATE_TEXT},
    hint="Send one tool_result per tool_use id.",
)
def messages_duplicate_tool_result(history: Messages, params: Params) -> list[Hit]:
    """Two ``tool_result`` blocks for one ``tool_use`` in one turn.

    Anthropic answers ``messages.{i}.content.{j}: each tool_use must have a single result.
    Found multiple `tool_result` blocks with id: {id}`` (anthropic-messages.md M4;
    picoclaw#1792, Roo-Code PR#9248; DeepSeek refuses it too, GLM answers 200). The ``keep_first``
    repair keeps the first result, drops later identical ones and turns a differing one into
    user text naming the call (its output is kept).
    """
    if facts(params).duplicate_results:
        return []
    found = pairing(history, facts(params).merges_same_role).duplicates
    return [Hit(i, f".content[{j}]", "second result for one tool_use", (i, j)) for i, j in found]


@messages_duplicate_tool_result.repair("keep_first")
def _keep_first(history: Messages, hits: Sequence[Hit], params: Params) -> Messages:
    merges = facts(params).merges_same_role
    salvage: dict[Place, list[Block]] = {}
    for turn in turns(history, merges):
        first: dict[str, Block] = {}
        for i, j, block in turn_blocks(history, turn):
            if block["type"] != "tool_result":
                continue
            if not any(h.data == (i, j) for h in hits):
                first.setdefault(block["tool_use_id"], block)
            elif first.get(block["tool_use_id"]) == block:
                salvage[(i, j)] = []
            else:
                salvage[(i, j)] = salvaged(block, params["text"])
    return _salvage_in_turns(history, merges, salvage)


def _salvage_in_turns(
    history: Messages, merges: bool, salvage: dict[Place, list[Block]]
) -> Messages:
    """Replace the results at ``salvage``'s places by their text, where they stood among the
    turn's other blocks; the turn's remaining results come first."""
    contents = {}
    for t, turn in enumerate(turns(history, merges)):
        if not any(i in turn.members for i, _ in salvage):
            continue
        results: list[Block] = []
        rest: list[Block] = []
        for i in turn.members:
            content = history.messages[i]["content"]
            if type(content) is str:
                rest.extend([{"type": "text", "text": content}] if content else [])
                continue
            for j, block in enumerate(content):
                if (i, j) in salvage:
                    rest.extend(salvage[(i, j)])
                else:
                    (results if block["type"] == "tool_result" else rest).append(block)
        contents[t] = [*results, *rest]
    return rebuild(history, merges, contents, {}, set(salvage))


@rule(
    "messages_misplaced_tool_result",
    api="messages",
    tools_only=True,
    hint="Send tool_result blocks first in the user message right after their tool_use, never "
    "in an assistant message.",
)
def messages_misplaced_tool_result(history: Messages, params: Params) -> list[Hit]:
    """A ``tool_result`` after text in its user message, or in a message other than the one
    right after its ``tool_use`` (an assistant message, a later turn).

    Results must come first in the user message after their call, else Anthropic answers M1's
    ``tool_use ids were found without tool_result blocks immediately after`` or M2's
    ``unexpected tool_use_id found in tool_result blocks`` (anthropic-messages.md M3, M27,
    M2; platform.claude.com handle-tool-calls, the SDK's older ``test_custom_message_handling``
    appended a result as ``assistant``). The ``move`` repair puts each result first in the user
    turn after its call (results keep their order, text follows); a ``tool_use`` in a user
    message cannot be placed: rejected.
    """
    found = pairing(history, facts(params).merges_same_role)
    hits = [
        Hit(i, f".content[{j}]", "tool_use block in a user message", fatal=True)
        for i, j in found.calls_in_user
    ]
    hits += [
        Hit(ts.first, "", "tool_result blocks come after other content", t)
        for t, ts in (
            (t, turns(history, facts(params).merges_same_role)[t]) for t in found.unhoisted
        )
    ]
    hits += [
        Hit(i, f".content[{j}]", "tool_result not in the message after its tool_use", (i, j))
        for (i, j) in sorted(found.moves)
    ]
    return hits


@messages_misplaced_tool_result.repair("move")
def _move(history: Messages, hits: Sequence[Hit], params: Params) -> Messages:
    merges = facts(params).merges_same_role
    found, ts = pairing(history, merges), turns(history, merges)
    moves = {p: c for p, c in found.moves.items() if any(h.data == p for h in hits)}
    incoming: dict[int, list[Block]] = {}
    for (i, j), c in sorted(moves.items(), key=lambda m: (m[1], m[0])):
        incoming.setdefault(c, []).append(history.messages[i]["content"][j])
    removed = set(moves)
    contents, after = {}, {}
    targets = {c + 1 for c in incoming} | set(found.unhoisted)
    for t in sorted(targets):
        if t < len(ts) and ts[t].role == "user":
            results, others = turn_content(history, ts[t], removed)
            contents[t] = [*results, *incoming.get(t - 1, []), *others]
        else:
            after[t - 1] = incoming[t - 1]
    return rebuild(history, merges, contents, after, removed)


@rule(
    "messages_orphan_tool_result",
    api="messages",
    tools_only=True,
    params={"text": SALVAGE_TEXT},
    hint="Keep each tool_use in the assistant message right before its tool_result.",
)
def messages_orphan_tool_result(history: Messages, params: Params) -> list[Hit]:
    """A ``tool_result`` whose ``tool_use`` is not in the previous assistant message, nor
    waiting for it anywhere.

    After compaction, plan mode or ``trim_messages`` the call is gone: Anthropic answers
    ``messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: {id}``,
    MiniMax ``tool result's tool id({id}) not found (2013)`` (anthropic-messages.md M2;
    claude-code#14643, #20895, langchain#29637, SDK snapshot f59a9391). The ``salvage`` repair
    turns it into user text naming the call and carrying its output (images kept), after the
    turn's results. One in an assistant message cannot become user text there: rejected.
    """
    merges = facts(params).merges_same_role
    hits = []
    for i, j in pairing(history, merges).orphans:
        fatal = history.roles[i] != "user"
        rid = history.messages[i]["content"][j]["tool_use_id"]
        detail = f"no tool_use {rid!r} in the previous message"
        hits.append(Hit(i, f".content[{j}]", detail, (i, j), fatal))
    return hits


@messages_orphan_tool_result.repair("salvage")
def _salvage(history: Messages, hits: Sequence[Hit], params: Params) -> Messages:
    merges = facts(params).merges_same_role
    salvage = {
        h.data: salvaged(history.messages[h.data[0]]["content"][h.data[1]], params["text"])
        for h in hits
        if not h.fatal
    }
    return _salvage_in_turns(history, merges, salvage) if salvage else history


@rule(
    "messages_missing_tool_result",
    api="messages",
    tools_only=True,
    params={"text": LOST_TEXT},
    hint="Send a tool_result for every tool_use in the next user message (an is_error result "
    "when the tool did not run).",
)
def messages_missing_tool_result(history: Messages, params: Params) -> list[Hit]:
    """A ``tool_use`` without a ``tool_result`` in the next message (a trailing one too).

    Interrupts, crashes, ``--resume`` and hooks leave calls unanswered: Anthropic answers
    ``messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after:
    {ids}``, MiniMax ``tool call result does not follow tool call (2013)``
    (anthropic-messages.md M1; claude-code#1237, #5989, #8210, kilocode#5163, MiniMax-M2#43).
    The ``synthesize`` repair adds, first in the next user message (a new one when there is
    none), a result with ``is_error: true`` saying the output was lost (``text``); no output
    is ever made up.
    """
    merges = facts(params).merges_same_role
    return [
        Hit(
            i,
            f".content[{j}]",
            f"tool_use {cid!r} has no tool_result in the next message",
            (c, cid),
        )
        for (i, j), cid, c in pairing(history, merges).missing
    ]


@messages_missing_tool_result.repair("synthesize")
def _synthesize(history: Messages, hits: Sequence[Hit], params: Params) -> Messages:
    merges = facts(params).merges_same_role
    ts = turns(history, merges)
    lost: dict[int, list[Block]] = {}
    for hit in hits:
        c, cid = hit.data
        lost.setdefault(c, []).append(lost_result(cid, params["text"]))
    contents, after = {}, {}
    for c, synthetic in lost.items():
        if c + 1 < len(ts) and ts[c + 1].role == "user":
            results, others = turn_content(history, ts[c + 1], set())
            contents[c + 1] = [*results, *synthetic, *others]
        else:
            after[c] = synthetic
    return rebuild(history, merges, contents, after, set())


@rule(
    "messages_orphan_server_tool_result",
    api="messages",
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
    hits = []
    for turn in turns(history, merges):
        started: set[object] = set()
        for i in turn.members:
            for j, block in enumerate(blocks(history.messages[i])):
                kind = block["type"]
                if kind == "server_tool_use":
                    started.add(block.get("id"))
                elif _server_result(kind) and block.get("tool_use_id") not in started:
                    hits.append(Hit(i, f".content[{j}]", f"{kind} without its call", (i, j)))
    return hits


def _server_result(kind: str) -> bool:
    return kind.endswith("_tool_result") and kind != "tool_result"


@messages_orphan_server_tool_result.repair("drop")
def _drop_server_result(history: Messages, hits: Sequence[Hit], params: Params) -> Messages:
    merges = facts(params).merges_same_role
    return rebuild(history, merges, {}, {}, {h.data for h in hits})


RULES = (
    messages_split_tool_results,
    messages_duplicate_tool_result,
    messages_misplaced_tool_result,
    messages_orphan_tool_result,
    messages_missing_tool_result,
    messages_orphan_server_tool_result,
)
