"""Wire APIs whose request body carries a history, as units the endpoint dispatches to.

A unit says which path it serves (after ``/v1``), where its item list lives in the body, how
the list is checked for the structure every request needs (400 otherwise, whatever the policy)
and how the policy's rules of its API run over it. Everything else under ``/v1/`` is relayed
untouched. Adding a wire API = its core package (``proxy/core/<api>/``: items and rules) plus
one :class:`WireApi` row in :data:`UNITS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from proxy.api import limits
from proxy.core.chat.messages import messages_of
from proxy.core.policy import Outcome, Policy, apply_policy, sanitize
from proxy.core.responses.items import Items, items_of
from proxy.errors import BadRequestBody
from proxy.settings import ServerSettings

Sanitize = Callable[[dict[str, Any], list[Any], Policy], Outcome]


@dataclass(frozen=True, slots=True)
class WireApi:
    """One API whose body carries a history."""

    name: str  # the rules' ``api``, the ``route`` of log lines and metrics
    path: str  # what follows ``/v1`` (or ``/{upstream}/v1``)
    items_key: str  # the body's key holding the history
    #: The item list after the structural checks (raises ``MalformedHistory``: always a 400).
    items_of: Callable[[Any], list[Any]]
    #: The policy's rules of this API over the items (``body`` read-only, for model etc.).
    sanitize: Sanitize
    #: Limits beyond the item count (413 through ``BadRequestBody``).
    check_sizes: Callable[[list[Any], int, ServerSettings], None]

    def forwarded(self, body: dict[str, Any], items: list[Any]) -> dict[str, Any]:
        """The body to forward once its items were repaired."""
        return {**body, self.items_key: items}


def _sanitize_chat(body: dict[str, Any], items: list[Any], policy: Policy) -> Outcome:
    return apply_policy(items, policy, request=MappingProxyType(body))


def _sanitize_responses(body: dict[str, Any], items: list[Any], policy: Policy) -> Outcome:
    return sanitize(Items(items, request=MappingProxyType(body)), policy, "responses")


def count_only(items: list[Any], body_size: int, server: ServerSettings) -> None:
    """413 for more items than the proxy accepts (``server.max_messages``)."""
    if len(items) > server.max_messages:
        raise BadRequestBody(
            f"The history has {len(items)} items; this proxy accepts at most "
            f"{server.max_messages} (server.max_messages).",
            status=413,
        )


CHAT = WireApi(
    name="chat",
    path="/chat/completions",
    items_key="messages",
    items_of=messages_of,
    sanitize=_sanitize_chat,
    check_sizes=limits.check_sizes,
)

RESPONSES = WireApi(
    name="responses",
    path="/responses",
    items_key="input",
    items_of=items_of,
    sanitize=_sanitize_responses,
    check_sizes=count_only,
)

#: The units by the path they serve.
UNITS: dict[str, WireApi] = {unit.path: unit for unit in (CHAT, RESPONSES)}
