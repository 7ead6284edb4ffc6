"""The Gemini-native rule registry. ``PIPELINE`` is the order the engine runs the rules in.

Order matters: roles and part shapes first (what no repair can fix is rejected there), empty
parts and contents (so that turns are read as the upstream reads them), then the turn order
(split response turns merged, call turns placed, orphan responses salvaged), pairing (extra
and missing responses, names), ids, and the signatures of the current turn last (earlier
repairs merge and move model contents). No repair creates a violation an earlier rule would
have caught (idempotent).

``DEFAULTS`` gives each rule's action under the provider presets (``repair`` = its default
repair). Endpoint differences are data (:mod:`proxy.core.gemini.facts`): a rule finds nothing
where its endpoint accepts the history, so every preset runs every rule.
"""

from __future__ import annotations

from proxy.core.gemini.rules import empty, foreign, ids, pairing, shape, signatures, turns
from proxy.core.rule import Rule

PIPELINE: tuple[Rule, ...] = (
    *shape.RULES,
    empty.gemini_empty_part,
    *turns.RULES,
    *pairing.RULES,
    *ids.RULES,
    *signatures.RULES,
    *foreign.RULES,
)
RULES: dict[str, Rule] = {r.name: r for r in PIPELINE}
#: ``gemini_foreign_signature`` has no static evidence (N8): only repair on reject applies it.
DEFAULTS: dict[str, str] = {name: "repair" for name in RULES} | {"gemini_foreign_signature": "off"}
