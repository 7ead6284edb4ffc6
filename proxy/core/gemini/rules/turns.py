"""Rules about the order of turns: responses split over several user contents (N15), a call
turn that does not follow a user or response turn (N2), and a response turn that does not
follow a call turn (N3)."""

from __future__ import annotations

from collections.abc import Sequence

from proxy.core.gemini import index as fast
from proxy.core.gemini.index import index_of
from proxy.core.gemini.items import Contents
from proxy.core.gemini.parts import Item, Part, call_of, parts_of, response_of
from proxy.core.gemini.rules.common import (
    SALVAGE_TEXT,
    TAG,
    facts,
    is_call_turn,
    is_response_turn,
    named,
    output_parts,
    pair,
    responses_at,
    rule,
    salvaged,
    text_of,
    turn_pairing,
    with_parts,
)
from proxy.core.rule import Hit, Params

Entry = tuple[Item, int | None]


def _call_turns(history: Contents, params: Params) -> list[int]:
    """The positions of the call turns, where the endpoint pairs calls with responses."""
    if not facts(params).pairs_calls:
        return []
    return index_of(history).call_turns


@rule(
    tools_only=True,
    hint="Send all function responses of a call turn in the one user content right after it, "
    "responses first.",
)
def gemini_split_responses(history: Contents, params: Params) -> list[Hit]:
    """Function responses of one call turn spread over consecutive ``user`` contents.

    The upstream counts the responses of the one content after the call turn, so a split turn
    fails N1's ``Please ensure that the number of function response parts is equal to the
    number of function call parts of the function call turn.`` or N3's (gemini-native.md N15;
    gemini-cli PR#28407 coalesces roles "to prevent 400 Bad Request", PR#28700,
    vertesia/llumiverse PR#464). The ``merge`` repair joins the run of user contents into
    one: its responses first, in call order, then its other parts in order (gemini-cli's
    ``refineToolResponses`` order).
    """
    if fast.FAST and (index_of(history).settled() or not _stacked(history)):
        return []
    hits = []
    for i in _call_turns(history, params):
        run = _user_run(history, i + 1)
        for k in run[1:]:
            if responses_at(history, k):
                detail = f"function responses split from {history.path(run[0])}"
                hits.append(Hit(k, "", detail, (i, run)))
    return hits


def _stacked(history: Contents) -> bool:
    """Whether some response turn follows a user content (a split needs one)."""
    roles = history.roles
    return any(roles[k - 1] == "user" for k in index_of(history).response_turns if k)


def _user_run(history: Contents, start: int) -> tuple[int, ...]:
    end = start
    while end < len(history) and history.roles[end] == "user":
        end += 1
    return tuple(range(start, end))


@gemini_split_responses.repair("merge")
def _merge(history: Contents, hits: Sequence[Hit], params: Params) -> Contents:
    changes: dict[int, Item] = {}
    drop: set[int] = set()
    for i, run in {h.data for h in hits}:
        members = [history.messages[k] for k in run]
        responses = [p for m in members for p in parts_of(m) if response_of(p) is not None]
        others = [p for m in members for p in parts_of(m) if response_of(p) is None]
        found = pair(history.messages[i], {"parts": responses})
        order = [r for _, r in found.pairs] + found.extra
        changes[run[0]] = with_parts(members[0], [*(responses[r] for r in order), *others])
        drop.update(run[1:])
    return history.replace(changes).without(drop)


@rule(
    tools_only=True,
    hint="Start contents with a user turn, and send a model's function calls in the same "
    "model content as the text before them.",
)
def gemini_call_turn_order(history: Contents, params: Params) -> list[Hit]:
    """A function-call turn right after another model turn, or first in ``contents``.

    The upstream answers ``Please ensure that function call turn comes immediately after a
    user turn or after a function response turn.`` (gemini-native.md N2; gemini-cli#11814
    (a history starting with a call, from the loop-detection side call), #26486, #26956).
    The ``merge`` repair joins the model contents before the call into one (one step, as
    gemini-cli coalesces them); a call turn first in ``contents`` has its calls and their
    responses written as text (name, arguments, output) at the front of the next user
    content. No user prompt is made up.
    """
    if fast.FAST and index_of(history).calls_follow_users():
        return []
    hits = []
    for i in _call_turns(history, params):
        if i == 0:
            hits.append(Hit(0, "", "function call turn first in contents", "start"))
        elif history.roles[i - 1] == "model":
            hits.append(Hit(i, "", "function call turn right after a model turn", "merge"))
    return hits


