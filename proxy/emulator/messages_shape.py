"""The body and block shape of a Messages request (S1/S2 of anthropic-messages.md §3), per provider.

Anthropic, Kimi, GLM and MiniMax: pydantic-style ``<path>: <problem>`` texts on dotted paths
(``messages.2.content.0.tool_use.input``): only ``max_tokens: Field required`` is reported (R),
the rest of the wording is pydantic's and ours. DeepSeek deserializes with serde:
``Failed to deserialize the JSON body into the target type: messages[1].role: unknown variant
`system`, expected `user` or `assistant` at line 1 column 1932`` (M24, V), the same form for M22
(block types it does not know), M26 (role ``tool``) and M31 (tool types), positions as serde
reports them (`serde.Locator`).

`shape_fault(provider, body, raw)` → Rejection or None; after it, `blocks_of(message)` is safe.
"""

from __future__ import annotations

import re
from typing import Any

from proxy.emulator.common import Rejection, nonempty_list
from proxy.emulator.messages_errors import (
    glm_literal_error,
    glm_shape,
    openai_shape,
    reject,
)
from proxy.emulator.serde import DESERIALIZE, Locator, unexpected

ROLES = ("user", "assistant")
M26_TEXT = (
    'messages: Unexpected role "{role}". Allowed roles are "user" or "assistant". For '
    "instructions on how to use tools, see "
    "https://platform.claude.com/docs/en/agents-and-tools/tool-use/overview."
)
M24_MINIMAX = "invalid params, chat content has invalid message role: {role} (2013)"
#: The block types Anthropic knows (anthropic-sdk-python types/*_param.py); any
#: ``*_tool_result`` is a server tool's result.
BLOCK_TYPES = frozenset(
    {"text", "image", "document", "search_result", "tool_use", "tool_result", "thinking"}
    | {"redacted_thinking", "server_tool_use", "mcp_tool_use", "mcp_tool_result"}
    | {"container_upload"}
)
#: DeepSeek's content variants per role (api-docs.deepseek.com/api/create-message, M22).
DEEPSEEK_BLOCKS = {
    "user": ("text", "image", "tool_result"),
    "assistant": ("text", "thinking", "tool_use", "server_tool_use", "web_search_tool_result"),
}
DEEPSEEK_TOOL_TYPES = ("web_search_20250305", "web_search_20260209")
#: Fields each block must carry, and their JSON type.
_REQUIRED: dict[str, tuple[tuple[str, type], ...]] = {
    "text": (("text", str),),
    "tool_use": (("id", str), ("name", str), ("input", dict)),
    "server_tool_use": (("id", str), ("name", str), ("input", dict)),
    "tool_result": (("tool_use_id", str),),
    "thinking": (("thinking", str), ("signature", str)),
    "redacted_thinking": (("data", str),),
}
_KINDS: dict[type, str] = {str: "a valid string", dict: "a valid dictionary"}
_KINDS |= {list: "a valid list", int: "a valid integer"}
_SYSTEM_ROLE = re.compile(r"claude-(?:opus-4-8|opus-5|fable-5|mythos-5)")


def system_role_allowed(provider: str, model: str) -> bool:
    """Whether a ``role: system`` message is taken (M24): Anthropic's newest models, Kimi
    (no evidence either way: lenient)."""
    return provider == "kimi" or (provider == "anthropic" and bool(_SYSTEM_ROLE.match(model)))


def blocks_of(message: dict[str, Any]) -> list[dict[str, Any]]:
    """A message's content as blocks: a string is one text block, ``""`` none."""
    content = message["content"]
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content)


def shape_fault(provider: str, body: Any, raw: bytes | None) -> Rejection | None:
    """The first shape error of the body, in the provider's words, or None."""
    if provider == "deepseek":
        return _serde_fault(body, Locator(raw, body))
    return _pydantic_fault(provider, body)


