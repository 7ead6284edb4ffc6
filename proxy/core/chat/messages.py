"""Typed views and helpers over raw chat-completions message dicts.

Pure: no I/O. Messages stay the plain dicts ``orjson.loads`` produced; a :class:`History` is an
immutable list of them plus, for each, the index it had in the original request, so that every
finding can name a JSON path into what the client actually sent.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from proxy.core.chat import splice
from proxy.core.chat.index import Index

# Re-exported: the rules import a message's type from here.
from proxy.core.chat.index import Message as Message  # noqa: PLC0414
from proxy.core.history import CopyOnWrite, MalformedHistory

KNOWN_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


def messages_of(body: Any) -> list[Message]:
    """Return ``body["messages"]`` after the structural checks that hold whatever the policy:
    a non-empty list of objects with a string ``role`` (:class:`Index` checks the messages in
    its one pass, raising :class:`MalformedHistory` naming the place)."""
    messages = listed(body)
    Index(messages)
    return messages


def listed(body: Any) -> list[Any]:
    """``body["messages"]``, a non-empty list (its messages not yet checked)."""
    if type(body) is not dict:
        raise MalformedHistory("The request body must be a JSON object.", None)
    messages = body.get("messages")
    if messages is None:
        raise MalformedHistory("'messages' is a required property.", "messages")
    if type(messages) is not list:
        raise MalformedHistory("'messages' must be an array of message objects.", "messages")
    if not messages:
        raise MalformedHistory("'messages' must not be empty.", "messages")
    return messages


def tool_calls_of(message: Message) -> list[Any]:
    """The message's ``tool_calls`` when it is a list, else an empty list."""
    calls = message.get("tool_calls")
    return calls if type(calls) is list else []


def call_id(call: Any) -> str | None:
    """A tool call's id when it is a non-empty string."""
    if type(call) is dict:
        value = call.get("id")
        if type(value) is str and value:
            return value
    return None


def function_name(call: Any) -> str | None:
    """A tool call's ``function.name`` when it is a non-empty string."""
    if type(call) is dict:
        function = call.get("function")
        if type(function) is dict:
            name = function.get("name")
            if type(name) is str and name:
                return name
    return None


def text_of(content: Any, separator: str = "\n") -> str | None:
    """Join the text of ``content`` (a string or a list of text parts); None if not only text."""
    if type(content) is str:
        return content
    if type(content) is not list:
        return None
    texts = []
    for part in content:
        if type(part) is str:
            texts.append(part)
        elif type(part) is dict and part.get("type") == "text" and type(part.get("text")) is str:
            texts.append(part["text"])
        else:
            return None
    return separator.join(texts)


def stable_id(*parts: object, prefix: str = "call_") -> str:
    """A deterministic tool-call id (29 chars) derived from ``parts``.

    Derived, not random: sanitizing the same history twice gives the same bytes, so provider
    prompt caches keep hitting.
    """
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=12).hexdigest()
    return prefix + digest


def path(index: int | None, where: str = "") -> str:
    """``messages[3].tool_calls[0].id`` style path; an inserted message has no index; -1 is
    the request itself (``tool_choice``)."""
    if index == -1:
        return where.lstrip(".")
    return f"messages[{'+' if index is None else index}]{where}"


class History(CopyOnWrite):
    """Chat ``messages`` as a copy-on-write history (:class:`~proxy.core.history.CopyOnWrite`),
    with the one-pass :class:`Index` its rules share."""

    __slots__ = ("_index",)

    def __init__(
        self,
        messages: list[Message],
        origins: list[int | None] | None = None,
        request: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(messages, origins, request)
        self._index: Index | None = None

    @classmethod
    def of(cls, body: Any) -> History:
        """The history of the request ``body``, checked (:func:`messages_of`) in the pass
        that builds its index, the body riding along."""
        messages = listed(body)
        index = Index(messages)
        history = cls(messages, request=MappingProxyType(body))
        history._index = index
        return history

    @property
    def index(self) -> Index:
        if self._index is None:
            self._index = Index(self.messages)
        return self._index

    @property
    def built_index(self) -> Index | None:
        """The index if it was built (:attr:`index` builds it)."""
        return self._index

    def _carry(self, edited: History, runs: list[tuple[int, int, int]]) -> None:
        if self._index is not None:
            edited._index = splice.carry(self._index, self, edited, runs)

    @property
    def tool_free(self) -> bool:
        """Whether no message is about a tool call: no role ``tool`` or ``function``, no
        ``tool_calls``, ``function_call`` or ``tool_call_id`` key (rules declared ``tools_only``
        have nothing to look at then)."""
        return self.memo("tool_free", _tool_free)

    def path(self, i: int, where: str = "") -> str:
        return path(-1 if i == -1 else self.origin(i), where)


_TOOL_KEYS = frozenset({"tool_calls", "function_call", "tool_call_id"})


def _tool_free(history: History) -> bool:
    index = history.index
    if index.tools or index.callers or "function" in index.roles:
        return False
    return all(map(_TOOL_KEYS.isdisjoint, index.keys.values()))  # map: no generator to make
