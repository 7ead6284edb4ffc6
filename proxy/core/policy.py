"""Policies (which rule does what, per upstream) and the engine that applies one to a history.

A policy maps every registered rule to an action: ``off`` (not even detected), ``warn``
(detect and record, forward unchanged), ``reject`` (400 before the upstream) or one of the
rule's repairs. Presets are data; a deployment overrides single rules in its TOML.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from proxy.core.chat.messages import History, Message
from proxy.core.providers import PROVIDERS, Provider
from proxy.core.registry import ALL_RULES as RULES
from proxy.core.registry import EXTRA_DEFAULTS, PIPELINES
from proxy.core.rule import BadParam, Finding, Items, Rule

#: The provider dialects, one preset each (their data: :mod:`proxy.core.providers`).
DIALECTS = tuple(PROVIDERS)
MODES = ("repair", "observe", "strict", "off")

_R, _OFF = "repair", "off"
_CODES = {"R": _R, "-": _OFF, "X": "reject"}

#: Default actions of the provider presets (DESIGN §4 and §11), one column per dialect in
#: DIALECTS order: R = the rule's default repair, - = off, X = reject, else the action's name.
#: Rules whose detection reads the provider record (what it refuses) are R everywhere: they
#: find nothing where the record says the provider accepts the history. anthropic, glm and
#: minimax take OpenAI's column on chat (no chat evidence beyond their records) except
#: image_outside_user, an OpenAI rule.
_TABLE = """
legacy_function_role      R R R R R R R - R R R R R
developer_role            R R R R R R R R R R R R R
unknown_role              X X X X X X X X X X X X X
tool_call_shape           R R R R R R R R R R R R R
arguments_not_string      R R R R R R R R R R R R R
arguments_invalid_json    - - R - - - R - R R - - -
empty_tool_calls          R - - - R - - R R - R R R
tool_content_shape        R R R R R R R R R R R R R
content_parts_unsupported R R R R R R R R R R R R R
content_null              R R R R R R R R R R R R R
image_outside_user        R - - - - - - - - - - - -
duplicate_tool_call_id    R R R R R R R R R R R R R
misplaced_tool_result     R R R R R R R R R R R R R
duplicate_tool_result     R R R R R R R R R R R R R
orphan_tool_result        R R R R R R R R R R R R R
missing_tool_result       R R R R R R R R R R R R R
too_many_tool_calls       R R R R R R R R R R R R R
tool_call_id_format       R R R R R R R R R R R R R
tool_message_name         - - - - - add strip - - - - - -
missing_reasoning_content R R R R R R R R R R R R R
thought_signature         R R R R R R R R R R R R R
function_call_turn_order  - - R - - - - - - - - - -
consecutive_same_role     - - - - - - - - - - - - -
user_after_tool           - - - - R - - - R - - - -
empty_assistant_message   - R R - R - R - R - - - -
empty_text                - - R - - - - - - - - - -
empty_system_message      R R R R R R R R R R R R R
content_object            R R R R R R R R R R R R R
unknown_message_field     R R R R R R R R R R R R R
tool_choice_without_tools R R R R R R R R R R R R R
"""
PROVIDER_PRESETS: dict[str, dict[str, str]] = {dialect: {} for dialect in DIALECTS}
for _row in _TABLE.strip().splitlines():
    _name, *_columns = _row.split()
    for _preset, _code in zip(DIALECTS, _columns, strict=True):
        PROVIDER_PRESETS[_preset][_name] = _CODES.get(_code, _code)
for _name, _action in EXTRA_DEFAULTS.items():  # rules of the other wire APIs
    for _preset in DIALECTS:
        PROVIDER_PRESETS[_preset].setdefault(_name, _action)

#: Every preset name, with the dialect its rules are parameterised for.
PRESETS = (*DIALECTS, "strict", "observe", "passthrough")


@dataclass(frozen=True, slots=True)
class Setting:
    """What a policy does with one rule, and the rule's parameters for it."""

    action: str
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Policy:
    name: str
    dialect: str
    settings: Mapping[str, Setting]
    #: Rules the user set in a policy override: a retry never applies one set to off/reject.
    pinned: frozenset[str] = frozenset()
    #: Per wire API, the rules that are not ``off``, in pipeline order, with their settings.
    active: Mapping[str, tuple[tuple[Rule, Setting], ...]] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        active = {
            api: tuple((r, self.settings[r.name]) for r in pipeline if self._on(r.name))
            for api, pipeline in PIPELINES.items()
        }
        object.__setattr__(self, "active", active)

    @property
    def provider(self) -> Provider:
        """The record of what this policy's upstream dialect accepts."""
        return PROVIDERS[self.dialect]

    def _on(self, name: str) -> bool:
        return name in self.settings and self.settings[name].action != "off"

    def with_mode(self, mode: str) -> Policy:
        """This policy for a request that asked for ``x-toolcall-guard-mode: <mode>``."""
        if mode == "repair":
            return self
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; allowed: {', '.join(MODES)}")
        forced = {"observe": "warn", "strict": "reject", "off": "off"}[mode]
        settings = {
            name: s if s.action == "off" else Setting(forced, s.params)
            for name, s in self.settings.items()
        }
        return Policy(f"{self.name}+{mode}", self.dialect, settings, self.pinned)


