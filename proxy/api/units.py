"""Wire APIs whose request body carries a history, as units the endpoint dispatches to.

A unit is the I/O side of a :class:`~proxy.core.wire.Wire` row (the pure side: history key,
structural check, labels, error shape, key header, body detection): the limits beyond the item
count, and which base URL of an upstream serves the API (``base_url``, ``anthropic_base_url``).
A ``POST`` to a unit's path is checked; with :attr:`Wire.subpaths`, its sub-paths
(``/messages/count_tokens``) are routed and keyed the same way and relayed unchecked. Everything
else under ``/v1/`` is relayed untouched to ``base_url``. Adding a wire API = its core package
(``proxy/core/<api>/``: items and rules), its :class:`Wire` row and one :class:`WireApi` row in
:data:`UNITS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from proxy.api import limits
from proxy.core import wire as rows
from proxy.core.rule import Items
from proxy.core.wire import Wire
from proxy.errors import BadRequestBody
from proxy.settings import ServerSettings


@dataclass(frozen=True, slots=True)
class WireApi:
    """One API whose body carries a history: its row, and what the I/O side adds."""

    wire: Wire
    #: Limits beyond the item count (413 through ``BadRequestBody``).
    check_sizes: Callable[[Any, int, ServerSettings], None]  # (the history, the body's size, …)
    #: The upstream setting holding the base URL that serves this API.
    base_key: str = "base_url"

    @property
    def name(self) -> str:
        return self.wire.name

    @property
    def path(self) -> str:
        return self.wire.path


def count_only(history: Items, body_size: int, server: ServerSettings) -> None:
    """413 for more items than the proxy accepts (``server.max_messages``)."""
    items = history.messages
    if len(items) > server.max_messages:
        raise BadRequestBody(
            f"The history has {len(items)} items; this proxy accepts at most "
            f"{server.max_messages} (server.max_messages).",
            status=413,
        )


CHAT = WireApi(rows.CHAT, limits.check_sizes)
RESPONSES = WireApi(rows.RESPONSES, count_only)
MESSAGES = WireApi(rows.MESSAGES, count_only, base_key="anthropic_base_url")
GEMINI = WireApi(rows.GEMINI, count_only, base_key="gemini_base_url")

#: The units by the path they serve.
UNITS: dict[str, WireApi] = {unit.path: unit for unit in (CHAT, RESPONSES, MESSAGES, GEMINI)}


def unit_for(units: dict[str, WireApi], rest: str) -> WireApi | None:
    """The unit serving ``rest`` (the path after ``/v1``): its path, or a sub-path of a unit
    whose row routes them (``/messages/count_tokens``)."""
    unit = units.get(rest)
    if unit is not None and unit.wire.split is None:
        return unit
    for unit in units.values():
        if unit.wire.subpaths and unit.wire.split is None and rest.startswith(unit.path + "/"):
            return unit
    return None


def native_unit(units: dict[str, WireApi], wire: Wire) -> WireApi | None:
    """The unit of a row whose paths carry their own version (it serves every such path)."""
    return next((unit for unit in units.values() if unit.wire is wire), None)