def _pydantic_fault(provider: str, body: Any) -> Rejection | None:
    found = _body_fault(provider, body)
    for i, message in enumerate(body["messages"] if found is None else ()):
        found = _message_fault(provider, body, message, i)
        if found is not None:
            return found
    return found


def _body_fault(provider: str, body: Any) -> Rejection | None:
    """``model``, ``max_tokens`` (required by Anthropic, R, and GLM, which crashes without
    it: zai-coding-plugins#15; the others: no evidence, lenient) and ``messages``."""
    if not isinstance(body, dict):
        return reject(provider, "S1", "Input should be a valid dictionary")  # ours
    if provider == "glm" and "max_tokens" not in body:
        return glm_shape("S1", "[500][max_tokens][emulator]", 500, code="500")
    fields: tuple[tuple[str, type], ...] = (("model", str), ("max_tokens", int), ("messages", list))
    for field, kind in fields:
        if field not in body and (field != "max_tokens" or provider == "anthropic"):
            return reject(provider, "S1", f"{field}: Field required")
        if field in body and not _typed(body[field], kind):
            return reject(provider, "S1", f"{field}: Input should be {_KINDS[kind]}")
    if not body["messages"]:
        return reject(provider, "S1", "messages: at least one message is required")  # ours
    return None


def _typed(value: Any, kind: type) -> bool:
    return isinstance(value, kind) and not isinstance(value, bool)


def _message_fault(provider: str, body: dict[str, Any], msg: Any, i: int) -> Rejection | None:
    if not isinstance(msg, dict):
        return reject(provider, "S1", f"messages.{i}: Input should be a valid dictionary")
    role = msg.get("role")
    if role not in ROLES:
        found = _role_fault(provider, body, role, i)
        if found is not None:
            return found
    content = msg.get("content")
    if content is None:
        return reject(provider, "S1", f"messages.{i}.content: Field required")
    if not isinstance(content, (str, list)):
        return reject(provider, "S1", f"messages.{i}.content: Input should be a valid list")
    for j, block in enumerate(content if isinstance(content, list) else ()):
        found = _block_fault(provider, block, f"messages.{i}.content.{j}")
        if found is not None:
            return found
    return None


def _role_fault(provider: str, body: dict[str, Any], role: Any, i: int) -> Rejection | None:
    """M24 (``system``, unless the model takes it) and M26 (any other role)."""
    if role == "system" and system_role_allowed(provider, str(body.get("model"))):
        return None
    rule = "M24" if role == "system" else "M26" if isinstance(role, str) else "S1"
    if provider == "glm":
        return glm_literal_error(rule, ["body", "messages", i, "role"], role)
    if provider == "minimax":
        return reject(provider, rule, M24_MINIMAX.format(role=role))
    if rule == "M24":
        return reject(provider, rule, "role 'system' is not supported on this model")
    text = M26_TEXT.format(role=role) if rule == "M26" else f"messages.{i}.role: Field required"
    return reject(provider, rule, text)


def _block_fault(provider: str, block: Any, path: str) -> Rejection | None:
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        return reject(provider, "S2", f"{path}: Input should be a valid dictionary")
    kind = block["type"]
    known = kind in BLOCK_TYPES or kind.endswith("_tool_result")
    if not known and provider == "anthropic":  # the others: no evidence, lenient
        text = f"{path}: Input tag '{kind}' found using 'type' does not match any of the "
        return reject(provider, "S2", text + "expected tags")  # pydantic's wording, shortened
    for field, expected in _REQUIRED.get(kind, ()):
        if field == "signature" and provider != "anthropic":  # no evidence elsewhere: lenient
            continue
        found = _field_fault(provider, block, field, expected, f"{path}.{kind}.{field}")
        if found is not None:
            return found
    return None


