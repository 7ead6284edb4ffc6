"""Repair on reject with the refusing provider's dialect (issue 22 item 3).

A refusal whose text belongs to a provider with a preset (Mistral's ``Unexpected role 'user'
after role 'tool'``, Kimi's empty system message, DashScope's content type, xAI's content and
``tool_choice`` texts, vLLM's unparseable arguments…) says which upstream is behind the
configured one, whatever preset the proxy was given (often the plain ``openai``). Once the rule
the text names has a hit at the place it names and has repaired it with that provider's
dialect (:func:`proxy.core.retry.plan_retry` does that first, as for any row), the provider's
whole preset finishes the body: upstreams name only their first offence, and a body with two
(OpenAI SDK clients replay ``content: null`` on every tool-call turn, which xAI refuses next
to anything else) would be refused again after a one-rule repair, with no retry left. The
preset is what the provider's own policy would have sent up front. Bounds kept: still one
retry, still only after the named rule's confirmed repair; rules the user pinned ``off`` or
``reject`` stay off; a preset rule that would reject leaves the plan to the named rule alone.
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from proxy.core.errortext import Match
from proxy.core.forward import forwarded_body
from proxy.core.policy import DIALECTS, Policy, Setting, build_policy, sanitize
from proxy.core.rule import Finding
from proxy.core.wire import Wire
from proxy.errors import MalformedHistory

#: User overrides to these keep a rule out of the dialect's run too.
_REFUSED = frozenset({"off", "reject"})


def with_dialect(
    wire: Wire,
    body: dict[str, Any],
    found: Match,
    policy: Policy,
    findings: tuple[Finding, ...],
) -> tuple[dict[str, Any], tuple[Finding, ...]]:
    """``body`` (the named rule's repair) finished by the refusing provider's preset, and the
    findings with the preset's added (their paths name the body after the named repair); as
    given when the text belongs to no provider with a preset, or the preset would reject."""
    preset = dialect_of(found)
    if preset is None:
        return body, findings
    try:
        history = wire.history(body)
    except MalformedHistory:
        return body, findings
    outcome = sanitize(history, _policy(preset, policy), wire.name)
    if outcome.rejected or not outcome.changed:
        return body, findings
    return forwarded_body(wire, body, outcome), findings + outcome.findings


def dialect_of(found: Match) -> str | None:
    """The preset of the provider the refusal's text belongs to, or None (a row whose preset
    only lends one rule its parameters, such as Groq's ``Tools should have a name``)."""
    signature = found.signature
    preset = signature.preset
    return preset if preset is not None and preset == signature.provider else None


def _policy(preset: str, policy: Policy) -> Policy:
    """``preset``'s policy, without the rules the user pinned ``off`` or ``reject``."""
    settings = dict(_preset(preset).settings)
    user: Mapping[str, Setting] = policy.settings
    pinned = frozenset(getattr(policy, "pinned", ()))
    for name in pinned:
        if name in settings and name in user and user[name].action in _REFUSED:
            settings[name] = Setting("off", settings[name].params)
    return Policy(f"{preset}+retry", preset, settings, pinned)


@lru_cache(maxsize=len(DIALECTS))
def _preset(preset: str) -> Policy:
    return build_policy(preset)