@gemini_call_turn_order.repair("merge")
def _order(history: Contents, hits: Sequence[Hit], params: Params) -> Contents:
    runs: dict[int, int] = {}  # first model content of the run -> the call turn ending it
    for hit in hits:
        start = hit.index
        while start > 0 and history.roles[start - 1] == "model":
            start -= 1
        runs[start] = max(runs.get(start, hit.index), hit.index)
    changes: dict[int, Item] = {}
    drop: set[int] = set()
    for start, end in runs.items():
        if end > start:
            parts = [p for k in range(start, end + 1) for p in parts_of(history.messages[k])]
            changes[start] = with_parts(history.messages[start], parts)
            drop.update(range(start + 1, end + 1))
    merged = history.replace(changes).without(drop)
    return _call_text(merged) if is_call_turn(merged, 0) else merged


def _call_text(history: Contents) -> Contents:
    """Contents starting with a call turn: its calls, and the responses after it, as text at
    the front of the next user content (one made when there is none)."""
    first = history.messages[0]
    found = turn_pairing(history, 0)
    answered = dict(found.pairs)
    rparts = parts_of(history.messages[1]) if is_response_turn(history, 1) else []
    texts: list[Part] = []
    for j in sorted([*answered, *found.missing]):
        call = call_of(parts_of(first)[j]) or {}
        args = text_of(call.get("args"))
        line = (
            f"{TAG} Tool call {named(call)} with arguments {args}, made before the first user turn,"
        )
        if j in answered:
            texts += output_parts(rparts[answered[j]], f"{line} returned:")
        else:
            texts.append({"text": f"{line} has no output in the history."})
    texts += [p for r in found.extra for p in salvaged(rparts[r], SALVAGE_TEXT)]
    kept = [p for p in parts_of(first) if call_of(p) is None]
    entries: list[Entry] = [(with_parts(first, kept), 0)] if kept else []
    rest = 1
    if len(history) > 1 and history.roles[1] == "user":
        others = [p for p in parts_of(history.messages[1]) if response_of(p) is None]
        entries.append((with_parts(history.messages[1], [*texts, *others]), 1))
        rest = 2
    else:
        entries.append(({"role": "user", "parts": texts}, None))
    entries += [(history.messages[k], k) for k in range(rest, len(history))]
    return history.rebuild(entries)


@rule(
    tools_only=True,
    params={"text": SALVAGE_TEXT},
    hint="Keep each function response in the user content right after the model content "
    "holding its function call.",
)
def gemini_orphan_response(history: Contents, params: Params) -> list[Hit]:
    """A ``functionResponse`` in a user content that does not follow a function-call turn.

    After compression or a crash the call is gone; the upstream answers ``Please ensure that
    function response turn comes immediately after a function call turn.``
    (gemini-native.md N3; BerriAI/litellm#26755, GoogleCloudPlatform/generative-ai PR#368,
    langchain#27799, gemini-cli#26956). The ``salvage`` repair turns each response into user
    text naming its call and carrying its output verbatim (media kept), merged into the
    neighbouring user content. The missing call is never made up.
    """
    if not facts(params).pairs_calls or (fast.FAST and index_of(history).settled()):
        return []
    return [
        Hit(i, f".parts[{j}]", "functionResponse with no function call turn before it", j)
        for i in index_of(history).response_turns
        if not is_call_turn(history, i - 1)
        for j in responses_at(history, i)
    ]


@gemini_orphan_response.repair("salvage")
def _salvage(history: Contents, hits: Sequence[Hit], params: Params) -> Contents:
    orphans = {h.index for h in hits}
    entries: list[Entry] = []
    pending: list[Part] = []  # salvaged parts waiting for the next user content
    for k, content in enumerate(history.messages):
        orphan = k in orphans
        if not orphan and not pending:
            entries.append((content, k))
            continue
        own = parts_of(content)
        parts = (
            [*pending, *(q for p in own for q in _as_text(p, params["text"]))]
            if orphan
            else [*pending, *own]
        )
        pending = []
        if orphan and entries and _role(history, entries[-1]) == "user":
            last, origin = entries[-1]
            entries[-1] = (with_parts(last, [*parts_of(last), *parts]), origin)
        elif orphan and k + 1 < len(history) and history.roles[k + 1] == "user":
            pending = parts
        else:
            entries.append((with_parts(content, parts), k))
    return history.rebuild(entries)


def _as_text(part: Part, header: str) -> list[Part]:
    return salvaged(part, header) if response_of(part) is not None else [part]


def _role(history: Contents, entry: Entry) -> str:
    origin = entry[1]
    return history.roles[origin] if origin is not None else "user"


RULES = (gemini_split_responses, gemini_call_turn_order, gemini_orphan_response)
