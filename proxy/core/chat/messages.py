"""Typed views and helpers over raw chat-completions message dicts.

Pure: no I/O. Messages stay the plain dicts ``orjson.loads`` produced; a :class:`History` is an
immutable list of them plus, for each, the index it had in the original request, so that every
finding can name a JSON path into what the client actually sent.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from itertools import chain
from operator import itemgetter
from typing import Any, Generic, TypeVar, overload

from proxy.core.history import CopyOnWrite, MalformedHistory

T = TypeVar("T")

Message = dict[str, Any]

KNOWN_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


def messages_of(body: Any) -> list[Message]:
    """Return ``body["messages"]`` after the structural checks that hold whatever the policy."""
    if type(body) is not dict:
        raise MalformedHistory("The request body must be a JSON object.", None)
    messages = body.get("messages")
    if messages is None:
        raise MalformedHistory("'messages' is a required property.", "messages")
    if type(messages) is not list:
        raise MalformedHistory("'messages' must be an array of message objects.", "messages")
    if not messages:
        raise MalformedHistory("'messages' must not be empty.", "messages")
    for i, message in enumerate(messages):
        if type(message) is not dict:
            raise MalformedHistory(f"messages[{i}] must be an object.", f"messages[{i}]")
        if type(message.get("role")) is not str:
            raise MalformedHistory(f"messages[{i}].role must be a string.", f"messages[{i}].role")
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


_ROLE = itemgetter("role")
_TOOL_CALLS = itemgetter("tool_calls")


def at(messages: list[Message], positions: list[int]) -> Sequence[Message]:
    """``messages[i] for i in positions``, built in C (itemgetter of one index is no tuple)."""
    if len(positions) > 1:
        return itemgetter(*positions)(messages)  # type: ignore[no-any-return]
    return [messages[i] for i in positions]


class cached(Generic[T]):
    """:func:`functools.cached_property` without its lock: Python 3.11's takes an ``RLock`` on
    each first computation, a measurable share of a clean history's check; an index belongs to
    one request and is never shared between threads."""

    def __init__(self, compute: Callable[[Any], T]) -> None:
        self.compute = compute
        self.name = compute.__name__
        self.__doc__ = compute.__doc__

    @overload
    def __get__(self, owner: None, cls: type | None = None) -> cached[T]: ...
    @overload
    def __get__(self, owner: object, cls: type | None = None) -> T: ...
    def __get__(self, owner: object | None, cls: type | None = None) -> T | cached[T]:
        if owner is None:
            return self
        value: T = self.compute(owner)
        owner.__dict__[self.name] = value  # found there from now on: no descriptor call
        return value


class Index:
    """What one pass over a history learns, so that rules skip clean histories cheaply.

    The pass groups the messages by role and notes the positions of the ``tools`` (role
    ``tool``), of the ``callers`` (other messages with a ``tool_calls`` key) and of the messages
    with ``odd_content`` (missing, null, empty or not a string). The rest is computed on first
    use, with C-level iteration (``map``, ``set().union``, ``itemgetter``) over those groups, so
    that the fast paths of a clean history pay only for what they ask, and share it.
    """

    def __init__(self, messages: list[Message]) -> None:
        assistant: list[int] = []
        user: list[int] = []
        other: defaultdict[str, list[int]] = defaultdict(list)
        tools: list[int] = []
        callers: list[int] = []
        odd: list[int] = []
        # The one Python-level loop over every message: keep its body minimal. The usual roles
        # are told apart by comparison: a role fresh from the JSON parser has no cached hash,
        # and hashing one per message costs more than comparing it with a literal or two.
        for i, message in enumerate(messages):
            role = message["role"]
            if role == "tool":
                tools.append(i)
            else:
                if role == "assistant":
                    assistant.append(i)
                elif role == "user":
                    user.append(i)
                else:
                    other[role].append(i)
                if "tool_calls" in message:
                    callers.append(i)
            content = message.get("content")
            if type(content) is not str or not content:
                odd.append(i)
        self._set(messages, {"tool": tools, "assistant": assistant, "user": user, **other})
        self.callers = callers
        self.odd_content = odd

    def _set(
        self, messages: list[Message], positions: dict[str, list[int]], kept: Index | None = None
    ) -> None:
        """The groups by role, from each role's positions (tool, assistant, user, then the
        others in order of first appearance); a group whose positions are ``kept``'s very list
        is ``kept``'s group (an edit left those messages alone)."""
        self.messages = messages
        #: Where each role's messages are, in order (roles with none left out).
        self.positions: Mapping[str, list[int]] = {r: p for r, p in positions.items() if p}
        old = kept.positions if kept is not None else {}
        self.by_role: Mapping[str, Sequence[Message]] = {
            role: kept.by_role[role]
            if kept is not None and old.get(role) is where
            else at(messages, where)
            for role, where in self.positions.items()
        }
        self.roles = frozenset(self.by_role)
        self.tools = positions["tool"]

    @classmethod
    def of_parts(
        cls,
        messages: list[Message],
        positions: dict[str, list[int]],
        callers: list[int],
        odd_content: list[int],
        kept: Index | None = None,
    ) -> Index:
        """The index whose pass over ``messages`` would have found these positions (a history
        edited from an indexed one: :mod:`proxy.core.chat.splice`); groups whose positions are
        the very lists of ``kept`` share its messages."""
        index = cls.__new__(cls)
        index._set(messages, positions, kept)
        index.callers = callers
        index.odd_content = odd_content
        return index

    @cached
    def keys(self) -> Mapping[str, frozenset[str]]:
        """The union of the message keys, per role."""
        return {role: frozenset().union(*group) for role, group in self.by_role.items()}

    @property
    def tool_messages(self) -> Sequence[Message]:
        return self.by_role.get("tool", ())

    @cached
    def caller_messages(self) -> Sequence[Message]:
        return at(self.messages, self.callers)

    @cached
    def call_lists(self) -> list[Any]:
        """The ``tool_calls`` value of every caller, whatever its type."""
        return list(map(_TOOL_CALLS, self.caller_messages))

    @cached
    def regular(self) -> bool:
        """Whether every caller is an assistant message whose ``tool_calls`` is a list.

        Fast paths over the calls need a regular history and leave the rare others to their
        exact per-message scans.
        """
        roles = list(map(_ROLE, self.caller_messages))  # counted, not hashed: see __init__
        return set(map(type, self.call_lists)) <= {list} and roles.count("assistant") == len(roles)

    @cached
    def calls(self) -> list[Any] | None:
        """Every entry of every ``tool_calls`` list in history order; None unless regular."""
        return list(chain.from_iterable(self.call_lists)) if self.regular else None


def build_index(messages: list[Message]) -> Index:
    """The :class:`Index` of ``messages`` (one pass; the rest on demand)."""
    return Index(messages)


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

    @property
    def index(self) -> Index:
        if self._index is None:
            self._index = build_index(self.messages)
        return self._index

    @property
    def built_index(self) -> Index | None:
        """The index if it was built (:attr:`index` builds it)."""
        return self._index

    def seed_index(self, index: Index) -> None:
        """Use ``index``, carried over by an edit, instead of building one."""
        self._index = index

    def _carry(self, edited: History, runs: list[tuple[int, int, int]]) -> None:
        splice.carry(self, edited, runs)

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
    return all(_TOOL_KEYS.isdisjoint(keys) for keys in index.keys.values())


# The carry through edits builds on History and Index, so it is imported once they exist (an
# import statement inside ``_carry`` cost some 7,000 instructions a repair).
from proxy.core.chat import splice  # noqa: E402
