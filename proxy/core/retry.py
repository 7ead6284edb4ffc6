"""Repair on reject, the pure part: from a refused request and the refusal, the one retry.

:func:`plan_retry` finds the refusal in the signature catalogue (:mod:`proxy.core.signatures`),
runs the rule it names over the request as it was sent and, when the rule finds the violation
at the place the text names (or the text names none), repairs every hit of that rule; it
returns the body to send again, or None when no retry is due. The bounds are
repair-on-reject.md C2 (1, 3, 5): only a 400/404/422 with a catalogued signature mapped to a
rule; only a body that changes; never a request with ``background``, ``conversation`` or
server-executed tools; never a rule the user pinned ``off`` or ``reject``. What must hold on
the wire (no byte sent yet, one retry per request) is the caller's: :mod:`proxy.api.retry`.

Field refusals (``Unknown parameter: 'messages[1].tool_calls[0].index'``, Mistral's
``extra_forbidden`` with ``loc``, Groq's ``property 'X' is unsupported``) strip that field at
that place and yield the field pattern worth learning (``messages[*].tool_calls[*].index``);
a learnable field also goes wherever else the pattern finds it in this body (the upstream would
refuse the next one on the retry).
Their policy switch is ``unknown_message_field``.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from proxy.core.engine import outcome_of
from proxy.core.forward import forwarded_body
from proxy.core.learnable import learnable
from proxy.core.policy import Policy, Setting, build_policy
from proxy.core.providers import provider_of
from proxy.core.registry import ALL_RULES
from proxy.core.retry_dialect import with_dialect
from proxy.core.rule import Finding, Hit, Items, Rule
from proxy.core.signatures import PROTECTED, Match, Signature, match
from proxy.core.wire import WIRES, Wire
from proxy.errors import MalformedHistory

#: Statuses a refused history comes back with (Mistral's schema errors are 422; R6 is 404).
RETRY_STATUSES = frozenset({400, 404, 422})
#: Tools the server executes (Responses; Anthropic Messages' versioned ``web_search_…``,
#: ``web_fetch_…``, ``code_execution_…``): a retry could run them twice (repair-on-reject.md C2).
SERVER_TOOLS = (
    "web_search",
    "file_search",
    "code_interpreter",
    "computer",
    "mcp",
    "image_generation",
    "web_fetch",
    "code_execution",
)
#: A user override to these keeps a rule away from retries too (issue 15 item 3).
REFUSED = frozenset({"off", "reject"})
#: The policy switch of field refusals.
FIELD_RULE = "unknown_message_field"


@dataclass(frozen=True, slots=True)
class RetryPlan:
    """The second attempt: the body to send, the rule that made it, and why."""

    body: dict[str, Any]
    rule: str
    findings: tuple[Finding, ...]
    match: Match
    #: A field pattern the upstream refuses for every request (``messages[*].name``), or None.
    learned: str | None = None


def plan_retry(
    api: str,
    body: Any,
    status: int,
    text: bytes | str,
    policy: Policy,
    *,
    pinned: Collection[str] | None = None,
    model: str = "",
) -> RetryPlan | None:
    """The retry for ``body`` (the request as sent) that ``status``/``text`` refused, or None.

    ``model``: the model the request path names (Gemini's native API), ``""`` where the body
    names it. ``pinned`` names the rules the user set in a policy override (default:
    ``policy.pinned`` when the policy has it); of those, the ones set to ``off`` or ``reject``
    are never applied.
    The returned body never equals ``body``; planning again on it finds nothing to do.
    """
    wire = WIRES.get(api)
    if status not in RETRY_STATUSES or wire is None or type(body) is not dict:
        return None
    found = None if unsafe_to_repeat(body) else match(status, text, api)
    if found is None or found.rule is None or _refused_by_user(found.rule, policy, pinned):
        return None
    if found.signature.strip:
        return _plan_strip(body, found)
    return _plan_rule(wire, body, found, policy, model)


def unsafe_to_repeat(body: Mapping[str, Any]) -> bool:
    """Whether sending ``body`` twice could do something twice: a ``background`` job, a
    ``conversation`` that appends items, tools the server runs (repair-on-reject.md C2)."""
    if body.get("background") or body.get("conversation") is not None:
        return True
    if body.get("web_search_options") is not None:  # chat's server-side search
        return True
    if body.get("mcp_servers"):  # Messages' MCP connector: the server calls those tools
        return True
    tools = body.get("tools")
    return type(tools) is list and any(_server_tool(t) for t in tools)


def _server_tool(tool: Any) -> bool:
    kind = tool.get("type") if type(tool) is dict else None
    if type(kind) is not str:
        return False
    if kind.startswith("tool_search"):
        return bool(tool.get("execution") != "client")
    return kind.startswith(SERVER_TOOLS)


def _refused_by_user(rule: str, policy: Policy, pinned: Collection[str] | None) -> bool:
    chosen: Collection[str] = getattr(policy, "pinned", ()) if pinned is None else pinned
    setting = policy.settings.get(rule)
    return rule in chosen and setting is not None and setting.action in REFUSED


# --- a rule's repair at the named place ---------------------------------------------------------


def _plan_rule(
    wire: Wire, body: dict[str, Any], found: Match, policy: Policy, model: str
) -> RetryPlan | None:
    rule = ALL_RULES.get(found.rule or "")
    if rule is None or rule.api != wire.name:
        return None
    try:
        history = wire.history(body, model)
    except MalformedHistory:
        return None
    setting = policy.settings.get(rule.name)
    action = _action(rule, setting, found.signature)
    params = _params(rule, setting, found.signature, action or "")
    hits = [h for h in rule.detect(history, params) if not h.fatal] if action else []
    # A named place where the rule finds nothing: text and detector disagree, no guess. Else
    # every hit of the rule goes: upstreams name only the first offence (DeepSeek, Kimi), one
    # retry must fix them all, and repairs that move messages (salvage, split) would shift the
    # places of the rest (a second plan on the output would find them: not idempotent).
    if action is None or not _confirmed(hits, _named(history, found.index, params)):
        return None
    chosen = hits
    repaired = rule.repairs[action](history, chosen, params)
    new = forwarded_body(wire, body, outcome_of(history, repaired))
    if new == body:
        return None
    findings = tuple(
        Finding(rule.name, action, history.path(h.index, h.where), h.detail, rule.hint)
        for h in chosen
    )
    new, findings = with_dialect(wire, new, found, policy, findings)
    return RetryPlan(new, rule.name, findings, found)


def _confirmed(hits: list[Hit], named: frozenset[int] | None) -> bool:
    """Whether the rule found something, at the named place when the text names one."""
    return bool(hits) and (named is None or any(h.index in named for h in hits))


def _named(history: Items, index: int | None, params: Mapping[str, Any]) -> frozenset[int] | None:
    """The positions the refusal's index names: the item itself, or on Messages every
    message of the merged turn Anthropic counts as one (``Messages.named``)."""
    if index is None:
        return None
    widen = getattr(history, "named", None)
    if widen is None:
        return frozenset({index})
    return frozenset(widen(index, provider_of(params).name))


def _action(rule: Rule, setting: Setting | None, signature: Signature) -> str | None:
    """The repair to apply: the row's, else the policy's when it is a repair, else the
    rule's default."""
    if signature.action is not None:
        action = signature.action
    elif setting is not None and setting.action in rule.repairs:
        action = setting.action
    else:
        action = rule.default_repair
    return action if action in rule.repairs else None


def _params(
    rule: Rule, setting: Setting | None, signature: Signature, action: str
) -> dict[str, Any]:
    """The policy's parameters for the rule, with the refusing provider's dialect, the row's
    own overrides and the repair chosen."""
    params = {**rule.params, **(setting.params if setting is not None else {})}
    preset = _preset_params(signature.preset, rule.name)
    params.update({k: v for k, v in preset.items() if k in ("dialect", "provider")})
    params.update(signature.params)
    params["repair"] = action
    return params


@lru_cache(maxsize=64)
def _preset_params(preset: str | None, rule: str) -> Mapping[str, Any]:
    if preset is None:
        return {}
    try:
        setting = build_policy(preset).settings.get(rule)
    except ValueError:  # a preset not written yet: the policy's own parameters stand
        return {}
    return setting.params if setting is not None else {}


# --- field refusals -----------------------------------------------------------------------------

_STEP = re.compile(r"\[(\d+|\*)\]|\.?([^.\[\]]+)")
_INDEX = re.compile(r"\[\d+\]")


def _plan_strip(body: dict[str, Any], found: Match) -> RetryPlan | None:
    if not found.field:
        return None
    new, removed = strip_field(body, found.field)
    learned = field_pattern(found.field) if found.signature.learn else None
    if removed and learned is not None:  # the same key elsewhere would be refused next
        new, more = strip_field(new, learned)
        removed += more
    if not removed or new == body:
        return None
    detail = f"upstream refused the field ({found.signature.id}): {found.text[:200]}"
    findings = tuple(Finding(FIELD_RULE, "strip", path, detail) for path in removed)
    return RetryPlan(new, FIELD_RULE, findings, found, learned)


def field_pattern(path: str) -> str | None:
    """The pattern a refused field stands for (``messages[*].tool_calls[*].index``), or None
    for a field that must not be learned (:func:`proxy.core.learnable.learnable`)."""
    steps = parse_path(path)
    if not steps or (len(steps) == 1 and steps[0] in PROTECTED):
        return None
    pattern = _INDEX.sub("[*]", path)
    return pattern if learnable(pattern) else None


def parse_path(path: str) -> list[str | int | None]:
    """``messages[1].tool_calls[*].index`` → ``["messages", 1, "tool_calls", None, "index"]``
    (None: every element). An unparsable path gives ``[]``."""
    steps: list[str | int | None] = []
    position = 0
    for found in _STEP.finditer(path):
        if found.start() != position:
            return []
        position = found.end()
        index, key = found.groups()
        steps.append(key if key is not None else (None if index == "*" else int(index)))
    return steps if position == len(path) else []


def strip_field(body: dict[str, Any], path: str) -> tuple[dict[str, Any], list[str]]:
    """``body`` without the field at ``path`` (``[*]`` = every element), copy-on-write, and
    the concrete paths removed. A protected request-level key goes only while it is empty."""
    steps = parse_path(path)
    if not steps or (len(steps) == 1 and steps[0] in PROTECTED and body.get(str(steps[0]))):
        return body, []
    new, removed = _strip(body, steps, "")
    return (new if removed else body), removed


def _strip(value: Any, steps: list[str | int | None], here: str) -> tuple[Any, list[str]]:
    step, rest = steps[0], steps[1:]
    if isinstance(step, str):
        if type(value) is not dict or step not in value:
            return value, []
        where = f"{here}.{step}" if here else step
        if not rest:
            return {k: v for k, v in value.items() if k != step}, [where]
        inner, removed = _strip(value[step], rest, where)
        return ({**value, step: inner} if removed else value), removed
    if type(value) is not list:
        return value, []
    positions = range(len(value)) if step is None else [step] if step < len(value) else []
    out, removed = list(value), []
    for i in positions:
        out[i], gone = _strip(value[i], rest, f"{here}[{i}]") if rest else (value[i], [])
        removed.extend(gone)
    return (out if removed else value), removed
