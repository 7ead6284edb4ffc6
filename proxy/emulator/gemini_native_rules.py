"""What the native Gemini emulators refuse, in the order they check it (gemini-native.md §3, §8).

`validate_native(endpoint, model, request)` runs the passes of `gemini_native_schema` (N18,
N7, N10, N17; N11, N12), then over ``contents`` in order:

- N14 roles: ``user``/``model`` only; Code Assist also needs ``role`` (CLIProxyAPI#17); a
  missing role reads as ``user`` elsewhere;
- turns, per content: N3 (a response turn not right after a call turn), N1 (the turn after a
  call turn holds another number of responses than the call turn has calls, also when the call
  turn ends ``contents``), N2 (a call turn first, or right after a model turn); responses split
  over two user contents (N15) fail N3 on the second;
- N4 (opt-in, Google's 2023 text): multi-turn ``contents`` ending with a model turn;
- signatures, per call part in order: N8 (a signature this emulator did not mint and no dummy
  the endpoint takes, on any model's calls in any turn: AS/CA ``Corrupted thought
  signature.``, VX its own text; signatures on other parts are not judged, no evidence), then
  for Gemini 3 models (``gemini-3…``, not ``…-image…`` on Vertex) N5/N5v (the first
  ``functionCall`` of each model content of the current turn without a signature). Dummies
  (N16): AS takes ``skip_thought_signature_validator`` and
  ``context_engineering_is_the_way_to_go``; Vertex only the first (the second counts as
  missing), Code Assist as Vertex (matrix ``?``);
- N19 (opt-in, our wording): a response whose call had an ``id`` must echo it (by position).

The positions in N5/N5v are 0-based indexes into ``contents`` (as the OpenAI-compatible
emulator's G1; which base Google uses is not settled: I). VX's wording of N1-N3 is unknown
(open question 1): the AS texts are used on every endpoint.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any

from proxy.emulator.common import Rejection
from proxy.emulator.gemini_native_errors import AISTUDIO, CODE_ASSIST, VERTEX, google_error
from proxy.emulator.gemini_native_schema import get, parse_errors, parse_rejection, proto_errors

SKIP, CONTEXT = "skip_thought_signature_validator", "context_engineering_is_the_way_to_go"
MINT_PREFIX = b"toolcall-guard-emulator/"
N1 = (
    "Please ensure that the number of function response parts is equal to the number of "
    "function call parts of the function call turn."
)
N2 = (
    "Please ensure that function call turn comes immediately after a user turn or after a "
    "function response turn."
)
N3 = "Please ensure that function response turn comes immediately after a function call turn."
N4 = "Please ensure that multiturn requests ends with a user role or a function response."
N5 = (
    "Function call is missing a thought_signature in functionCall parts. This is required for "
    "tools to work correctly, and missing thought_signature may lead to degraded model "
    "performance. Additional data, function call `default_api:{name}` , position {i}. "
    "Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
)
N5V = (
    "Unable to submit request because function call `default_api:{name}` in the {i}. content "
    "block is missing a `thought_signature`. Learn more: "
    "https://docs.cloud.google.com/vertex-ai/generative-ai/docs/thought-signatures"
)
N8 = "Corrupted thought signature."
N8V = (
    "Unable to submit request because Thought signature is not valid.. Learn more: "
    "https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/gemini"
)
N14 = "Please use a valid role: user, model."
#: ours (no Google text is known for N19)
N19 = "Function response {where} does not echo the id {id!r} of its function call."
_GEMINI_3 = re.compile(r"(?:models/)?gemini-3(?:\.\d+)?(?:-|$)")


@dataclass(frozen=True, slots=True)
class Strictness:
    """Rules off by default (§8): N10 on Vertex (current Vertex takes ids), N4, N17, N19."""

    vertex_rejects_ids: bool = False
    trailing_model_turn: bool = False
    struct_values: bool = False
    response_ids: bool = False


def is_gemini_3(endpoint: str, model: str) -> bool:
    """Whether N5 applies: Gemini 3 ids, but not the image models on Vertex."""
    if _GEMINI_3.match(model) is None:
        return False
    return not (endpoint == VERTEX and "-image" in model)


def validate_native(
    endpoint: str, model: str, request: Any, strict: Strictness | None = None, root: str = ""
) -> Rejection | None:
    """The first error `endpoint` answers for this ``GenerateContentRequest``, or None."""
    strict = strict or Strictness()
    refuse_ids = endpoint == VERTEX and strict.vertex_rejects_ids
    found = parse_errors(request, root, refuse_ids=refuse_ids, struct=strict.struct_values)
    rejection = parse_rejection(endpoint, found) or proto_errors(endpoint, get(request, "contents"))
    if rejection is not None:
        return rejection
    contents: list[dict[str, Any]] = get(request, "contents")
    return (
        _roles(endpoint, contents)
        or _turns(endpoint, contents)
        or (_trailing(endpoint, contents) if strict.trailing_model_turn else None)
        or _signatures(endpoint, model, contents)
        or (_echoed_ids(endpoint, contents) if strict.response_ids else None)
    )


def role_of(content: dict[str, Any]) -> str:
    role = get(content, "role")
    return role if isinstance(role, str) else "user"


def parts_of(content: dict[str, Any]) -> list[dict[str, Any]]:
    parts = get(content, "parts")
    return parts if isinstance(parts, list) else []


def calls_of(content: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The ``functionCall`` objects of a model content."""
    if content is None or role_of(content) != "model":
        return []
    calls = (get(part, "functionCall") for part in parts_of(content))
    return [call for call in calls if isinstance(call, dict)]


