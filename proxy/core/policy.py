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
from proxy.core.registry import ALL_RULES as RULES
from proxy.core.registry import EXTRA_DEFAULTS, PIPELINES
from proxy.core.rule import BadParam, Finding, Items, Rule

DIALECTS = ("openai", "deepseek", "gemini")
MODES = ("repair", "observe", "strict", "off")

_R, _OFF = "repair", "off"

#: Defaults of the provider presets, DESIGN §4 (columns O, D, G). "repair" = the rule's default.
PROVIDER_PRESETS: dict[str, dict[str, str]] = {
    "openai": {},
    "deepseek": {},
    "gemini": {},
}
_TABLE: tuple[tuple[str, str, str, str], ...] = (
    ("legacy_function_role", _R, _R, _R),
    ("developer_role", _OFF, _R, _R),
    ("unknown_role", "reject", "reject", "reject"),
    ("tool_call_shape", _R, _R, _R),
    ("arguments_not_string", _R, _R, _R),
    ("arguments_invalid_json", _OFF, _OFF, _R),
    ("empty_tool_calls", _R, _R, _R),
    ("tool_content_shape", _R, _R, _R),
    ("content_parts_unsupported", _OFF, _R, _OFF),
    ("content_null", _R, _R, _R),
    ("image_outside_user", _R, _OFF, _OFF),
    ("duplicate_tool_call_id", _R, _R, _R),
    ("misplaced_tool_result", _R, _R, _R),
    ("duplicate_tool_result", _R, _R, _R),
    ("orphan_tool_result", _R, _R, _R),
    ("missing_tool_result", _R, _R, _R),
    ("too_many_tool_calls", _R, _OFF, _OFF),
    ("tool_call_id_format", _R, _OFF, _OFF),
    ("tool_message_name", _OFF, _OFF, _R),
    ("missing_reasoning_content", _OFF, _R, _OFF),
    ("thought_signature", _OFF, _OFF, _R),
    ("function_call_turn_order", _OFF, _OFF, _R),
    ("consecutive_same_role", _OFF, _OFF, _OFF),
    ("empty_assistant_message", _OFF, _R, _R),
    ("empty_text", _OFF, _OFF, _R),
    ("unknown_message_field", _R, _R, _R),
)
for _name, *_columns in _TABLE:
    for _preset, _action in zip(DIALECTS, _columns, strict=True):
        PROVIDER_PRESETS[_preset][_name] = _action
for _name, _action in EXTRA_DEFAULTS.items():  # rules of the other wire APIs
    for _preset in DIALECTS:
        PROVIDER_PRESETS[_preset].setdefault(_name, _action)

#: Every preset name, with the dialect its rules are parameterised for.
PRESETS = ("openai", "deepseek", "gemini", "strict", "observe", "passthrough")


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
        return Policy(f"{self.name}+{mode}", self.dialect, settings)


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
        if param not in rule.params or param in ("dialect", "repair"):
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
        params = {**r.params, "dialect": dialect}
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
    return Policy(name, dialect, settings)


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


def apply_policy(messages: list[Message], policy: Policy) -> Outcome:
    """Check and repair chat ``messages`` under ``policy``. Pure; never mutates its input.

    A clean history comes back as the very same list object with ``changed = False``.
    """
    return sanitize(History(messages), policy, "chat")


def sanitize(history: Items, policy: Policy, api: str) -> Outcome:
    """Run ``policy``'s rules of wire API ``api`` over ``history`` (any :class:`Items`)."""
    messages = history.messages
    findings: list[Finding] = []
    rejected = False
    tool_free = history.tool_free
    for rule, setting in policy.active[api]:
        if tool_free and rule.tools_only:
            continue
        hits = rule.detect(history, setting.params)
        if not hits:
            continue
        action = setting.action
        for h in hits:
            done = "reject" if h.fatal and action != "warn" else action
            findings.append(Finding(rule.name, done, history.path(h.index, h.where), h.detail))
            rejected = rejected or done == "reject"
        if action not in ("warn", "reject"):
            history = rule.repairs[action](history, hits, setting.params)
            tool_free = history.tool_free
    if rejected:
        return Outcome(messages, tuple(findings), changed=False, rejected=True)
    return Outcome(history.messages, tuple(findings), history.messages is not messages, False)
