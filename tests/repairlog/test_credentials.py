"""The credential test before the walk: the reversed search finds exactly what the plain one does,
and a body it passes over holds no credential by name."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from proxy.repairlog.credentials import (
    CREDENTIAL_NAMES,
    ENDING,
    Checked,
    _new_since,
    is_credential,
    listed_clear,
    may_hold_credential,
    unclosed,
    without_credentials,
)

#: Pieces that make near misses likely: credential endings, cut ones, quotes, colons, escapes.
PIECES = st.sampled_from(
    [
        *("key", "KEY", "ke", "ey", "token", "Token", "secret", "passwd", "password", "passwor"),
        *("cookie", "authorization", "Authorization", "bearer", "credentials", "api_key"),
        *('"', ":", '":', '\\"', "\\", ",", "{", "}", "x", "_", "-", "é", "ÿ"),
    ]
)
TEXTS = st.lists(PIECES, max_size=30).map("".join)


@given(TEXTS)
@settings(max_examples=500)
def test_the_reversed_search_matches_as_the_plain_one_does(text: str) -> None:
    data = text.encode()
    assert may_hold_credential(data) == (ENDING.search(data.lower()) is not None)


KEYS = st.one_of(
    st.sampled_from(sorted(CREDENTIAL_NAMES)),
    st.sampled_from(["key", "X-Api-Key", "db_password", "access_token", "content", "role"]),
    TEXTS,
)
BODIES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), TEXTS),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=4)),
    max_leaves=20,
)


def _names(value: Any, top: bool = True) -> bool:
    """Whether ``value`` holds a field named as a credential (the plain walk)."""
    if isinstance(value, dict):
        return any(is_credential(k, top) or _names(v, False) for k, v in value.items())
    if isinstance(value, list):
        return any(_names(item, False) for item in value)
    return False


@given(BODIES)
@settings(max_examples=500)
def test_a_body_the_test_passes_over_holds_no_credential(body: Any) -> None:
    holds = _names(body)
    if holds:
        assert may_hold_credential(orjson.dumps(body))
    stripped = without_credentials(body)
    assert not _names(stripped)
    if not holds:
        assert stripped == body


#: Items a repair adds to a list: objects, like the messages of a history.
ITEMS = st.dictionaries(KEYS, BODIES, min_size=1, max_size=3)
#: Names of no credential, near misses among them (``monkey`` ends as ``key`` does).
PLAIN_KEYS = st.sampled_from(["role", "content", "monkey", "tokens", "key_id", "x", "secrets"])
PLAIN = st.recursive(
    st.one_of(st.none(), st.integers(-5, 5), TEXTS),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(PLAIN_KEYS, inner, max_size=3)
    ),
    max_leaves=10,
)
#: Received bodies that hold no credential: fields holding lists of objects, or any value.
RECEIVED = st.dictionaries(
    PLAIN_KEYS,
    st.one_of(st.lists(st.dictionaries(PLAIN_KEYS, PLAIN, min_size=1), max_size=4), PLAIN),
    max_size=5,
)


def _edited(received: dict[str, Any], data: st.DataObject) -> dict[str, Any]:
    """A body made of ``received`` by copy on write, as a repair makes one: some fields
    replaced, dropped or added, some lists with items dropped or added, the rest shared."""
    body = dict(received)
    for name in list(body):
        choice = data.draw(st.sampled_from(["keep", "keep", "replace", "drop", "items"]))
        if choice == "replace":
            body[name] = data.draw(BODIES)
        elif choice == "drop":
            del body[name]
        elif choice == "items" and isinstance(body[name], list):
            items = [item for item in body[name] if data.draw(st.booleans())]
            for _ in range(data.draw(st.integers(0, 2))):
                items.insert(data.draw(st.integers(0, len(items))), data.draw(ITEMS))
            body[name] = items
    for name in data.draw(st.lists(KEYS, max_size=2)):
        body[name] = data.draw(BODIES)
    return body


@given(RECEIVED, st.data())
@settings(max_examples=500)
def test_a_body_made_from_a_checked_one_is_judged_as_it_would_be_alone(
    received: dict[str, Any], data: st.DataObject
) -> None:
    """The forwarded body is checked only where it differs from the received one (by identity):
    the result is what checking it whole gives."""
    if without_credentials(received) is not received:
        return  # only a body that holds none is a ``checked`` one
    forwarded = _edited(received, data)
    alone = without_credentials(forwarded)
    beside = without_credentials(forwarded, received)
    assert beside == alone
    assert (beside is forwarded) == (alone is forwarded)


#: A credential's ending as a key, to be cut in two across the seam of an old and a new text.
ENDINGS = st.sampled_from(['authorization":', 'credentials":', 'api_key":', 'Token":', 'passwd":'])


@given(TEXTS, st.integers(0, 4), ENDINGS, st.integers(0, 15), TEXTS)
@settings(max_examples=1000)
def test_a_text_searched_past_what_it_shares_with_one_without_match_is_judged_alike(
    before: str, cut: int, ending: str, seam: int, after: str
) -> None:
    """A body searched only past the part it shares with the conversation's last one (which held
    no match) gets the verdict of a search of all of it, matches across the seam included."""
    old = (before + ending[:seam] + "]}").encode()
    if may_hold_credential(old):
        return
    data = old[: max(0, len(old) - cut)] + (ending[seam:] + after).encode()
    assert may_hold_credential(data, _new_since(data, old)) == may_hold_credential(data)


#: Texts ending in runs of closing brackets, with other bytes among them.
BRACKETED = st.lists(st.sampled_from([b"]", b"}", b"] ", b"x", b"]}", b'"', b"\xff"])).map(b"".join)


@given(BRACKETED)
def test_the_unclosed_length_is_that_of_the_text_stripped_of_closing_brackets(data: bytes) -> None:
    assert unclosed(data) == len(data.rstrip(b"]}"))


def test_the_memory_of_checked_bodies_is_bounded_and_searches_only_what_is_new() -> None:
    memory = Checked(max_bytes=100)
    first = {"model": "m", "messages": [{"role": "user", "content": "x" * 20}]}
    assert without_credentials(first, None, memory, "c1") is first
    assert memory.get("c1") == orjson.dumps(first)
    second = {**first, "messages": [*first["messages"], {"role": "user", "api_key": "S"}]}
    assert without_credentials(second, None, memory, "c1")["messages"][1] == {"role": "user"}
    assert memory.get("c1") == orjson.dumps(first)  # a body that held one is not remembered
    memory.put("c2", b"y" * 60)
    assert memory.get("c1") is None  # evicted: over 100 bytes together
    assert memory.bytes == 60
    memory.put("c3", b"z" * 101)  # larger than the whole memory: not kept
    assert memory.get("c3") is None
    assert memory.bytes == 60


@given(RECEIVED, st.data())
@settings(max_examples=500)
def test_a_body_whose_history_was_serialised_is_cleared_only_when_it_holds_none(
    received: dict[str, Any], data: st.DataObject
) -> None:
    """A forwarded body cleared by its history's JSON as sent (:func:`listed_clear`) holds no
    credential, and the received body checked beside it is what checking it alone gives."""
    forwarded = _edited(received, data)
    forwarded["history"] = items = data.draw(st.lists(st.one_of(ITEMS, PLAIN), max_size=4))
    memory, key = Checked(), "c1"
    before = data.draw(st.sampled_from([None, b"[", orjson.dumps(items[:-1])]))
    if before is not None and not may_hold_credential(before):
        memory.put(key, before)
    if not listed_clear(forwarded, (items, orjson.dumps(items)), memory, key):
        return
    assert not _names(forwarded)
    assert memory.get(key) == orjson.dumps(items)
    alone = without_credentials(received)
    beside = without_credentials(received, forwarded)
    assert beside == alone
    assert (beside is received) == (alone is received)


def test_a_history_not_held_by_its_body_or_next_to_a_credential_is_not_cleared() -> None:
    items = [{"role": "user", "content": "hi"}]
    data = orjson.dumps(items)
    assert listed_clear({"model": "m", "messages": items}, (items, data))
    assert not listed_clear({"model": "m", "messages": list(items)}, (items, data))
    assert not listed_clear({"a": items, "b": items}, (items, data))
    assert not listed_clear({"api_key": items}, (items, data))
    assert not listed_clear({"token": "S", "messages": items}, (items, data))
    secret = [{"role": "user", "content": "hi", "password": "S"}]
    assert not listed_clear({"messages": secret}, (secret, orjson.dumps(secret)))
