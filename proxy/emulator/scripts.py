"""Scripted tool loops, shared by the emulators that answer calls (Messages, native Gemini).

A prompt drives an agent through a tool loop with directives such as
``[[tool_use NAME {json arguments}]]`` (each emulator's `directive` pattern says which words
it reads); directives joined by ``&`` are one round of parallel calls. Unscripted forced calls
get placeholder arguments (ours).
"""

from __future__ import annotations

import json
import re
from typing import Any

Call = tuple[str, dict[str, Any]]
_PLACEHOLDERS = {"string": "emulated", "integer": 1, "number": 1, "boolean": True}
_PLACEHOLDERS |= {"array": [], "object": {}}


def rounds(text: str, directive: re.Pattern[str]) -> list[list[Call]]:
    """The directives of `text` by round (`directive`: group 1 the name, 2 the JSON)."""
    found: list[list[Call]] = []
    end = None
    for match in directive.finditer(text):
        call = (match.group(1), arguments(match.group(2)))
        if end is not None and text[end : match.start()].strip() == "&":
            found[-1].append(call)
        else:
            found.append([call])
        end = match.end()
    return found


def arguments(text: str) -> dict[str, Any]:
    """A directive's arguments as an object (text that is no JSON object is wrapped)."""
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        parsed = {"directive": text}
    return parsed if isinstance(parsed, dict) else {"value": parsed}


def placeholders(schema: Any) -> dict[str, Any]:
    """Placeholder values for a schema's required properties (ours): an enum's first value,
    else one per type (Gemini's upper-case type names read like JSON Schema's)."""
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return {}
    required = schema.get("required")
    values: dict[str, Any] = {}
    for name in required if isinstance(required, list) else ():
        if not isinstance(name, str):
            continue
        spec = schema["properties"].get(name)
        choices = spec.get("enum") if isinstance(spec, dict) else None
        if isinstance(choices, list) and choices:
            values[name] = choices[0]
            continue
        kind = spec.get("type") if isinstance(spec, dict) else "string"
        values[name] = (
            _PLACEHOLDERS.get(kind.lower(), "emulated") if isinstance(kind, str) else "emulated"
        )
    return values
