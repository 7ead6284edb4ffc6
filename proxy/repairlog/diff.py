"""A readable diff of the history (messages, input items) as received and as forwarded.

The wire API's row (:mod:`proxy.core.wire`) says where the history is and what an item is
(its role or type). Messages are aligned like the sanitizer changes them: identical messages
(canonical JSON) anchor the alignment; between anchors, messages of the same role pair up as
``changed`` (a rewritten message keeps its role) and the rest are ``removed`` (dropped, moved,
or turned into another role) or ``added`` (synthesized). Each received message also lists the
rules whose findings point into it. A unified text diff of the pretty-printed arrays comes
along for reading or pasting.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import orjson

from proxy.core.wire import Wire, wire_of_record

#: Above this many lines per side the unified diff is left out (difflib is quadratic at worst).
MAX_UNIFIED_LINES = 20_000
#: At most this many changed key paths are listed per message.
MAX_KEYS = 20

_MISSING = object()
Kind = Callable[[Any], str | None]


def record_diff(
    received: Any,
    forwarded: Any,
    findings: Sequence[dict[str, Any]] = (),
    path: str | None = None,
) -> dict[str, Any] | None:
    """``{"messages": [entry…], "unified": str | None}``, or None when nothing was
    forwarded. ``path`` is the record's request path: it names the wire API.

    An entry: ``{"op": unchanged|changed|removed|added, "received": i | None, "forwarded":
    j | None, "role" (the row's label of the item), "keys": [changed key paths], "rules":
    [rules with findings there]}``.
    """
    if forwarded is None:
        return None
    wire = wire_of_record(path, received)
    before, after = wire.items(received), wire.items(forwarded)
    rules = _rules_by_index(wire, findings)
    steps = align(before, after, wire.kind)
    entries = [_entry(step, before, after, rules, wire.kind) for step in steps]
    return {"messages": entries, "unified": unified(before, after)}


def align(
    before: list[Any], after: list[Any], kind: Kind | None = None
) -> Iterator[tuple[str, int | None, int | None]]:
    """(op, received index, forwarded index) for every message of either side, in order;
    ``kind`` labels an item (default: its role, else its type)."""
    a, b = [_canonical(m) for m in before], [_canonical(m) for m in after]
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            yield from (("unchanged", i1 + k, j1 + k) for k in range(i2 - i1))
        else:
            pair = _pair_by_kind(before, after, range(i1, i2), range(j1, j2), kind or _role)
            yield from pair


def unified(before: list[Any], after: list[Any]) -> str | None:
    """A unified diff of the two arrays pretty-printed; None when too large to be useful."""
    a = orjson.dumps(before, option=orjson.OPT_INDENT_2).decode().splitlines()
    b = orjson.dumps(after, option=orjson.OPT_INDENT_2).decode().splitlines()
    if max(len(a), len(b)) > MAX_UNIFIED_LINES:
        return None
    return "\n".join(difflib.unified_diff(a, b, "received", "forwarded", lineterm=""))


def _pair_by_kind(
    before: list[Any], after: list[Any], left: range, right: range, kind: Kind
) -> Iterator[tuple[str, int | None, int | None]]:
    roles_a = [kind(before[i]) or "" for i in left]
    roles_b = [kind(after[j]) or "" for j in right]
    matcher = difflib.SequenceMatcher(None, roles_a, roles_b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            yield from (("changed", left[i1 + k], right[j1 + k]) for k in range(i2 - i1))
            continue
        yield from (("removed", left[i], None) for i in range(i1, i2))
        yield from (("added", None, right[j]) for j in range(j1, j2))


def _entry(
    step: tuple[str, int | None, int | None],
    before: list[Any],
    after: list[Any],
    rules: dict[int, list[str]],
    kind: Kind,
) -> dict[str, Any]:
    op, i, j = step
    old = None if i is None else before[i]
    new = None if j is None else after[j]
    return {
        "op": op,
        "received": i,
        "forwarded": j,
        "role": kind(old if i is not None else new),
        "keys": changed_paths(old, new)[:MAX_KEYS] if op == "changed" else [],
        "rules": [] if i is None else rules.get(i, []),
    }


def changed_paths(old: Any, new: Any, prefix: str = "") -> list[str]:
    """Paths of the values that differ, e.g. ``["content", "tool_calls[0].id"]``."""
    if isinstance(old, dict) and isinstance(new, dict):
        paths: list[str] = []
        for key in dict.fromkeys([*old, *new]):
            if old.get(key, _MISSING) != new.get(key, _MISSING):
                sub = f"{prefix}.{key}" if prefix else str(key)
                paths += changed_paths(old.get(key, _MISSING), new.get(key, _MISSING), sub)
        return paths
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [
            path
            for k, (x, y) in enumerate(zip(old, new, strict=True))
            if x != y
            for path in changed_paths(x, y, f"{prefix}[{k}]")
        ]
    return [prefix or "."]


def _canonical(message: Any) -> bytes:
    return orjson.dumps(message, option=orjson.OPT_SORT_KEYS)


def _role(message: Any) -> str | None:
    """A chat message's role; a Responses item's role, else its type (``function_call``…)."""
    if not isinstance(message, dict):
        return None
    role = message.get("role")
    if not isinstance(role, str):
        role = message.get("type")
    return role if isinstance(role, str) else None


def _rules_by_index(wire: Wire, findings: Sequence[dict[str, Any]]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for finding in findings:
        index = wire.item_index(str(finding.get("path", "")))
        if index is not None:
            rules = out.setdefault(index, [])
            if finding.get("rule") not in rules:
                rules.append(str(finding.get("rule")))
    return out
