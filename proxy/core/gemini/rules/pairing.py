"""Rules pairing a call turn's ``functionCall`` parts with its response turn's
``functionResponse`` parts (N1), and the names responses need (N12). They run after the turn
rules (:mod:`.turns`), so every response turn follows its call turn."""

from __future__ import annotations

from collections.abc import Sequence

from proxy.core.gemini import index as fast
from proxy.core.gemini.index import index_of
from proxy.core.gemini.items import Contents
from proxy.core.gemini.parts import Item, Part, call_of, parts_of, response_of
from proxy.core.gemini.rules.common import (
    EXTRA_TEXT,
    LOST_TEXT,
    edit_parts,
    facts,
    is_call_turn,
    is_response_turn,
    lost_response,
    response_parts,
    responses_at,
    rule,
    salvaged,
    turn_pairing,
    with_inner,
    with_parts,
)
from proxy.core.gemini.spelling import key_in
from proxy.core.rule import Hit, Params


@rule(
    tools_only=True,
    params={"text": EXTRA_TEXT},
    hint="Send exactly one functionResponse per functionCall of the call turn.",
)
def gemini_extra_response(history: Contents, params: Params) -> list[Hit]:
    """A response turn with more ``functionResponse`` parts than its call turn has calls.

    The upstream answers ``Please ensure that the number of function response parts is equal
    to the number of function call parts of the function call turn.`` (gemini-native.md N1;
    gemini-cli#13292 and its ~30 duplicates, TanStack/ai PR#1198 (results deduplicated by
    name), microsoft/vscode#299295). Responses answer calls by id where both have one, else by
    position; the surplus (the last ones) is extra. The ``salvage`` repair turns each extra
    response into user text naming its call and carrying its output verbatim, in its place.
    """
    if not facts(params).pairs_calls:
        return []
    hits: list[Hit] = []
    index = index_of(history)
    if fast.FAST and index.settled():
        return hits
    # Matching by id pairs as many of each side: a turn has extra responses exactly when it
    # has more responses than calls.
    over = [i for i, calls, answers in index.unbalanced() if answers > calls]
    for i in over if fast.FAST else index.call_turns:
        if is_response_turn(history, i + 1):
            found = turn_pairing(history, i)
            calls = len(found.pairs) + len(found.missing)
            for j in found.extra:
                detail = f"functionResponse beyond the {calls} call(s) of the call turn"
                hits.append(Hit(i + 1, f".parts[{j}]", detail, j))
    return hits


@gemini_extra_response.repair("salvage")
def _salvage_extra(history: Contents, hits: Sequence[Hit], params: Params) -> Contents:
    extra: dict[int, set[int]] = {}
    for hit in hits:
        extra.setdefault(hit.index, set()).add(hit.data)
    changes: dict[int, Item] = {}
    for i, places in extra.items():
        content = history.messages[i]
        parts: list[Part] = []
        for j, part in enumerate(parts_of(content)):
            parts += salvaged(part, params["text"]) if j in places else [part]
        changes[i] = with_parts(content, parts)
    return history.replace(changes)


@rule(
    tools_only=True,
    params={"text": LOST_TEXT},
    hint="Answer every functionCall with a functionResponse in the next user content (one "
    'with response {"error": …} when the tool did not run).',
)
def gemini_missing_response(history: Contents, params: Params) -> list[Hit]:
    """A ``functionCall`` with no ``functionResponse`` in the content after its call turn.

    Interrupts, Ctrl-C mid-batch, ``--resume`` and compression leave calls unanswered; the
    upstream answers N1's ``Please ensure that the number of function response parts is equal
    to the number of function call parts of the function call turn.`` and the session stays
    stuck (gemini-native.md N1; gemini-cli#5443, #16906, #13292). The ``synthesize`` repair
    adds, after the turn's responses (first in the next user content, or in a new one), a
    ``functionResponse`` with the call's name and id whose ``response`` is ``{"error": text}``
    saying the output was lost (gemini-cli's shape for a cancelled call); no output is made
    up.
    """
    if not facts(params).pairs_calls:
        return []
    index = index_of(history)
    if fast.FAST and index.settled():
        return []
    # A turn leaves calls unanswered exactly when it has more calls than responses.
    short = [i for i, calls, answers in index.unbalanced() if calls > answers]
    return [
        Hit(i, f".parts[{j}]", "functionCall without a functionResponse in the next turn", j)
        for i in (short if fast.FAST else index.call_turns)
        for j in turn_pairing(history, i).missing
    ]


