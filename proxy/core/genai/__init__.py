"""What a trace shows of each wire API's items: its content in the GenAI semantic conventions'
schema, for ``gen_ai.system_instructions``, ``gen_ai.input.messages`` and
``gen_ai.output.messages`` when content capture is on (:mod:`proxy.telemetry.spans`). Each row
carries its API's :class:`Converter` (:attr:`proxy.core.wire.Wire.genai`): telemetry names no
API.

The schema (open-telemetry/semantic-conventions, ``docs/gen-ai/gen-ai-input-messages.json``,
``gen-ai-output-messages.json``, ``gen-ai-system-instructions.json``; status Development):
a message is ``{"role", "parts"}``, an output message adds ``finish_reason``; a part is
``{"type": "text", "content"}``, ``{"type": "tool_call", "id", "name", "arguments"}``,
``{"type": "tool_call_response", "id", "response"}``, ``{"type": "reasoning", "content"}``,
or any other ``{"type": …}`` (a generic part: an image, a file, a server tool's block, named
by its own type, its data left out). System instructions are a list of parts. Finish reasons
are ``stop``, ``length``, ``content_filter``, ``tool_call``, ``error`` where the API's reason
is one of those; any other is kept as the API wrote it.

Pure; every value read defensively (a body is the client's to write); nothing is made up: a
field the API did not send is left out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import orjson

Part = dict[str, Any]
Message = dict[str, Any]


class Converter(NamedTuple):
    """A wire API's content in the conventions: its history as input messages, its JSON
    answer as output messages, the values of its system keys as system instructions."""

    input: Callable[[list[Any]], list[Message]]
    output: Callable[[dict[str, Any]], list[Message]]
    system: Callable[[Any], list[Part]]


def text_part(content: str) -> Part:
    return {"type": "text", "content": content}


def call_part(call_id: Any, name: Any, arguments: Any) -> Part:
    part: Part = {"type": "tool_call", "name": name if type(name) is str else ""}
    if type(call_id) is str:
        part["id"] = call_id
    if arguments is not None:
        part["arguments"] = arguments_of(arguments)
    return part


def response_part(call_id: Any, response: Any) -> Part:
    part: Part = {"type": "tool_call_response", "response": response}
    if type(call_id) is str:
        part["id"] = call_id
    return part


def arguments_of(arguments: Any) -> Any:
    """Arguments as JSON where a string holds a JSON object (chat's, Responses'), else as sent."""
    if type(arguments) is str and arguments.startswith("{"):
        try:
            return orjson.loads(arguments)
        except orjson.JSONDecodeError:
            return arguments
    return arguments


def dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if type(v) is dict] if type(value) is list else []


def other_part(block: dict[str, Any]) -> Part:
    kind = block.get("type")
    return {"type": kind if type(kind) is str and kind else "unknown"}


def finish(reason: Any, names: dict[str, str]) -> str:
    return names.get(reason, reason) if type(reason) is str else ""


def system_text(value: Any) -> list[Part]:
    """System instructions written as a string (chat's ``system``, Responses' ``instructions``)."""
    return [text_part(value)] if type(value) is str else []
