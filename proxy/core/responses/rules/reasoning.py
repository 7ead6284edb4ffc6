"""Rules about reasoning items and the items they produced."""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase
from itertools import accumulate, compress, repeat
from operator import add, ne

from proxy.core.responses import index as fast
from proxy.core.responses.items import (
    MODEL_KINDS,
    Items,
    at,
    item_id,
    kind,
    values,
    without_key,
)
from proxy.core.responses.rules.common import rule
from proxy.core.responses.rules.pairing import produced
from proxy.core.rule import Hit, Params

_REASONING = frozenset({"reasoning"})


@rule(
    hint="Replay each reasoning item right before the item it produced, or not at all.",
)
def responses_reasoning_adjacency(history: Items, params: Params) -> list[Hit]:
    """A reasoning item not followed by the message or call it produced.

    The reasoning item stays but what it produced was filtered out (a call dropped for lack of
    an output, a message trimmed): OpenAI answers ``Item 'rs_…' of type 'reasoning' was provided
    without its required following item.`` (responses-api.md R3; continue#8933, vercel/ai#7099,
    openai-agents-python#1611). Further reasoning items may come between. The ``drop`` repair
    drops the reasoning item (never the items around it).
    """
    if fast.FAST and _all_followed(history):
        return []
    items = history.messages
    hits, following, after = [], False, -1  # following: a produced item comes after this run
    if fast.FAST:
        reasoning = history.positions(_REASONING)
    else:
        reasoning = [i for i, item in enumerate(items) if kind(item) == "reasoning"]
    for i in reversed(reasoning):
        if i + 1 != after:  # the last of a run of reasoning items: what follows it decides
            following = i + 1 < len(items) and produced(items[i + 1])
        after = i
        if not following:
            hits.append(Hit(i, "", "reasoning not followed by an item it produced"))
    return hits[::-1]


@responses_reasoning_adjacency.repair("drop")
def _drop(history: Items, hits: Sequence[Hit], params: Params) -> Items:
    return history.without({hit.index for hit in hits})


#: Items the API looks up by id to find the reasoning that produced them (R4, R5) and whose
#: ``id`` is optional on input (server-run tool items require theirs).
_REPLAYED = frozenset(
    {"message", "function_call", "custom_tool_call", "shell_call", "apply_patch_call"}
)
REASONING_MODELS = ["o1*", "o3*", "o4*", "gpt-5*", "*codex*"]


@rule(
    params={"models": REASONING_MODELS},
    hint="Replay the reasoning items (with encrypted_content) in front of the calls and messages "
    "they produced, or send those items without their 'id'.",
)
def responses_missing_reasoning_ref(history: Items, params: Params) -> list[Hit]:
    """A message or call replayed by id without the reasoning item that produced it.

    Reasoning models emit a reasoning item in front of every response; a client that keeps the
    calls' and messages' ids but drops the reasoning (handoffs, filters, other providers'
    turns) gets ``Item 'fc_…' of type 'function_call' was provided without its required
    'reasoning' item: 'rs_…'.`` (responses-api.md R4, R5; cline#12242, continue#10018,
    agency-swarm#367). It fires on a response (a run of model items) with none of its own
    reasoning, in a history that has reasoning or whose ``model`` matches ``models``, unless
    ``store`` is false or ``previous_response_id`` is set (nothing is looked up then). The
    ``inline`` repair drops those items' ``id`` so they are sent inline, as the fixes in
    responses-api.md A2 do; it never invents reasoning.
    """
    request = history.request
    if request.get("store") is False or request.get("previous_response_id") is not None:
        return []
    index = history.index
    if fast.FAST and not any(map(index.ids.get, index.positions(_REPLAYED))):
        return []  # no message or call is replayed by id
    model = request.get("model")
    reasoning = "reasoning" in index.kind_set
    if not reasoning and not (type(model) is str and _matches(model, params["models"])):
        return []
    if fast.FAST and _all_reasoned(history):
        return []
    items, kinds = history.messages, history.kinds
    return [
        Hit(i, ".id", f"{kinds[i]} {items[i]['id']!r} replayed by id without its reasoning")
        for run in _responses(history)
        if not any(kinds[i] == "reasoning" for i in run)
        for i in run
        if kinds[i] in _REPLAYED and item_id(items[i]) is not None
    ]


def _all_followed(history: Items) -> bool:
    """Whether every reasoning item is followed by another or by an item the model emitted (a
    fast exit of :func:`responses_reasoning_adjacency`)."""
    reasoning = history.positions(_REASONING)
    if not reasoning:
        return True
    after = set(map(add, reasoning, repeat(1))).difference(reasoning)  # what follows each run
    return len(history) not in after and after.isdisjoint(breaks(history))


def _all_reasoned(history: Items) -> bool:
    """Whether every item replayed by id shares its response (its run of model items) with a
    reasoning item (a fast exit of :func:`responses_missing_reasoning_ref`). Two model items
    are in one run when no item the model did not emit comes between them: when as many
    :func:`breaks` come before each."""
    index = history.index
    marks = [0] * len(history)
    for b in breaks(history):
        marks[b] = 1
    run = list(accumulate(marks))  # a user message's: the run right after it
    reasoned = set(at(run, history.positions(_REASONING)))
    for k in index.kind_set & _REPLAYED:
        found = index.of(k)
        replayed = list(compress(found, map(index.ids.get, found)))
        if not reasoned.issuperset(at(run, replayed)):
            return False
    return True


def breaks(history: Items) -> list[int]:
    """The positions of the items the model did not emit, in order (memoised)."""
    return history.memo("breaks", _breaks)


def _breaks(history: Items) -> list[int]:
    index = history.index
    found = index.positions(index.kind_set - MODEL_KINDS - {"message"})
    messages = index.of("message")
    roles = values(at(history.messages, messages), "role")
    written = list(compress(messages, map(ne, roles, repeat("assistant"))))
    return sorted(found + written) if found and written else found or written


def _matches(model: str, globs: object) -> bool:
    return isinstance(globs, list) and any(fnmatchcase(model, str(g)) for g in globs)


def _responses(history: Items) -> list[list[int]]:
    """The runs of consecutive model items (each what one response emitted, at most)."""
    runs: list[list[int]] = []
    current: list[int] = []
    for i, (item, k) in enumerate(zip(history.messages, history.kinds, strict=True)):
        if k == "reasoning" or produced(item):
            current.append(i)
        elif current:
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    return runs


@responses_missing_reasoning_ref.repair("inline")
def _inline(history: Items, hits: Sequence[Hit], params: Params) -> Items:
    return history.replace({h.index: without_key(history.messages[h.index], "id") for h in hits})


RULES = (responses_reasoning_adjacency, responses_missing_reasoning_ref)
