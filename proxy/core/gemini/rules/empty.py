"""Empty parts and empty contents (N11): what a stream's empty tail or a converter's ``{}``
leaves in a history."""

from __future__ import annotations

from collections.abc import Sequence

from proxy.core.gemini import index as fast
from proxy.core.gemini.index import index_of
from proxy.core.gemini.items import Contents
from proxy.core.gemini.parts import (
    DATA_FIELDS,
    METADATA_FIELDS,
    Item,
    Part,
    parts_of,
    signature_of,
    signed,
)
from proxy.core.gemini.rules.common import facts, rule, with_parts
from proxy.core.gemini.spelling import get, snake, spelled
from proxy.core.rule import Hit, Params

#: Every key a part may hold, in both spellings: a part with another key is left alone (it may
#: be a data field newer than this list).
_KNOWN = frozenset(
    name for camel in (*DATA_FIELDS, *METADATA_FIELDS) for name in (camel, snake(camel))
)


def empty_kind(part: Part) -> str | None:
    """Why the part says nothing (``no data field``, ``empty text``), or None when it holds
    data or a key this module does not know."""
    if not set(part) <= _KNOWN:
        return None
    data = [camel for camel in DATA_FIELDS if get(part, camel) is not None]
    if data == ["text"] and get(part, "text") == "":
        return None if signed(part) else "empty text"
    return None if data else "no data field"


@rule(
    hint="Leave out parts without data (empty text, a lone thoughtSignature) and contents "
    "without parts; keep a signature on the part it belongs to.",
)
def gemini_empty_part(history: Contents, params: Params) -> list[Hit]:
    """A part with no data field or an empty text, or a content with no parts.

    The upstream answers ``* GenerateContentRequest.contents[1].parts: contents.parts must
    not be empty.``, ``* GenerateContentRequest.contents[33].parts[0].data: required oneof
    field 'data' must have one initialized field`` and ``Unable to submit request because it
    has an empty text parameter.`` (gemini-native.md N11; egoist/chatwise-releases#250,
    QuantumNous/new-api#1060, boldsoftware/sketch#68, CLIProxyAPI#1292,
    glowingjade/obsidian-smart-composer#218; G11). A stream's last chunk is often
    ``{"text": ""}`` carrying a signature (§1.2): gemini-cli keeps that part
    (``isValidContentPart``) and it is left alone. The ``drop`` repair
    drops such parts, then contents left without parts (their neighbours are then judged
    by the turn rules); a dropped part's signature moves onto the next data part of its model
    content when that part has none, else it goes (prior turns tolerate it). No placeholder
    text is written.
    """
    if not facts(params).non_empty_parts:
        return []
    hits = []
    places = index_of(history).unusual if fast.FAST else range(len(history))
    for i in places:  # an ordinary part has data (the index's proof)
        parts = parts_of(history.messages[i])
        if not parts:
            hits.append(Hit(i, ".parts", "content without parts", -1))
        for j, part in enumerate(parts):
            kind = empty_kind(part)
            if kind is not None:
                hits.append(Hit(i, f".parts[{j}]", f"part with {kind}", j))
    return hits


@gemini_empty_part.repair("drop")
def _drop(history: Contents, hits: Sequence[Hit], params: Params) -> Contents:
    empties: dict[int, set[int]] = {}
    for hit in hits:
        empties.setdefault(hit.index, set()).add(hit.data)
    drop: set[int] = set()
    changes: dict[int, Item] = {}
    for i, gone in empties.items():
        content = history.messages[i]
        parts = _kept(parts_of(content), gone, history.roles[i] == "model")
        if parts:
            changes[i] = with_parts(content, parts)
        else:
            drop.add(i)
    return history.replace(changes).without(drop)


def _kept(parts: list[Part], gone: set[int], model: bool) -> list[Part]:
    """The parts not in ``gone``; a gone part's signature moved onto the next kept part when
    that one has none (model contents only)."""
    kept = {j: p for j, p in enumerate(parts) if j not in gone}
    for j in sorted(gone - {-1}):
        signature = signature_of(parts[j])
        nxt = next((k for k in kept if k > j), None)
        if model and signed(parts[j]) and nxt is not None:
            target = kept[nxt]
            if not signed(target):
                kept[nxt] = {**target, spelled(target, "thoughtSignature"): signature}
    return [kept[k] for k in sorted(kept)]
