"""Upstream error bodies unwrapped into sentences, and signatures matched against them. Pure.

What a catalogue row is (:class:`Signature`) and how a row is found in an answer (:func:`find`)
live here; the rows themselves are data, in :mod:`proxy.core.signatures`.

Providers and relays wrap the sentence that says what is wrong in different envelopes:

- OpenAI and most: ``{"error": {"message": "...", "param": "messages.[3].role", ...}}``; the
  ``param`` often names the place the message does not (provider-rules.md O1, O2).
- Gemini: a list, ``[{"error": {"code": 400, "message": "...", "status": "INVALID_ARGUMENT"}}]``
  (provider-rules.md §3).
- OpenRouter: ``{"error": {"message": "Provider returned error", "metadata": {"raw": "..."}}}``,
  the host's own body as a string in ``metadata.raw`` (provider-rules.md §4, OmniRoute#3044).
- Mistral: a 422 whose ``detail`` is a pydantic error list with a machine-readable ``loc``
  (providers-second-tier.md B1), sometimes under ``message``; each entry becomes one line
  ``extra_forbidden at messages[6].tool_calls[0].name: Extra inputs are not permitted``.
- DashScope: OpenAI's sentences behind ``<400> InternalError.Algo.InvalidParameter:``
  (provider-rules.md §4, Qwen rows).
- Ollama and others: ``{"error": "..."}``, or plain text.
- Messages relays: claude-code-hub's ``upstream_error`` (ding113/claude-code-hub#518) holds the
  upstream's own body (read first); Vertex puts Anthropic's whole body, as a string, in
  ``error.message`` (anthropic-messages.md §2, Antigravity-Manager#654).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

#: How much of an error body is read; the known texts come first in every body seen.
SCAN_CHARS = 65_536
#: How deep envelopes are opened (each relay's ``metadata.raw`` costs two or three levels).
MAX_DEPTH = 32

_DASHSCOPE = re.compile(r"^\s*<\d{3}>\s*[\w.]+:\s*")
_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


@dataclass(frozen=True, slots=True)
class Candidate:
    """One sentence of an error body, and the ``param`` its envelope named beside it."""

    text: str
    param: str | None = None


def candidates(body: bytes | str) -> list[Candidate]:
    """The sentences of an upstream error body, innermost envelopes first, the raw text last.

    Never raises: an undecodable or non-JSON body is its own single candidate.
    """
    if isinstance(body, bytes):
        text = body[:SCAN_CHARS].decode("utf-8", "replace")
    else:
        text = body[:SCAN_CHARS]
    found = list(_walk_text(text, 0))
    raw = Candidate(_undress(text))
    return [*found, raw] if raw.text and raw not in found else found


def _walk_text(text: str, depth: int) -> Iterator[Candidate]:
    stripped = text.strip()
    if depth < MAX_DEPTH and stripped[:1] in ("{", "["):
        try:
            value = json.loads(stripped)
        except (ValueError, RecursionError):  # not JSON, or nested beyond the parser's stack
            value = None
        if isinstance(value, dict | list):
            yield from _walk(value, None, depth + 1)
            return
    if stripped:
        yield Candidate(_undress(stripped))


def _walk(value: Any, param: str | None, depth: int) -> Iterator[Candidate]:
    """Sentences of one decoded envelope (a dict, a list, a string)."""
    if depth > MAX_DEPTH:
        return
    if isinstance(value, str):
        for found in _walk_text(value, depth):
            yield Candidate(found.text, found.param or param)
    elif isinstance(value, list):
        for item in value[:20]:  # Gemini's list, Mistral's detail list
            if isinstance(item, dict) and isinstance(item.get("loc"), list):
                yield Candidate(_detail_line(item), loc_path(item["loc"]))
            else:
                yield from _walk(item, param, depth + 1)
    elif isinstance(value, dict):
        yield from _walk_dict(value, param, depth)


def _walk_dict(value: dict[str, Any], param: str | None, depth: int) -> Iterator[Candidate]:
    own = value.get("param")
    param = own if isinstance(own, str) and own else param
    metadata = value.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("raw"), str):
        yield from _walk(metadata["raw"], param, depth + 1)  # the host's error comes first
    for key in ("upstream_error", "error", "detail", "message", "msg"):
        if key in value:
            yield from _walk(value[key], param, depth + 1)


def _detail_line(entry: dict[str, Any]) -> str:
    """A pydantic/FastAPI error entry (Mistral's 422) as one line: ``type at path: msg``."""
    kind = entry.get("type")
    msg = entry.get("msg")
    return f"{kind} at {loc_path(entry['loc'])}: {msg}"


def loc_path(loc: list[Any]) -> str:
    """``["body","messages",6,"assistant","tool_calls",0,"name"]`` → ``messages[6].tool_calls[0]
    .name``: ``body`` dropped, indexes bracketed, the role tag of a tagged union skipped."""
    parts: list[str] = []
    previous: Any = None
    for i, step in enumerate(loc):
        if i == 0 and step == "body":
            continue
        if isinstance(step, int):
            parts.append(f"[{step}]")
        elif isinstance(previous, int) and step in _ROLES:
            pass  # pydantic names the union member it tried: not a key of the message
        else:
            parts.append(f".{step}" if parts else str(step))
        previous = step
    return "".join(parts)


def _undress(text: str) -> str:
    """The sentence without DashScope's ``<400> InternalError.Algo.InvalidParameter:`` prefix."""
    return _DASHSCOPE.sub("", text, count=1).strip()


_DOTTED = re.compile(r"\.\[?(\d+)\]?(?=\.|$|\[)")
_INDEX = re.compile(r"^(?:messages|input)\[(\d+)\]")


def normal_path(path: str) -> str:
    """A path as providers spell it (``messages.[3].role``, ``messages.2``, ``tools.8.type``)
    in one form: ``messages[3].role``, ``messages[2]``, ``tools[8].type``."""
    return _DOTTED.sub(r"[\1]", path.strip().strip("'\""))


def item_index(path: str | None) -> int | None:
    """The message or input item a normal path points into (``messages[6]…`` → 6)."""
    if not path:
        return None
    found = _INDEX.match(path)
    return int(found.group(1)) if found else None


#: Request-level keys a field refusal may strip only while empty, and never learn (stripping a
#: non-empty ``tools`` would change what the model can do; an empty one says nothing).
PROTECTED = frozenset({"model", "messages", "input", "tools", "stream", "tool_choice"})


@dataclass(frozen=True, slots=True)
class Signature:
    """One known refusal: where it comes from, how to spot it, what repairs it.

    ``rule`` is a registered rule name (``proxy.core.registry.ALL_RULES``), or None for a text
    we know but no rule repairs (still counted as known, never retried). ``strip``: a field
    refusal (the place is a field the upstream does not accept: strip it there); ``learn``: the
    refusal holds for every request to that upstream and model, so the field pattern is worth
    remembering. ``preset`` names the provider preset whose rule parameters (dialect) fit this
    upstream; ``params`` override rule parameters; ``action`` replaces the rule's default repair.
    """

    id: str
    provider: str
    api: str  # "chat", "responses" or "any" (field refusals name their own list)
    statuses: tuple[int, ...]
    pattern: re.Pattern[str]
    rule: str | None
    evidence: tuple[str, ...] = ()
    strip: bool = False
    learn: bool = False
    preset: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    action: str | None = None
    place: str | None = None  # the field path meant when the text names none (D7)


@dataclass(frozen=True, slots=True)
class Match:
    """A signature found in an upstream answer, and the place its text names."""

    signature: Signature
    text: str  # the sentence that matched (unwrapped)
    index: int | None = None  # the message / input item named, in the body as sent
    field: str | None = None  # the normal path named: ``messages[1].tool_calls[0].index``

    @property
    def rule(self) -> str | None:
        return self.signature.rule


def sig(
    id: str,
    provider: str,
    rule: str | None,
    pattern: str,
    *,
    api: str = "chat",
    statuses: tuple[int, ...] = (400, 422),
    **extra: Any,
) -> Signature:
    """A catalogue row (the short spelling :mod:`proxy.core.signatures` uses)."""
    evidence = tuple(extra.pop("evidence", ()))
    compiled = re.compile(pattern, re.IGNORECASE)
    return Signature(id, provider, api, statuses, compiled, rule, evidence, **extra)


def find(
    rows: tuple[Signature, ...], status: int, body: bytes | str, api: str | None = None
) -> Match | None:
    """The first of ``rows`` found in an upstream answer (``api`` restricts the rows to one
    wire API's plus the API-neutral ones); None when no row matches."""
    found = candidates(body)
    for signature in rows:
        if status not in signature.statuses:
            continue
        if api is not None and signature.api not in (api, "any"):
            continue
        for candidate in found:
            hit = signature.pattern.search(candidate.text)
            placed = _placed(signature, hit, candidate) if hit is not None else None
            if placed is not None:
                return placed
    return None


def _placed(signature: Signature, hit: re.Match[str], candidate: Candidate) -> Match | None:
    groups = hit.groupdict()
    raw, name = groups.get("path"), groups.get("name")
    if signature.strip and not _plain_place(raw, name):
        return None
    path = normal_path(raw) if raw else None
    if name:
        path = f"{path}.{name}" if path else name
    param = normal_path(candidate.param) if candidate.param else None
    if signature.strip and not _agrees(path, param, raw, name):
        return None
    if path is None and param:
        path = param
    path = path or signature.place
    index = int(groups["index"]) if groups.get("index") else item_index(path)
    return Match(signature, candidate.text, index, path)


#: A place a field refusal may name: keys of ASCII word characters and item indexes, nothing
#: else (no spaces, quotes or punctuation a path never holds but an echoed value may).
_PLAIN_PATH = re.compile(r"[A-Za-z_]\w*(?:\.?\[\d+\]|\.\d+|\.[A-Za-z_]\w*)*", re.ASCII)
_PLAIN_KEY = re.compile(r"[A-Za-z_]\w*", re.ASCII)


def _agrees(path: str | None, param: str | None, raw: str | None, name: str | None) -> bool:
    """Whether the place a sentence names agrees with the envelope's own field (``param``, a
    pydantic ``loc``): a place named only inside a sentence may be a client's echoed value."""
    if path is None or param is None or param == path:
        return True
    return bool(name) and param == normal_path(raw or "")  # the object, the key in the text


def _plain_place(raw: str | None, name: str | None) -> bool:
    """Whether the place a field refusal names is a plain path (or none at all)."""
    if raw is not None and _PLAIN_PATH.fullmatch(raw) is None:
        return False
    return name is None or _PLAIN_KEY.fullmatch(name) is not None
