"""Rules pairing ``tool_use`` blocks with their ``tool_result`` blocks, turn by turn (see
:mod:`.turns` for the terms). They run in this order, each on the output of the one before
(split results already joined, :mod:`.layout`): duplicates settled, misplaced results moved,
orphans salvaged as text, and calls left without a result answered with an error saying the
output was lost.
"""

from __future__ import annotations

from collections.abc import Sequence

from proxy.core.messages.items import Block, Messages
from proxy.core.messages.rules.common import facts, rule, turn_blocks, turns
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
from proxy.core.rule import Hit, Params


@rule(
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


RULES = (
    messages_duplicate_tool_result,
    messages_misplaced_tool_result,
    messages_orphan_tool_result,
    messages_missing_tool_result,
)
