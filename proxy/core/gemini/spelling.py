"""Both spellings of Gemini's keys: proto3 JSON takes ``functionCall`` and ``function_call``
alike (gemini-native.md §1.4), so every key the rules inspect is read in either spelling, and a
repair writes a key in the spelling its part already uses.

Pure: plain dicts in, plain values out. Keys are named here by their camelCase spelling.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

Part = dict[str, Any]

_UPPER = re.compile(r"(?<!^)([A-Z])")


@lru_cache(maxsize=256)
def snake(camel: str) -> str:
    """``functionCall`` -> ``function_call`` (a one-word key is its own snake spelling)."""
    return _UPPER.sub(r"_\1", camel).lower()


#: ``snake`` of the keys looked up so far (a few dozen: the API's own), without a cache call.
_SNAKES: dict[str, str] = {}


def _snake_of(camel: str) -> str:
    found = _SNAKES.get(camel)
    if found is None:
        found = _SNAKES[camel] = snake(camel)
    return found


def key_in(obj: dict[str, Any], camel: str) -> str | None:
    """The spelling of ``camel`` present in ``obj`` (camelCase first), or None."""
    if camel in obj:
        return camel
    other = _snake_of(camel)
    return other if other in obj and other != camel else None


def get(obj: dict[str, Any], camel: str) -> Any:
    """``obj``'s value for ``camel`` in either spelling (None when absent)."""
    if camel in obj:
        return obj[camel]
    return obj.get(_snake_of(camel))


def is_snake(obj: dict[str, Any]) -> bool:
    """Whether ``obj`` spells its keys in snake_case (one multi-word key with ``_`` says so)."""
    return any("_" in k for k in obj)


def spelled(obj: dict[str, Any], camel: str) -> str:
    """The key to write ``camel`` under in ``obj``: the spelling present, else the one its
    other keys use."""
    found = key_in(obj, camel)
    if found is not None:
        return found
    return snake(camel) if is_snake(obj) else camel


def like(model: dict[str, Any], camel: str) -> str:
    """``camel`` in the spelling ``model`` uses (a new part answering a ``function_call``
    part is a ``function_response``)."""
    return snake(camel) if is_snake(model) else camel


def without(obj: dict[str, Any], *camels: str) -> dict[str, Any]:
    """A copy of ``obj`` without the keys ``camels`` (in both spellings)."""
    gone = {name for camel in camels for name in (camel, snake(camel))}
    return {k: v for k, v in obj.items() if k not in gone}
