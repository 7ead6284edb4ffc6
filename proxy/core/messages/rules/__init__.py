"""The Messages rule registry. ``PIPELINE`` is the order the engine runs the rules in.

``DEFAULTS`` gives each rule's action under the provider presets (``repair`` = its default
repair; rules missing there are ``off``). Provider differences are data
(:mod:`proxy.core.messages.facts`): a rule finds nothing where its provider accepts the
history, so every preset runs every rule.
"""

from __future__ import annotations

from proxy.core.rule import Rule

PIPELINE: tuple[Rule, ...] = ()
RULES: dict[str, Rule] = {r.name: r for r in PIPELINE}
DEFAULTS: dict[str, str] = {name: "repair" for name in RULES}
