"""Rules pairing tool calls with their results (see :mod:`.blocks` for the terms).

They run in this order, each on the output of the one before: unique call ids first, then
results moved next to their calls, extra results dropped, results of no call salvaged, and
finally calls without a result answered. After all five the history is well paired.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from proxy.core.chat.messages import History, Message, call_id, function_name, stable_id
from proxy.core.chat.rules.binding import analyse
from proxy.core.chat.rules.blocks import block_end, calls_of, result_id, well_paired
from proxy.core.chat.rules.duplicates import duplicate_tool_call_id
from proxy.core.chat.rules.rebuild import (
    MISSING_TEXT,
    SALVAGE_TEXT,
    Entries,
    call_message,
    insert_after,
    salvage_message,
    tool_runs,
)
from proxy.core.chat.rules.text import is_empty
from proxy.core.providers import provider_of
from proxy.core.rule import Hit, Params, rule

_NAMED = ("expected", "required")  # tool_name values: the proxy's own tool messages carry it

# --- misplaced_tool_result ---------------------------------------------------------------------


@rule(
    tools_only=True,
    hint="Send each tool message right after the assistant message whose 'tool_calls' it answers.",
)
def misplaced_tool_result(history: History, params: Params) -> list[Hit]:
    """A tool result whose call exists, but not in the block right before it.

    A note inserted between a call and its results (gptme#3421), or a result stored before its
    call: DeepSeek answers ``An assistant message with 'tool_calls' must be followed by tool
    messages responding to each 'tool_call_id'. (insufficient tool messages following
    tool_calls message)``, OpenAI ``'tool_call_id' of '…' not found in 'tool_calls' of previous
    message``. The ``move`` repair moves the result to the end of its call's block.
    """
    if well_paired(history):
        return []
    hits = []
    for t, c in analyse(history).misplaced:
        where = "comes before" if t < c else "is separated from"
        detail = f"result for tool call {result_id(history.messages[t])!r} {where} its call"
        hits.append(Hit(t, "", f"{detail} in {history.path(c)}", data=c))
    return hits


@misplaced_tool_result.repair("move")
def _move(history: History, hits: Sequence[Hit], params: Params) -> History:
    ends: dict[int, int] = {}  # each block's end, found once however many results it gets
    inserts: dict[int, Entries] = {}
    for hit in hits:
        if hit.data not in ends:
            ends[hit.data] = block_end(history.messages, hit.data)
        inserts.setdefault(ends[hit.data], []).append((history.messages[hit.index], hit.index))
    return insert_after(history, inserts, {hit.index for hit in hits})


# --- duplicate_tool_result ---------------------------------------------------------------------


@rule(
    tools_only=True,
    hint="Send exactly one tool message per tool call.",
)
def duplicate_tool_result(history: History, params: Params) -> list[Hit]:
    """Two tool results for one call (retries stored twice, a result replayed).

    OpenAI answers ``Invalid parameter: Duplicate value for 'tool_call_id' of '…', in
    messages[7] and messages[8].`` and Gemini counts responses against calls (``the number of
    function response parts is equal to the number of function call parts``). ``keep_last``
    keeps the latest result, ``keep_first`` the earliest; the others are dropped. An empty
    result (a placeholder written before the tool ran) never displaces one that says something.
    """
    if well_paired(history):
        return []
    pairing = analyse(history)
    crowded = pairing.crowded()
    if not crowded:
        return []  # one result per call at most (every call's capacity is at least one)
    keep_first = params.get("repair") == "keep_first"
    hits: list[Hit] = []
    for key, positions in crowded:
        extra = len(positions) - pairing.capacity_of(key)
        if extra <= 0:
            continue
        ranked = sorted(positions, key=_rank(history.messages, keep_first))
        kept, dropped = ranked[-1], ranked[:extra]
        detail = f"another result for tool call {key[1]!r} (kept: {history.path(kept)})"
        hits.extend(Hit(t, "", detail) for t in dropped)
    return sorted(hits, key=lambda hit: hit.index)


def _rank(messages: list[Message], keep_first: bool) -> Callable[[int], tuple[bool, int]]:
    """Order a call's results from the first to drop to the one to keep."""

    def rank(t: int) -> tuple[bool, int]:
        return not is_empty(messages[t].get("content")), -t if keep_first else t

    return rank


@duplicate_tool_result.repair("keep_last")
def _keep_last(history: History, hits: Sequence[Hit], params: Params) -> History:
    # The detector already chose, per the configured repair, which results go.
    return insert_after(history, {}, {hit.index for hit in hits})


duplicate_tool_result.repair("keep_first")(_keep_last)


# --- orphan_tool_result ------------------------------------------------------------------------


@rule(
    tools_only=True,
    hint="Keep the assistant message with 'tool_calls' (and its 'id's) that each tool result "
    "answers and trim histories at whole call blocks; a result whose call is lost can only go on "
    "as user text naming the call.",
    params={"text": SALVAGE_TEXT},
)
def orphan_tool_result(history: History, params: Params) -> list[Hit]:
    """A tool message whose call exists nowhere in the history, or that names no call.

    The call was lost on save, cut by head trimming or compaction, or the results came from a
    database without their calls. OpenAI: ``Invalid parameter: messages with role 'tool' must be
    a response to a preceeding message with 'tool_calls'.``; DeepSeek: ``Messages with role
    'tool' must be a response to a preceding message with 'tool_calls'``. Repairs: ``salvage``
    turns the result into user text (``text``: a template with ``{id}``, ``{name}``,
    ``{content}``; orphans of one run share one message), ``drop`` removes it, ``restore_call``
    rebuilds the call in an assistant message before it when the tool message names its
    function (``name``), salvaging the others.
    """
    if well_paired(history):
        return []
    hits = []
    for t in analyse(history).orphans:
        rid = result_id(history.messages[t])
        detail = "tool message without a tool_call_id"
        if rid is not None:
            detail = f"result for tool call {rid!r}, which no assistant message made"
        hits.append(Hit(t, "", detail))
    return hits


def _regroup(
    history: History, hits: Sequence[Hit], replace: Callable[[list[int]], Entries]
) -> History:
    # Replacements go after the whole run: a user or assistant message inside a call block
    # would cut the block's remaining results off from their call.
    inserts = {end: replace(orphans) for end, orphans in tool_runs(history, hits).items()}
    return insert_after(history, inserts, {hit.index for hit in hits})


@orphan_tool_result.repair("salvage")
def _salvage(history: History, hits: Sequence[Hit], params: Params) -> History:
    template = str(params.get("text", SALVAGE_TEXT))
    return _regroup(history, hits, lambda orphans: salvage_message(history, orphans, template))


@orphan_tool_result.repair("drop")
def _drop(history: History, hits: Sequence[Hit], params: Params) -> History:
    if len(hits) == len(history):  # nothing would be left to send: keep the content instead
        return _salvage(history, hits, params)
    return insert_after(history, {}, {hit.index for hit in hits})


@orphan_tool_result.repair("restore_call")
def _restore(history: History, hits: Sequence[Hit], params: Params) -> History:
    template = str(params.get("text", SALVAGE_TEXT))
    restored: set[str] = set()

    def replace(orphans: list[int]) -> Entries:
        calls: list[Any] = []
        results: Entries = []
        rest = []
        for t in orphans:
            message = history.messages[t]
            name = message.get("name")
            rid = result_id(message) or stable_id("restore_call", history.origin(t), name)
            if type(name) is not str or not name or rid in restored:
                rest.append(t)
                continue
            restored.add(rid)
            function = {"name": name, "arguments": "{}"}
            calls.append({"id": rid, "type": "function", "function": function})
            if rid != message.get("tool_call_id"):
                message = {**message, "tool_call_id": rid}
            results.append((message, t))
        out: Entries = []
        if calls:
            out.append((call_message(calls, provider_of(params)), None))
        out.extend(results)
        return out + (salvage_message(history, rest, template) if rest else [])

    return _regroup(history, hits, replace)


# --- missing_tool_result -----------------------------------------------------------------------


@rule(
    tools_only=True,
    hint="Answer every tool call with a tool message before the next non-tool message.",
    params={"text": MISSING_TEXT},
)
def missing_tool_result(history: History, params: Params) -> list[Hit]:
    """A tool call with no result before the next non-tool message or the end of the history.

    Some parallel calls were never executed (3 of 4 run, a max-tools-per-round cap), a
    session saved the calls but not the results, a human approval never came. OpenAI: ``An
    assistant message with 'tool_calls' must be followed by tool messages responding to each
    'tool_call_id'. The following tool_call_ids did not have response messages: …``; DeepSeek:
    ``(insufficient tool messages following tool_calls message)``; Gemini: ``the number of
    function response parts is equal to the number of function call parts``. ``synthesize``
    adds a tool message with the fixed ``text`` at the end of the call's block; ``drop_call``
    removes the call (and an assistant message left with neither calls nor content).
    """
    if well_paired(history):
        return []
    pairing = analyse(history)
    if pairing.at_spots:
        return []  # every call answered once at its spot, each id its own
    hits = []
    for c in history.index.callers:
        seen: dict[str, int] = {}
        for j, call in enumerate(calls_of(history.messages[c]) or ()):
            cid = call_id(call)
            if cid is None:
                continue
            seen[cid] = seen.get(cid, 0) + 1
            if seen[cid] > pairing.answered.get((c, cid), 0):
                data = (j, cid, function_name(call))
                hits.append(Hit(c, f".tool_calls[{j}]", f"tool call {cid!r} has no result", data))
    return hits


@missing_tool_result.repair("synthesize")
def _synthesize(history: History, hits: Sequence[Hit], params: Params) -> History:
    text = params.get("text", MISSING_TEXT)
    ends: dict[int, int] = {}
    inserts: dict[int, Entries] = {}
    for hit in hits:
        _, cid, name = hit.data
        result: Message = {"role": "tool", "tool_call_id": cid, "content": text}
        if provider_of(params).tool_name in _NAMED and name is not None:
            result["name"] = name  # as the upstream's own examples write it (Gemini G13)
        if hit.index not in ends:
            ends[hit.index] = block_end(history.messages, hit.index)
        inserts.setdefault(ends[hit.index], []).append((result, None))
    return insert_after(history, inserts, set())


@missing_tool_result.repair("drop_call")
def _drop_call(history: History, hits: Sequence[Hit], params: Params) -> History:
    unanswered: dict[int, set[int]] = {}
    for hit in hits:
        unanswered.setdefault(hit.index, set()).add(hit.data[0])
    changes: dict[int, Message] = {}
    for c, js in unanswered.items():
        message = history.messages[c]
        kept = [call for j, call in enumerate(message["tool_calls"]) if j not in js]
        changes[c] = {k: v for k, v in message.items() if k != "tool_calls"}
        if kept:
            changes[c]["tool_calls"] = kept
    history = history.replace(changes)
    # A message left with neither calls nor content is rejected everywhere (DeepSeek D12).
    gone = {c for c, m in changes.items() if "tool_calls" not in m and is_empty(m.get("content"))}
    if not gone or len(gone) == len(history):  # never send an empty history
        return history
    return insert_after(history, {}, gone)


RULES = (
    duplicate_tool_call_id,
    misplaced_tool_result,
    duplicate_tool_result,
    orphan_tool_result,
    missing_tool_result,
)
