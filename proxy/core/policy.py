"""Policies (which rule does what, per upstream); the engine that applies one to a history is
:mod:`proxy.core.engine` (its names are re-exported here).

A policy maps every registered rule to an action: ``off`` (not even detected), ``warn``
(detect and record, forward unchanged), ``reject`` (400 before the upstream) or one of the
rule's repairs. Presets are data; a deployment overrides single rules in its TOML.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# Re-exported: the engine's names are the policy API's (``from proxy.core.policy import …``).
from proxy.core.engine import MAX_PASSES as MAX_PASSES  # noqa: PLC0414
from proxy.core.engine import Outcome as Outcome  # noqa: PLC0414
from proxy.core.engine import sanitize as sanitize  # noqa: PLC0414
from proxy.core.providers import PROVIDERS, Provider
from proxy.core.registry import ALL_RULES as RULES
from proxy.core.registry import EXTRA_DEFAULTS, PIPELINES
from proxy.core.rule import Rule
from proxy.errors import BadParam

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
#: image_outside_user, an OpenAI rule; vertex and code-assist take Gemini's (the same models).
_TABLE = """
legacy_function_role      R R R R R R R - R R R R R R R
developer_role            R R R R R R R R R R R R R R R
unknown_role              X X X X X X X X X X X X X X X
tool_call_shape           R R R R R R R R R R R R R R R
arguments_not_string      R R R R R R R R R R R R R R R
arguments_invalid_json    - - R - - - R - R R - - - R R
empty_tool_calls          R - - - R - - R R - R R R - -
tool_content_shape        R R R R R R R R R R R R R R R
content_parts_unsupported R R R R R R R R R R R R R R R
content_null              R R R R R R R R R R R R R R R
image_outside_user        R - - - - - - - - - - - - - -
duplicate_tool_call_id    R R R R R R R R R R R R R R R
misplaced_tool_result     R R R R R R R R R R R R R R R
duplicate_tool_result     R R R R R R R R R R R R R R R
orphan_tool_result        R R R R R R R R R R R R R R R
missing_tool_result       R R R R R R R R R R R R R R R
too_many_tool_calls       R R R R R R R R R R R R R R R
tool_call_id_format       R R R R R R R R R R R R R R R
tool_message_name         - - - - - add strip - - - - - - - -
missing_reasoning_content R R R R R R R R R R R R R R R
thought_signature         R R R R R R R R R R R R R R R
function_call_turn_order  - - R - - - - - - - - - - R R
consecutive_same_role     - - - - - - - - - - - - - - -
user_after_tool           - - - - R - - - R - - - - - -
empty_assistant_message   - R R - R - R - R - - - - R R
empty_text                - - R - - - - - - - - - - R R
empty_system_message      R R R R R R R R R R R R R R R
content_object            R R R R R R R R R R R R R R R
unknown_message_field     R R R R R R R R R R R R R R R
tool_choice_without_tools R R R R R R R R R R R R R R R
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
