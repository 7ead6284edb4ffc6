"""Rules about what a message's content may be: images, null and empty contents.

They run after the turn-order and provider rules, so that every earlier repair's output gets
the same finishing: no message leaves with a ``content`` its upstream refuses. Error texts
quoted in the docstrings are the providers' own, from ``provider-rules.md`` (rows O14, O18,
D11, D13, G9-G11).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from proxy.core.chat.messages import History, Message, tool_calls_of
from proxy.core.chat.rules import views
from proxy.core.chat.rules.text import is_empty
from proxy.core.providers import Provider, provider_of
from proxy.core.rule import Hit, Params, rule

IMAGE_PARTS = frozenset({"image_url", "input_image", "image"})
MOVED_IMAGE = "[image moved to the next user message]"
MOVED_HERE = "[images from the messages above]"


def _has_calls(message: Message) -> bool:
    """An assistant turn that calls tools (``tool_calls`` or the legacy ``function_call``)."""
    return message["role"] == "assistant" and (
        bool(tool_calls_of(message)) or message.get("function_call") is not None
    )


def _is_image(part: Any) -> bool:
    return type(part) is dict and type(kind := part.get("type")) is str and kind in IMAGE_PARTS


@rule(
    hint="Send images in user messages only; tool and assistant messages carry text.",
)
def image_outside_user(history: History, params: Params) -> list[Hit]:
    """Image parts (``image_url``, ``input_image``, ``image``) in assistant or tool messages.

    OpenAI (O18): ``Invalid 'messages[234]'. Image URLs are only allowed for messages with role
    'user', but this message with role 'tool' contains an image URL.`` (screenshots returned by
    tools, generated images stored in assistant turns). The ``move`` repair replaces each image
    with a short text part saying where it went, and puts the images, in order, in one user
    message inserted right after the tool block (right after the assistant message when no
    tool messages follow it).
    """
    if list not in views.odd_types(history):
        return []
    messages = history.messages
    hits: list[Hit] = []
    for i in history.index.odd_content:
        content = messages[i].get("content")
        if type(content) is list and (role := messages[i]["role"]) in ("assistant", "tool"):
            hits.extend(
                Hit(i, f".content[{k}]", f"image part in a message with role {role!r}")
                for k, part in enumerate(content)
                if _is_image(part)
            )
    return hits


@image_outside_user.repair("move")
def _move_images(history: History, hits: Sequence[Hit], params: Params) -> History:
    messages = history.messages
    changes: dict[int, Message] = {}
    moved: dict[int, list[Any]] = {}  # end of the block -> its images, in order
    end = -1
    for i in sorted({h.index for h in hits}):
        if i > end:  # a new block: this message and the tool messages right after it
            end = i
            while end + 1 < len(messages) and messages[end + 1]["role"] == "tool":
                end += 1
        content = messages[i]["content"]
        moved.setdefault(end, []).extend(p for p in content if _is_image(p))
        kept = [{"type": "text", "text": MOVED_IMAGE} if _is_image(p) else p for p in content]
        changes[i] = {**messages[i], "content": kept}
    entries: list[tuple[Message, int | None]] = []
    for j, message in enumerate(messages):
        entries.append((changes.get(j, message), j))
        if j in moved:
            user = {"role": "user", "content": [{"type": "text", "text": MOVED_HERE}, *moved[j]]}
            entries.append((user, None))
    return history.rebuild(entries)


def _kind(message: Message, provider: Provider) -> str:
    """The message's kind for the provider record's content fields (``caller`` or its role).

    A legacy ``function_call`` makes a caller only where the upstream takes the key: where it
    does not, ``unknown_message_field`` strips it later and the message must stand without it.
    """
    if message["role"] == "assistant" and tool_calls_of(message):
        return "caller"
    legacy = message.get("function_call") is not None and provider.takes(
        "assistant", "function_call"
    )
    return "caller" if message["role"] == "assistant" and legacy else message["role"]


@rule(
    hint="Leave 'content' out where the upstream takes that (a tool-call turn); elsewhere send it "
    'as a string ("" when there is nothing to say).',
)
def content_null(history: History, params: Params) -> list[Hit]:
    """``content: null`` or no ``content`` on a message where the upstream refuses it.

    Where each is refused is the upstream's record (``null_content``, ``missing_content``).
    OpenAI (O14) allows both only on an assistant message with ``tool_calls``/``function_call``
    (``Invalid value for 'content': expected a string, got null.``). DeepSeek needs the key on
    every message (D11: ``missing field `content```) and refuses null on user and tool
    messages (D13), not on a tool-call turn (D12 asks for content *or* tool_calls). Gemini
    refuses null everywhere (G9: ``Expected string or list of content parts, got: null``) and
    takes the key left out of a tool-call turn (G10's workaround). The ``fix`` repair leaves
    the key out where the upstream takes that, and sets ``""`` elsewhere. Where the record
    refuses empty arrays too (xAI's ``Each message must have at least one content element.``),
    ``content: []`` is fixed the same way.
    """
    provider = provider_of(params)
    null_ok, missing_ok = provider.null_content, provider.missing_content
    empty_list = not provider.empty_parts and list in views.odd_types(history)
    if not empty_list and _no_null_problem(history, null_ok, missing_ok):
        return []
    messages = history.messages
    hits: list[Hit] = []
    for i in history.index.odd_content:
        message = messages[i]
        if empty_list and message.get("content") == []:
            hits.append(Hit(i, ".content", "content is an empty array"))
        if message.get("content") is not None:
            continue
        kind = _kind(message, provider)
        if "content" in message and kind not in null_ok:
            hits.append(Hit(i, ".content", "content is null", data=kind in missing_ok))
        elif "content" not in message and kind not in missing_ok:
            hits.append(Hit(i, ".content", "content is missing"))
    return hits


def _no_null_problem(history: History, null_ok: frozenset[str], missing_ok: frozenset[str]) -> bool:
    """Fast path: no null or missing content at all, or only on the usual tool-call turns and
    the upstream takes both there."""
    if None not in views.odd_contents(history):
        return True
    if "caller" in null_ok and "caller" in missing_ok:
        return views.nulls_only_on_call_turns(history)
    return False


@content_null.repair("fix")
def _fix_null(history: History, hits: Sequence[Hit], params: Params) -> History:
    changes = {}
    for hit in hits:
        message = history.messages[hit.index]
        if hit.data:  # the upstream takes the key left out here
            changes[hit.index] = {k: v for k, v in message.items() if k != "content"}
        else:
            changes[hit.index] = {**message, "content": ""}
    return history.replace(changes)


@rule(
    hint="Send some text where content or a text part would be empty (a placeholder such as "
    "'(empty)' for an empty tool result).",
    params={"text": "(empty)"},
)
def empty_text(history: History, params: Params) -> list[Hit]:
    """Empty text where the upstream refuses it: ``content: ""`` (or ``[]``) and empty text parts.

    Gemini (G11): ``Unable to submit request because it has an empty text parameter. Add a
    value to the parameter and try again.`` (an empty tool result, typically). Hits: an empty
    string or empty list as the content of a system, user, tool or plain assistant message,
    and ``{"type": "text", "text": ""}`` parts anywhere. An assistant message with tool calls
    needs no text. The ``placeholder`` repair writes ``text`` (default ``(empty)``) there. The
    presets switch it on for Gemini only; it means the same for any upstream.
    """
    types = views.odd_types(history)
    if str not in types and list not in types:  # an odd string is an empty one
        return []
    messages = history.messages
    hits: list[Hit] = []
    for i in history.index.odd_content:
        content = messages[i].get("content")
        if content is None:
            continue
        if content in _BLANKS:
            if not _has_calls(messages[i]):
                hits.append(Hit(i, ".content", "empty text content"))
        elif type(content) is list:
            hits.extend(
                Hit(i, f".content[{k}].text", "empty text part")
                for k, part in enumerate(content)
                if _empty_part(part)
            )
    return hits


_BLANKS: tuple[Any, ...] = ("", [])


def _empty_part(part: Any) -> bool:
    return type(part) is dict and part.get("type") == "text" and part.get("text") == ""


@empty_text.repair("placeholder")
def _placeholder(history: History, hits: Sequence[Hit], params: Params) -> History:
    text = params.get("text") or "(empty)"
    changes = {}
    for i in {h.index for h in hits}:
        message = history.messages[i]
        content = message["content"]
        if content in _BLANKS:
            changes[i] = {**message, "content": text}
        else:
            parts = [{**p, "text": text} if _empty_part(p) else p for p in content]
            changes[i] = {**message, "content": parts}
    return history.replace(changes)


@rule(
    hint="Leave out a system message that has nothing to say.",
)
def empty_system_message(history: History, params: Params) -> list[Hit]:
    """An empty system message (missing, null, ``""`` or ``[]`` content) where the upstream
    refuses one (the record's ``empty_refused``).

    Kimi (issue 22): ``Invalid request: the message at position 0 with role 'system' must not
    be empty`` (a client that sends its system prompt slot even when the prompt is blank).
    The ``drop`` repair removes the message: there is nothing in it to keep. A history that
    would be left empty is rejected instead.
    """
    refused = provider_of(params).empty_refused
    if not refused or "system" not in refused or "system" not in views.odd_roles(history):
        return []
    messages = history.messages
    empty = [
        i
        for i in history.index.odd_content
        if messages[i]["role"] == "system" and is_empty(messages[i].get("content"))
    ]
    fatal = len(empty) == len(messages)  # dropping them would leave nothing to send
    return [Hit(i, ".content", "empty system message", fatal=fatal) for i in empty]


@empty_system_message.repair("drop")
def _drop_empty_system(history: History, hits: Sequence[Hit], params: Params) -> History:
    return history.without({hit.index for hit in hits if not hit.fatal})


RULES = (image_outside_user, content_null, empty_text, empty_system_message)
