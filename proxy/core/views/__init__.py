"""What the viewer shows of a history's items, per wire API: each row's ``view`` turns one item
into an :data:`ItemView` (its kind, the kinds of its blocks or parts, the call ids it makes or
answers, the functions it calls, its text), sent with each record so that the viewer labels,
aligns and previews items without knowing any API (:attr:`proxy.core.wire.Wire.view`). Pure;
every value read defensively: a record holds what a client sent."""

from __future__ import annotations

from typing import Any, TypedDict


class ItemView(TypedDict):
    """One item as the viewer draws it."""

    kind: str  # "user", "assistant", "function_call", "model"…
    tags: list[str]  # the kinds of its blocks or parts, shown beside the kind (may be empty)
    ids: list[str]  # the call ids it makes or answers
    names: list[str]  # the functions it calls
    text: str  # the text it carries


def text(value: Any) -> str:
    """A string as it is, anything else as ``""``."""
    return value if type(value) is str else ""


def dicts(value: Any) -> list[dict[str, Any]]:
    """The objects of a list (``[]`` for anything else)."""
    return [v for v in value if type(v) is dict] if type(value) is list else []


def unique(values: list[str]) -> list[str]:
    """The non-empty strings of ``values``, each once, in order."""
    return list(dict.fromkeys(v for v in values if v))


def view_of(
    kind: str,
    *,
    tags: list[str] | None = None,
    ids: list[str] | None = None,
    names: list[str] | None = None,
    body: str = "",
) -> ItemView:
    return {
        "kind": kind or "?",
        "tags": tags or [],
        "ids": unique(ids or []),
        "names": names or [],
        "text": body,
    }