def _preset_action(preset: str, rule: Rule) -> str:
    if preset == "strict":
        return "reject"
    if preset == "observe":
        return "warn"
    if preset == "passthrough":
        return "off"
    action = PROVIDER_PRESETS[preset].get(rule.name, "off")
    return rule.default_repair if action == _R else action


def _override(key: str, rule: Rule, value: Any, params: dict[str, Any]) -> str:
    """Apply one TOML override (``"drop"`` or ``{action = "synthesize", text = "…"}``)."""
    fields = dict(value) if isinstance(value, Mapping) else {"action": value}
    action = fields.pop("action", None)
    if action is not None and action != _R and action not in rule.actions:
        raise ValueError(f"{key}: unknown action {action!r}; allowed: {', '.join(rule.actions)}")
    for param, param_value in fields.items():
        if param not in rule.params or param in ("provider", "repair"):
            allowed = ", ".join(["action", *rule.params]) or "action"
            raise ValueError(f"{key}: unknown parameter {param!r}; allowed: {allowed}")
        expected = type(rule.params[param])
        if not isinstance(param_value, expected):
            raise ValueError(f"{key}.{param}: expected {expected.__name__}")
        params[param] = param_value
    return str(action) if action is not None else ""


def build_policy(
    name: str,
    *,
    base: str | None = None,
    dialect: str | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Policy:
    """A policy from a preset plus per-rule overrides; errors name the config key at fault."""
    preset = base or name
    if preset not in PRESETS:
        raise ValueError(
            f"policies.{name}.base: unknown preset {preset!r}; allowed: {', '.join(PRESETS)}"
        )
    dialect = dialect or (preset if preset in DIALECTS else "openai")
    if dialect not in DIALECTS:
        raise ValueError(
            f"policies.{name}.dialect: unknown {dialect!r}; allowed: {', '.join(DIALECTS)}"
        )
    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - set(RULES))
    if unknown:
        raise ValueError(
            f"policies.{name}.rules.{unknown[0]}: unknown rule; allowed: {', '.join(RULES)}"
        )
    settings = {}
    for r in RULES.values():
        params = {**r.params, "provider": PROVIDERS[dialect]}
        action = _preset_action(preset, r)
        if r.name in overrides:
            key = f"policies.{name}.rules.{r.name}"
            action = _override(key, r, overrides[r.name], params) or action
            if action == _R:
                action = r.default_repair
        # Detectors of rules whose repairs pull in opposite directions (add vs strip) need to
        # know which one is configured, even while the rule only warns or rejects.
        params["repair"] = action if action in r.repairs else r.default_repair
        _check_params(f"policies.{name}.rules.{r.name}", r, params)
        settings[r.name] = Setting(action, params)
    return Policy(name, dialect, settings, frozenset(overrides))


def _check_params(key: str, rule: Rule, params: Mapping[str, Any]) -> None:
    """Run the rule's own check of its parameters, naming the config key at fault."""
    if rule.check_params is None:
        return
    try:
        rule.check_params(params)
    except BadParam as exc:
        raise ValueError(f"{key}.{exc.param}: {exc.problem}") from exc


@dataclass(frozen=True, slots=True)
class Outcome:
    """The result of :func:`apply_policy`: what to forward, and why."""

    messages: list[Message]
    findings: tuple[Finding, ...]
    changed: bool
    rejected: bool
    #: Top-level request fields a repair replaced besides the items (Messages: ``system``,
    #: ``thinking``, ``tools``); forwarded with them (:meth:`forwarded`).
    fields: Mapping[str, Any] = field(default_factory=dict)

    def forwarded(self, body: Mapping[str, Any], items_key: str) -> dict[str, Any]:
        """The body to forward once repaired: ``body`` with the repaired items and fields."""
        kept = {k: v for k, v in body.items() if k not in self.removed}
        return {**kept, **self.fields, items_key: self.messages}

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


def apply_policy(
    messages: list[Message], policy: Policy, request: Mapping[str, Any] | None = None
) -> Outcome:
    """Check and repair chat ``messages`` under ``policy``. Pure; never mutates its input.

    ``request`` is the parsed request body the messages came in (read, never changed): the
    model-dependent rules read its ``model`` and ``thinking``. Without it no model is known,
    and rules that apply to some models only find nothing. A clean history comes back as the
    very same list object with ``changed = False``.
    """
    return sanitize(History(messages, request=request), policy, "chat")


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
    messages, request = history.messages, getattr(history, "request", None)
    findings: list[Finding] = []
    rules = policy.active[api]
    for _ in range(MAX_PASSES):
        history, rejected, last = _pass(history, rules, findings)
        if rejected:
            return Outcome(messages, tuple(findings), changed=False, rejected=True)
        rules = tuple((r, s) for r, s in rules[:last] if s.action not in _NO_REPAIR)
        if not rules or not history.messages:
            break
    fields, removed = _changed_fields(request, getattr(history, "request", None))
    changed = history.messages is not messages or bool(fields) or bool(removed)
    return Outcome(history.messages, tuple(findings), changed, False, fields, removed)


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
