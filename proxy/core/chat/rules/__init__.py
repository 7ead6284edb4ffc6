"""The rule registry. ``PIPELINE`` is the order the engine runs the rules in.

Order matters: roles are normalised first, then the shape of calls and contents, then calls are
paired with their results, then turn order, and provider-specific finishing touches last, so that
no repair creates a violation an earlier rule would have caught (sanitizing is idempotent).
"""

from __future__ import annotations

from proxy.core.chat.rules import (
    arguments,
    calls,
    content,
    fields,
    ids,
    pairing,
    provider,
    request,
    roles,
    sequence,
    shape,
)
from proxy.core.rule import Rule

PIPELINE: tuple[Rule, ...] = (
    *roles.RULES,
    *calls.RULES,
    *arguments.RULES,
    *shape.RULES,
    *pairing.RULES,
    *sequence.RULES,
    *ids.RULES,
    *provider.RULES,
    *content.RULES,
    *fields.RULES,
    *request.RULES,
)
RULES: dict[str, Rule] = {r.name: r for r in PIPELINE}
