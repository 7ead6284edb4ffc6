"""The Anthropic Messages history: the ``messages`` of ``POST /v1/messages``, and its blocks.

Pure: no I/O. Messages stay the plain dicts ``orjson.loads`` produced; a :class:`Messages` is
an immutable list of them plus, for each, the index it had in the original request, so that
every finding names a JSON path into what the client sent (``messages[6].content[2]``). The
request body rides along read-only (``Messages.request``) for rules that read ``model``,
``thinking``, ``system`` or ``tools``; the repairs that change those return a history whose
request differs (:meth:`Messages.with_fields`), and the engine reports the changed fields.

The block taxonomy is anthropic-messages.md §1 (the SDK's ``*_param.py`` types).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

from proxy.core.history import CopyOnWrite
from proxy.core.messages import index as fast
from proxy.core.messages.carry import carry
from proxy.core.messages.facts import facts_of
from proxy.core.messages.fastwalk import walked
from proxy.core.messages.index import Index, index_of, walk
from proxy.errors import MalformedHistory

Item = dict[str, Any]
Block = dict[str, Any]

#: Blocks that mean the history is about tools (``tools_only`` rules look at nothing else).
TOOL_BLOCKS = frozenset({"tool_use", "tool_result", "server_tool_use"})
THINKING = frozenset({"thinking", "redacted_thinking"})


def messages_of(body: Any, *, need_max_tokens: bool = True) -> list[Item]:
    """Return ``body["messages"]`` after the checks that hold whatever the policy (S1/S2).

    The body is an object with a string ``model`` and, unless ``need_max_tokens`` is false
    (``/v1/messages/count_tokens`` takes none), a positive integer ``max_tokens`` (A:
    ``max_tokens: Field required``; G answers 500 without it, zai-coding-plugins#15);
    ``messages`` is a non-empty list of objects with a string ``role`` and a string or list
    ``content`` whose blocks are objects with a string ``type``; ``tool_use`` and
    ``tool_result`` blocks carry string ids. Raises :class:`MalformedHistory` naming the place.
    """
    return _checked(body, need_max_tokens)[0]


def _checked(body: Any, need_max_tokens: bool = True) -> tuple[list[Item], Index]:
    """The messages of ``body`` and their index, checked in the index's one walk."""
    if type(body) is not dict:
        raise MalformedHistory("The request body must be a JSON object.", None)
    if type(body.get("model")) is not str or not body["model"]:
        raise MalformedHistory("model: Field required (a non-empty string).", "model")
    if need_max_tokens:
        tokens = body.get("max_tokens")
        if type(tokens) is not int or tokens < 1:
            raise MalformedHistory("max_tokens: Field required (a positive integer).", "max_tokens")
    messages = body.get("messages")
    if type(messages) is not list or not messages:
        raise MalformedHistory("messages: a non-empty array of messages is required.", "messages")
    index = walked(messages) if fast.FAST else None  # an ordinary history, walked quicker
    return messages, walk(messages) if index is None else index


def blocks(message: Item) -> list[Block]:
    """The message's content blocks (a string content is one text block: ``[]`` here, read
    the string with :func:`text_of`)."""
    content = message.get("content")
    return content if type(content) is list else []


def as_blocks(message: Item) -> list[Block]:
    """The content as a list of blocks, a string becoming one text block (for merging)."""
    content = message.get("content")
    if type(content) is str:
        return [{"type": "text", "text": content}] if content else []
    return list(content) if type(content) is list else []


def kinds(message: Item) -> list[str]:
    """The ``type`` of each content block."""
    return [b["type"] for b in blocks(message)]


def path(index: int | None, where: str = "") -> str:
    """``messages[3].content[1]``; an inserted message has no index; -1 is the request."""
    if index == -1:
        return where.lstrip(".")
    return f"messages[{'+' if index is None else index}]{where}"


class Messages(CopyOnWrite):
    """Messages ``messages`` as a copy-on-write history
    (:class:`~proxy.core.history.CopyOnWrite`)."""

    __slots__ = ()

    @classmethod
    def of(cls, body: Any) -> Messages:
        """The messages of the request ``body`` (:func:`messages_of`), the body riding along."""
        messages, index = _checked(body)
        history = cls(messages, request=MappingProxyType(body))
        history.seed("index", index)  # built in the check's walk
        return history

    @property
    def tool_free(self) -> bool:
        """Whether no block is a ``tool_use``, ``tool_result`` or ``server_tool_use``."""
        return not index_of(self).has(TOOL_BLOCKS)

    @property
    def roles(self) -> list[Any]:
        """The role of every message, in order (read-only: the index's list)."""
        return index_of(self).roles

    def path(self, i: int, where: str = "") -> str:
        return path(-1 if i == -1 else self.origin(i), where)

    def with_fields(self, changes: Mapping[str, Any]) -> Messages:
        """The same messages in a request whose top-level ``changes`` are applied (``system``,
        ``thinking``, ``tools``); the engine forwards them with the messages."""
        request = MappingProxyType({**self.request, **changes})
        return self._same_messages(request)

    def without_fields(self, names: frozenset[str]) -> Messages:
        """The same messages in a request without the top-level fields ``names``."""
        request = MappingProxyType({k: v for k, v in self.request.items() if k not in names})
        return self._same_messages(request)

    def replace(self, changes: Mapping[int, Item]) -> Messages:
        """:meth:`CopyOnWrite.replace`, the index carried over (only the new items walked)."""
        edited = super().replace(changes)
        if edited is not self:
            kept, at = [], 0
            for i in sorted(changes):
                kept.append((at, i, at))
                at = i + 1
            kept.append((at, len(self.messages), at))
            self._carry(edited, kept)
        return edited

    def _carry(self, edited: CopyOnWrite, runs: list[tuple[int, int, int]]) -> None:
        known, index = self.memoized("index")
        if known:
            edited.seed("index", carry(index, edited.messages, runs))

    def _same_messages(self, request: Mapping[str, Any]) -> Messages:
        """These messages in ``request``: the index (which reads only the messages) carries
        over; the analyses that read the request (pairing reads ``thread``) do not."""
        history = type(self)(self.messages, self.origins, request)
        known, index = self.memoized("index")
        if known:
            history.seed("index", index)
        return history

    def named(self, index: int, dialect: str) -> frozenset[int]:
        """The positions the ``messages.{index}`` of an upstream of ``dialect`` names: Anthropic
        counts merged messages (consecutive ones of one role are one, anthropic-messages.md
        §3), so its index names every message of that run; others count messages."""
        if not facts_of(dialect).merges_same_role:
            return frozenset({index})
        runs: list[list[int]] = []
        roles = self.roles
        for i, role in enumerate(roles):
            if runs and role != "system" and roles[runs[-1][0]] == role:
                runs[-1].append(i)
            else:
                runs.append([i])
        return frozenset(runs[index]) if 0 <= index < len(runs) else frozenset()

    def blocks_at(self) -> Iterator[tuple[int, int, Block]]:
        """``(i, j, block)`` for every content block of every message."""
        for i, message in enumerate(self.messages):
            for j, block in enumerate(blocks(message)):
                yield i, j, block
