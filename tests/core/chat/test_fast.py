"""The speed layer says what its plain twins say: every function of ``proxy.core.chat.fast``
against the function of the same name in ``proxy.core.chat.plain``, on what the rules hand it
(the groups, calls, ids and contents of valid, broken and odd histories): the same result, or
the same exception."""

from __future__ import annotations

import copy
import inspect
import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy.core.chat import fast, plain
from proxy.core.chat.messages import History, Message
from tests.core.chat.test_index import ROLES, any_message, near_valid
from tests.factories import DIALECTS, broken_histories, histories

FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
KEYS = ["role", "content", "tool_calls", "tool_call_id", "name", "id", "function", "arguments"]
PATTERNS = [re.compile(p) for p in (r"[a-zA-Z0-9]{9}", r"call_\w+", r".{0,40}")]

#: Every message list a rule may see: valid for some provider, broken the ways agents break
#: them, a valid one with a few random edits, or any shape at all.
message_lists = st.one_of(
    histories(),
    st.sampled_from(DIALECTS).flatmap(broken_histories),
    near_valid(),
    st.lists(any_message, min_size=1, max_size=8),
)

Args = list[tuple[Any, ...]]


def _calls(messages: list[Message]) -> list[Any]:
    """Every entry of every ``tool_calls`` that is a list."""
    return [c for m in messages if type(m.get("tool_calls")) is list for c in m["tool_calls"]]


def _functions(messages: list[Message]) -> list[Any]:
    return [c["function"] for c in _calls(messages) if type(c) is dict and "function" in c]


def _lists(messages: list[Message]) -> list[Any]:
    """What the rules take lengths of, flatten or union: call lists, calls, contents."""
    index = History(messages).index
    return [index.call_lists, _calls(messages), [m.get("content") for m in messages]]


def _positions(messages: list[Message], draw: st.DrawFn) -> list[list[int]]:
    index = History(messages).index
    some = sorted(draw(st.sets(st.integers(0, len(messages) - 1), max_size=4)))
    return [index.callers, index.tools, index.odd_content, some, list(range(len(messages)))]


def _values(messages: list[Message], draw: st.DrawFn) -> Args:
    key = draw(st.sampled_from(KEYS))
    return [(items, key) for items in (messages, _calls(messages), _functions(messages))]


def _only(messages: list[Message], draw: st.DrawFn) -> Args:
    allowed = tuple(draw(st.lists(st.sampled_from(ROLES), unique=True, min_size=1, max_size=3)))
    roles = [m["role"] for m in messages]
    return [(roles, allowed), ([m["role"] for m in messages[1:2]], allowed)]


def _by_caller(messages: list[Message], draw: st.DrawFn) -> Args:
    index = History(messages).index
    return [(index.callers, index.call_lists)]


def _filled(messages: list[Message], draw: st.DrawFn) -> Args:
    key = draw(st.sampled_from(["id", "name", "content", "tool_call_id"]))
    calls = [c for c in _calls(messages) if type(c) is dict]
    return [([c.get(key) for c in calls],), ([m.get(key) for m in messages],)]


def _match(messages: list[Message], draw: st.DrawFn) -> Args:
    ids = [c.get("id") for c in _calls(messages) if type(c) is dict]
    return [(pattern, ids) for pattern in PATTERNS]


def _where_none(messages: list[Message], draw: st.DrawFn) -> Args:
    index = History(messages).index
    contents = [messages[i].get("content") for i in index.odd_content]
    return [(index.odd_content, contents), (list(range(len(messages))), _keyed(messages, "name"))]


def _keyed(messages: list[Message], key: str) -> list[Any]:
    return [m.get(key) for m in messages]


def _without(messages: list[Message], draw: st.DrawFn) -> Args:
    index = History(messages).index
    return [(where, set(drop)) for where in _positions(messages, draw) for drop in [index.callers]]


