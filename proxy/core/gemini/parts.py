"""What a Gemini ``Content`` and its ``Part`` objects are: the part fields, the roles, the
accessors every rule reads them with (both spellings, :mod:`proxy.core.gemini.spelling`), and
the shape one content must have before any rule reads it (gemini-native.md §1.2, §1.4).

Pure: plain dicts in, plain values out.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from proxy.core.gemini.spelling import get, key_in
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
