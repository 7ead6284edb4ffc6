"""The Responses API history: the ``input`` items of ``POST /v1/responses``, and their kinds.

Pure: no I/O. Items stay the plain dicts ``orjson.loads`` produced; an :class:`Items` is an
immutable list of them plus, for each, the index it had in the original request, so that every
finding names a JSON path into what the client sent (``input[7].call_id``). The request body
rides along read-only (``Items.request``) for rules that depend on ``store``,
``previous_response_id``, ``conversation`` or ``model``.

The item taxonomy is responses-api.md A5 (openai-python's ``ResponseInputItemParam``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import repeat
from operator import itemgetter
from types import MappingProxyType
from typing import Any, TypeVar

from proxy.core.history import CopyOnWrite
from proxy.core.responses import index as fast
from proxy.core.responses.fastwalk import walked
from proxy.core.responses.index import Index, Runs, index_of, walk
from proxy.core.responses.index import kind as kind  # noqa: PLC0414 - the taxonomy's, read here
from proxy.errors import MalformedHistory

T = TypeVar("T")
Item = dict[str, Any]

#: Client-executed calls and the output type that answers each (the agents SDK's
#: ``_TOOL_CALL_TO_OUTPUT_TYPE``, responses-api.md A4, plus ``program``).
CALL_OUTPUT: Mapping[str, str] = MappingProxyType(
    {
        "function_call": "function_call_output",
        "custom_tool_call": "custom_tool_call_output",
        "computer_call": "computer_call_output",
        "local_shell_call": "local_shell_call_output",
        "shell_call": "shell_call_output",
        "apply_patch_call": "apply_patch_call_output",
        "tool_search_call": "tool_search_output",
        "program": "program_output",
    }
)
CALLS = frozenset(CALL_OUTPUT)
OUTPUTS = frozenset(CALL_OUTPUT.values())
#: Items only the model emits besides calls and reasoning (server-executed tools, approvals).
SERVER_ITEMS = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "mcp_call",
        "mcp_list_tools",
        "mcp_approval_request",
    }
)
#: Item kinds that mean the history is about tools (``tools_only`` rules look at nothing else).
TOOL_KINDS = CALLS | OUTPUTS | SERVER_ITEMS | {"mcp_approval_response"}


#: Item kinds only the model emits (besides assistant messages: see :func:`is_model_item`).
MODEL_KINDS = CALLS | SERVER_ITEMS | {"reasoning"}


def is_model_item(item: Item) -> bool:
    """Whether the model emitted this item (an assistant message, a call, reasoning…)."""
    k = kind(item)
    if k == "message":
        return item.get("role") == "assistant"
    return k in MODEL_KINDS


def needs_output(item: Item) -> bool:
    """A client-executed call the client must answer (server-run ``tool_search`` is not)."""
    k = kind(item)
    if k == "tool_search_call":
        return item.get("execution") == "client"
    return k in CALLS


def call_key(item: Item) -> str | None:
    """The ``call_id`` of a call or output (``id`` on a legacy ``local_shell_call_output``)."""
    value = item.get("call_id")
    if value is None and kind(item) == "local_shell_call_output":
        value = item.get("id")
    return value if type(value) is str and value else None


def item_id(item: Item) -> str | None:
    """The item's ``id`` when it is a non-empty string."""
    value = item.get("id")
    return value if type(value) is str and value else None


def items_of(body: Any) -> list[Item]:
    """Return ``body["input"]`` after the checks that hold whatever the policy.

    A string ``input`` (or none: ``previous_response_id``/``prompt`` requests) has no items and
    is always clean: an empty list comes back.
    """
    return _checked(body)


def _checked(body: Any) -> list[Item]:
    """:func:`items_of`: the body and its ``input``, then each item."""
    items = _input_of(body)
    for i, item in enumerate(items):
        _check_item(i, item)
    return items


def _input_of(body: Any) -> list[Item]:
    """``body["input"]`` after the checks on the body and the input itself (not its items)."""
    if type(body) is not dict:
        raise MalformedHistory("The request body must be a JSON object.", None)
    items = body.get("input")
    if items is None or type(items) is str:
        return []
    if type(items) is not list:
        raise MalformedHistory("'input' must be a string or an array of input items.", "input")
    return items


