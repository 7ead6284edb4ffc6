"""The one entry point the API layer calls for ``POST …/v1/messages``."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from proxy.core.messages.items import Messages
from proxy.core.policy import Outcome, Policy, sanitize


def sanitize_messages(body: Mapping[str, Any], items: list[Any], policy: Policy) -> Outcome:
    """Check and repair a Messages request's ``messages`` (``items``, from
    :func:`~proxy.core.messages.items.messages_of`) under ``policy``. Pure.

    A clean request comes back with the very same list and ``changed = False``. When
    ``changed``, forward ``outcome.forwarded(body, "messages")``: besides the messages a
    repair may have replaced top-level fields (``outcome.fields``: ``system`` when a system
    message moved there, ``thinking`` when it had to be disabled, ``tools``).
    """
    return sanitize(Messages(items, request=MappingProxyType(dict(body))), policy, "messages")
