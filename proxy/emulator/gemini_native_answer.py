"""Deterministic answers of the native Gemini emulators: a ``GenerateContentResponse``, or its
stream (gemini-native.md §1.3, §6).

The same request bytes give the same answer bytes (ids, signatures and ``responseId`` derive
from a hash of the body). What is answered, in this order:

1. Scripted tool loops (the Messages emulators' convention): the current turn's prompt (the
   last user content with text and no ``functionResponse``) may hold directives
   ``[[tool_use NAME {json args}]]`` (``[[function_call …]]`` also reads); when the request
   declares ``functionDeclarations`` (and ``functionCallingConfig.mode`` is not ``NONE``), the
   k-th directive is answered as a ``functionCall`` once k model call turns follow the prompt,
   and a text once they are used up. Directives joined by ``&`` are one step of parallel calls.
2. Otherwise, under ``mode: ANY`` with a prompt last: one call to the first allowed function,
   its required parameters filled with placeholders (ours).
3. Otherwise a text: under ``responseMimeType: application/json`` the response schema's
   required properties with placeholders (JSON, ours); else ``The tool returned: …`` quoting
   trailing responses, else ``Emulated gemini answer to: <the prompt's last text, 80
   characters>``.

``thinkingConfig.includeThoughts`` puts a thought summary part (``"thought": true``) first.

Gemini 3 models (`is_gemini_3`) get an ``id`` on each call (not on a Vertex emulator that
refuses ids) and a signature minted by this endpoint (`mint`) on the first call of the step,
which the emulator alone accepts back (N8). Streams: text deltas (one per word, or `chunks`
pieces), each call as a whole part in its own chunk, ``finishReason`` and ``usageMetadata`` on
the last chunk; Code Assist wraps every body and chunk in ``{"response": …, "traceId": …}``.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

import orjson

from proxy.emulator.completion import split
from proxy.emulator.gemini_native_errors import CODE_ASSIST, VERTEX, stream_error
from proxy.emulator.gemini_native_rules import (
    calls_of,
    current_turn,
    is_gemini_3,
    mint,
    parts_of,
    responses_of,
)
from proxy.emulator.gemini_native_schema import get
from proxy.emulator.scripts import Call, placeholders, rounds

DIRECTIVE = re.compile(r"\[\[(?:tool_use|function_call) (\S+) (\{.*?\})\]\]", re.DOTALL)
CREATE_TIME = "2025-01-01T00:00:00.000000Z"
REASONING = "Emulated reasoning: the request is valid."


@dataclass(frozen=True, slots=True)
class Reply:
    """What the emulator answers to one valid request."""

    endpoint: str
    model: str
    digest: str
    parts: list[dict[str, Any]]
    prompt_tokens: int

    @property
    def output_tokens(self) -> int:
        return max(len(orjson.dumps(self.parts)) // 4, 1)

    def usage(self) -> dict[str, int]:
        total = self.prompt_tokens + self.output_tokens
        return {
            "promptTokenCount": self.prompt_tokens,
            "candidatesTokenCount": self.output_tokens,
            "totalTokenCount": total,
        }


def plan_reply(
    endpoint: str, model: str, request: dict[str, Any], raw: bytes, *, ids: bool = True
) -> Reply:
    """The answer to a request the validator accepted (`ids`: may calls carry an ``id``)."""
    digest = hashlib.blake2b(raw, digest_size=12).hexdigest()
    contents: list[dict[str, Any]] = get(request, "contents")
    parts: list[dict[str, Any]] = []
    gemini_3 = is_gemini_3(endpoint, model)
    for k, (name, args) in enumerate(_scripted(request, contents) or _forced(request, contents)):
        call: dict[str, Any] = {"name": name, "args": args}
        if gemini_3 and ids:
            call = {"id": f"{digest[:8]}-{k}"} | call
        part: dict[str, Any] = {"functionCall": call}
        if gemini_3 and k == 0:
            part["thoughtSignature"] = mint(endpoint, digest)
        parts.append(part)
    if not parts:
        parts.append({"text": _json_text(request) or _text(contents)})
    if _thinks(request):
        parts.insert(0, {"text": REASONING, "thought": True})
    return Reply(endpoint, model, digest, parts, max(len(raw) // 4, 1))


def _thinks(request: dict[str, Any]) -> bool:
    """``generationConfig.thinkingConfig.includeThoughts``: a thought summary opens the answer."""
    config = get(request, "generationConfig")
    thinking = get(config, "thinkingConfig") if isinstance(config, dict) else None
    return isinstance(thinking, dict) and get(thinking, "includeThoughts") is True


def _json_text(request: dict[str, Any]) -> str | None:
    """Structured output (``responseMimeType: application/json``): the schema's required
    properties with placeholders (ours), so clients that parse the answer get JSON."""
    config = get(request, "generationConfig")
    if not isinstance(config, dict) or get(config, "responseMimeType") != "application/json":
        return None
    schema = get(config, "responseJsonSchema") or get(config, "responseSchema")
    return json.dumps(placeholders(schema))


def _declared(request: dict[str, Any]) -> list[dict[str, Any]]:
    tools = get(request, "tools")
    found: list[dict[str, Any]] = []
    for tool in tools if isinstance(tools, list) else ():
        declarations = get(tool, "functionDeclarations") if isinstance(tool, dict) else None
        found += [d for d in declarations or () if isinstance(d, dict)]
    return found


def _mode(request: dict[str, Any]) -> tuple[str, list[Any]]:
    config = get(request, "toolConfig")
    calling = get(config, "functionCallingConfig") if isinstance(config, dict) else None
    calling = calling if isinstance(calling, dict) else {}
    allowed = get(calling, "allowedFunctionNames")
    return str(get(calling, "mode") or "AUTO").upper(), allowed if isinstance(allowed, list) else []


def _prompt_text(content: dict[str, Any]) -> str:
    texts = [get(part, "text") for part in parts_of(content)]
    return " ".join(t for t in texts if isinstance(t, str) and t)


def _scripted(request: dict[str, Any], contents: list[dict[str, Any]]) -> list[Call]:
    """The calls of the next scripted step (none when unscripted or the script is done)."""
    if not _declared(request) or _mode(request)[0] == "NONE":
        return []
    asking = current_turn(contents)
    steps = rounds(_prompt_text(contents[asking]), DIRECTIVE)
    done = sum(1 for content in contents[asking + 1 :] if calls_of(content))
    return steps[done] if done < len(steps) else []


def _forced(request: dict[str, Any], contents: list[dict[str, Any]]) -> list[Call]:
    mode, allowed = _mode(request)
    last = contents[-1]
    if mode != "ANY" or get(last, "role") == "model" or responses_of(last):
        return []
    if DIRECTIVE.search(_prompt_text(last)):
        return []  # a script that is done answers text
    usable = [d for d in _declared(request) if isinstance(d.get("name"), str)]
    named = [d for d in usable if d["name"] in allowed]
    if not usable:
        return []
    declaration = (named or usable)[0]
    schema = get(declaration, "parameters") or get(declaration, "parametersJsonSchema")
    return [(declaration["name"], placeholders(schema))]


def _text(contents: list[dict[str, Any]]) -> str:
    responses = responses_of(contents[-1])
    if responses:
        quoted = [json.dumps(get(r, "response"), ensure_ascii=False)[:200] for r in responses]
        return "The tool returned: " + " | ".join(quoted)
    prompt = contents[current_turn(contents)]
    texts = [get(part, "text") for part in parts_of(prompt)]
    last = next((t for t in reversed(texts) if isinstance(t, str) and t), "")
    return f"Emulated gemini answer to: {last[:80]}"


def response_json(
    reply: Reply, parts: list[dict[str, Any]], *, last: bool = True
) -> dict[str, Any]:
    """A ``GenerateContentResponse`` holding `parts` (a whole answer, or one stream chunk)."""
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}}
    if last:
        candidate["finishReason"] = "STOP"
    candidate["index"] = 0
    body: dict[str, Any] = {"candidates": [candidate]}
    if last:
        body["usageMetadata"] = reply.usage()
    body["modelVersion"] = reply.model
    if reply.endpoint == VERTEX:
        body["createTime"] = CREATE_TIME
    body["responseId"] = reply.digest[:22]
    return _wrapped(reply, body)


def _wrapped(reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
    if reply.endpoint != CODE_ASSIST:
        return body
    return {"response": body, "traceId": reply.digest[:16]}


def reply_body(reply: Reply) -> bytes:
    return orjson.dumps(response_json(reply, reply.parts))


def stream_chunks(reply: Reply, chunks: int | None) -> list[dict[str, Any]]:
    """The chunks of the streamed answer: text deltas or whole calls, the last one final."""
    pieces: list[dict[str, Any]] = []
    for part in reply.parts:
        if "text" in part:
            words = [w for w in split(part["text"], chunks) if w] or [""]
            pieces += [part | {"text": word} for word in words]
        else:
            pieces.append(part)
    return [
        response_json(reply, [piece], last=k == len(pieces) - 1) for k, piece in enumerate(pieces)
    ]


def stream_frames(chunks: list[dict[str, Any]], sse: bool, error: int | None) -> list[bytes]:
    """`chunks` as ``data:`` events (``alt=sse``) or as one JSON array written piece by piece;
    with `error`, the stream ends after its first chunk with that status's error object."""
    if error is not None:
        chunks = [*chunks[:1], stream_error(error)]
    if sse:
        return [b"data: " + orjson.dumps(chunk) + b"\r\n\r\n" for chunk in chunks]
    frames = [(b"[" if k == 0 else b"\n,\r\n") + orjson.dumps(c) for k, c in enumerate(chunks)]
    return [*frames, b"\n]"]