def _check_item(i: int, item: Any) -> None:
    if type(item) is not dict:
        raise MalformedHistory(f"input[{i}] must be an object.", f"input[{i}]")
    if "type" in item and type(item["type"]) is not str:
        raise MalformedHistory(f"input[{i}].type must be a string.", f"input[{i}].type")
    if "type" not in item and "role" not in item and item_id(item) is None:
        raise MalformedHistory(f"input[{i}].type is required.", f"input[{i}].type")


def path(index: int | None, where: str = "") -> str:
    """``input[3].call_id``; an inserted item has no index; -1 is the request itself."""
    if index == -1:
        return where.lstrip(".")
    return f"input[{'+' if index is None else index}]{where}"


class Items(CopyOnWrite):
    """Responses ``input`` items as a copy-on-write history
    (:class:`~proxy.core.history.CopyOnWrite`).

    What the rules look up is in its :class:`~proxy.core.responses.index.Index`, built in one
    walk over the items on first use and shared by every detector (memoised per history), so
    that the detectors of a clean history prove it clean without each walking the items again.
    """

    __slots__ = ()

    @classmethod
    def of(cls, body: Any) -> Items:
        """The items of the request ``body`` (:func:`items_of`), the body riding along.

        One walk checks the items and indexes them: when every item is an object with a string
        ``type``, only the untyped ones need the check's closer look."""
        items = _input_of(body)
        history = cls(items, request=MappingProxyType(body))
        found = (walked(items) if fast.FAST else None) or walk(items)  # ordinary: walked quicker
        if found is None:
            _checked(body)  # raises: some item is not an object or its type not a string
        else:
            for i in found.untyped:
                _check_item(i, items[i])
            history.seed("index", found)
        return history

    @property
    def index(self) -> Index:
        """The history's :class:`~proxy.core.responses.index.Index` (memoised)."""
        return index_of(self)

    @property
    def kinds(self) -> list[str]:
        """``kind(item)`` of every item, in order."""
        return self.memo("kinds", _kinds)

    @property
    def kind_set(self) -> frozenset[str]:
        """The kinds present in the history."""
        return index_of(self).kind_set

    @property
    def with_id(self) -> list[int]:
        """The positions of the items whose ``id`` is truthy (every non-empty string ``id``)."""
        return index_of(self).with_id

    @property
    def tool_free(self) -> bool:
        """Whether no item is a call, an output, a server tool item or an approval."""
        return index_of(self).kind_set.isdisjoint(TOOL_KINDS)

    def path(self, i: int, where: str = "") -> str:
        return path(-1 if i == -1 else self.origin(i), where)

    def positions(self, wanted: frozenset[str]) -> list[int]:
        """The positions of the items whose kind is in ``wanted``, in order (shared: do not
        mutate)."""
        return index_of(self).positions(wanted)

    def replace(self, changes: Mapping[int, Item]) -> Items:
        """:meth:`CopyOnWrite.replace`, the index handed on (:meth:`Index.replaced`)."""
        replaced = super().replace(changes)
        known, index = self.memoized("index")
        if known and replaced is not self:
            replaced.seed("index", index.replaced(self.messages, replaced.messages, changes))
        return replaced

    def _carry(self, edited: Items, runs: Runs) -> None:
        known, index = self.memoized("index")
        if known:
            edited.seed("index", index.moved(self.messages, edited.messages, runs))


def values(items: Iterable[Item], key: str) -> list[Any]:
    """``item.get(key)`` of every item, built in C (``dict.get`` beats a ``methodcaller``)."""
    return list(map(dict.get, items, repeat(key)))


def _kinds(history: Items) -> list[str]:
    items = history.messages
    kinds = values(items, "type")
    if set(map(type, kinds)) <= {str}:
        return kinds
    return list(map(kind, items))  # some items have no type: messages or item references


def at(items: Sequence[T], positions: list[int]) -> list[T]:
    """``items[i] for i in positions``, built in C (itemgetter of one index is no tuple)."""
    if len(positions) > 1:
        return list(itemgetter(*positions)(items))
    return [items[i] for i in positions]


def without_key(item: Item, key: str) -> Item:
    """A copy of ``item`` without ``key``."""
    return {k: v for k, v in item.items() if k != key}