@gemini_missing_response.repair("synthesize")
def _synthesize(history: Contents, hits: Sequence[Hit], params: Params) -> Contents:
    lost: dict[int, dict[int, Part]] = {}  # call turn -> call part -> its lost response
    for hit in hits:
        part = parts_of(history.messages[hit.index])[hit.data]
        lost.setdefault(hit.index, {})[hit.data] = lost_response(part, params["text"])
    changes: dict[int, Item] = {}
    inserts: dict[int, list[tuple[Item, int | None]]] = {}
    for i, synthetic in lost.items():
        if i + 1 < len(history) and history.roles[i + 1] == "user":
            changes[i + 1] = _answered(history, i, synthetic)
        else:
            content = {"role": "user", "parts": [synthetic[j] for j in sorted(synthetic)]}
            inserts[i] = [(content, None)]
    answered = history.replace(changes)
    return answered.edited(inserts, ()) if inserts else answered


def _answered(history: Contents, i: int, synthetic: dict[int, Part]) -> Item:
    """The user content after call turn ``i`` with the ``synthetic`` responses among its own,
    all in call order, where its responses stood (first when it has none)."""
    content = history.messages[i + 1]
    parts = parts_of(content)
    found = turn_pairing(history, i)
    answers = [*((c, parts[r]) for c, r in found.pairs), *synthetic.items()]
    ordered = sorted(answers, key=lambda answer: answer[0])  # call order
    responses = [p for _, p in ordered] + [parts[r] for r in found.extra]
    places = response_parts(content)
    at = places[0] if places else 0
    others = [p for j, p in enumerate(parts) if j not in places]
    before = [p for j, p in enumerate(parts[:at]) if j not in places]
    return with_parts(content, [*before, *responses, *others[len(before) :]])


@rule(
    tools_only=True,
    hint="Send functionResponse.name: the name of the function the response answers.",
)
def gemini_response_name(history: Contents, params: Params) -> list[Hit]:
    """A ``functionResponse`` with an empty or missing ``name``.

    The upstream answers ``* GenerateContentRequest.contents[2].parts[0].function_response.name:
    Name cannot be empty.`` (gemini-native.md N12; router-for-me/CLIProxyAPI#2104, PR#2103,
    Amp via CLIProxyAPI). The ``fill`` repair copies the name of the call the response
    answers (by id, else at the same position); a response with no such call cannot be
    named: rejected.
    """
    if not facts(params).non_empty_parts:
        return []
    hits = []
    for i in index_of(history).unusual if fast.FAST else range(len(history)):
        if not is_response_turn(history, i):  # an ordinary response part has a name
            continue
        paired = (
            dict((r, c) for c, r in turn_pairing(history, i - 1).pairs)
            if is_call_turn(history, i - 1)
            else {}
        )
        for j in responses_at(history, i):
            part = parts_of(history.messages[i])[j]
            if _name(response_of(part)):
                continue
            call = call_of(parts_of(history.messages[i - 1])[paired[j]]) if j in paired else None
            name = _name(call)
            key = key_in(part, "functionResponse")
            hits.append(Hit(i, f".parts[{j}].{key}.name", "empty name", (j, name), not name))
    return hits


def _name(fn: dict[str, object] | None) -> str:
    name = fn.get("name") if fn is not None else None
    return name if type(name) is str else ""


@gemini_response_name.repair("fill")
def _fill(history: Contents, hits: Sequence[Hit], params: Params) -> Contents:
    return edit_parts(
        history, hits, lambda part, data: with_inner(part, "functionResponse", {"name": data[1]})
    )


RULES = (gemini_extra_response, gemini_missing_response, gemini_response_name)