def responses_of(content: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The ``functionResponse`` objects of a user content."""
    if content is None or role_of(content) != "user":
        return []
    responses = (get(part, "functionResponse") for part in parts_of(content))
    return [response for response in responses if isinstance(response, dict)]


def _roles(endpoint: str, contents: list[dict[str, Any]]) -> Rejection | None:
    for content in contents:
        role = get(content, "role")
        if role is None and endpoint != CODE_ASSIST:
            continue
        if role not in ("user", "model"):
            return google_error(endpoint, "N14", N14)
    return None


def _turns(endpoint: str, contents: list[dict[str, Any]]) -> Rejection | None:
    for i, content in enumerate(contents):
        before = contents[i - 1] if i else None
        calls_before = calls_of(before)
        responses = responses_of(content)
        if responses and not calls_before:
            return google_error(endpoint, "N3", N3)
        if calls_before and len(responses) != len(calls_before):
            return google_error(endpoint, "N1", N1)
        if calls_of(content) and (before is None or role_of(before) == "model"):
            return google_error(endpoint, "N2", N2)
    if contents and calls_of(contents[-1]):
        return google_error(endpoint, "N1", N1)
    return None


def _trailing(endpoint: str, contents: list[dict[str, Any]]) -> Rejection | None:
    if len(contents) > 1 and role_of(contents[-1]) == "model":
        return google_error(endpoint, "N4", N4)
    return None


def current_turn(contents: list[dict[str, Any]]) -> int:
    """Where the current turn starts: the last user content with text and no responses."""
    for i in range(len(contents) - 1, -1, -1):
        content = contents[i]
        texts = [get(part, "text") for part in parts_of(content)]
        if role_of(content) == "user" and any(texts) and not responses_of(content):
            return i
    return 0


def mint(endpoint: str, digest: str) -> str:
    """A signature this endpoint's emulator recognises as its own."""
    return base64.b64encode(MINT_PREFIX + f"{endpoint}/{digest}".encode()).decode()


def _decoded(signature: str) -> bytes:
    text = signature.replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        return b""


def signature_kind(endpoint: str, signature: Any) -> str:
    """``valid``, ``missing`` (absent, empty, or a dummy this endpoint does not take) or
    ``foreign`` (N8)."""
    if not isinstance(signature, str) or not signature:
        return "missing"
    raw = _decoded(signature)
    dummy = next((d for d in (SKIP, CONTEXT) if signature == d or raw == d.encode()), None)
    if dummy is not None:
        return "valid" if dummy == SKIP or endpoint == AISTUDIO else "missing"
    return "valid" if raw.startswith(MINT_PREFIX + f"{endpoint}/".encode()) else "foreign"


def _signatures(endpoint: str, model: str, contents: list[dict[str, Any]]) -> Rejection | None:
    gemini_3 = is_gemini_3(endpoint, model)
    start = current_turn(contents)
    for i, content in enumerate(contents):
        first_call = True
        for part in parts_of(content):
            call = get(part, "functionCall")
            if not isinstance(call, dict) or role_of(content) != "model":
                continue
            kind = signature_kind(endpoint, get(part, "thoughtSignature"))
            if kind == "foreign":
                return google_error(endpoint, "N8", N8V if endpoint == VERTEX else N8)
            if not first_call:
                continue
            first_call = False
            if gemini_3 and i >= start and kind == "missing":
                text = N5V if endpoint == VERTEX else N5
                return google_error(endpoint, "N5", text.format(name=get(call, "name"), i=i))
    return None


def _echoed_ids(endpoint: str, contents: list[dict[str, Any]]) -> Rejection | None:
    for i, content in enumerate(contents[1:], start=1):
        calls = calls_of(contents[i - 1])
        for j, (call, response) in enumerate(zip(calls, responses_of(content), strict=False)):
            wanted = get(call, "id")
            if wanted and get(response, "id") != wanted:
                where = f"contents[{i}] ({j}. response)"
                return google_error(endpoint, "N19", N19.format(where=where, id=wanted))
    return None
