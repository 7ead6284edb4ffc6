"""The engine: one policy's rules run over one history, to a bounded fixpoint.

:func:`sanitize` is what every wire API's check calls (the proxy's guard, or
:func:`proxy.core.wire.sanitize_body` from a body); :class:`Outcome` is what it returns, and
:func:`proxy.core.forward.forwarded_body` what the proxy, the retry and ``check`` forward. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from proxy.core.rule import Finding, Items, Rule

if TYPE_CHECKING:
    from proxy.core.policy import Policy, Setting

Message = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Outcome:
    """The result of :func:`sanitize` (or of one repair, :func:`outcome_of`): what to forward,
    and why."""

    messages: list[Message]
    findings: tuple[Finding, ...]
    changed: bool
    rejected: bool
    #: Top-level request fields a repair replaced besides the items (Messages: ``system``,
    #: ``thinking``, ``tools``); forwarded with them (:func:`proxy.core.forward.forwarded_body`).
    fields: Mapping[str, Any] = field(default_factory=dict)
    #: Top-level request fields a repair removed (xAI: ``tool_choice`` without ``tools``).
    removed: frozenset[str] = frozenset()

    @property
    def status(self) -> str:
        """``clean``, ``repaired``, ``warned`` or ``rejected``."""
        if self.rejected:
            return "rejected"
        if self.changed:
            return "repaired"
        return "warned" if self.findings else "clean"

    def rule_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for finding in self.findings:
            counts[finding.rule] = counts.get(finding.rule, 0) + 1
        return counts

    def rejection(self) -> Finding:
        """The first finding whose action was ``reject``."""
        return next(f for f in self.findings if f.action == "reject")

    @property
    def rejection_message(self) -> str:
        """Why the history was rejected, for the client: the first rejection and its fix."""
        more = len(self.findings) - 1
        message = self.rejection().message
        if more:
            message += f" ({more} more finding{'s' if more > 1 else ''} in error.findings.)"
        return message


#: Most passes of a policy over one history (see :func:`sanitize`).
MAX_PASSES = 3
_NO_REPAIR = frozenset({"warn", "reject"})


def sanitize(history: Items, policy: Policy, api: str) -> Outcome:
    """Run ``policy``'s rules of wire API ``api`` over ``history`` (any :class:`Items`).

    To a bounded fixpoint: after a pass that changed the history, the repairing rules run
    again over what it made, until a pass changes nothing (``MAX_PASSES`` at most; a clean
    history, the hot path, gets exactly one pass). The pipeline's order already keeps most
    repairs from undoing another (roles, then shapes, pairing, turn order, ids, finishing
    touches), but an order cannot make every pair commute: repairs that insert or drop whole
    messages act on what earlier rules already checked. ``image_outside_user`` puts a user
    message right after tool results, which ``user_after_tool`` (earlier) must then bridge;
    dropping an empty system message can leave a user message right after a tool result, or
    two user messages in a row. Reordering would only move the problem (the bridge must come
    after pairing, which salvages results into user messages), so the engine re-checks
    instead: a repair can no longer hand a violation to the upstream, only to the next pass.
    Later passes run only rules whose action is a repair (a ``warn`` or ``reject`` finding
    was already reported by the first pass on what the client sent), and only those before the
    last rule that changed the history: every rule after it already ran on the final history
    and found nothing, and a rule's own repair leaves nothing for it to find (idempotence, a
    property the golden tests check). A history repaired mid-pipeline re-checks its early,
    cheap rules only, not the analyses of pairing and after (issue 23: a repaired request
    costs little more than a clean one).
    """
    received = history
    findings: list[Finding] = []
    rules = policy.active[api]
    for _ in range(MAX_PASSES):
        history, rejected, last = _pass(history, rules, findings)
        if rejected:
            return Outcome(received.messages, tuple(findings), changed=False, rejected=True)
        if not last:  # nothing changed: done (the usual, clean case)
            break
        rules = tuple((r, s) for r, s in rules[:last] if s.action not in _NO_REPAIR)
        if not rules or not history.messages:
            break
    return outcome_of(received, history, tuple(findings))


def outcome_of(received: Items, repaired: Items, findings: tuple[Finding, ...] = ()) -> Outcome:
    """The outcome of the repairs that made ``repaired`` of ``received``: its items, and the
    request-level fields they replaced or removed (the engine's, or the retry's one rule)."""
    if repaired is received:  # nothing changed (the clean case: no fields to compare)
        return Outcome(received.messages, findings, False, False)
    before, after = getattr(received, "request", None), getattr(repaired, "request", None)
    fields, removed = _changed_fields(before, after)
    changed = repaired.messages is not received.messages or bool(fields) or bool(removed)
    return Outcome(repaired.messages, findings, changed, False, fields, removed)


def _pass(
    history: Items, rules: tuple[tuple[Rule, Setting], ...], findings: list[Finding]
) -> tuple[Items, bool, int]:
    """One run of ``rules`` over ``history``: the repaired history, whether a hit is to be
    rejected, and the position in ``rules`` of the last rule that changed the history (0 when
    none did). Findings are appended to ``findings``."""
    rejected = False
    last = 0
    tool_free = history.tool_free
    for position, (rule, setting) in enumerate(rules):
        if tool_free and rule.tools_only:
            continue
        hits = rule.detect(history, setting.params)
        if not hits:
            continue
        action = setting.action
        for h in hits:
            done = "reject" if h.fatal and action != "warn" else action
            where = history.path(h.index, h.where)
            findings.append(Finding(rule.name, done, where, h.detail, rule.hint))
            rejected = rejected or done == "reject"
        if action not in _NO_REPAIR:
            repaired = rule.repairs[action](history, hits, setting.params)
            if repaired is not history:
                history, last = repaired, position
                tool_free = history.tool_free
                if not history.messages:  # its last item moved or dropped: nothing to look at
                    break
    return history, rejected, last


def _changed_fields(before: Any, after: Any) -> tuple[dict[str, Any], frozenset[str]]:
    """The top-level fields a repair replaced in the request, and those it removed (none:
    the same mapping)."""
    if after is before or after is None:
        return {}, frozenset()
    old = before or {}
    replaced = {k: v for k, v in after.items() if k not in old or old[k] is not v}
    return replaced, frozenset(k for k in old if k not in after)
