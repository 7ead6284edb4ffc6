"""The parse and proto-validation passes of the native Gemini emulators (gemini-native.md §3).

Google maps the JSON onto its request message first, then validates the message; the first
pass that finds something answers, listing everything that pass found (one line each, as
Google lists them):

1. `parse_errors`: names the message does not know (N18; N7 when the name is
   ``thoughtSignature`` inside a ``functionCall``; N10 for ``id`` in a call or response on a
   Vertex emulator told to refuse ids), and values of the wrong JSON type (``N-schema``, our
   wording after Google's ``Invalid value at …`` form; N17, opt-in, for a ``functionCall.args``
   or ``functionResponse.response`` that is not an object). Both spellings of every name are
   known (proto3 JSON, §1.4); paths print in snake_case (``contents[1].parts[0].function_call``),
   under ``request.`` on Code Assist (§1.3).
2. `proto_errors`: ``contents`` missing or empty, a content with no parts, a part with no data
   field (N11), a ``functionResponse`` without a name (N12); texts ``* GenerateContentRequest.…``
   each ending in a newline. On Vertex an empty ``text`` (without a signature) is refused with
   G11's text (provider-rules.md G11).

Only the request, its contents, parts, calls and responses are checked for unknown names;
``tools``, ``generationConfig`` and the rest are taken as they come (their schemas are
upstream-only, §3).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from proxy.emulator.common import Rejection
from proxy.emulator.gemini_native_errors import VERTEX, google_error

Violation = tuple[str, str, str]  # rule, field path, description


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", lambda m: "_" + m.group(1).lower(), name)


def _both(*camel: str) -> frozenset[str]:
    return frozenset(camel) | frozenset(_snake(name) for name in camel)


REQUEST = _both(
    *("contents", "model", "systemInstruction", "tools", "toolConfig", "generationConfig"),
    *("safetySettings", "cachedContent", "labels", "sessionId", "modelArmorConfig"),
)
WRAPPER = _both("model", "project", "userPromptId", "request", "enabledCreditTypes")
CONTENT = _both("role", "parts")
DATA = _both(
    *("text", "inlineData", "fileData", "functionCall", "functionResponse", "executableCode"),
    *("codeExecutionResult", "toolCall", "toolResponse"),
)
PART = DATA | _both("thought", "thoughtSignature", "videoMetadata", "mediaResolution")
PART |= _both("partMetadata")
CALL = _both("id", "name", "args", "partialArgs", "willContinue")
RESPONSE = _both("id", "name", "response", "parts", "willContinue", "scheduling")
SIGNATURE = _both("thoughtSignature")
_TYPES = {"contents": "google.ai.generativelanguage.v1beta.Content"}
_TYPES |= {"parts": "google.ai.generativelanguage.v1beta.Part"}
_VX_EMPTY_TEXT = (
    "Unable to submit request because it has an empty text parameter. Add a value to the "
    "parameter and try again. Learn more: "
    "https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/gemini"
)


def get(obj: dict[str, Any], camel: str) -> Any:
    """A field by either spelling (camelCase first); None when absent."""
    value = obj.get(camel)
    return obj.get(_snake(camel)) if value is None else value


def unknown(name: str, path: str) -> str:
    where = f" at '{path}'" if path else ""
    return f'Invalid JSON payload received. Unknown name "{name}"{where}: Cannot find field.'


def _invalid(path: str, kind: str, value: Any) -> str:
    # ours: Google's form (N17's row); the type named is the field's message type
    shown = json.dumps(value, ensure_ascii=False)[:80]
    return f"Invalid value at '{path}' (type.googleapis.com/{kind}), {shown}"


def _names(obj: dict[str, Any], known: frozenset[str], path: str) -> list[Violation]:
    return [("N18", path, unknown(k, path)) for k in obj if k not in known]


def parse_errors(request: Any, root: str, *, refuse_ids: bool, struct: bool) -> list[Violation]:
    """Pass 1 over a ``GenerateContentRequest`` found at `root` (``""`` or ``"request"``)."""
    where = root or "request"
    if not isinstance(request, dict):
        return [("N-schema", where, _invalid(where, "GenerateContentRequest", request))]
    found = _names(request, REQUEST, root)
    contents = get(request, "contents")
    base = f"{root}.contents" if root else "contents"
    if contents is not None and not isinstance(contents, list):
        return [*found, ("N-schema", base, _invalid(base, _TYPES["contents"], contents))]
    for i, content in enumerate(contents or ()):
        found += _content(content, f"{base}[{i}]", refuse_ids, struct)
    return found


def _content(content: Any, path: str, refuse_ids: bool, struct: bool) -> list[Violation]:
    if not isinstance(content, dict):
        return [("N-schema", path, _invalid(path, _TYPES["contents"], content))]
    found = _names(content, CONTENT, path)
    role, parts = get(content, "role"), get(content, "parts")
    if role is not None and not isinstance(role, str):
        found.append(("N-schema", f"{path}.role", _invalid(f"{path}.role", "string", role)))
    if parts is not None and not isinstance(parts, list):
        return [*found, ("N-schema", f"{path}.parts", _invalid(f"{path}.parts", "Part", parts))]
    for j, part in enumerate(parts or ()):
        found += _part(part, f"{path}.parts[{j}]", refuse_ids, struct)
    return found


def _part(part: Any, path: str, refuse_ids: bool, struct: bool) -> list[Violation]:
    if not isinstance(part, dict):
        return [("N-schema", path, _invalid(path, _TYPES["parts"], part))]
    found = _names(part, PART, path)
    value = get(part, "text")
    if value is not None and not isinstance(value, str):
        found.append(("N-schema", f"{path}.text", _invalid(f"{path}.text", "string", value)))
    for camel, known, value_key in (
        ("functionCall", CALL, "args"),
        ("functionResponse", RESPONSE, "response"),
    ):
        inner = get(part, camel)
        where = f"{path}.{_snake(camel)}"
        if isinstance(inner, dict):
            found += _function(inner, camel, where, known, refuse_ids)
            value = get(inner, value_key)
            if struct and value is not None and not isinstance(value, dict):
                field = f"{where}.{value_key}"
                found.append(("N17", field, _invalid(field, "google.protobuf.Struct", value)))
        elif inner is not None:
            found.append(("N-schema", where, _invalid(where, camel[0].upper() + camel[1:], inner)))
    return found


def _function(
    inner: dict[str, Any], camel: str, where: str, known: frozenset[str], refuse_ids: bool
) -> list[Violation]:
    """Names inside a call or response: N7 (a signature in the call), N10, N18."""
    found: list[Violation] = []
    for key in inner:
        if key in SIGNATURE and camel == "functionCall":
            found.append(("N7", where, unknown(key, where)))
        elif key == "id" and refuse_ids:
            found.append(("N10", where, unknown(key, where)))
        elif key not in known:
            found.append(("N18", where, unknown(key, where)))
    return found


def wrapper_errors(body: Any) -> list[Violation]:
    """Code Assist's envelope (§1.3): an object of known top-level names (gemini-cli#5002)."""
    if not isinstance(body, dict):
        return [("N-schema", "", _invalid("", "CaGenerateContentRequest", body))]
    return _names(body, WRAPPER, "")


