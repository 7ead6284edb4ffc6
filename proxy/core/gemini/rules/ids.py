"""Rules about ``id`` on ``functionCall`` and ``functionResponse``: a response that does not
echo its call's id (N19), and ids an endpoint refuses (N10)."""

from __future__ import annotations

from collections.abc import Sequence

from proxy.core.gemini.index import index_of
from proxy.core.gemini.items import Contents
from proxy.core.gemini.parts import Part, call_of, parts_of, response_of
from proxy.core.gemini.rules.common import (
    call_id,
    edit_parts,
    facts,
    is_call_turn,
    rule,
    turn_pairing,
    with_inner,
)
from proxy.core.gemini.spelling import key_in
from proxy.core.providers import model_matches
from proxy.core.rule import Hit, Params


@rule(
    tools_only=True,
    params={"models": []},
    hint="Send each functionResponse with the id of the functionCall it answers.",
)
def gemini_response_id(history: Contents, params: Params) -> list[Hit]:
    """A ``functionResponse`` without its call's ``id`` (none, or another one), on a model
    that wants responses to echo call ids.

    Gemini 3 expects each ``functionResponse.id`` to echo its call's ``id`` when the call had
    one; a mismatch reportedly yields an empty answer rather than a 400 (gemini-native.md N19,
    N9; NousResearch/hermes-agent PR#46077, BerriAI/litellm PR#34603, G16). The ``copy``
    repair copies the call's id into the response it answers (by position among the responses
    no id matches); no id is minted for a call that had none, and a response naming another
    call of the turn is left alone.

    No endpoint is known to refuse the form (no Google text; the GenAI SDK itself sends
    responses without ids), so the rule finds nothing unless the deployment names the models
    it holds for (``models = ["gemini-3*"]``): precision before recall.
    """
    found = facts(params)
    models = tuple(params.get("models") or found.response_id_models)
    if found.strip_ids or not model_matches(history.model, models):
        return []
    hits = []
    for i in index_of(history).response_turns:
        if not is_call_turn(history, i - 1):
            continue
        calls, responses = parts_of(history.messages[i - 1]), parts_of(history.messages[i])
        ids = {call_id(call_of(p) or {}) for p in calls} - {None}
        for c, r in turn_pairing(history, i - 1).pairs:
            cid = call_id(call_of(calls[c]) or {})
            rid = call_id(response_of(responses[r]) or {})
            if cid is not None and rid != cid and rid not in ids:
                key = key_in(responses[r], "functionResponse")
                detail = f"functionResponse id {rid!r}, its call's is {cid!r}"
                hits.append(Hit(i, f".parts[{r}].{key}.id", detail, (r, cid)))
    return hits


@gemini_response_id.repair("copy")
def _copy(history: Contents, hits: Sequence[Hit], params: Params) -> Contents:
    return edit_parts(
        history, hits, lambda part, data: with_inner(part, "functionResponse", {"id": data[1]})
    )


@rule(
    tools_only=True,
    params={"always": False},
    hint="Leave id out of functionCall and functionResponse for this endpoint.",
)
def gemini_call_id(history: Contents, params: Params) -> list[Hit]:
    """An ``id`` in ``functionCall`` or ``functionResponse``, sent to an endpoint that refuses
    it.

    Vertex AI answered ``Invalid JSON payload received. Unknown name "id" at
    'contents[1].parts[0].function_call': Cannot find field.`` until about 2026-09, when its
    discovery revision 20260921 started accepting it (gemini-native.md N10;
    pydantic/pydantic-ai#5081, vercel/ai#15664, litellm#32331; accepted since:
    anomalyco/opencode PR#50504). No preset refuses ids today; set ``always = true`` for a
    Vertex endpoint that still does. The ``strip`` repair removes the ids of calls and
    responses alike (pairing then goes by count, as the upstream's does).
    """
    if not (facts(params).strip_ids or params.get("always")):
        return []
    hits = []
    for i, j, part in history.parts_at():
        for fn in (call_of(part), response_of(part)):
            if fn is not None and "id" in fn:
                key = key_in(part, "functionCall") or key_in(part, "functionResponse")
                hits.append(Hit(i, f".parts[{j}].{key}.id", "id refused by the endpoint", j))
    return hits


@gemini_call_id.repair("strip")
def _strip(history: Contents, hits: Sequence[Hit], params: Params) -> Contents:
    def stripped(part: Part, data: int) -> Part:
        camel = "functionCall" if call_of(part) is not None else "functionResponse"
        return with_inner(part, camel, {}, drop="id")

    return edit_parts(history, hits, stripped)


RULES = (gemini_response_id, gemini_call_id)
