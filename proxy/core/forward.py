"""The one forwarded body: what a request becomes once an outcome repaired it. Pure.

The proxy (:mod:`proxy.api.guard`), the retry (:mod:`proxy.core.retry`, through
:func:`proxy.core.engine.outcome_of`), ``toolcall-guard check --fix`` and so the repair log's
record and its diff all build the forwarded body here, so that what ``check`` prints is what
the proxy sends (issue 32). The history sits where the wire API's row says
(:meth:`~proxy.core.wire.Wire.location`: ``("messages",)``, ``("input",)``, or nested, as
Gemini Code Assist's ``("request", "contents")``); the request-level fields a repair replaced
(``outcome.fields``) or removed (``outcome.removed``) belong to the object holding that list.
Only a changed outcome comes here: a clean one forwards the bytes the client sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from proxy.core.engine import Outcome
    from proxy.core.wire import Wire


def forwarded_body(wire: Wire, body: Mapping[str, Any], outcome: Outcome) -> dict[str, Any]:
    """``body`` as forwarded once ``outcome`` repaired it: its history replaced by the
    outcome's items, its request-level fields replaced, added or removed. Copies only the
    dicts on the way to the history; never mutates ``body``."""
    return _rebuilt(body, wire.location(body), outcome)


def _rebuilt(
    holder: Mapping[str, Any], location: tuple[str, ...], outcome: Outcome
) -> dict[str, Any]:
    key, rest = location[0], location[1:]
    if rest:
        return {**holder, key: _rebuilt(holder[key], rest, outcome)}
    removed = outcome.removed
    kept = {k: v for k, v in holder.items() if k not in removed} if removed else holder
    items = outcome.messages
    if not items and type(holder.get(key)) is not list:  # a string or absent ``input``: no items
        return {**kept, **outcome.fields}
    return {**kept, **outcome.fields, key: items}


def found_at(body: Any, location: tuple[str, ...]) -> Any:
    """The value at ``location`` in ``body``, or None when a step is missing."""
    for key in location:
        body = body.get(key) if type(body) is dict else None
    return body


def placed(body: Mapping[str, Any], location: tuple[str, ...], value: Any) -> dict[str, Any]:
    """``body`` with ``value`` at ``location`` (the dicts on the way copied)."""
    key, rest = location[0], location[1:]
    return {**body, key: placed(body[key], rest, value) if rest else value}
