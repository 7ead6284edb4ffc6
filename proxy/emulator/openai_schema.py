"""OpenAI's schema pass over `messages`: types, required and unknown keys, array/string limits.

Rows: O5 (``arguments`` not a string), O7 (``tool_calls: []``), O8 (> 128 calls), O10 (call id
> 40 chars), O11 (empty function name), O12 (unknown key in a message, tool call or function,
e.g. the streaming ``index`` or a DeepSeek ``reasoning_content``), O13 (unknown key in a content
part). Plain schema errors no row covers (missing ``role``/``content``/``tool_call_id``, a wrong
type, an unsupported role or part type) use OpenAI's usual wording under rule ``O-schema``.

OpenAI walks the request in document order and reports the first failure; within one message
this pass checks the role, then unknown keys (in key order), then missing keys, then the type
of each field (in key order).

``name`` on a ``tool`` message is accepted: provider-rules.md O17 found no rejection, and the
SDK's latest type has it. ``annotations``, ``refusal`` and ``audio`` are accepted on assistant
messages (they come back in responses, and SDK users append the response message as it is).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from proxy.emulator.common import Rejection, openai_rejection
from proxy.emulator.openai_errors import (
    check_keys,
    empty_array,
    invalid_value,
    missing,
    too_long,
    wrong_type,
)

ROLES = ("system", "assistant", "user", "function", "tool", "developer")
MAX_TOOL_CALLS = 128
MAX_CALL_ID = 40

_KEYS = {
    "system": ("role", "content", "name"),
    "developer": ("role", "content", "name"),
    "user": ("role", "content", "name"),
    "assistant": (
        "role",
        "content",
        "name",
        "tool_calls",
        "function_call",
        "refusal",
        "audio",
        "annotations",
    ),
    "tool": ("role", "content", "tool_call_id", "name"),
    "function": ("role", "content", "name"),
}
_ALLOWED = {role: frozenset(keys) for role, keys in _KEYS.items()}
_REQUIRED = {
    "system": ("content",),
    "developer": ("content",),
    "user": ("content",),
    "assistant": (),
    "tool": ("content", "tool_call_id"),
    "function": ("content", "name"),
}
_PART_TYPES = {
    "user": ("text", "image_url", "input_audio", "file"),
    "assistant": ("text", "refusal"),
}
_PART_KEYS = {
    "text": ("type", "text"),
    "refusal": ("type", "refusal"),
    "image_url": ("type", "image_url"),
    "input_audio": ("type", "input_audio"),
    "file": ("type", "file"),
}
_INNER_KEYS = {
    "image_url": (("url", "detail"), ("url",)),
    "input_audio": (("data", "format"), ("data", "format")),
    "file": (("file_data", "file_id", "filename"), ()),
}
_CONTENT_TYPES = "one of a string or array of objects"
# messages made only of string fields that are valid whatever the strings: the fast path
_STRING_FIELDS = {
    "system": frozenset(("role", "content", "name")),
    "developer": frozenset(("role", "content", "name")),
    "user": frozenset(("role", "content", "name")),
    "assistant": frozenset(("role", "content", "name", "refusal")),
    "tool": frozenset(("role", "content", "tool_call_id", "name")),
}

Check = Callable[[Any, str, str], Rejection | None]


def check_message(msg: Any, i: int) -> Rejection | None:
    """Schema errors of ``messages[i]``, or None."""
    if plain(msg, _STRING_FIELDS):
        return None
    path = f"messages[{i}]"
    if not isinstance(msg, dict):
        return wrong_type(path, "an object", msg)
    if "role" not in msg:
        return missing(f"{path}.role")
    role = msg["role"]
    if not isinstance(role, str):
        return wrong_type(f"{path}.role", "a string", role)
    if role not in ROLES:
        return invalid_value(f"{path}.role", role, ROLES)
    return check_keys(msg, _ALLOWED[role], _REQUIRED[role], path, "O12") or _fields(msg, path)


def plain(msg: Any, string_fields: dict[str, frozenset[str]]) -> bool:
    """True for a message whose fields are all strings among `string_fields[role]`, content
    (and a tool message's ``tool_call_id``) present: schema-valid without further checks."""
    if type(msg) is not dict:
        return False
    role = msg.get("role")
    fields = string_fields.get(role) if type(role) is str else None
    if fields is None or not msg.keys() <= fields or "content" not in msg:
        return False
    if role == "tool" and "tool_call_id" not in msg:
        return False
    return all(type(value) is str for value in msg.values())


def _fields(msg: dict[str, Any], path: str) -> Rejection | None:
    """The type of each known field, in key order."""
    role = msg["role"]
    for key, value in msg.items():
        check = _FIELDS.get(key)
        found = check(value, f"{path}.{key}", role) if check else None
        if found is not None:
            return found
    return None


def _content(value: Any, path: str, role: str) -> Rejection | None:
    if value is None or isinstance(value, str):
        return None  # null is judged by the semantic pass (O14)
    if role == "function":
        return wrong_type(path, "a string", value)
    if not isinstance(value, list):
        return wrong_type(path, _CONTENT_TYPES, value)
    if not value:
        return empty_array(path)
    for j, part in enumerate(value):
        found = _part(part, f"{path}[{j}]", role)
        if found is not None:
            return found
    return None


def _part(part: Any, path: str, role: str) -> Rejection | None:
    if not isinstance(part, dict):
        return wrong_type(path, "an object", part)
    if "type" not in part:
        return missing(f"{path}.type")
    kind = part["type"]
    supported = _PART_TYPES.get(role, ("text",))
    if not isinstance(kind, str):
        return wrong_type(f"{path}.type", "a string", kind)
    # an image in an assistant/tool message is O18, judged by the semantic pass
    image_elsewhere = kind == "image_url" and role in ("assistant", "tool")
    if kind not in supported and not image_elsewhere:
        return invalid_value(f"{path}.type", kind, supported)
    keys = _PART_KEYS[kind]
    found = check_keys(part, keys, keys, path, "O13")
    return found or _part_value(part[keys[1]], f"{path}.{keys[1]}", kind)


def _part_value(value: Any, path: str, kind: str) -> Rejection | None:
    """``text``/``refusal`` are strings; ``image_url``, ``input_audio``, ``file`` objects."""
    if kind not in _INNER_KEYS:
        return _string(value, path, "")
    if not isinstance(value, dict):
        return wrong_type(path, "an object", value)
    allowed, required = _INNER_KEYS[kind]
    return check_keys(value, allowed, required, path, "O13")


def _string(value: Any, path: str, role: str) -> Rejection | None:
    return None if isinstance(value, str) else wrong_type(path, "a string", value)


def _optional_string(value: Any, path: str, role: str) -> Rejection | None:
    return None if value is None else _string(value, path, role)


def _tool_calls(value: Any, path: str, role: str) -> Rejection | None:
    if value is None:
        return None
    if not isinstance(value, list):
        return wrong_type(path, "an array", value)
    if not value:
        return empty_array(path, "O7")
    if len(value) > MAX_TOOL_CALLS:
        msg = (
            f"Invalid '{path}': array too long. Expected an array with maximum length "
            f"{MAX_TOOL_CALLS}, but got an array with length {len(value)} instead."
        )
        return openai_rejection("O8", msg, param=path, code="array_above_max_length")
    for j, call in enumerate(value):
        found = _tool_call(call, f"{path}[{j}]")
        if found is not None:
            return found
    return None


def _tool_call(call: Any, path: str) -> Rejection | None:
    if not isinstance(call, dict):
        return wrong_type(path, "an object", call)
    keys = ("id", "type", "function")
    found = check_keys(call, keys, keys, path, "O12")
    if found is not None:
        return found
    found = _call_id(call["id"], f"{path}.id")
    if found is not None:
        return found
    kind = call["type"]
    if not isinstance(kind, str):
        return wrong_type(f"{path}.type", "a string", kind)
    if kind != "function":
        return invalid_value(f"{path}.type", kind, ("function",))
    return _function(call["function"], f"{path}.function", in_call=True)


def _call_id(call_id: Any, path: str) -> Rejection | None:
    if not isinstance(call_id, str):
        return wrong_type(path, "a string", call_id)
    if len(call_id) > MAX_CALL_ID:
        return too_long(path, call_id, MAX_CALL_ID, "O10")
    return None


def _function(function: Any, path: str, *, in_call: bool) -> Rejection | None:
    if not isinstance(function, dict):
        return wrong_type(path, "an object", function)
    keys = ("name", "arguments")
    found = check_keys(function, keys, keys, path, "O12")
    if found is not None:
        return found
    name, arguments = function["name"], function["arguments"]
    if not isinstance(name, str):
        return wrong_type(f"{path}.name", "a string", name)
    if in_call and not name:
        msg = (
            f"Invalid '{path}.name': empty string. Expected a string with minimum length 1, "
            "but got an empty string instead."
        )
        return openai_rejection("O11", msg, param=f"{path}.name", code="empty_string")
    if not isinstance(arguments, str):
        return wrong_type(f"{path}.arguments", "a string", arguments, rule="O5")
    return None


def _function_call(value: Any, path: str, role: str) -> Rejection | None:
    return None if value is None else _function(value, path, in_call=False)


def _optional_object(value: Any, path: str, role: str) -> Rejection | None:
    if value is None or isinstance(value, dict):
        return None
    return wrong_type(path, "an object", value)


def _optional_array(value: Any, path: str, role: str) -> Rejection | None:
    if value is None or isinstance(value, list):
        return None
    return wrong_type(path, "an array", value)


_FIELDS: dict[str, Check] = {
    "content": _content,
    "name": _string,
    "tool_call_id": _string,
    "tool_calls": _tool_calls,
    "function_call": _function_call,
    "refusal": _optional_string,
    "audio": _optional_object,
    "annotations": _optional_array,
}
