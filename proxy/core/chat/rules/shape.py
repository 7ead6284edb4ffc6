"""Rules about the shape of contents: tool results and content parts where a string is needed.

They run after the call rules and before pairing, so that pairing sees every tool result with
a string content.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from proxy.core.chat.messages import History, text_of
from proxy.core.chat.rules import views
from proxy.core.chat.rules.calls import compact, kind
from proxy.core.rule import Hit, Params, rule


def _parts_problem(content: list[Any], dialect: Any) -> str | None:
    """Why a tool message's parts must become one string, if they must."""
    if text_of(content) is None:
        return None  # image or other parts: image_outside_user's or content_parts_unsupported's
    if not content:
        return "tool content is an empty array"
    if dialect == "deepseek":
        return "tool content is an array of parts; this upstream takes a string"
    if any(type(part) is str for part in content):
        return "tool content is an array of bare strings, not content parts"
    return None


@rule(
    "tool_content_shape",
    tools_only=True,
    hint="Send tool results as a string; JSON-encode structured results.",
)
def tool_content_shape(history: History, params: Params) -> list[Hit]:
    """A ``tool`` message whose content is an object, number, boolean, null or missing.

    Gemini: ``Expected string or list of content parts, got: null``; DeepSeek needs the key
    (``missing field `content```) and a string (``invalid type: sequence, expected a
    string``). The ``stringify`` repair encodes values as compact JSON, null or missing as
    ``""``, and joins text parts with newlines where the upstream needs a string (DeepSeek) or
    the parts are bare strings. Arrays holding image or other parts are left to other rules.
    """
    if "tool" not in views.odd_roles(history):
        return []
    messages = history.messages
    dialect = params.get("dialect")
    hits = []
    for i in history.index.odd_content:
        message = messages[i]
        content = message.get("content")
        if message["role"] != "tool" or type(content) is str:
            continue
        if type(content) is list:
            detail = _parts_problem(content, dialect)
        elif "content" not in message:
            detail = "tool message without content"
        else:
            detail = f"tool content is {kind(content)}, expected a string"
        if detail is not None:
            hits.append(Hit(i, ".content", detail))
    return hits


def _as_tool_text(content: Any) -> str:
    if content is None:
        return ""
    if type(content) is list:
        return text_of(content) or ""
    return compact(content)


def _set_content(history: History, hits: Sequence[Hit], text: Callable[[Any], str]) -> History:
    """Replace the hit messages' content with ``text(content)``, leaving fatal hits alone."""
    changes = {}
    for hit in hits:
        if not hit.fatal:
            message = history.messages[hit.index]
            changes[hit.index] = {**message, "content": text(message.get("content"))}
    return history.replace(changes)


@tool_content_shape.repair("stringify")
def _stringify_tool_content(history: History, hits: Sequence[Hit], params: Params) -> History:
    return _set_content(history, hits, _as_tool_text)


def _part_hit(i: int, parts: list[Any]) -> Hit:
    """A join hit, or a fatal hit naming the first part that is not text."""
    for k, part in enumerate(parts):
        if text_of([part]) is None:
            part_type = part.get("type") if type(part) is dict else None
            what = f"a {part_type!r} part" if type(part_type) is str else kind(part)
            return Hit(i, f".content[{k}]", f"{what} cannot be sent to this upstream", fatal=True)
    return Hit(i, ".content", "content is an array of parts, expected a string")


@rule(
    "content_parts_unsupported",
    hint="Send content as a plain string to this upstream, and images to one that reads them.",
)
def content_parts_unsupported(history: History, params: Params) -> list[Hit]:
    """Content sent as an array of parts to an upstream that only takes strings (DeepSeek).

    DeepSeek: ``Failed to deserialize the JSON body into the target type: messages[9]: invalid
    type: sequence, expected a string``, and for image parts ``data did not match any variant
    of untagged enum ChatCompletionRequestContent``. The ``join`` repair joins text parts with
    newlines (an empty array becomes ``""``); image, audio or other parts cannot be turned
    into text, so they are rejected.
    """
    if params.get("dialect") != "deepseek" or list not in views.odd_types(history):
        return []
    messages = history.messages
    return [
        _part_hit(i, messages[i]["content"])
        for i in history.index.odd_content
        if type(messages[i].get("content")) is list
    ]


@content_parts_unsupported.repair("join")
def _join_parts(history: History, hits: Sequence[Hit], params: Params) -> History:
    return _set_content(history, hits, lambda content: text_of(content) or "")


RULES = (tool_content_shape, content_parts_unsupported)
