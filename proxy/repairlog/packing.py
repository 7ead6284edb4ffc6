"""Packing request bodies into skeletons and payloads (the format is :mod:`.payloads`').

A :class:`Packer` turns each body of a record into a skeleton and collects the payloads it
references (:func:`~proxy.repairlog.rows.pack_bodies` packs a record's bodies, one whole and
the others as patches against it). With a :class:`~proxy.repairlog.carry.Sequences` memory, a
list is compared with the one its conversation's previous turn held, and only its new items are
hashed. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass
from itertools import chain
from typing import Any

import orjson

from proxy.repairlog.carry import Packed, Sequences, shared_prefix
from proxy.repairlog.ends import Ends, ends_of
from proxy.repairlog.payloads import _BODY, _SEQ, _VALUE, CHUNK, MIN_BLOB, digest_of, escaped, names


@dataclass(frozen=True, slots=True)
class Listed:
    """A top-level list as packed: its items and their digests (a ``base`` for patches)."""

    items: list[Any]
    digests: list[bytes]


class Packer:
    """Packs bodies; :meth:`referenced` names what they reference, :meth:`payload` gives it.

    With a :class:`~proxy.repairlog.carry.Sequences` memory, a received list is compared with
    the one its conversation's previous turn held, and only its new items are hashed."""

    def __init__(self, memory: Sequences | None = None) -> None:
        #: Payloads hashed here (digest -> JSON bytes).
        self.blobs: dict[bytes, bytes] = {}
        #: The lists of the body packed last without a base, by key (a ``base`` for the next).
        self.sequences: dict[str, Listed] = {}
        #: Lists whose leading items a conversation's previous turn hashed: (list, how many).
        self._carried: list[tuple[Packed, int]] = []
        #: Lists put in the memory: (list, the list it carried items of or None, how many).
        self._made: list[tuple[Packed, Packed | None, int]] = []
        #: Carried lists whose payloads :meth:`referenced` left out, trusted (by identity).
        self._trusted: dict[int, Packed] = {}
        #: Digests of the item objects hashed so far, by identity (the object is kept so its id
        #: stays its own): a retried body shares its repaired items with the forwarded one.
        self._known: dict[int, tuple[Any, bytes]] = {}
        self._memory = memory

    def referenced(self, trusted: Callable[[Packed], bool] | None = None) -> set[bytes]:
        """Every payload digest the bodies packed so far reference, but those of the carried
        lists ``trusted`` says are stored (their items and chunks: the usual turn's history,
        not looked at digest by digest; see :meth:`confirm`)."""
        found = set(self.blobs)
        made = {id(packed) for packed, _, _ in self._made}
        for packed, count in self._carried:
            if id(packed) in made:  # this batch's own list: what it added is in found, what
                continue  # it carried is counted (or trusted) with the list it carried it from
            if trusted is not None and trusted(packed):
                self._trusted[id(packed)] = packed
                continue
            found.update(packed.digests[:count])
            found.update(packed.chunks[: count // CHUNK])
        return found

    def confirm(self, used: Mapping[bytes, int], generation: int) -> None:
        """Once the batch committed, stamp each list this packer put in the memory with the
        oldest ``last_used`` of its payloads (``used``: those the batch referenced, as they
        are now; a trusted list's part, or one this batch made, with that list's own stamp: the
        oldest of a whole list is no newer than that of its part)."""
        # This batch's lists stamped so far: a turn's list comes after the previous turn's.
        stamped: set[int] = set()
        for packed, before, shared in self._made:
            stamps = []
            start = 0
            if (
                before is not None
                and before.confirmed
                and (id(before) in stamped or id(before) in self._trusted)
            ):
                stamps.append(before.confirmed[1])
                start = shared
            rest = chain(packed.digests[start:], packed.chunks[start // CHUNK :])
            try:
                oldest = min(map(used.__getitem__, rest), default=None)
            except KeyError:  # not all of it was written by this batch: left unconfirmed
                continue
            if oldest is not None:
                stamps.append(oldest)
            if stamps:
                packed.confirmed = (generation, min(stamps))
                stamped.add(id(packed))

    def payload(self, digest: bytes) -> bytes:
        """The JSON bytes of a referenced payload (a carried item's read from its list: asked
        only for what the database lacks)."""
        found = self.blobs.get(digest)
        if found is not None:
            return found
        for packed, count in self._carried:  # an item's digest, or a chunk's
            with suppress(ValueError):
                return packed.item(packed.digests.index(digest, 0, count))
            with suppress(ValueError):
                start = packed.chunks.index(digest, 0, count // CHUNK) * CHUNK
                return b"".join(packed.digests[start : start + CHUNK])
        raise KeyError(digest)

    def body(
        self,
        body: Any,
        base: Mapping[str, Listed] | None = None,
        conversation: str | None = None,
        listed: tuple[Any, bytes] | None = None,
        ends: Ends | None = None,
    ) -> Any:
        """The skeleton of one request body (any JSON value).

        With ``base`` (another body's lists, :attr:`sequences` after packing it), a list under
        the same key is stored as a patch against that list: what both share at the start and
        at the end, and the digests in between. A forwarded body differs from the received one
        by a repair or two and shares every other item object with it, so its sequence costs
        a few bytes and hashes only what the repair made. With ``conversation`` (and a
        memory), a list is compared with the one that conversation's previous turn held under
        the same key (:mod:`~proxy.repairlog.carry`); ``listed`` is a list of the body and its
        JSON, when the caller has it (not serialised again); ``ends``: how a list of the body
        and the base's are known to share items (:mod:`~proxy.repairlog.ends`).
        """
        if not isinstance(body, dict) or (len(body) == 1 and _BODY in body):
            return {_BODY: self.value(body)}
        if base is not None:
            return {key: self._against(value, base.get(key), ends) for key, value in body.items()}
        self.sequences = {}
        carry = conversation if self._memory is not None else None
        return {key: self._top(key, value, carry, listed) for key, value in body.items()}

    def _top(
        self, key: str, value: Any, conversation: str | None, listed: tuple[Any, bytes] | None
    ) -> Any:
        if not (isinstance(value, list) and value):
            return self.value(value)
        if conversation is None:
            digests = self._items(value)
            sequence, _ = self._sequence(digests)
        else:
            data = listed[1] if listed is not None and listed[0] is value else None
            digests, sequence = self._carried_sequence((conversation, key), value, data)
        self.sequences[key] = Listed(value, digests)
        return {_SEQ: sequence}

    def _against(self, value: Any, base: Listed | None, ends: Ends | None = None) -> Any:
        """A top-level value of a body packed against a base (a list becomes a patch)."""
        if not (isinstance(value, list) and value):
            return self.value(value)
        if base is None:
            return {_SEQ: self._sequence(self._items(value))[0]}
        return {_SEQ: self._patched(value, base, ends)}

    def value(self, value: Any) -> Any:
        """One value, stored by digest unless it is small (then inline)."""
        data = orjson.dumps(value)
        if len(data) < MIN_BLOB:
            return escaped(value)
        digest = digest_of(data)
        self.blobs[digest] = data
        return {_VALUE: names([digest])}

    def _items(self, items: list[Any]) -> list[bytes]:
        digests = []
        known = self._known
        for item in items:
            seen = known.get(id(item))
            if seen is None:
                data = orjson.dumps(item)
                digest = digest_of(data)
                self.blobs[digest] = data
                if isinstance(item, dict | list):  # immutable: shared only as the same object
                    known[id(item)] = (item, digest)
            else:
                digest = seen[1]
            digests.append(digest)
        return digests

    def _patched(self, items: list[Any], base: Listed, known: Ends | None = None) -> dict[str, Any]:
        """``items`` as a patch against ``base``: the items at either end that are ``base``'s
        own item objects (the repair left them alone) are shared without hashing them."""
        _, _, head, tail = ends_of(items, base.items, known)
        middle = self._items(items[head : len(items) - tail])
        return _patch(base.digests, middle, head, tail)

    def _carried_sequence(
        self, key: tuple[str, str], items: list[Any], data: bytes | None = None
    ) -> tuple[list[bytes], dict[str, str]]:
        """The digests and sequence of ``items`` (whose JSON is ``data`` when given), reusing
        those of the prefix it shares, byte for byte, with the list packed last under ``key``
        (see :mod:`~proxy.repairlog.carry`): only the items after it are hashed, only the
        chunks after it too."""
        assert self._memory is not None
        if data is None:
            data = orjson.dumps(items)
        before = self._memory.get(key)
        shared = 0 if before is None else shared_prefix(before, data)
        ends: list[int] = []
        digests: list[bytes] = []
        chunks: list[bytes] = []
        if before is not None and shared:
            ends, digests = before.ends[:shared], before.digests[:shared]
            chunks = before.chunks[: shared // CHUNK]
            self._carried.append((before, shared))
        end = ends[-1] if ends else 0
        for item in items[shared:]:
            blob = orjson.dumps(item)
            digest = digest_of(blob)
            self.blobs[digest] = blob
            end += 1 + len(blob)  # the delimiter before it, then the item
            ends.append(end)
            digests.append(digest)
        sequence, chunks = self._sequence(digests, chunks)
        if end + 1 == len(data):  # the list is its items' JSON joined: offsets are exact
            packed = Packed(data, ends, digests, chunks)
            self._memory.put(key, packed)
            self._made.append((packed, before if shared else None, shared))
        return digests, sequence

    def _sequence(
        self, digests: list[bytes], known: list[bytes] | None = None
    ) -> tuple[dict[str, str], list[bytes]]:
        """The sequence of ``digests`` and its chunks' digests (the leading ``known`` ones are
        not hashed again)."""
        full = len(digests) - len(digests) % CHUNK
        chunks = list(known or ())
        for start in range(len(chunks) * CHUNK, full, CHUNK):
            data = b"".join(digests[start : start + CHUNK])
            digest = digest_of(data)
            self.blobs[digest] = data
            chunks.append(digest)
        return {"c": names(chunks), "t": names(digests[full:])}, chunks


def _patch(base: list[bytes], middle: list[bytes], head: int, tail: int) -> dict[str, Any]:
    """``base[:head] + middle + base[len(base) - tail:]`` as ``{"p": [head, tail], "t":
    middle}``, ``head`` and ``tail`` grown over whatever ``middle`` shares with ``base``."""
    first, last = 0, len(middle)
    end = len(base) - tail  # base[head:end] is what middle replaces
    while first < last and head < end and middle[first] == base[head]:
        first, head = first + 1, head + 1
    while first < last and head < end and middle[last - 1] == base[end - 1]:
        last, end = last - 1, end - 1
    return {"p": [head, len(base) - end], "t": names(middle[first:last])}
