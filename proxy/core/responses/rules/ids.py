"""Rules about identifiers: ``call_id`` length and presence, ``id`` prefixes, duplicate items."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from itertools import repeat
from typing import Any

from proxy.core.responses import index as fast
from proxy.core.responses.items import (
    CALLS,
    Item,
    Items,
    call_key,
    item_id,
    kind,
    needs_output,
    without_key,
)
from proxy.core.responses.rules.common import answers_a_call, rule
from proxy.core.responses.rules.facts import tool_facts
from proxy.core.responses.rules.pairing import SALVAGE_TEXT, salvaged
from proxy.core.rule import Hit, Params
from proxy.errors import BadParam

#: Synthetic call ids are UUIDv5 in this namespace, as codex derives its synthetic output ids
#: (codex-rs normalize.rs: changing it would change model-visible ids and void prompt caches).
CALL_ID_NAMESPACE = uuid.UUID("5b0c3c8e-4a7e-5d0a-9a51-7f3b6f0e2d11")


def synthetic_call_id(*parts: object) -> str:
    """``call_`` + the UUIDv5 of ``parts``: the same originals always give the same id."""
    return "call_" + uuid.uuid5(CALL_ID_NAMESPACE, "\x1f".join(map(str, parts))).hex


def _check_max_length(params: Params) -> None:
    value = params.get("max_length")
    if type(value) is not int or value < len(synthetic_call_id()):
        raise BadParam("max_length", "expected an integer of at least 37 (a synthetic id)")


@rule(
    tools_only=True,
    params={"max_length": 64},
    check_params=_check_max_length,
    hint="Keep each call's 'call_id' (at most 64 characters) on the call and on its output.",
)
def responses_call_id_format(history: Items, params: Params) -> list[Hit]:
    """A ``call_id`` over 64 characters, or a call or output without one.

    OpenAI answers ``Invalid 'input[95].call_id': string too long. Expected a string with
    maximum length 64, …`` (responses-api.md R11: ids minted by other providers) and strict
    upstreams refuse an output emitted without ``call_id`` (R12, openai/codex#42088). The
    ``remap`` repair gives over-long ids a UUIDv5 id derived from the original (calls and
    outputs together, so pairs stay pairs and prompt caches survive), gives a call without one
    an id derived from its position and content, and binds an output without one to the only
    call still open before it (with the same ``name`` when the output names one). An output
    that can answer no open call is treated as chat's orphan result: a user message naming it
    and carrying its output takes its place (issue 22); one that could answer several is
    rejected (no guess at which).
    """
    limit = params["max_length"]
    facts = tool_facts(history)
    if fast.FAST and facts is not None and facts.longest <= limit:
        return []  # every call and output has a call_id short enough, no other item has one
    hits: list[Hit] = []
    open_calls: list[tuple[int, str]] = []  # (position, call_id) of calls not yet answered
    for i, item in enumerate(history.messages):
        key = call_key(item)
        if key is not None:
            if len(key) > limit:
                hits.append(Hit(i, ".call_id", f"call_id of {len(key)} characters", data=key))
            _track(open_calls, i, item, key)
        elif needs_output(item) or (kind(item) in CALLS and "call_id" in item):
            hits.append(Hit(i, ".call_id", f"{kind(item)} without a call_id", data=None))
        elif answers_a_call(item):
            hits.append(_bind(history, i, item, open_calls))
    return hits


def _track(open_calls: list[tuple[int, str]], i: int, item: Item, key: str) -> None:
    if needs_output(item):
        open_calls.append((i, key))
    elif answers_a_call(item):
        open_calls[:] = [(c, k) for c, k in open_calls if k != key]


def _bind(history: Items, i: int, item: Item, open_calls: list[tuple[int, str]]) -> Hit:
    """The hit for an output without a call_id: bound to the one open call it can answer."""
    name = item.get("name")
    candidates = [
        (c, k) for c, k in open_calls if name is None or history.messages[c].get("name") == name
    ]
    if not candidates:
        detail = f"{kind(item)} without a call_id, and no open call it may answer"
        return Hit(i, ".call_id", detail, data=("salvage",))
    if len(candidates) != 1:
        detail = f"{kind(item)} without a call_id, and {len(candidates)} open calls it may answer"
        return Hit(i, ".call_id", detail, fatal=True)
    c, key = candidates[0]
    open_calls.remove((c, key))
    return Hit(i, ".call_id", f"{kind(item)} without a call_id", data=("bind", c, key))


@responses_call_id_format.repair("remap")
def _remap(history: Items, hits: Sequence[Hit], params: Params) -> Items:
    fresh = {hit.data: synthetic_call_id(hit.data) for hit in hits if isinstance(hit.data, str)}
    changes: dict[int, Item] = {}
    for i, item in enumerate(history.messages):
        key = item.get("call_id")
        if type(key) is str and key in fresh:
            changes[i] = {**item, "call_id": fresh[key]}
    for hit in hits:
        if hit.fatal or isinstance(hit.data, str):
            continue
        item = history.messages[hit.index]
        if hit.data == ("salvage",):  # an output of no call: its text goes on as user text
            changes[hit.index] = salvaged(item, SALVAGE_TEXT, _named(item))
            continue
        if hit.data is None:  # a call without an id: derive one from where and what it is
            new = synthetic_call_id(history.origin(hit.index), kind(item), _content_of(item))
        else:
            bound: str = hit.data[2]
            new = fresh.get(bound, bound)
        changes[hit.index] = {**item, "call_id": new}
    return history.replace(changes)


def _named(item: Item) -> str:
    """How a salvaged output without a call_id is named: its tool's name, when it has one."""
    name = item.get("name")
    return f"{name!r} (no call_id)" if type(name) is str and name else "(no call_id)"


def _content_of(item: Item) -> Any:
    return (item.get("name"), item.get("arguments"), item.get("input"), item.get("action"))


#: The prefix OpenAI expects of each item type's ``id`` (responses-api.md R10: ``Expected an
#: ID that begins with 'fc'`` / ``'ctc'`` / ``'msg'`` / ``'rs'``; outputs share their call's
#: prefix: codex's ``fco_``/``ctco_`` begin with ``fc``/``ctc``; ``cmp_`` from R7).
ID_PREFIXES = {
    "message": "msg",
    "reasoning": "rs",
    "function_call": "fc",
    "function_call_output": "fc",
    "custom_tool_call": "ctc",
    "custom_tool_call_output": "ctc",
    "compaction": "cmp",
}


@rule(
    hint="Send item ids exactly as the API returned them, or leave 'id' out; never mint them.",
)
def responses_id_prefix(history: Items, params: Params) -> list[Hit]:
    """An item ``id`` whose prefix does not match the item's type.

    Relays and converters mint ids (``item_c270…``, UUIDs, ``reasoning_15``) or carry one type's
    id onto another (a ``ctco_`` id on a ``function_call_output``); OpenAI answers
    ``Invalid 'input[274].id': 'item_c270…'. Expected an ID that begins with 'fc'.``
    (responses-api.md R10; codex#40039, sub2api#6071, continue#11494). The ``drop_id`` repair
    removes the ``id`` (it is optional on input items) and keeps ``call_id``; it never renames
    one prefix into another, which its maintainers warn breaks the pairing (sub2api#6071).
    """
    if fast.FAST and _prefixes_match(history):
        return []
    hits = []
    items = history.messages
    # An item without an id has no prefix to check.
    for i in history.with_id if fast.FAST else range(len(items)):
        k = kind(items[i])
        prefix = ID_PREFIXES.get(k)
        value = item_id(items[i])
        if prefix is not None and value is not None and not value.startswith(prefix):
            hits.append(Hit(i, ".id", f"{k} id {value!r} does not begin with {prefix!r}"))
    return hits


def _prefixes_match(history: Items) -> bool:
    """Whether the id of every item of a kind with a prefix begins with it (a fast exit)."""
    index = history.index
    if not index.ids:
        return True  # no item has an id
    for k in index.kind_set.intersection(ID_PREFIXES):
        sent = filter(None, map(index.ids.get, index.of(k)))  # "" or no id: nothing to check
        try:
            if not all(map(str.startswith, sent, repeat(ID_PREFIXES[k]))):
                return False
        except TypeError:  # an id that is not a string: the plain loop reads it
            return False
    return True


@responses_id_prefix.repair("drop_id")
def _drop_id(history: Items, hits: Sequence[Hit], params: Params) -> Items:
    return history.replace({h.index: without_key(history.messages[h.index], "id") for h in hits})


RULES = (responses_call_id_format, responses_id_prefix)
