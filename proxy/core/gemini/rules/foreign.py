"""A history whose thought signatures another route or model minted (N8): found only when the
upstream itself says so, by repair on reject.

A signature is valid only where it was minted (AI Studio, Vertex and Code Assist each refuse
the others'; a model switch does too), and nothing in the history tells where that was
(gemini-native.md N8, §5: "no static repair"). So this rule is off in every preset and runs only
when the upstream answers ``Corrupted thought signature.`` or Vertex's ``Thought signature is
not valid`` (:mod:`proxy.core.gemini.signatures`): the history is then treated as foreign, as
the thought-signatures docs' migration case says (alphaXiv/agents PR#61 does this per issuer).
"""

from __future__ import annotations

from collections.abc import Sequence

from proxy.core.gemini.facts import DUMMY_SIGNATURES, SKIP_SIGNATURE
from proxy.core.gemini.items import Contents
from proxy.core.gemini.parts import parts_of, signature_of
from proxy.core.gemini.rules.common import Edit, calls_at, current_turn, edit, rule
from proxy.core.gemini.spelling import spelled, without
from proxy.core.rule import Hit, Params


@rule(
    hint="Send thought signatures back only to the endpoint and model that returned them; "
    "after a switch, send the history without them.",
)
def gemini_foreign_signature(history: Contents, params: Params) -> list[Hit]:
    """Every real thought signature of the history (a dummy is nobody's), where the upstream
    refused one as minted elsewhere.

    AI Studio and Code Assist answer ``Corrupted thought signature.``, Vertex AI ``Unable to
    submit request because Thought signature is not valid.`` (gemini-native.md N8;
    earendil-works/pi#471, bobrware/bobrchat#120, vercel/ai#14196). The ``replace`` repair
    drops them all, and gives the first ``functionCall`` of each step of the current turn the
    documented dummy ``skip_thought_signature_validator`` (N5 needs one there on Gemini 3;
    earlier turns are not validated, G2). Off in every preset: the retry applies it.
    """
    hits = []
    for i, content in enumerate(history.messages):
        for j, part in enumerate(parts_of(content)):
            signature = signature_of(part)
            if type(signature) is str and signature and signature not in DUMMY_SIGNATURES:
                hits.append(Hit(i, f".parts[{j}]", "thought signature minted elsewhere", j))
    return hits


@gemini_foreign_signature.repair("replace")
def _replace(history: Contents, hits: Sequence[Hit], params: Params) -> Contents:
    edits: Edit = {}
    for hit in hits:
        part = parts_of(history.messages[hit.index])[hit.data]
        edits.setdefault(hit.index, {})[hit.data] = without(part, "thoughtSignature")
    start = current_turn(history)
    for i in range(start + 1, len(history.messages)):
        calls = calls_at(history, i) if history.roles[i] == "model" else []
        if calls and (i, calls[0]) in {(h.index, h.data) for h in hits}:
            part = parts_of(history.messages[i])[calls[0]]
            edits[i][calls[0]] = {**part, spelled(part, "thoughtSignature"): SKIP_SIGNATURE}
    return edit(history, edits)


RULES = (gemini_foreign_signature,)
