"""DeepSeek's deserialization pass over `messages` (serde, before any semantic check).

Rows: D9 (``content`` arrays rejected on every role: ``invalid type: sequence, expected a
string``), D10 (a user content array holding a non-text part: ``data did not match any variant
of untagged enum ChatCompletionRequestContent``), D11 (``missing field `content```, on every
role, assistant tool-call turns included), D13 (``content: null`` on a non-assistant message:
``invalid type: null, expected a string``), D14 (``unknown variant `developer```, roles
``system``, ``user``, ``assistant``, ``tool``, ``latest_reminder`` as in the 2026 wording; the
legacy ``function`` role fails the same way). Other type errors (``arguments`` as an object,
``tool_calls`` not an array, a tool call without ``id``/``function``) use serde's wording
under rule ``D-schema``.

serde semantics reproduced: a message is an internally tagged enum, so a bad or unknown
``role`` fails as soon as the role value is read (path ``messages[i].role``, position just past
the value); every other error of the message is found after the whole object was read (path
``messages[i]``, position past its ``}``): first a wrong-typed field in the object's key order,
then the first missing field in declaration order (``content``, then ``tool_call_id``).
Unknown keys are ignored (serde's default), so ``name`` on tool messages and a stray ``index``
in tool calls pass.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from proxy.emulator.common import Rejection, deepseek_rejection
from proxy.emulator.openai_schema import plain
from proxy.emulator.serde import DESERIALIZE, Locator, unexpected

ROLES = ("system", "user", "assistant", "tool", "latest_reminder")
_VARIANTS = ", ".join(f"`{role}`" for role in ROLES)
_REQUIRED = {"tool": ("content", "tool_call_id")}
# string-valued fields that deserialize whatever the string (the fast path)
_STRING_FIELDS = {
    role: frozenset(("role", "content", "name", "tool_call_id", "reasoning_content"))
    for role in ROLES
}
_UNTAGGED = "data did not match any variant of untagged enum ChatCompletionRequestContent"

# (rule, serde message) of the first failure inside a value, or None
Failure = tuple[str, str] | None
FieldCheck = Callable[[Any, str], Failure]


def fail(rule: str, text: str, where: str) -> Rejection:
    """A deserialization error as DeepSeek words it."""
    return deepseek_rejection(rule, DESERIALIZE + text + where)


def check_message(msg: Any, i: int, loc: Locator) -> Rejection | None:
    """The serde error of ``messages[i]``, or None."""
    return None if plain(msg, _STRING_FIELDS) else _deserialize(msg, i, loc)


def _deserialize(msg: Any, i: int, loc: Locator) -> Rejection | None:
    path = f"messages[{i}]"
    if not isinstance(msg, dict):
        text = f"{path}: invalid type: {unexpected(msg)}, expected internally tagged enum "
        text += "ChatCompletionRequestMessage"
        return fail("D-schema", text, loc.at("messages", i))
    role = msg.get("role")
    if role is None and "role" not in msg:
        return fail("D-schema", f"{path}: missing field `role`", loc.at("messages", i))
    if not isinstance(role, str):
        text = f"{path}.role: invalid type: {unexpected(role)}, expected variant identifier"
        return fail("D-schema", text, loc.at("messages", i, "role", peek=True))
    if role not in ROLES:
        text = f"{path}.role: unknown variant `{role}`, expected one of {_VARIANTS}"
        return fail("D14", text, loc.at("messages", i, "role"))
    failure = _fields(msg, role)
    if failure is None:
        return None
    return fail(failure[0], f"{path}: {failure[1]}", loc.at("messages", i))


def _fields(msg: dict[str, Any], role: str) -> Failure:
    for key, value in msg.items():
        check = _CHECKS.get((role, key)) or _CHECKS.get(("*", key))
        failure = check(value, role) if check else None
        if failure is not None:
            return failure
    for field in _REQUIRED.get(role, ("content",)):
        if field not in msg:
            return ("D11" if field == "content" else "D-schema", f"missing field `{field}`")
    return None


def _type_error(value: Any, expected: str, rule: str = "D-schema") -> Failure:
    return rule, f"invalid type: {unexpected(value)}, expected {expected}"


def _content(value: Any, role: str) -> Failure:
    if isinstance(value, str) or (value is None and role == "assistant"):
        return None
    if isinstance(value, list):
        if role == "user" and not all(_is_text_part(part) for part in value):
            return "D10", _UNTAGGED
        return _type_error(value, "a string", "D9")
    return _type_error(value, "a string", "D13" if value is None else "D-schema")


def _is_text_part(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") == "text"


def _string(value: Any, role: str) -> Failure:
    return None if isinstance(value, str) else _type_error(value, "a string")


def _optional_string(value: Any, role: str) -> Failure:
    return None if value is None else _string(value, role)


def _optional_bool(value: Any, role: str) -> Failure:
    return None if value is None or isinstance(value, bool) else _type_error(value, "a boolean")


def _tool_calls(value: Any, role: str) -> Failure:
    if value is None:
        return None
    if not isinstance(value, list):
        return _type_error(value, "a sequence")
    for call in value:
        failure = _call(call)
        if failure is not None:
            return failure
    return None


def _call(call: Any) -> Failure:
    if not isinstance(call, dict):
        return _type_error(call, "struct ToolCall")
    for key, value in call.items():
        failure = None
        if key == "id":
            failure = _string(value, "")
        elif key == "type":
            failure = _call_type(value)
        elif key == "function":
            failure = _function(value)
        if failure is not None:
            return failure
    return _missing(call, ("id", "function"))


def _call_type(value: Any) -> Failure:
    if value == "function":
        return None
    if isinstance(value, str):
        return "D-schema", f"unknown variant `{value}`, expected `function`"
    return _type_error(value, "variant identifier")


def _function(value: Any) -> Failure:
    if not isinstance(value, dict):
        return _type_error(value, "struct Function")
    for key, item in value.items():
        if key in ("name", "arguments") and not isinstance(item, str):
            return _type_error(item, "a string")
    return _missing(value, ("name", "arguments"))


def _missing(obj: dict[str, Any], fields: tuple[str, ...]) -> Failure:
    for field in fields:
        if field not in obj:
            return "D-schema", f"missing field `{field}`"
    return None


_CHECKS: dict[tuple[str, str], FieldCheck] = {
    ("*", "content"): _content,
    ("*", "name"): _optional_string,
    ("tool", "tool_call_id"): _string,
    ("assistant", "tool_calls"): _tool_calls,
    ("assistant", "reasoning_content"): _optional_string,
    ("assistant", "prefix"): _optional_bool,
}
