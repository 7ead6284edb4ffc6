"""What several Gemini rules share: the endpoint's facts, turns, pairing and synthetic text.

A *call turn* is a ``model`` content with at least one ``functionCall`` part; its *response
turn* is the next content when that is a ``user`` content with ``functionResponse`` parts.
The upstream pairs them by count (N1, V); ids are an extra on newer models (N10, N19), so
:func:`pair` matches by id where both sides have one and by position otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from proxy.core.gemini import index as fast
from proxy.core.gemini.facts import GeminiFacts, facts_of
from proxy.core.gemini.index import index_of
from proxy.core.gemini.items import Contents
from proxy.core.gemini.parts import Item, Part, call_of, parts_of, response_of
from proxy.core.gemini.spelling import get, key_in, like
from proxy.core.rule import Hit, Params, rule_for

#: The rule declaration of this package (``api="gemini"``, named after its detector).
rule = rule_for("gemini")
TAG = "[toolcall-guard]"
LOST_TEXT = f"{TAG} The output of this tool call was lost before it reached the model."


def facts(params: Params) -> GeminiFacts:
    """The Gemini facts of the rule's provider."""
    return facts_of(params)


def with_parts(content: Item, parts: list[Part]) -> Item:
    """A copy of ``content`` with ``parts``."""
    return {**content, "parts": parts}


Edit = dict[int, dict[int, Part]]  # content position -> part position -> new part


def edit(history: Contents, edits: Edit) -> Contents:
    """The history with the parts ``edits`` names replaced (their contents copied, the rest
    shared)."""
    changes: dict[int, Item] = {}
    for i, new in edits.items():
        parts = [new.get(j, p) for j, p in enumerate(parts_of(history.messages[i]))]
        changes[i] = with_parts(history.messages[i], parts)
    return history.replace(changes)


def edit_parts(
    history: Contents, hits: Sequence[Hit], change: Callable[[Part, Any], Part]
) -> Contents:
    """The history with the part each non-fatal hit names changed: ``change(part, data)``,
    where the hit's ``data`` is the part's position, or a tuple that starts with it."""
    edits: Edit = {}
    for hit in hits:
        if hit.fatal:
            continue
        j = hit.data if type(hit.data) is int else hit.data[0]
        part = parts_of(history.messages[hit.index])[j]
        edits.setdefault(hit.index, {})[j] = change(part, hit.data)
    return edit(history, edits)


def with_inner(part: Part, camel: str, changes: dict[str, Any], drop: str = "") -> Part:
    """A copy of ``part`` whose ``camel`` object (``functionCall``, ``functionResponse``, in
    the part's spelling) has ``changes`` applied and ``drop`` removed."""
    key = key_in(part, camel) or camel
    inner = {k: v for k, v in part[key].items() if k != drop}
    return {**part, key: {**inner, **changes}}


def call_parts(content: Item) -> list[int]:
    """The positions of the content's ``functionCall`` parts."""
    return [j for j, p in enumerate(parts_of(content)) if call_of(p) is not None]


def response_parts(content: Item) -> list[int]:
    """The positions of the content's ``functionResponse`` parts."""
    return [j for j, p in enumerate(parts_of(content)) if response_of(p) is not None]


def calls_at(history: Contents, i: int) -> list[int]:
    """:func:`call_parts` of content ``i``, found once per history and content."""
    found: dict[int, list[int]] = history.memo("calls", _positions)
    if i not in found:
        found[i] = call_parts(history.messages[i])
    return found[i]


def responses_at(history: Contents, i: int) -> list[int]:
    """:func:`response_parts` of content ``i``, found once per history and content."""
    found: dict[int, list[int]] = history.memo("responses", _positions)
    if i not in found:
        found[i] = response_parts(history.messages[i])
    return found[i]


def _positions(_: Contents) -> dict[int, list[int]]:
    return {}


def is_call_turn(history: Contents, i: int) -> bool:
    return index_of(history).is_call_turn(i)


def is_response_turn(history: Contents, i: int) -> bool:
    return index_of(history).is_response_turn(i)


def parts_to_read(history: Contents) -> Iterator[tuple[int, int, Part]]:
    """``(i, j, part)`` of the parts a per-part rule reads: every part, or with the fast exits
    only those of the contents the index found out of the ordinary (an ordinary part breaks
    no per-part rule: :mod:`proxy.core.gemini.index`)."""
    if not fast.FAST:
        yield from history.parts_at()
        return
    for i in index_of(history).unusual:
        for j, part in enumerate(parts_of(history.messages[i])):
            yield i, j, part


def text_of(value: Any) -> str:
    """``value`` as JSON text, verbatim (keys in their order, non-ASCII kept)."""
    return json.dumps(value, ensure_ascii=False)


