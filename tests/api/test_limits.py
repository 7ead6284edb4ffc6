"""The nesting limit on request bodies: orjson's serialiser as the bound, exact at the limit."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from proxy.api import limits
from proxy.errors import BadRequestBody


def _nest(depth: int, leaf: Any = 1) -> Any:
    """``depth`` containers, alternating objects and arrays, around ``leaf``."""
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


def _shapes(depth: int) -> list[Any]:
    """Values nesting exactly ``depth`` levels, the deepest branch not always the first."""
    return [
        _nest(depth),
        _nest(depth - 1, leaf=[]),
        {"a": 1, "b": [2, "x"], "c": _nest(depth - 1)},
        [0, {"x": None}, _nest(depth - 1), "[[[["],
    ]


def test_orjson_serialises_exactly_dumps_depth_levels() -> None:
    # The bound too_deep relies on: a new orjson that moves it must fail here, not in production.
    orjson.dumps(_nest(limits.DUMPS_DEPTH))
    with pytest.raises(orjson.JSONEncodeError, match="ecursion"):
        orjson.dumps(_nest(limits.DUMPS_DEPTH + 1))


@pytest.mark.parametrize("limit", [4, 5, 16, 64, 200, 253, 254, 300, 1000])
def test_too_deep_is_exact_at_the_limit(limit: int) -> None:
    for value in _shapes(limit):
        assert not limits.too_deep(value, limit)
        assert not limits.walk_too_deep(value, limit)
    for value in _shapes(limit + 1):
        assert limits.too_deep(value, limit)
        assert limits.walk_too_deep(value, limit)


def test_scalars_and_flat_values_are_never_too_deep() -> None:
    for value in (1, "x", None, 1.5, True, [], {}, [1, 2], {"a": "b"}):
        assert not limits.too_deep(value, 4)


def test_the_wrapper_lets_go_of_the_value() -> None:
    value = {"messages": [{"role": "user", "content": "hi"}]}
    limits.too_deep(value, 64)
    outer, inner = limits._WRAPPERS.get(64)
    assert inner == [None]
    depth = 0
    node: Any = outer
    while isinstance(node, list):
        depth, node = depth + 1, node[0]
    assert depth == limits.DUMPS_DEPTH - 64


def _big(depth: int) -> bytes:
    """A chat body over the bracket-counting size, with one message nesting ``depth`` levels
    in all (body, messages, message, then the content's nesting)."""
    filler = [{"role": "user", "content": "x" * 100} for _ in range(200)]
    deep = {"role": "user", "content": _nest(depth - 3, leaf="y")}
    body = orjson.dumps({"model": "m", "messages": [*filler, deep]})
    assert len(body) > limits._COUNT_BELOW
    return body


def test_parse_rejects_a_large_body_one_level_too_deep() -> None:
    assert limits.parse(_big(64), 64)["model"] == "m"
    with pytest.raises(BadRequestBody, match="deeper than 64 levels") as raised:
        limits.parse(_big(65), 64)
    assert raised.value.status == 400


def test_parse_rejects_what_is_not_json() -> None:
    with pytest.raises(BadRequestBody, match="not valid JSON"):
        limits.parse(b'{"model": ', 64)
    with pytest.raises(BadRequestBody, match="not valid JSON"):
        limits.parse(b"[" * 2000 + b"]" * 2000, 64)  # past orjson's own 1,024 levels
