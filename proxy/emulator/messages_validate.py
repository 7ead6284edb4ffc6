"""Which Messages rules each provider enforces, in which order, in which words (the provider
matrix of anthropic-messages.md §3).

- Anthropic: shape; merge same-role turns; M29, M25 (models taking ``role: system``), per block
  M27/M7/M15/M11/M12/M18 and M13, pairing M5 (whole request)/M1/M3/M2/M4, M10, M16, then the
  final turn (M28, M19, M20, M14) or the open tool loop (M17).
- DeepSeek: serde shape (M22, M24, M26, M31); no merge (M6); M29; M21 (thinking on unless
  disabled, every model), in its OpenAI shape; pairing in
  Anthropic's texts (M5 per message).
- Kimi: M32, M30, M23, M21 (its own text), pairing in Anthropic's texts (R: inferred).
- GLM: pairing (duplicate results accepted, V) as the generic ``1214``.
- MiniMax: ``output_config`` (refused, MiniMax-M2.7#17; text ours), M36, pairing in its texts.

`validate_messages(provider, body, raw)` → Rejection or None; it never raises on a JSON value.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from proxy.emulator.common import Rejection
from proxy.emulator.messages_content import (
    Finding,
    anthropic_blocks,
    anthropic_final,
    cache_breakpoints,
    missing_loop_thinking,
    system_placement,
    thinking_type,
    tool_reference,
    unique_tool_names,
)
from proxy.emulator.messages_errors import GLM_PARAMS, openai_shape, reject
from proxy.emulator.messages_history import Fault, pairing_fault, server_result_fault, turns_of
from proxy.emulator.messages_shape import shape_fault

_M1 = (
    "messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: "
    "{ids}. Each `tool_use` block must have a corresponding `tool_result` block in the next "
    "message."
)
_M2 = (
    "messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: {ids}. "
    "Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
)
_M4 = (
    "messages.{i}.content.{j}: each tool_use must have a single result. Found multiple "
    "`tool_result` blocks with id: {ids}"
)
_M5 = "messages.{i}.content.{j}: `tool_use` ids must be unique"
_M10 = (
    "messages.{i}.content.{j}: unexpected `tool_use_id` found in `{kind}` blocks: {ids}. Each "
    "`{kind}` block must have a corresponding `server_tool_use` block before it."
)
_ANTHROPIC_TEXTS = {"M1": _M1, "M2": _M2, "M4": _M4, "M5": _M5}
_MINIMAX_TEXTS = {
    "M1": "invalid params, tool call result does not follow tool call (2013)",
    "M2": "invalid params, tool result's tool id({ids}) not found (2013)",
    "M4": "invalid params, tool result's tool id({ids}) is duplicated (2013)",  # ours
    "M5": "invalid params, tool call id({ids}) is duplicated (2013)",  # ours
}
_DEEPSEEK_M21 = "The `content[].thinking` in the thinking mode must be passed back to the API."
_KIMI_M21 = (
    "thinking is enabled but reasoning_content is missing in assistant tool call message at "
    "index {i}"
)
_KIMI_ALWAYS = re.compile(r"kimi-k2-thinking|kimi-k2\.[7-9]|kimi-k[3-9]")
_KIMI_DEFAULT = re.compile(r"kimi-k2\.[56]|kimi-for-coding")
_KIMI_ENABLED_ONLY = re.compile(r"kimi-k2\.[7-9]|kimi-k[3-9]")


def worded(fault: Fault, texts: dict[str, str]) -> Finding:
    """A pairing fault in one provider's words."""
    ids = ", ".join(fault.ids)
    return Finding(fault.rule, texts[fault.rule].format(i=fault.index, j=fault.block, ids=ids))


def _anthropic(body: dict[str, Any]) -> Rejection | None:
    turns = turns_of(body["messages"], merge=True)
    found = unique_tool_names(body, "tools: Tool names must be unique.")
    found = found or system_placement(turns) or anthropic_blocks(turns)
    fault = pairing_fault(turns, whole_request_ids=True, single_result=True)
    found = found or (worded(fault, _ANTHROPIC_TEXTS) if fault else None)
    server = server_result_fault(turns)
    if found is None and server is not None:
        text = _M10.format(i=server.index, j=server.block, ids=server.ids[0], kind=server.ids[1])
        found = Finding("M10", text)
    found = found or cache_breakpoints(body) or anthropic_final(turns, body)
    return None if found is None else reject("anthropic", found.rule, found.text)


