"""What a Gemini ``Content`` and its ``Part`` objects are: the part fields, the roles, the
accessors every rule reads them with (both spellings, :mod:`proxy.core.gemini.spelling`), and
the shape one content must have before any rule reads it (gemini-native.md §1.2, §1.4).

Pure: plain dicts in, plain values out (:func:`kind_of` remembers what it found per tuple of
keys, a bounded table).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from proxy.core.gemini.spelling import get, key_in, snake
from proxy.core.history import MalformedHistory

Item = dict[str, Any]
Part = dict[str, Any]

#: The ``data`` oneof of a Part (types.py ``class Part``, §1.2): a part needs exactly one.
DATA_FIELDS = (
    "text",
    "inlineData",
    "fileData",
    "functionCall",
    "functionResponse",
    "executableCode",
    "codeExecutionResult",
    "toolCall",
    "toolResponse",
)
#: Part fields that are metadata beside the data (a part holding only these has no data).
METADATA_FIELDS = (
    "thought",
    "thoughtSignature",
    "videoMetadata",
    "mediaResolution",
    "partMetadata",
)
#: Other APIs' roles and the Gemini role each means (N14).
ROLE_ALIASES: Mapping[str, str] = MappingProxyType(
    {"assistant": "model", "tool": "user", "function": "user"}
)


def call_of(part: Part) -> dict[str, Any] | None:
    """The part's ``functionCall`` object (either spelling), or None."""
    value = get(part, "functionCall")
    return value if type(value) is dict else None


def response_of(part: Part) -> dict[str, Any] | None:
    """The part's ``functionResponse`` object (either spelling), or None."""
    value = get(part, "functionResponse")
    return value if type(value) is dict else None


def signature_of(part: Part) -> Any:
    """The part's ``thoughtSignature`` (either spelling), or None."""
    return get(part, "thoughtSignature")


def signed(part: Part) -> bool:
    """Whether the part carries a signature (an empty one is none: the bytes field is unset)."""
    return signature_of(part) not in (None, "")


def parts_of(content: Item) -> list[Part]:
    """The content's parts (``[]`` when it has none)."""
    parts = content.get("parts")
    return parts if type(parts) is list else []


def role_of(content: Item) -> str:
    """The role the content plays: ``model`` or ``user`` (other APIs' names mapped, N14); a
    content without one is the model's when it calls a function, else the user's."""
    role = content.get("role")
    if role is None:
        return "model" if any(call_of(p) is not None for p in parts_of(content)) else "user"
    return ROLE_ALIASES.get(role, role)


#: A part's kind by its keys (:func:`kind_of`): its one data field, and its spelling (other
#: keys being metadata); ODD for any other part.
TEXT, CALL, CALL_SNAKE, RESPONSE, RESPONSE_SNAKE, DATA, ODD = range(7)
#: The key of each kind's data field (DATA: one of several; ODD: none).
KIND_KEYS = ("text", "functionCall", "function_call", "functionResponse", "function_response")
_CAMEL: dict[str, str] = {
    name: camel for camel in (*DATA_FIELDS, *METADATA_FIELDS) for name in (camel, snake(camel))
}
_DATA = frozenset(DATA_FIELDS)
#: Kinds seen so far, by the part's keys in order (bounded: a body of odd keys cannot grow it
#: past this).
_SHAPES: dict[tuple[Any, ...], int] = {}
_MAX_SHAPES = 1024


def kind_of(keys: tuple[Any, ...]) -> int:
    """The kind of a part whose keys are ``keys`` (remembered)."""
    found = _SHAPES.get(keys)
    if found is None:
        if len(_SHAPES) >= _MAX_SHAPES:
            _SHAPES.clear()
        found = _SHAPES[keys] = _kind(keys)
    return found


def _kind(keys: tuple[Any, ...]) -> int:
    camels = [_CAMEL.get(key) if type(key) is str else None for key in keys]
    data = [key for key, camel in zip(keys, camels, strict=True) if camel in _DATA]
    if None in camels or len(set(camels)) < len(camels) or len(data) != 1:
        return ODD  # an unknown key, one in both spellings, not one data field
    return KIND_KEYS.index(data[0]) if data[0] in KIND_KEYS else DATA


def check_content(content: Any, where: str) -> None:
    """Raise :class:`MalformedHistory` naming the place unless ``content`` (at ``where``) is an
    object whose ``role`` (when present) is a string and whose ``parts`` (when present) is a
    list of objects whose ``functionCall`` and ``functionResponse`` are objects."""
    if type(content) is not dict:
        raise MalformedHistory(f"{where} must be an object.", where)
    role = content.get("role")
    if role is not None and type(role) is not str:
        raise MalformedHistory(f"{where}.role must be a string.", f"{where}.role")
    parts = content.get("parts")
    if parts is None:
        return
    if type(parts) is not list:
        raise MalformedHistory(f"{where}.parts must be a list of parts.", f"{where}.parts")
    for j, part in enumerate(parts):
        place = f"{where}.parts[{j}]"
        if type(part) is not dict:
            raise MalformedHistory(f"{place} must be an object.", place)
        for camel in ("functionCall", "functionResponse"):
            key = key_in(part, camel)
            if key is not None and part[key] is not None and type(part[key]) is not dict:
                raise MalformedHistory(f"{place}.{key} must be an object.", f"{place}.{key}")