def call_id(call: dict[str, Any]) -> str | None:
    """The call's (or response's) ``id`` when it is a non-empty string."""
    value = call.get("id")
    return value if type(value) is str and value else None


def named(fn: dict[str, Any]) -> str:
    """``name (id …)`` of a call or response, for synthetic text."""
    cid = call_id(fn)
    name = fn.get("name") if type(fn.get("name")) is str and fn.get("name") else "(unnamed)"
    return f"{name} (id {cid})" if cid else str(name)


def salvaged(part: Part, template: str) -> list[Part]:
    """A ``functionResponse`` part as user parts: ``template`` (its ``{call}`` naming the
    call) then the ``response`` verbatim, then the media it held."""
    response = response_of(part) or {}
    return output_parts(part, template.replace("{call}", named(response)))


def output_parts(part: Part, line: str) -> list[Part]:
    """A ``functionResponse`` part as user parts: a text of ``line`` and its ``response``
    verbatim, then the media it held (``functionResponse.parts``)."""
    response = response_of(part) or {}
    nested = response.get("parts")
    media = [p for p in nested if type(p) is dict] if type(nested) is list else []
    return [{"text": f"{line} {text_of(response.get('response'))}"}, *media]


SALVAGE_TEXT = (
    f"{TAG} Output of tool call {{call}}, whose functionCall is not in the previous turn:"
)
EXTRA_TEXT = f"{TAG} Another output for tool call {{call}}, beyond the turn's calls:"


def lost_response(call_part: Part, text: str) -> Part:
    """The response standing in for one that was lost: an error saying so (gemini-cli's shape
    for a cancelled call), never an output; spelled like the call part."""
    call = call_of(call_part) or {}
    response: dict[str, Any] = {"name": call.get("name", "")}
    cid = call_id(call)
    if cid is not None:
        response["id"] = cid
    response["response"] = {"error": text}
    return {like(call_part, "functionResponse"): response}


@dataclass(slots=True)
class Pairing:
    """How the responses of a response turn answer the calls of its call turn (positions of
    parts in their contents)."""

    pairs: list[tuple[int, int]] = field(default_factory=list)  # (call part, response part)
    extra: list[int] = field(default_factory=list)  # response parts beyond the count
    missing: list[int] = field(default_factory=list)  # call parts without a response


def pair(calls: Item, responses: Item | None) -> Pairing:
    """Pair the calls of content ``calls`` with the responses of ``responses`` (None: there is
    no response turn): by id where both have one (each response takes the first call still
    open with its id), then the rest by position; a surplus of responses (the last ones) is
    extra, a surplus of calls (the last ones) is missing."""
    cparts, rparts = parts_of(calls), parts_of(responses) if responses is not None else []
    cs = [(j, call) for j, part in enumerate(cparts) if (call := call_of(part)) is not None]
    waiting: dict[str, list[int]] = {}  # call id -> the open calls with it (places in cs)
    for k, (_, call) in enumerate(cs):
        cid = call_id(call)
        if cid is not None:
            waiting.setdefault(cid, []).append(k)
    found = Pairing()
    matched: set[int] = set()
    left: list[int] = []
    for j, part in enumerate(rparts):
        response = response_of(part)
        if response is None:
            continue
        rid = call_id(response)
        ks = waiting.get(rid) if rid is not None else None
        if not ks:
            left.append(j)
            continue
        k = ks.pop(0)
        matched.add(k)
        found.pairs.append((cs[k][0], j))
    open_calls = [j for k, (j, _) in enumerate(cs) if k not in matched]
    found.pairs += list(zip(open_calls, left, strict=False))
    found.extra = left[len(open_calls) :]
    found.missing = open_calls[len(left) :]
    found.pairs.sort()
    return found


def turn_pairing(history: Contents, i: int) -> Pairing:
    """:func:`pair` of call turn ``i`` and the content after it when that is a response
    turn (memoised)."""
    cache: dict[int, Pairing] = history.memo("pairings", lambda _: {})
    if i not in cache:
        nxt = history.messages[i + 1] if is_response_turn(history, i + 1) else None
        cache[i] = pair(history.messages[i], nxt)
    return cache[i]


def current_turn(history: Contents) -> int:
    """Where the current turn starts: the last ``user`` content with text and no
    ``functionResponse`` (G2: "the most recent User message that contains standard content
    (e.g., text)"; gemini-cli's ``ensureActiveLoopHasThoughtSignatures``); -1 when there is
    none (the whole history is the current turn)."""
    return history.memo("current_turn", _current_turn)


def _current_turn(history: Contents) -> int:
    index = index_of(history)
    for i in range(len(history) - 1, -1, -1):
        if index.roles[i] != "user" or index.is_response_turn(i):
            continue
        if any(
            type(get(p, "text")) is str and get(p, "text") for p in parts_of(history.messages[i])
        ):
            return i
    return -1