def deepseek_thinks(body: dict[str, Any]) -> bool:
    """DeepSeek thinks by default, whatever the model (§1, create-message docs), unless
    ``thinking.type`` is ``disabled``."""
    return thinking_type(body) != "disabled"


def _deepseek(body: dict[str, Any]) -> Rejection | None:
    turns = turns_of(body["messages"], merge=False)
    found = unique_tool_names(body, "Tool names must be unique.")
    if found is not None:
        return reject("deepseek", found.rule, found.text)
    if deepseek_thinks(body) and missing_loop_thinking(turns) is not None:
        return openai_shape("M21", _DEEPSEEK_M21)
    fault = pairing_fault(turns, whole_request_ids=False, single_result=True)
    if fault is None:
        return None
    finding = worded(fault, _ANTHROPIC_TEXTS)
    return reject("deepseek", "M6" if _split(turns, fault) else fault.rule, finding.text)


def _split(turns: list[Any], fault: Fault) -> bool:
    """An M1 whose results sit in the user message after the next one (M6)."""
    later = turns[fault.index + 2] if fault.index + 2 < len(turns) else None
    return fault.rule == "M1" and later is not None and later.role == "user"


def kimi_thinks(body: dict[str, Any]) -> bool:
    """Kimi thinking: K2-thinking, K2.7, K3 always; K2.5, K2.6, kimi-for-coding unless
    disabled; any model when enabled (M21 row)."""
    model, switch = str(body.get("model")), thinking_type(body)
    if _KIMI_ALWAYS.match(model):
        return True
    if switch in ("enabled", "disabled"):
        return switch == "enabled"
    return bool(_KIMI_DEFAULT.match(model))


def _kimi(body: dict[str, Any]) -> Rejection | None:
    switch = thinking_type(body)
    if switch is not None and switch != "enabled" and _KIMI_ENABLED_ONLY.match(str(body["model"])):
        return reject(
            "kimi", "M32", "invalid thinking: only type=enabled is allowed for this model"
        )
    tools = body.get("tools")
    if isinstance(tools, list) and len(tools) > 128:
        return reject("kimi", "M30", "a max of 128 tools can be supported")
    turns = turns_of(body["messages"], merge=True)
    found = tool_reference(turns)
    index = missing_loop_thinking(turns) if kimi_thinks(body) else None
    if found is None and index is not None:
        found = Finding("M21", _KIMI_M21.format(i=index))
    fault = pairing_fault(turns, whole_request_ids=False, single_result=True)
    found = found or (worded(fault, _ANTHROPIC_TEXTS) if fault else None)
    return None if found is None else reject("kimi", found.rule, found.text)


def _glm(body: dict[str, Any]) -> Rejection | None:
    turns = turns_of(body["messages"], merge=True)
    fault = pairing_fault(turns, whole_request_ids=False, single_result=False)
    return None if fault is None else reject("glm", fault.rule, GLM_PARAMS)


def _minimax(body: dict[str, Any]) -> Rejection | None:
    if "output_config" in body:
        return reject("minimax", "M-output_config", "invalid params, output_config (2013)")  # ours
    for tool in body.get("tools") or ():
        if not isinstance(tool, dict) or tool.get("type") not in (None, "custom"):
            text = "invalid params, function name or parameters is empty (2013)"
            return reject("minimax", "M36", text)
    turns = turns_of(body["messages"], merge=True)
    fault = pairing_fault(turns, whole_request_ids=False, single_result=True)
    if fault is None:
        return None
    return reject("minimax", fault.rule, worded(fault, _MINIMAX_TEXTS).text)


_RULES: dict[str, Callable[[dict[str, Any]], Rejection | None]] = {
    "anthropic": _anthropic,
    "deepseek": _deepseek,
    "kimi": _kimi,
    "glm": _glm,
    "minimax": _minimax,
}


def validate_messages(provider: str, body: Any, raw: bytes | None = None) -> Rejection | None:
    """`provider`'s first error for this ``/v1/messages`` body, or None when it is accepted."""
    if provider not in _RULES:
        raise ValueError(f"unknown provider {provider!r}; expected one of {tuple(_RULES)}")
    found = shape_fault(provider, body, raw)
    return found if found is not None else _RULES[provider](body)
