"""The one entry point the API layer calls for ``POST …/responses``."""

from __future__ import annotations

from typing import Any

from proxy.core.policy import Outcome, Policy, sanitize
from proxy.core.responses.items import Items


def sanitize_responses(body: dict[str, Any], policy: Policy) -> Outcome:
    """Check and repair a Responses request's ``input`` items under ``policy``. Pure.

    Raises :class:`~proxy.core.chat.messages.MalformedHistory` (always a 400) for a body no
    policy can work on. ``Outcome.messages`` are the items to forward: the caller builds
    ``{**body, "input": outcome.messages}`` when ``outcome.changed``. A clean request comes
    back with the very same ``input`` list and ``changed = False``; a string ``input`` has no
    items (``messages == []``, never ``changed``), though request-level rules
    (``responses_state_conflict``) still run on it.
    """
    return sanitize(Items.of(body), policy, "responses")