def parse_rejection(endpoint: str, found: list[Violation]) -> Rejection | None:
    """Pass 1's answer: every violation listed, the first one's rule."""
    if not found:
        return None
    message = "\n".join(description for _, _, description in found)
    violations = [(field, text) for _, field, text in found]
    return google_error(endpoint, found[0][0], message, violations=violations)


def _has_data(part: dict[str, Any]) -> bool:
    return any(part.get(key) is not None for key in DATA)


def proto_errors(endpoint: str, contents: Any) -> Rejection | None:
    """Pass 2 (after `parse_errors` found nothing): N11, N12, Vertex's empty text."""
    if not contents:
        line = "* GenerateContentRequest.contents: contents is not specified\n"
        return google_error(endpoint, "N11", line)
    lines: list[tuple[str, str]] = []
    for i, content in enumerate(contents):
        lines += _content_lines(i, content)
    if lines:
        return google_error(endpoint, lines[0][0], "".join(text for _, text in lines))
    return _empty_text(contents) if endpoint == VERTEX else None


def _content_lines(i: int, content: dict[str, Any]) -> Iterable[tuple[str, str]]:
    at = f"* GenerateContentRequest.contents[{i}]"
    parts = get(content, "parts") or []
    if not parts:
        yield "N11", f"{at}.parts: contents.parts must not be empty.\n"
    for j, part in enumerate(parts):
        if not _has_data(part):
            text = "required oneof field 'data' must have one initialized field"
            yield "N11", f"{at}.parts[{j}].data: {text}\n"
            continue
        response = get(part, "functionResponse")
        if isinstance(response, dict) and not get(response, "name"):
            yield "N12", f"{at}.parts[{j}].function_response.name: Name cannot be empty.\n"


def _empty_text(contents: list[dict[str, Any]]) -> Rejection | None:
    for content in contents:
        for part in get(content, "parts"):
            if get(part, "text") == "" and not get(part, "thoughtSignature"):
                return google_error(VERTEX, "N11", _VX_EMPTY_TEXT)
    return None
