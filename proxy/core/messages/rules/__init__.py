"""The Messages rule registry. ``PIPELINE`` is the order the engine runs the rules in.

Order matters: what no repair can fix first (roles, tool_use shape, switches, tool lists),
then roles and blocks the upstream cannot read, empty content, ids (so that pairing sees the
ids the upstream will see), pairing (split results joined, duplicates, misplaced, orphans,
missing results), thinking, the final message, and cache breakpoints last (earlier repairs
drop blocks). No repair creates a violation an earlier rule would have caught (idempotent).

``DEFAULTS`` gives each rule's action under the provider presets (``repair`` = its default
repair). Provider differences are data (:mod:`proxy.core.messages.facts`): a rule finds
nothing where its provider accepts the history, so every preset runs every rule.
"""

from __future__ import annotations

from proxy.core.messages.rules import content, ids, layout, pairing, request, system, thinking
from proxy.core.rule import Rule

PIPELINE: tuple[Rule, ...] = (
    request.messages_unknown_role,
    request.messages_tool_use_shape,
    request.messages_thinking_type,
    request.messages_too_many_tools,
    request.messages_duplicate_tool_name,
    request.messages_custom_tool_type,
    request.messages_unsupported_field,
    system.messages_system_message,
    content.messages_unsupported_block,
    content.messages_tool_reference,
    content.messages_empty_text,
    content.messages_empty_message,
    *ids.RULES,
    layout.messages_split_tool_results,
    *pairing.RULES,
    layout.messages_orphan_server_tool_result,
    *thinking.RULES,
    request.messages_prefill,
    content.messages_cache_control_limit,
)
RULES: dict[str, Rule] = {r.name: r for r in PIPELINE}
DEFAULTS: dict[str, str] = {name: "repair" for name in RULES}
