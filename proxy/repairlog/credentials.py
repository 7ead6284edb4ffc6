"""Fields that hold a credential by their name are never stored, at any depth of a body.

A request body can carry credentials of its own, not only in headers: Anthropic's
``mcp_servers[].authorization_token``, a tool's ``headers.Authorization``, a client's extra
``api_key``. Every capture mode (``full`` included) drops such a field wherever it is, in the
received and forwarded bodies and in every attempt, before anything else reads them.

A name is a credential's when, lower-cased with ``-`` read as ``_``, it is one of
:data:`CREDENTIAL_NAMES` or ends in one of :data:`CREDENTIAL_SUFFIXES`. ``key`` alone counts at
the top level only (Google's ``?key=`` as a body field): deeper, ``key`` is a common property
name of tool schemas and arguments. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import Any

import orjson

from proxy.repairlog.ends import Ends, ends_of

#: Names that hold a credential wherever they are.
CREDENTIAL_NAMES = frozenset(
    {
        *("api_key", "apikey", "x_api_key", "x_goog_api_key", "authorization"),
        *("proxy_authorization", "token", "secret", "password", "passwd", "cookie"),
        *("set_cookie", "bearer", "credentials", "private_key"),
    }
)
#: Endings of names that hold one (``authorization_token``, ``client_secret``, ``db_password``).
CREDENTIAL_SUFFIXES = ("_token", "_secret", "_password", "_api_key", "_apikey", "_private_key")
#: Names that hold one at the top level of a body only.
TOP_LEVEL_NAMES = frozenset({"key"})

#: How every credential's name ends, as a key of compact JSON lower-cased: the test before the
#: walk (one pass in C over the serialised body; a quote escaped in a string never matches).
#: The plain form; :data:`_ENDING_REVERSED` is what runs (:func:`may_hold_credential`).
ENDING = re.compile(
    rb'(?:key|token|secret|passw(?:or)?d|cookie|authorization|bearer|credentials)":'
)
#: :data:`ENDING` read backwards, searched in the reversed text: the same matches, but the
#: pattern starts with a literal (``:"``), which the regex engine skips to with a fast search
#: instead of trying seven alternatives at every byte (12 times faster on a 64 KB history,
#: where the plain form took half a millisecond per body, twice per record: issue 34).
_ENDING_REVERSED = re.compile(
    rb':"(?:yek|nekot|terces|d(?:ro)?wssap|eikooc|noitazirohtua|reraeb|slaitnederc)'
)
#: Names already decided (a body's keys repeat: role, content, type…), bounded.
_DECIDED: dict[str, bool] = {}
_DECIDED_MAX = 4096


def is_credential(name: str, top: bool = False) -> bool:
    """Whether a field called ``name`` holds a credential (``top``: at a body's top level)."""
    norm = name.lower().replace("-", "_")
    if norm in CREDENTIAL_NAMES or norm.endswith(CREDENTIAL_SUFFIXES):
        return True
    return top and norm in TOP_LEVEL_NAMES


#: ``]`` and ``}`` as the ints indexing bytes gives.
_CLOSERS = frozenset(b"]}")
#: Bytes of the longest text :data:`ENDING` matches (``authorization":``), and then some.
_LONGEST = 16
#: JSON texts the :class:`Checked` memory holds at most (the last body of each conversation).
CHECKED_BYTES = 16 << 20


class Checked:
    """Per conversation, the JSON of the last body found to hold no credential's name (and,
    under the key ``conversation:listed``, of the last repaired history as sent,
    :func:`listed_clear`), least recently used first out within :data:`CHECKED_BYTES`: agents
    resend the whole history each turn, and only what follows the part shared with it, byte for
    byte, is searched (:func:`without_credentials`). Nothing is trusted that was not compared,
    so a body put under another conversation's key only costs the search it would have saved.
    Used by one thread at a time (the writer's capture step)."""

    def __init__(self, max_bytes: int = CHECKED_BYTES) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self._texts: OrderedDict[str, bytes] = OrderedDict()

    def get(self, key: str) -> bytes | None:
        found = self._texts.get(key)
        if found is not None:
            self._texts.move_to_end(key)
        return found

    def put(self, key: str, data: bytes) -> None:
        old = self._texts.pop(key, None)
        self.bytes -= 0 if old is None else len(old)
        if len(data) > self.max_bytes:
            return
        self._texts[key] = data
        self.bytes += len(data)
        while self.bytes > self.max_bytes:
            self.bytes -= len(self._texts.popitem(last=False)[1])


def _new_since(data: bytes, before: bytes | None) -> int:
    """Where the search of ``data`` may start, ``before`` holding no match: past the part the
    two share, up to ``before``'s closing brackets (the usual turn only appends items), less
    the length of a match that straddles its end; 0 when they share less."""
    if before is None:
        return 0
    shared = unclosed(before)
    if not data.startswith(memoryview(before)[:shared]):
        return 0
    return max(0, shared - _LONGEST)


def unclosed(data: bytes) -> int:
    """``len(data.rstrip(b"]}"))`` without the copy ``rstrip`` makes (a whole history's JSON,
    every turn; byte by byte under callgrind, 30,000 instructions a record: issue 34)."""
    end = len(data)
    while end and data[end - 1] in _CLOSERS:
        end -= 1
    return end


def without_credentials(
    body: Any,
    checked: Any = None,
    memory: Checked | None = None,
    key: str | None = None,
    ends: Ends | None = None,
) -> Any:
    """``body`` without any field :func:`is_credential` names, at any depth. The same object
    when there is none; else a copy along the paths that changed, the input never mutated.
    The body is serialised once to tell (in C); only a body that may hold one is walked.

    ``checked``: a body known to hold none (this function gave it back as it was), which
    ``body`` was made from by copy on write, as a repaired body is from the one received: the
    values ``body`` shares with it by identity, under the same top-level name (whole, or as
    items of the same list), are not serialised again, only what the repair made. ``memory``
    (with the body's conversation, ``key``): only what follows the JSON of that conversation's
    last body is searched (:class:`Checked`). ``ends``: how a list of ``body`` and the same
    list of ``checked`` are known to share items (:mod:`~proxy.repairlog.ends`).
    """
    if not isinstance(body, (dict, list)):
        return body
    try:
        if type(body) is dict and type(checked) is dict:
            maybe = any(_new_part_may_hold(k, v, checked.get(k), ends) for k, v in body.items())
        elif memory is not None and key is not None:
            data = orjson.dumps(body)
            maybe = may_hold_credential(data, _new_since(data, memory.get(key)))
            if not maybe:
                memory.put(key, data)
        else:
            maybe = may_hold_credential(orjson.dumps(body))
    except orjson.JSONEncodeError:  # not JSON (no key a wire API sent): walked as it is
        maybe = True
    return _walk(body, True) if maybe else body


def listed_clear(
    body: Any, listed: tuple[Any, bytes], memory: Checked | None = None, key: str | None = None
) -> bool:
    """Whether ``body`` holds no field :func:`is_credential` names, told without serialising
    its history again: ``listed`` is a list ``body`` holds as a top-level field and that list's
    compact JSON, as the proxy sent it (:attr:`~proxy.repairlog.record.Record.listed`). That
    JSON is searched (with ``memory``, under the conversation's ``key``: only past what it
    shares with the last one found to hold none, see :class:`Checked`), the other fields
    serialised. False when it may hold one, or when ``body`` does not hold the list: the
    caller then checks it the usual way."""
    items, data = listed
    if type(body) is not dict:
        return False
    names = [name for name, value in body.items() if value is items]
    if len(names) != 1 or type(names[0]) is not str or is_credential(names[0], top=True):
        return False
    rest = {name: value for name, value in body.items() if value is not items}
    try:
        if may_hold_credential(orjson.dumps(rest)):
            return False
    except orjson.JSONEncodeError:  # not JSON: walked as it is
        return False
    before = None if memory is None or key is None else memory.get(key)
    if may_hold_credential(data, _new_since(data, before)):
        return False
    if memory is not None and key is not None:
        memory.put(key, data)
    return True


def _new_part_may_hold(name: Any, value: Any, before: Any, ends: Ends | None = None) -> bool:
    """Whether the top-level field ``name: value`` may hold a credential, ``before`` being the
    same field of a body that holds none (what is the very same object holds none either)."""
    if type(name) is not str or is_credential(name, top=True):
        return True
    if value is before:
        return False
    if type(value) is list and type(before) is list:
        value = _items_not_in(value, before, ends)
        if not value:
            return False
    return may_hold_credential(orjson.dumps(value))


def _items_not_in(items: list[Any], before: list[Any], known: Ends | None = None) -> list[Any]:
    """The items of ``items`` that are no item of ``before`` (by identity). A repair keeps most
    of a history's items where they were, the same objects: the runs at either end that are
    ``before``'s own, place by place, are told apart first (:func:`~.ends.ends_of`, ``known``
    when worked out already), the rest by a set of ids."""
    _, _, head, tail = ends_of(items, before, known)
    middle = items[head : len(items) - tail]
    if not middle:
        return middle
    shared = set(map(id, before[head : len(before) - tail]))
    return [item for item in middle if id(item) not in shared]


def may_hold_credential(data: bytes, start: int = 0) -> bool:
    """Whether the compact JSON ``data`` has a key that ends as a credential's name does
    (:data:`ENDING` matches it lower-cased, from ``start`` on): the only bodies worth walking."""
    return _ENDING_REVERSED.search(data[start:].lower()[::-1]) is not None


def _walk(value: Any, top: bool) -> Any:
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value  # the common leaves, told apart first
    if isinstance(value, dict):
        return _walk_dict(value, top)
    if isinstance(value, list):
        return _walk_list(value)
    return value


def _named_credential(name: Any, top: bool) -> bool:
    if top or type(name) is not str:
        return isinstance(name, str) and is_credential(name, top)
    decided = _DECIDED.get(name)
    if decided is None:
        decided = is_credential(name)
        if len(_DECIDED) < _DECIDED_MAX:
            _DECIDED[name] = decided
    return decided


def _walk_list(value: list[Any]) -> list[Any]:
    out: list[Any] | None = None
    for i, item in enumerate(value):
        kept = _walk(item, False)
        if kept is not item:
            out = out if out is not None else list(value)
            out[i] = kept
    return value if out is None else out


def _walk_dict(value: dict[Any, Any], top: bool) -> dict[Any, Any]:
    out: dict[Any, Any] | None = None
    for name, item in value.items():
        credential = _named_credential(name, top)
        kept = None if credential else _walk(item, False)
        if credential or kept is not item:
            out = out if out is not None else dict(value)
            if credential:
                del out[name]
            else:
                out[name] = kept
    return value if out is None else out
