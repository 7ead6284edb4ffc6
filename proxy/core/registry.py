"""Every wire API's rules in one place: the policy builder and the docs read them from here.

A wire API (chat completions, Responses, …) contributes a ``PIPELINE`` (its rules in the order
the engine runs them) and, beyond the chat family's rows in :mod:`proxy.core.signatures`, the
catalogue rows of its providers' error texts (:data:`CATALOGUES`). Rule names are unique
across APIs: a policy, a record or a metric names
a rule without saying which API it belongs to.
"""

from __future__ import annotations

from proxy.core.chat import rules as chat
from proxy.core.errortext import Signature
from proxy.core.gemini import rules as gemini
from proxy.core.gemini.signatures import GEMINI
from proxy.core.messages import rules as messages
from proxy.core.messages.signatures import MESSAGES
from proxy.core.responses import rules as responses
from proxy.core.rule import Rule

#: The rules of each wire API, keyed by the API's name (``Rule.api``).
PIPELINES: dict[str, tuple[Rule, ...]] = {
    "chat": chat.PIPELINE,
    "responses": responses.PIPELINE,
    "messages": messages.PIPELINE,
    "gemini": gemini.PIPELINE,
}
#: Each API's own catalogue rows (the signature catalogue appends them to the chat family's).
CATALOGUES: dict[str, tuple[Signature, ...]] = {"messages": MESSAGES, "gemini": GEMINI}
#: Preset actions of rules the chat preset table does not list (``repair`` = default repair).
EXTRA_DEFAULTS: dict[str, str] = {**responses.DEFAULTS, **messages.DEFAULTS, **gemini.DEFAULTS}

ALL_RULES: dict[str, Rule] = {}
for _api, _pipeline in PIPELINES.items():
    for _rule in _pipeline:
        if _rule.name in ALL_RULES or _rule.api != _api:
            raise RuntimeError(f"rule {_rule.name!r}: duplicate name or wrong api {_rule.api!r}")
        ALL_RULES[_rule.name] = _rule
