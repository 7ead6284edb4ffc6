"""One index per Gemini history: what the rules look up, found in one walk over its parts.

Every Gemini rule used to walk every part of the history, reading each key in both spellings
(issue 34: sanitizing a clean 200-message body cost 18 times its parse). The :class:`Index` is
built in one pass over contents and parts (roles, call and response turns and their sizes, the
contents holding a part out of the ordinary) and memoised on the history
(:meth:`~proxy.core.history.CopyOnWrite.memo`), so that a clean history costs that one walk
plus the rules' lookups. A repair makes a new history object (copy-on-write), whose index is
the old one's carried through the edit (:mod:`proxy.core.gemini.carry`). The walk of a
request's history doubles as its shape check (:meth:`~proxy.core.gemini.items.Contents.of`):
a content it finds out of the ordinary is checked plainly
(:func:`~proxy.core.gemini.parts.check_content`) after it.

An *ordinary* part has exactly one data field (text, inline data, a call, a response…), known
keys only (``id`` on a part is not one), no key in both spellings, and a value no per-part rule
looks twice at: a non-empty text, a ``functionCall`` whose ``args`` is an object (or absent), a
named ``functionResponse`` whose ``response`` is an object (or absent), neither holding a
signature or ``tool_call_id``; any other data field set, and no metadata null. The per-part
rules (struct values, signatures in calls, foreign fields, empty parts, response names) find
nothing in an ordinary part, so with the fast exits (:data:`FAST`) they read only the
:attr:`Index.unusual` contents; the test suite compares them with the rules run over every part
(``tests/core/gemini/test_index.py``).

The index reads only the contents, never the request or a rule's parameters.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import repeat
from operator import add, sub
from typing import TYPE_CHECKING, Any

from proxy.core.chat.fast import only
from proxy.core.gemini.parts import (
    DATA,
    KIND_KEYS,
    ODD,
    RESPONSE,
    ROLE_ALIASES,
    TEXT,
    Item,
    Part,
    call_of,
    kind_of,
    response_of,
)

if TYPE_CHECKING:
    from proxy.core.gemini.items import Contents

#: The rules take the early exits the index proves safe (the property tests turn them off and
#: compare).
FAST = True

#: How many parts of one kind (calls, responses) each content holding some holds.
Sizes = dict[int, int]
#: How a content that is out of the ordinary is checked after the walk (raises
#: :class:`~proxy.core.history.MalformedHistory`): the content and its place (``contents[3]``).
Check = Callable[[Any, str], None]


@dataclass(frozen=True, slots=True)
class Index:
    """What one walk over a Gemini history found. Read-only: rules never change it."""

    sent_roles: list[Any]  # the role each content was sent with (None: none)
    calls: Sizes  # how many functionCall parts the contents holding some hold, in order
    responses: Sizes  # how many functionResponse parts the contents holding some hold
    roles: list[str]  # :func:`~proxy.core.gemini.parts.role_of` every content
    sent: frozenset[Any]  # the roles as sent
    call_turns: list[int]  # model contents holding a functionCall, in order
    response_turns: list[int]  # user contents holding a functionResponse, in order
    sizes: Sizes  # calls of each call turn, responses of each response turn
    unusual: list[int]  # contents without parts, or holding a part that is not ordinary
    tools: bool  # some part is a functionCall or a functionResponse
    #: What :meth:`settled`, :meth:`unbalanced`… found (made when asked).
    _facts: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def is_call_turn(self, i: int) -> bool:
        """Whether content ``i`` is a model content holding a ``functionCall``."""
        return i in self.sizes and self.roles[i] == "model"

    def is_response_turn(self, i: int) -> bool:
        """Whether content ``i`` is a user content holding a ``functionResponse``."""
        return i in self.sizes and self.roles[i] == "user"

    def unbalanced(self) -> list[tuple[int, int, int]]:
        """``(call turn, its calls, the responses of the content after it)`` of the call turns
        not answered by as many responses (0 when the content after is no response turn)."""
        found = self._facts.get("unbalanced")
        if found is None:
            sizes, roles = self.sizes, self.roles
            counts = [
                (i, sizes[i], sizes[i + 1] if i + 1 in sizes and roles[i + 1] == "user" else 0)
                for i in self.call_turns
            ]
            found = self._facts["unbalanced"] = [t for t in counts if t[1] != t[2]]
        return found

    def settled(self) -> bool:
        """Whether each call turn is followed by a response turn of as many responses, and
        each response turn follows a call turn (the turn rules then find nothing to pair)."""
        found = self._facts.get("settled")
        if found is None:
            calls, responses, size = self.call_turns, self.response_turns, self.sizes.__getitem__
            found = self._facts["settled"] = list(map(add, calls, repeat(1))) == responses and (
                list(map(size, calls)) == list(map(size, responses))
            )
        return found

    def calls_follow_users(self) -> bool:
        """Whether each call turn comes right after a user content."""
        found = self._facts.get("calls_follow_users")
        if found is None:
            calls = self.call_turns
            before = list(map(self.roles.__getitem__, map(sub, calls, repeat(1))))
            found = self._facts["calls_follow_users"] = (not calls or calls[0] > 0) and (
                before.count("user") == len(before)
            )
        return found


def index_of(history: Contents) -> Index:
    """The :class:`Index` of ``history`` (memoised on it)."""
    return history.memo("index", build)


def build(history: Contents) -> Index:
    """One pass over every content and part of ``history`` (not memoised)."""
    return scan(history.messages)


#: Keys inside a call or response that some rule reads (a signature, OpenAI's tool_call_id).
_ODD_INNER = frozenset({"thoughtSignature", "thought_signature", "toolCallId", "tool_call_id"})


# --- the walk -----------------------------------------------------------------------------------


def scan(contents: list[Item], check: Check | None = None, name: str = "contents") -> Index:
    """The index of ``contents``; with ``check``, each content out of the ordinary (a part not
    ordinary, no parts, a role other than ``user`` and ``model``) is checked, in order, after
    the walk (``name``: where the contents are, for the place): every malformed content is
    one, so the first of them raises, as a check of every content would."""
    try:
        sent, calls, responses, unusual = walk(contents)
    except (AttributeError, TypeError, KeyError):
        if check is None:
            raise
        for i, content in enumerate(contents):  # not objects where objects belong: say which
            check(content, f"{name}[{i}]")
        raise
    usual = only(sent, _USUAL)  # compared once: each role is a fresh string (no cached hash)
    if check is not None:
        for i in unusual if usual else _irregular(sent, unusual):
            check(contents[i], f"{name}[{i}]")
    return indexed(sent, calls, responses, unusual, usual=usual)


def walk(contents: list[Item]) -> tuple[list[Any], Sizes, Sizes, list[int]]:
    """The role each content was sent with, how many functionCall and functionResponse parts
    the contents holding some hold, and which contents hold no parts or a part that is not
    ordinary."""
    sent: list[Any] = []
    calls: Sizes = {}
    responses: Sizes = {}
    unusual: list[int] = []
    odd_inner, object_or_none = _ODD_INNER, _OBJECT_OR_NONE
    # The one Python-level loop over every part: keep its body minimal. A part of one key (and
    # maybe a signature) is told by membership, without a tuple of its keys to make and hash;
    # any other, by :func:`_part`.
    for i, content in enumerate(contents):
        parts = content.get("parts")
        parts = parts if type(parts) is list else ()
        odd = not parts
        c = r = 0
        for part in parts:
            n = len(part)
            if n != 1 and (n != 2 or "thoughtSignature" not in part):
                is_call, is_response, ordinary = _part(part)
                c, r, odd = c + is_call, r + is_response, odd or not ordinary
            elif "text" in part:
                value = part["text"]
                odd = odd or type(value) is not str or not value
            elif "functionCall" in part and type(value := part["functionCall"]) is dict:
                c += 1
                odd = odd or type(value.get("args")) not in object_or_none
                odd = odd or not odd_inner.isdisjoint(value)
            elif "functionResponse" in part and type(value := part["functionResponse"]) is dict:
                r += 1
                named = value.get("name")
                odd = odd or type(named) is not str or not named
                odd = odd or type(value.get("response")) not in object_or_none
                odd = odd or not odd_inner.isdisjoint(value)
            else:
                is_call, is_response, ordinary = _part(part)
                c, r, odd = c + is_call, r + is_response, odd or not ordinary
        sent.append(content.get("role"))
        if c:
            calls[i] = c
        if r:
            responses[i] = r
        if odd:
            unusual.append(i)
    return sent, calls, responses, unusual


_OBJECT_OR_NONE = frozenset({dict, type(None)})


def _part(part: Part) -> tuple[bool, bool, bool]:
    """Whether ``part`` is a call, a response, and ordinary (any part: its kind by its keys,
    remembered, then its value)."""
    is_call, is_response = call_of(part) is not None, response_of(part) is not None
    kind = kind_of(tuple(part))
    if kind == ODD:
        return is_call, is_response, False
    if kind == DATA:
        return is_call, is_response, None not in part.values()
    return is_call, is_response, ordinary_value(kind, part[KIND_KEYS[kind]])


def ordinary_value(kind: int, value: Any) -> bool:
    """Whether ``value``, the data field of a part of ``kind`` (text, call or response), is
    ordinary."""
    if kind == TEXT:
        return type(value) is str and value != ""
    if type(value) is not dict or not _ODD_INNER.isdisjoint(value):
        return False
    if kind < RESPONSE:
        return type(value.get("args")) in _OBJECT_OR_NONE
    named = value.get("name")
    return type(named) is str and named != "" and type(value.get("response")) in _OBJECT_OR_NONE


def _irregular(sent: list[Any], unusual: list[int]) -> list[int]:
    """The contents a request's check reads when some role is neither user nor model: the
    unusual ones and those sent with another role, in order."""
    return sorted({*unusual, *(i for i, role in enumerate(sent) if role not in _USUAL)})


_USUAL = ("user", "model")


def indexed(
    sent: list[Any], calls: Sizes, responses: Sizes, unusual: list[int], usual: bool | None = None
) -> Index:
    """The index of contents sent with roles ``sent``, where the contents holding
    functionCall and functionResponse parts hold ``calls`` and ``responses`` of them (keys
    in order), and the ``unusual`` ones are out of the ordinary (what :func:`walk` found).
    ``usual``: whether every role is user or model, when the caller knows."""
    if only(sent, _USUAL) if usual is None else usual:
        roles = sent
        seen = frozenset(role for role in _USUAL if role in sent)
    else:
        roles = [_role(role, i in calls) for i, role in enumerate(sent)]
        seen = frozenset(sent)
    call_turns, response_turns = _turns(roles, calls, "model"), _turns(roles, responses, "user")
    sizes = calls if len(call_turns) == len(calls) else {i: calls[i] for i in call_turns}
    if len(response_turns) == len(responses):
        sizes = {**sizes, **responses}
    else:
        sizes = {**sizes, **{i: responses[i] for i in response_turns}}
    tools = bool(calls or responses)
    return Index(
        sent, calls, responses, roles, seen, call_turns, response_turns, sizes, unusual, tools
    )


def _turns(roles: list[Any], holding: Sizes, role: str) -> list[int]:
    """The contents ``holding`` some parts whose role is ``role``, in order."""
    found = list(holding)
    if list(map(roles.__getitem__, found)).count(role) == len(found):
        return found
    return [i for i in found if roles[i] == role]


def _role(sent: Any, calls: bool) -> str:
    """The role a content plays (:func:`~proxy.core.gemini.parts.role_of`)."""
    if sent is None:
        return "model" if calls else "user"
    return ROLE_ALIASES.get(sent, sent)
