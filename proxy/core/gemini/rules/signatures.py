"""Rules about thought signatures in the current turn of a Gemini 3 request: a dummy the
endpoint does not take (N16), one signature copied onto several calls of a step (N13), and
the first call of a step without one (N5).

Only the current turn is validated (G2: "Only current turn is required; we don't validate on
previous turns"); it starts at the last user content holding no function response
(:func:`~proxy.core.gemini.rules.common.current_turn`), and each model content after it is a
step.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from proxy.core.gemini.facts import DUMMY_SIGNATURES, SKIP_SIGNATURE, GeminiFacts
from proxy.core.gemini.items import Contents
from proxy.core.gemini.parts import Part, call_of, parts_of, signature_of, signed
from proxy.core.gemini.rules.common import (
    calls_at,
    current_turn,
    edit_parts,
    facts,
    rule,
)
from proxy.core.gemini.spelling import spelled, without
from proxy.core.providers import model_matches
from proxy.core.rule import Hit, Params


def _validated(history: Contents, found: GeminiFacts) -> bool:
    return model_matches(history.model, found.signature_models)


def _is_str(value: object) -> bool:
    return type(value) is str


def _steps(history: Contents) -> Iterator[int]:
    """The positions of the model contents of the current turn."""
    for i in range(current_turn(history) + 1, len(history)):
        if history.roles[i] == "model":
            yield i


def _set(history: Contents, hits: Sequence[Hit], value: str | None) -> Contents:
    """The history with the signature of each hit's part set to ``value`` (None: removed)."""

    def signed(part: Part, data: int) -> Part:
        if value is None:
            return without(part, "thoughtSignature")
        return {**part, spelled(part, "thoughtSignature"): value}

    return edit_parts(history, hits, signed)


@rule(
    hint="Use skip_thought_signature_validator as the dummy thought signature on this endpoint.",
)
def gemini_dummy_signature(history: Contents, params: Params) -> list[Hit]:
    """A dummy thought signature the endpoint does not take, in the current turn of a
    Gemini 3 request.

    AI Studio takes both documented dummies, ``skip_thought_signature_validator`` and
    ``context_engineering_is_the_way_to_go``; Vertex AI only the first, and answers the second
    with N5v's ``Unable to submit request because function call `default_api:{fn}` in the
    {i}. content block is missing a `thought_signature`.`` (gemini-native.md N16;
    pydantic/pydantic-ai#3881, langchain-google#1389). The ``rewrite`` repair writes
    ``skip_thought_signature_validator`` instead.
    """
    found = facts(params)
    if not _validated(history, found):
        return []
    refused = DUMMY_SIGNATURES - found.dummy_signatures
    return [
        Hit(i, f".parts[{j}]", f"dummy signature {signature_of(part)!r} refused", j)
        for i in _steps(history)
        for j, part in enumerate(parts_of(history.messages[i]))
        if _is_str(signature_of(part)) and signature_of(part) in refused
    ]


@gemini_dummy_signature.repair("rewrite")
def _rewrite(history: Contents, hits: Sequence[Hit], params: Params) -> Contents:
    return _set(history, hits, SKIP_SIGNATURE)


@rule(
    tools_only=True,
    hint="Send a step's thought signature on its first functionCall part only.",
)
def gemini_copied_signature(history: Contents, params: Params) -> list[Hit]:
    """One real thought signature on several ``functionCall`` parts of one step of the current
    turn (Gemini 3).

    Parallel calls carry the signature on the first call only; later calls legitimately have
    none (gemini-native.md N13; the thought-signatures docs, G2 "the thought_signature is
    attached only to the first functionCall part", G4; google/adk-js PR#268). A client that
    copies it onto every call sends a form the docs do not describe (I). The ``keep_first``
    repair removes the copies from the later calls. Dummy signatures on every call (the AI
    SDK's form for an unsigned batch) are left alone.
    """
    if not _validated(history, facts(params)):
        return []
    hits = []
    for i in _steps(history):
        parts = parts_of(history.messages[i])
        seen: set[object] = set()
        for j in calls_at(history, i):
            signature = signature_of(parts[j])
            if not _is_str(signature) or signature in DUMMY_SIGNATURES:
                continue
            if signature in seen:
                hits.append(Hit(i, f".parts[{j}]", "signature of an earlier call copied", j))
            seen.add(signature)
    return hits


@gemini_copied_signature.repair("keep_first")
def _keep_first(history: Contents, hits: Sequence[Hit], params: Params) -> Contents:
    return _set(history, hits, None)


@rule(
    tools_only=True,
    hint="Send back each functionCall part's thoughtSignature as the model returned it (on "
    "the part, beside functionCall); for calls the model did not make, use the dummy "
    "skip_thought_signature_validator.",
)
def gemini_missing_signature(history: Contents, params: Params) -> list[Hit]:
    """The first ``functionCall`` of a step of the current turn without a thought signature,
    on a Gemini 3 model.

    AI Studio and Code Assist answer ``Function call is missing a thought_signature in
    functionCall parts. This is required for tools to work correctly, …``, Vertex AI ``Unable
    to submit request because function call `default_api:{fn}` in the {i}. content block is
    missing a `thought_signature`.`` (gemini-native.md N5, N5v; windmill-labs/windmill#7679,
    langflow-ai/langflow#11149, pydantic/pydantic-ai#3881, google/adk-js#149). The ``dummy``
    repair gives that call (an empty signature is none: the bytes field is unset) the
    documented dummy ``skip_thought_signature_validator`` (G3; what gemini-cli's
    ``ensureActiveLoopHasThoughtSignatures`` does); never a later call of the
    step, never a part with a signature, never an earlier turn, never a Gemini 2.5 request. A
    signed server-side ``toolCall`` before it does not sign the call (the AI SDK gives such a
    call the dummy too).
    """
    if not _validated(history, facts(params)):
        return []
    hits = []
    for i in _steps(history):
        calls = calls_at(history, i)
        parts = parts_of(history.messages[i])
        if calls and not signed(parts[calls[0]]):
            name = (call_of(parts[calls[0]]) or {}).get("name")
            detail = f"function call {name!r} has no thought signature"
            hits.append(Hit(i, f".parts[{calls[0]}]", detail, calls[0]))
    return hits


@gemini_missing_signature.repair("dummy")
def _add_dummy(history: Contents, hits: Sequence[Hit], params: Params) -> Contents:
    return _set(history, hits, SKIP_SIGNATURE)


RULES = (gemini_dummy_signature, gemini_copied_signature, gemini_missing_signature)