#: For each function of the speed layer: the argument tuples to try, from a drawn history.
ARGUMENTS: dict[str, Callable[[list[Message], st.DrawFn], Args]] = {
    "at": lambda m, draw: [(m, p) for p in _positions(m, draw)],
    "values": _values,
    "gets": lambda m, draw: [(m, draw(st.sampled_from(KEYS)))],
    "filled": lambda m, draw: [(m, draw(st.sampled_from(KEYS)))],
    "lacking": lambda m, draw: [(m, draw(st.sampled_from(KEYS)))],
    "union": lambda m, draw: [(items,) for items in (m, _calls(m), _functions(m), *_lists(m))],
    "types": lambda m, draw: [(items,) for items in _lists(m)],
    "only": _only,
    "flatten": lambda m, draw: [(items,) for items in _lists(m)],
    "roles_before": lambda m, draw: [(m, p) for p in _positions(m, draw)],
    "spots": _by_caller,
    "owners": _by_caller,
    "offsets": lambda m, draw: [(items,) for items in _lists(m)],
    "longest": lambda m, draw: [(items,) for items in _lists(m)],
    "filled_strings": _filled,
    "all_match": _match,
    "where_none": _where_none,
    "without": _without,
    "held": lambda m, draw: [(items, draw(st.sampled_from(KEYS))) for items in (m, _calls(m))],
    "singletons": lambda m, draw: [(p,) for p in _positions(m, draw)],
    "sort_each": lambda m, draw: [(_positions(m, draw),), (_lists(m),)],
}


def _outcome(function: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """What ``function(*args)`` returns (a sequence as a list), or the type it raises."""
    try:
        result = function(*args)
    except Exception as exc:  # any: the exception's type is what is compared
        return type(exc)
    return list(result) if type(result) is tuple else result


def test_every_fast_function_has_a_plain_twin_and_is_tried() -> None:
    functions = {
        n for n, f in inspect.getmembers(fast, inspect.isfunction) if f.__module__ == fast.__name__
    }
    assert functions == set(ARGUMENTS)
    assert all(callable(getattr(plain, name, None)) for name in [*functions, "cached"])


@pytest.mark.parametrize("name", sorted(ARGUMENTS))
@FUZZ
@given(messages=message_lists, data=st.data())
def test_fast_is_its_plain_twin(name: str, messages: list[Message], data: st.DataObject) -> None:
    for args in ARGUMENTS[name](messages, data.draw):
        if name == "sort_each":  # sorts in place: compare the lists it leaves
            mine, theirs = copy.deepcopy(args), copy.deepcopy(args)
            assert _outcome(fast.sort_each, mine) == _outcome(plain.sort_each, theirs)
            assert mine == theirs
            continue
        got, want = _outcome(getattr(fast, name), args), _outcome(getattr(plain, name), args)
        assert got == want, f"fast.{name}{args!r}"
        if name == "at" and type(got) is list:  # the very messages, not copies
            assert all(a is b for a, b in zip(got, want, strict=True))


@given(st.lists(st.integers() | st.text(max_size=3) | st.none(), max_size=5))
def test_cached_is_cached_property_without_its_lock(value: list[Any]) -> None:
    computed: list[str] = []

    class Fast:
        @fast.cached
        def view(self) -> list[Any]:
            computed.append("fast")
            return value

    class Plain:
        @plain.cached
        def view(self) -> list[Any]:
            computed.append("plain")
            return value

    mine, theirs = Fast(), Plain()
    assert fast.cached.known(mine, "view") == (False, None)
    assert mine.view is theirs.view is value
    assert mine.view is theirs.view  # the second read computes nothing
    assert computed == ["fast", "plain"]
    assert fast.cached.known(mine, "view") == (True, value)
    fast.cached.seed(mine, "view", [1])
    assert mine.view == [1]
    other = Fast()
    fast.cached.carry(mine, other, ["view", "absent"])
    assert fast.cached.known(other, "view") == (True, [1])
    assert fast.cached.known(other, "absent") == (False, None)
