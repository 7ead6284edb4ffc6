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
from proxy.core.providers import Provider, provider_of
from proxy.core.rule import Hit, Params, rule


def _parts_hit(i: int, content: list[Any], provider: Provider) -> Hit | None:
    """Why a tool message's parts must become one string, if they must."""
    if text_of(content) is None:
        if provider.tool_text_only and provider.content_parts:
            return _part_hit(i, content)  # fatal: a non-text part cannot become text
        return None  # image_outside_user's or content_parts_unsupported's business
    if not content:
        return Hit(i, ".content", "tool content is an empty array")
    if provider.tool_text_only:
        return Hit(i, ".content", "tool content is an array of parts; this upstream takes a string")
    if any(type(part) is str for part in content):
        return Hit(i, ".content", "tool content is an array of bare strings, not content parts")
    return None


@rule(
    tools_only=True,
    hint='Send tool results as a string: JSON-encode structured results, join text parts, "" '
    "when there is none.",
)
def tool_content_shape(history: History, params: Params) -> list[Hit]:
    """A ``tool`` message whose content is an object, number, boolean, null or missing.

    Gemini: ``Expected string or list of content parts, got: null`` (G9); DeepSeek needs the
    key (``missing field `content```, D11) and a string (``invalid type: sequence, expected a
    string``, D9). Gemini's compat layer wants a string too (seed 002: LangChain's
    ``ToolMessage`` with content blocks was refused). The ``stringify`` repair encodes values
    as compact JSON, null or missing as ``""``, and joins text parts with newlines where the
    upstream's record wants a string (DeepSeek, Gemini) or the parts are bare strings. A
    non-text part (an image) in a tool message cannot become text: where the upstream takes
    parts elsewhere but a string here (Gemini) the hit is fatal and names the part (the
    request is rejected, nothing is dropped); where it takes no parts at all (DeepSeek)
    ``content_parts_unsupported`` rejects it; elsewhere it is ``image_outside_user``'s.
    """
    if "tool" not in views.odd_roles(history):
        return []
    messages = history.messages
    provider = provider_of(params)
    hits = []
    for i in history.index.odd_content:
        message = messages[i]
        content = message.get("content")
        if message["role"] != "tool" or type(content) is str:
            continue
        if type(content) is list:
            hit = _parts_hit(i, content, provider)
        elif "content" not in message:
            hit = Hit(i, ".content", "tool message without content")
        else:
            hit = Hit(i, ".content", f"tool content is {kind(content)}, expected a string")
        if hit is not None:
            hits.append(hit)
    return hits


def _as_tool_text(content: Any) -> str:
    if content is None:
        return ""
    if type(content) is list:
        return text_of(content) or ""
    return compact(content)


def _set_content(history: History, hits: Sequence[Hit], text: Callable[[Any], Any]) -> History:
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
    hint="Send content as a plain string to this upstream (its text parts joined), and images to "
    "one that reads them.",
)
def content_parts_unsupported(history: History, params: Params) -> list[Hit]:
    """Content sent as an array of parts to an upstream that only takes strings (DeepSeek).

    DeepSeek: ``Failed to deserialize the JSON body into the target type: messages[9]: invalid
    type: sequence, expected a string`` (D9), and for image parts ``data did not match any
    variant of untagged enum ChatCompletionRequestContent`` (D10). Only upstreams whose record
    says they take no parts have hits. The ``join`` repair joins text parts with newlines (an
    empty array becomes ``""``); image, audio or other parts cannot be turned into text, so
    they are rejected.
    """
    if provider_of(params).content_parts or list not in views.odd_types(history):
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


@rule(
    hint="Send content as a string or an array of content parts, never as a bare object.",
)
def content_object(history: History, params: Params) -> list[Hit]:
    """A message whose content is a bare object, not a list of content parts.

    A client that stores one content part unwrapped. DashScope (§4 Qwen):
    ``Invalid type for 'messages.[0].content': expected one of a string or array of objects,
    but got an object instead.``; OpenAI's schema and the others' refuse it too. The ``wrap``
    repair makes a text part (``{"type": "text", "text": …}``) its text, and puts any other
    content part (an object with a string ``type``) in a list of one. An object that is no
    content part cannot be read either way: the hit is fatal (nothing is dropped or guessed),
    except in a tool message, where ``tool_content_shape`` encodes it as JSON text.
    """
    if dict not in views.odd_types(history):
        return []
    messages = history.messages
    hits = []
    for i in history.index.odd_content:
        content = messages[i].get("content")
        if type(content) is not dict:
            continue
        if type(content.get("type")) is str:
            hits.append(Hit(i, ".content", "content is an object, not an array of parts"))
        elif messages[i]["role"] != "tool":
            detail = "content is an object that is no content part"
            hits.append(Hit(i, ".content", detail, fatal=True))
    return hits


def _wrapped(content: Any) -> Any:
    text = content.get("text")
    if content.get("type") == "text" and type(text) is str:
        return text
    return [content]


@content_object.repair("wrap")
def _wrap_object(history: History, hits: Sequence[Hit], params: Params) -> History:
    return _set_content(history, hits, _wrapped)


RULES = (content_object, tool_content_shape, content_parts_unsupported)