def _field_fault(
    provider: str, block: dict[str, Any], field: str, kind: type, path: str
) -> Rejection | None:
    rule = "M18" if field == "signature" else "M9" if field == "input" else "S2"
    if field not in block:
        return reject(provider, rule, f"{path}: Field required")
    value = block[field]
    if not isinstance(value, kind):
        if field == "input" and provider == "glm":  # GLM crashes (zai-coding-plugins#14)
            text = "[500]['ClaudeContentBlockToolResult' object has no attribute 'id'][emulator]"
            return glm_shape("M9", text, 500, code="500")
        return reject(provider, rule, f"{path}: Input should be {_KINDS[kind]}")
    if field == "name" and not value:
        return reject(provider, "M8", f"{path}: String should have at least 1 character")
    return None


def _serde_fault(body: Any, loc: Locator) -> Rejection | None:
    """DeepSeek: the first serde error (its OpenAI-shaped envelope: ours)."""
    if not isinstance(body, dict):
        return _serde("S1", "invalid type: expected struct MessagesRequest", loc.at())
    for field in ("model", "messages"):
        if field not in body:
            return _serde("S1", f"missing field `{field}`", loc.at())
    if not nonempty_list(body["messages"]):
        return _serde("S1", "messages: invalid length 0, expected a non-empty sequence", loc.at())
    for i, msg in enumerate(body["messages"]):
        found = _serde_message(msg, i, loc)
        if found is not None:
            return found
    return _serde_tools(body.get("tools"), loc)


def _serde(rule: str, text: str, where: str) -> Rejection:
    return openai_shape(rule, DESERIALIZE + text + where)


def _serde_message(msg: Any, i: int, loc: Locator) -> Rejection | None:
    path = f"messages[{i}]"
    missing = _missing(msg, ("role", "content"))
    if missing is not None:
        return _serde("S1", f"{path}: missing field `{missing}`", loc.at("messages", i))
    role = msg["role"]
    if role not in ROLES:
        rule = "M24" if role == "system" else "M26"
        text = f"{path}.role: unknown variant `{role}`, expected `user` or `assistant`"
        return _serde(rule, text, loc.at("messages", i, "role"))
    content = msg["content"]
    if isinstance(content, str):
        return None
    if not isinstance(content, list):
        return _serde("S1", f"{path}.content: invalid type", loc.at("messages", i, "content"))
    for j, block in enumerate(content):
        found = _serde_block(block, role, f"{path}.content[{j}]")
        if found is not None:  # located only now: finding a position scans the body
            return _serde(found[0], found[1], loc.at("messages", i, "content", j))
    return None


def _missing(msg: Any, fields: tuple[str, ...]) -> str | None:
    if not isinstance(msg, dict):
        return fields[0]
    return next((f for f in fields if f not in msg), None)


def _serde_block(block: Any, role: str, path: str) -> tuple[str, str] | None:
    kind = block.get("type") if isinstance(block, dict) else None
    variants = DEEPSEEK_BLOCKS[role]
    if kind not in variants:  # M22 (I): DeepSeek's schema, serde's wording
        expected = ", ".join(f"`{v}`" for v in variants)
        return "M22", f"{path}: unknown variant `{kind}`, expected one of {expected}"
    for field, kind_of in _REQUIRED.get(str(kind), ()):
        if field == "signature":  # DeepSeek takes a thinking block without one (M18)
            continue
        if field not in block:
            return "M18" if field == "thinking" else "S2", f"{path}: missing field `{field}`"
        if not isinstance(block[field], kind_of):
            expected = "a string" if kind_of is str else "a map"
            return (
                "S2",
                f"{path}.{field}: invalid type: {unexpected(block[field])}, expected {expected}",
            )
    return None


def _serde_tools(tools: Any, loc: Locator) -> Rejection | None:
    for k, tool in enumerate(tools if isinstance(tools, list) else ()):
        kind = tool.get("type") if isinstance(tool, dict) else None
        if kind is not None and kind not in DEEPSEEK_TOOL_TYPES:
            text = f"tools[{k}]: unknown variant `{kind}`, expected `{DEEPSEEK_TOOL_TYPES[0]}` "
            return _serde("M31", text + f"or `{DEEPSEEK_TOOL_TYPES[1]}`", loc.at("tools", k))
    return None
