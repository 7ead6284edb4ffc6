"""What each Gemini-native endpoint refuses, as data (one record an endpoint).

Rules read the record of their policy's provider (:func:`facts_of`) and never test an
endpoint's name. Every field cites its row of ``gemini-native.md`` §3 (N1-N19) and its
endpoint matrix (AS AI Studio, VX Vertex AI, CA Code Assist); where the matrix says ``?`` (no
evidence) the default is to accept, so that the proxy leaves the history alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from proxy.core.providers import provider_of
from proxy.core.rule import Params

#: Google's dummy signatures (G3, N16): the first works on every endpoint.
SKIP_SIGNATURE = "skip_thought_signature_validator"
CONTEXT_SIGNATURE = "context_engineering_is_the_way_to_go"
DUMMY_SIGNATURES = frozenset({SKIP_SIGNATURE, CONTEXT_SIGNATURE})
#: Gemini 3 model ids (``gemini-3-pro-preview``, ``gemini-3.1-flash-…``: ``*`` covers the dot);
#: Gemini 2.5 returns signatures but "optional to return" (§8, G2).
GEMINI_3 = ("gemini-3*", "gemini-3.*")
#: Roles taken (N14: ``Please use a valid role: user, model.``). LangChain's Vertex converter
#: sends ``function`` for responses and reports no error (langchain-ai/langchain-google#1059),
#: but Google documents ``user`` and the emulators refuse it: mapped to ``user``.
ROLES = frozenset({"user", "model"})


@dataclass(frozen=True, slots=True)
class GeminiFacts:
    """What one endpoint refuses in ``generateContent`` (defaults: accept)."""

    #: Function-call and function-response turns are paired by count and order (N1, N2, N3,
    #: N15: AS ✓, VX ✓ (I), CA ✓).
    pairs_calls: bool = False
    #: Roles accepted (N14: ``Please use a valid role: user, model.``), None for any.
    roles: frozenset[str] | None = None
    #: Every content needs a ``role`` (N14: CA, CLIProxyAPI#17).
    role_required: bool = False
    #: ``functionCall.args`` and ``functionResponse.response`` are ``Struct`` objects (N17, I).
    struct_values: bool = False
    #: Unknown field names are refused (N7, N18: every endpoint).
    unknown_fields: bool = False
    #: Empty ``parts``, parts with no data field, empty text and empty
    #: ``functionResponse.name`` are refused (N11, N12).
    non_empty_parts: bool = False
    #: Globs of the models that validate thought signatures in the current turn (N5, N13, N16).
    signature_models: tuple[str, ...] = ()
    #: Dummy signatures the endpoint accepts in place of a real one (N16).
    dummy_signatures: frozenset[str] = DUMMY_SIGNATURES
    #: Globs of the models that want each response to echo its call's ``id`` (N19, R).
    response_id_models: tuple[str, ...] = ()
    #: ``id`` on ``functionCall``/``functionResponse`` is refused (N10: VX before ≈2026-09,
    #: which current VX no longer does: off everywhere; the rule's ``always`` turns it on).
    strip_ids: bool = False


#: Endpoints with no Gemini-native evidence: accept everything.
LENIENT = GeminiFacts()
#: AI Studio / Gemini Developer API (generativelanguage.googleapis.com).
AI_STUDIO = GeminiFacts(
    pairs_calls=True,  # N1 (gemini-cli#4217 …), N2 (#11814), N3 (litellm#26755)
    roles=ROLES,  # N14 (openagent#1666)
    struct_values=True,  # N17 (deprecated-generative-ai-js#301)
    unknown_fields=True,  # N7 (cc-switch PR#7143), N18 (kelivo#543)
    non_empty_parts=True,  # N11 (chatwise-releases#250, sketch#68), N12 (CLIProxyAPI#2104)
    signature_models=GEMINI_3,  # N5 (windmill#7679)
    # N19 (hermes-agent PR#46077) is reported, with no refusal text, and the GenAI SDK sends
    # responses without ids: no model here (``gemini_response_id``'s ``models`` opts in).
)
#: Vertex AI: AS's rules, but only ``skip_thought_signature_validator`` as a dummy (N16) and
#: no signature check on Gemini 3 Pro Image (N5 matrix: VX thought-signatures docs).
VERTEX = GeminiFacts(
    pairs_calls=True,  # N1 (I), N3 (GoogleCloudPlatform/generative-ai PR#368)
    roles=ROLES,  # N14 (I)
    struct_values=True,  # N17 (I)
    unknown_fields=True,  # N7, N18 (gemini-cli's scrubber: "strict APIs (like Vertex AI)")
    non_empty_parts=True,  # N11 (G11 empty text), N12
    signature_models=(*GEMINI_3, "!*-image*"),  # N5v (pydantic-ai#3881)
    dummy_signatures=frozenset({SKIP_SIGNATURE}),  # N16 (pydantic-ai#3881)
)
#: Code Assist (cloudcode-pa.googleapis.com, gemini-cli's Google login): AS's rules, a role
#: on every content, and the dummies of VX (N16 matrix: "? (treat as VX)").
CODE_ASSIST = GeminiFacts(
    pairs_calls=True,  # N1 (gemini-cli#4217, GCA)
    roles=ROLES,  # N14
    role_required=True,  # N14 (CLIProxyAPI#17)
    struct_values=True,  # N17 (I)
    unknown_fields=True,  # N18 (gemini-cli#5002)
    non_empty_parts=True,  # N11, N12 (I)
    signature_models=GEMINI_3,  # N5 (earendil-works/pi#471, claude-proxy#16)
    dummy_signatures=frozenset({SKIP_SIGNATURE}),  # N16
)

BY_DIALECT: dict[str, GeminiFacts] = {
    "gemini": AI_STUDIO,
    "vertex": VERTEX,
    "code-assist": CODE_ASSIST,
}


def facts_of(params: Params) -> GeminiFacts:
    """The Gemini-native facts of the rule's provider (LENIENT for one with none)."""
    return BY_DIALECT.get(provider_of(params).name, LENIENT)
