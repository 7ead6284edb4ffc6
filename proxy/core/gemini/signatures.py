"""Gemini's native error texts (gemini-native.md §3, rows N1-N14) as catalogue rows.

Data only (see :mod:`proxy.core.errortext` for what a row is); the registry puts them in the
catalogue (:data:`proxy.core.registry.CATALOGUES`). AI Studio and Code Assist share wording;
Vertex AI's semantic texts start ``Unable to submit request because`` (§2). The texts are
found inside every envelope: Code Assist's ``errors[]`` and stream arrays, relays' wrappers.
Places are contents indexes (``contents[3]``, ``request.contents[3]``: the named ``index``
group). ``rule=None``: known, counted, never retried (upstream-only: N6, N9).
"""

from __future__ import annotations

from proxy.core.errortext import Signature, sig

_API = "gemini"
_AT = r"contents\[(?P<index>\d+)\]"
#: A Vertex content block numbered in its text (N5v: ``in the 3. content block``).
_BLOCK = r"in the (?P<index>\d+)\. content block"

# One row per signature, laid out as a table (as in proxy.core.signatures).
# fmt: off
GEMINI: tuple[Signature, ...] = (
    sig("N1", "gemini", "gemini_missing_response",
        r"Please ensure that the number of function response parts is equal to the number of"
        r" function call parts of the function call turn", api=_API, evidence=("N15",)),
    sig("N2", "gemini", "gemini_call_turn_order",
        r"Please ensure that function call turn comes immediately after a user turn or after a"
        r" function response turn", api=_API),
    sig("N3", "gemini", "gemini_orphan_response",
        r"Please ensure that function response turn comes immediately after a function call"
        r" turn", api=_API),
    sig("N5", "gemini", "gemini_missing_signature",
        r"Function call is missing a thought_signature in functionCall parts", api=_API),
    sig("N5v", "vertex", "gemini_missing_signature",
        r"function call `[^`]*` " + _BLOCK + r" is missing a `thought_signature`", api=_API),
    sig("N6", "gemini", None, r"Tool call part is missing thought_signature", api=_API),
    sig("N7", "gemini", "gemini_signature_in_call",
        r"Unknown name \"thoughtSignature\" at '" + _AT + r"\.parts\[\d+\]\.function_call'",
        api=_API),
    sig("N8", "gemini", "gemini_foreign_signature",
        r"^Corrupted thought signature\.?$|Invalid thought signature|Base64 decoding failed",
        api=_API, evidence=("N8-variants",)),
    sig("N8v", "vertex", "gemini_foreign_signature",
        r"Unable to submit request because Thought signature is not valid", api=_API),
    sig("N10", "vertex", "gemini_call_id",
        r"Unknown name \"id\" at '" + _AT + r"\.parts\[\d+\]\.function_(?:call|response)'",
        api=_API, params={"always": True}),
    sig("N11", "gemini", "gemini_empty_part",
        r"GenerateContentRequest\." + _AT + r"\.parts(?:\[\d+\]\.data)?: (?:contents\.parts must"
        r" not be empty|required oneof field 'data' must have one initialized field)", api=_API),
    sig("N12", "gemini", "gemini_response_name",
        r"GenerateContentRequest\." + _AT + r"\.parts\[\d+\]\.function_response\.name: Name"
        r" cannot be empty", api=_API),
    sig("N14", "gemini", "gemini_role", r"Please use a valid role: user, model", api=_API),
)
# fmt: on
