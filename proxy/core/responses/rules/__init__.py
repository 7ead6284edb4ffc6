"""The Responses rule registry. ``PIPELINE`` is the order the engine runs the rules in.

Order matters: request-level conflicts first, then identifiers (so that pairing sees the ids
the upstream will see), contents, duplicates, then pairing (misplaced, orphan, missing
outputs), and the reasoning rules last, since pairing repairs may drop what a reasoning item
produced. No repair creates a violation an earlier rule would have caught (idempotent).

``DEFAULTS`` gives each rule's action under the provider presets (``repair`` = its default
repair); rules missing there are ``off`` in those presets.
"""

from __future__ import annotations

from proxy.core.responses.rules import content, dedupe, ids, pairing, reasoning, state
from proxy.core.rule import Rule

PIPELINE: tuple[Rule, ...] = (
    state.responses_state_conflict,
    *ids.RULES,
    *content.RULES,
    *dedupe.RULES,
    *pairing.RULES,
    state.responses_store_false,
    *reasoning.RULES,
)
RULES: dict[str, Rule] = {r.name: r for r in PIPELINE}
DEFAULTS: dict[str, str] = {
    "responses_state_conflict": "reject",
    "responses_call_id_format": "repair",
    "responses_id_prefix": "repair",
    "responses_output_content_types": "repair",
    "responses_duplicate_item": "repair",
    "responses_misplaced_output": "repair",
    "responses_orphan_output": "repair",
    "responses_missing_output": "repair",
    "responses_store_false": "repair",
    "responses_reasoning_adjacency": "repair",
    "responses_missing_reasoning_ref": "repair",
}
