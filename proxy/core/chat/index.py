"""What one pass over a chat history learns (:class:`Index`), and what one pass over its calls
finds (:class:`CallFacts`): the views the rules share, so that they skip clean histories cheaply.

Pure, and independent of :class:`~proxy.core.chat.messages.History`: the history builds its
index, the views (:mod:`proxy.core.chat.rules.views`) compute the call facts, and an edit
carries both over (:mod:`proxy.core.chat.splice`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any

from proxy.core.chat import fast
from proxy.core.chat.fast import cached
from proxy.errors import MalformedHistory

Message = dict[str, Any]


def _malformed(i: int, message: Any) -> MalformedHistory:
    if type(message) is not dict:
        return MalformedHistory(f"messages[{i}] must be an object.", f"messages[{i}]")
    return MalformedHistory(f"messages[{i}].role must be a string.", f"messages[{i}].role")


def _group(other: dict[str, list[int]], i: int, message: Any, role: Any) -> None:
    """Message ``i`` into the group of its role (system, developer…: a few messages at most)."""
    if type(role) is not str:
        raise _malformed(i, message)
    group = other.get(role)
    if group is None:
        other[role] = [i]
    else:
        group.append(i)


class Index:
    """What one pass over a history learns, so that rules skip clean histories cheaply.

    The pass groups the messages by role and notes the positions of the ``tools`` (role
    ``tool``), of the ``callers`` (other messages with a ``tool_calls`` key) and of the messages
    with ``odd_content`` (missing, null, empty or not a string). The rest is computed on first
    use, over those groups with the speed layer (:mod:`proxy.core.chat.fast`), so that the fast
    paths of a clean history pay only for what they ask, and share it.
    """

    def __init__(self, messages: list[Message]) -> None:
        assistant: list[int] = []
        user: list[int] = []
        other: dict[str, list[int]] = {}  # system, developer…: a few messages at most
        tools: list[int] = []
        callers: list[int] = []
        odd: list[int] = []
        # The one Python-level loop over every message: keep its body minimal. The usual roles
        # are told apart by comparison: a role fresh from the JSON parser has no cached hash,
        # and hashing one per message costs more than comparing it with a literal or two.
        # It also checks what every policy needs (a string ``role`` on every object), where a
        # clean history pays nothing for it: a message that is no object fails its lookup.
        # Two views are learnt on the way, for less than a pass of their own would cost: the
        # callers' ``tool_calls`` and whether only assistant messages make calls.
        lists: list[Any] = []
        stray = False
        for i, message in enumerate(messages):
            try:
                role = message["role"]
            except (KeyError, TypeError, IndexError):
                raise _malformed(i, message) from None
            if role == "tool":
                tools.append(i)
            elif role == "assistant":
                assistant.append(i)
                if "tool_calls" in message:
                    callers.append(i)
                    lists.append(message["tool_calls"])
            else:
                if role == "user":
                    user.append(i)
                else:
                    _group(other, i, message, role)
                if "tool_calls" in message:
                    callers.append(i)
                    lists.append(message["tool_calls"])
                    stray = True
            # Null (a call turn's usual content) fails the first test, and skips the second.
            content = message.get("content")
            if not content or type(content) is not str:
                odd.append(i)
        self._set(messages, {"tool": tools, "assistant": assistant, "user": user, **other})
        self.callers = callers
        self.odd_content = odd
        self._learnt(lists, stray)

    def _learnt(self, lists: list[Any], stray: bool) -> None:
        """Set the caller views the pass learnt, as the cached views set themselves (a history
        without callers has nothing to spare there)."""
        if self.callers:
            self.call_lists = lists
            self.assistant_callers = not stray

    def _set(
        self,
        messages: list[Message],
        positions: dict[str, list[int]],
        kept: Index | None = None,
        same: Set[str] = frozenset(),
    ) -> None:
        """The groups by role, from each role's positions (tool, assistant, user, then the
        others in order of first appearance); a group whose positions are ``kept``'s very list,
        or whose role is in ``same``, is ``kept``'s group (an edit left those messages alone,
        or only moved them)."""
        self.messages = messages
        old = kept.positions if kept is not None else {}
        present: dict[str, list[int]] = {}
        by_role: dict[str, Sequence[Message]] = {}
        # A plain loop, not comprehensions (Python 3.11 runs each as a function of its own):
        # every request's history is indexed, most of them short.
        for role, where in positions.items():
            if not where:
                continue
            present[role] = where
            if kept is not None and (old.get(role) is where or role in same):
                by_role[role] = kept.by_role[role]
            else:
                by_role[role] = fast.at(messages, where)
        #: Where each role's messages are, in order (roles with none left out).
        self.positions: Mapping[str, list[int]] = present
        self.by_role: Mapping[str, Sequence[Message]] = by_role
        self.roles = frozenset(by_role)
        self.tools = positions["tool"]

    @classmethod
    def of_parts(
        cls,
        messages: list[Message],
        positions: dict[str, list[int]],
        callers: list[int],
        odd_content: list[int],
        *,
        kept: Index | None = None,
        same: Set[str] = frozenset(),
    ) -> Index:
        """The index whose pass over ``messages`` would have found these positions (a history
        edited from an indexed one: :mod:`proxy.core.chat.splice`); groups whose positions are
        the very lists of ``kept``, or whose role is in ``same``, share its messages."""
        index = cls.__new__(cls)
        index._set(messages, positions, kept, same)
        index.callers = callers
        index.odd_content = odd_content
        return index

    @cached
    def keys(self) -> Mapping[str, frozenset[str]]:
        """The union of the message keys, per role."""
        keys = {}
        for role, group in self.by_role.items():  # a loop: see _set
            keys[role] = fast.union(group)
        return keys

    @property
    def tool_messages(self) -> Sequence[Message]:
        return self.by_role.get("tool", ())

    @cached
    def caller_messages(self) -> Sequence[Message]:
        return fast.at(self.messages, self.callers)

    @cached
    def call_lists(self) -> list[Any]:
        """The ``tool_calls`` value of every caller, whatever its type."""
        return fast.values(self.caller_messages, "tool_calls")

    @cached
    def assistant_callers(self) -> bool:
        """Whether every caller is an assistant message (the pass over the messages learns it;
        an index pieced together by an edit looks)."""
        return fast.only(fast.values(self.caller_messages, "role"), ("assistant",))

    @cached
    def regular(self) -> bool:
        """Whether every caller is an assistant message whose ``tool_calls`` is a list.

        Fast paths over the calls need a regular history and leave the rare others to their
        exact per-message scans.
        """
        return self.assistant_callers and fast.types(self.call_lists) <= {list}

    @cached
    def empty_call_list(self) -> bool:
        """Whether some caller's ``tool_calls`` is an empty list (it opens no call block)."""
        return [] in self.call_lists

    @cached
    def answer_ids(self) -> list[Any] | None:
        """The ``tool_call_id`` of every tool message, whatever its type; None when one has
        none."""
        try:
            return fast.values(self.tool_messages, "tool_call_id")
        except KeyError:
            return None

    @cached
    def calls(self) -> list[Any] | None:
        """Every entry of every ``tool_calls`` list in history order; None unless regular."""
        return fast.flatten(self.call_lists) if self.regular else None


@dataclass(frozen=True, slots=True)
class CallFacts:
    """What one pass over every call of a regular history found, when every call is well formed
    (computed by :func:`proxy.core.chat.rules.views.call_facts`).

    Well formed: an object with a non-empty string ``id``, a string ``type`` and a ``function``
    object with a non-empty string ``name`` and an ``arguments`` key.
    """

    ids: list[str]  # the id of every call, in order
    spots: list[int]  # where each call's result sits when results follow their calls in order
    arguments: list[Any]  # the ``function.arguments`` of every call, in order
    string_arguments: bool  # every one of them is a string
    plain: bool  # no call has keys beyond id, type, function, no function beyond name, arguments
