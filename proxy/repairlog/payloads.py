"""Content-addressed request bodies: each history item is stored once, a record holds references.

Agents send the whole history on every turn, so a conversation whose history broke once sends the
same items, a few more each turn, for the rest of its life. Stored whole, the log grew with
turns x history (63x the final body for 60 turns). Here a body is *packed* into a skeleton:

- every top-level list (``messages``, ``input``, ``tools``, an Anthropic ``system`` block list)
  becomes a sequence of item digests, cut at fixed positions into chunks of :data:`CHUNK`
  digests. A full chunk is itself stored by digest, so turn N+1 shares every full chunk of turn
  N and adds only its last, partial chunk (at most ``CHUNK - 1`` digests) and its new items;
- every other top-level value of :data:`MIN_BLOB` bytes or more is stored by digest too (a
  20 KB system prompt or instructions string, repeated every turn, is stored once);
- smaller values stay inline.

A blob's digest is BLAKE2b over its exact JSON bytes (as orjson writes the parsed value, keys in
the client's order), so unpacking gives back exactly what was packed. Markers are dicts with a
single ``$``-key; an inline value that looks like one is wrapped in ``{"$raw": …}``, so no client
body can be mistaken for a reference.

Reading is two lookups: the chunks a skeleton names (:func:`chunk_refs`), then the items and
values (:func:`leaf_refs`); :func:`unpack` puts the body back together. Pure: no I/O.
"""

from __future__ import annotations

import base64
import hashlib
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from operator import is_
from typing import Any

import orjson

from proxy.repairlog.carry import Packed, Sequences, shared_prefix

#: Item digests per stored chunk of a sequence.
CHUNK = 16
DIGEST_SIZE = 12  # 96 bits: no collision in any log's lifetime
#: Top-level values whose JSON is shorter than this stay inline in the skeleton.
MIN_BLOB = 128
_SEQ, _VALUE, _RAW, _BODY = "$seq", "$v", "$raw", "$body"
_MARKERS = frozenset({_SEQ, _VALUE, _RAW, _BODY})


def _digest(data: bytes) -> bytes:
    # No domain separation is needed: equal bytes are equal content, whatever they stand for.
    return hashlib.blake2b(data, digest_size=DIGEST_SIZE).digest()


def _names(digests: list[bytes]) -> str:
    """Digests as one string (base64 of their concatenation): compact in a JSON skeleton."""
    return base64.b64encode(b"".join(digests)).decode()


def _split(names: str) -> list[bytes]:
    return _chunk_digests(base64.b64decode(names))


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
        #: Digests of the item objects hashed so far, by identity (the object is kept so its id
        #: stays its own): a retried body shares its repaired items with the forwarded one.
        self._known: dict[int, tuple[Any, bytes]] = {}
        self._memory = memory

    def referenced(self) -> set[bytes]:
        """Every payload digest the bodies packed so far reference."""
        found = set(self.blobs)
        for packed, count in self._carried:
            found.update(packed.digests[:count])
        return found

    def payload(self, digest: bytes) -> bytes:
        """The JSON bytes of a referenced payload (a carried item's read from its list: asked
        only for what the database lacks)."""
        found = self.blobs.get(digest)
        if found is not None:
            return found
        for packed, count in self._carried:
            try:
                return packed.item(packed.digests.index(digest, 0, count))
            except ValueError:
                continue
        raise KeyError(digest)

    def body(
        self,
        body: Any,
        base: Mapping[str, Listed] | None = None,
        conversation: str | None = None,
        listed: tuple[Any, bytes] | None = None,
    ) -> Any:
        """The skeleton of one request body (any JSON value).

        With ``base`` (another body's lists, :attr:`sequences` after packing it), a list under
        the same key is stored as a patch against that list: what both share at the start and
        at the end, and the digests in between. A forwarded body differs from the received one
        by a repair or two and shares every other item object with it, so its sequence costs
        a few bytes and hashes only what the repair made. With ``conversation`` (and a
        memory), a list is compared with the one that conversation's previous turn held under
        the same key (:mod:`~proxy.repairlog.carry`); ``listed`` is a list of the body and its
        JSON, when the caller has it (not serialised again).
        """
        if not isinstance(body, dict) or (len(body) == 1 and _BODY in body):
            return {_BODY: self.value(body)}
        if base is not None:
            return {key: self._against(value, base.get(key)) for key, value in body.items()}
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

    def _against(self, value: Any, base: Listed | None) -> Any:
        """A top-level value of a body packed against a base (a list becomes a patch)."""
        if not (isinstance(value, list) and value):
            return self.value(value)
        if base is None:
            return {_SEQ: self._sequence(self._items(value))[0]}
        return {_SEQ: self._patched(value, base)}

    def value(self, value: Any) -> Any:
        """One value, stored by digest unless it is small (then inline)."""
        data = orjson.dumps(value)
        if len(data) < MIN_BLOB:
            return _escaped(value)
        digest = _digest(data)
        self.blobs[digest] = data
        return {_VALUE: _names([digest])}

    def _items(self, items: list[Any]) -> list[bytes]:
        digests = []
        known = self._known
        for item in items:
            seen = known.get(id(item))
            if seen is None:
                data = orjson.dumps(item)
                digest = _digest(data)
                self.blobs[digest] = data
                if isinstance(item, dict | list):  # immutable: shared only as the same object
                    known[id(item)] = (item, digest)
            else:
                digest = seen[1]
            digests.append(digest)
        return digests

    def _patched(self, items: list[Any], base: Listed) -> dict[str, Any]:
        """``items`` as a patch against ``base``: the items at either end that are ``base``'s
        own item objects (the repair left them alone) are shared without hashing them."""
        old = base.items
        head = _same_objects(items, old)
        tail = _same_objects(items[head:][::-1], old[head:][::-1])
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
            digest = _digest(blob)
            self.blobs[digest] = blob
            end += 1 + len(blob)  # the delimiter before it, then the item
            ends.append(end)
            digests.append(digest)
        sequence, chunks = self._sequence(digests, chunks)
        if end + 1 == len(data):  # the list is its items' JSON joined: offsets are exact
            self._memory.put(key, Packed(data, ends, digests, chunks))
        return digests, sequence

    def _sequence(
        self, digests: list[bytes], known: list[bytes] | None = None
    ) -> tuple[dict[str, str], list[bytes]]:
        """The sequence of ``digests`` and its chunks' digests (the leading ``known`` ones are
        not hashed again)."""
        full = len(digests) - len(digests) % CHUNK
        chunks = list(known or ())
        for n, start in enumerate(range(0, full, CHUNK)):
            data = b"".join(digests[start : start + CHUNK])
            if n < len(chunks):
                self.blobs[chunks[n]] = data
                continue
            digest = _digest(data)
            self.blobs[digest] = data
            chunks.append(digest)
        return {"c": _names(chunks), "t": _names(digests[full:])}, chunks


def _same_objects(items: list[Any], old: list[Any]) -> int:
    """How many leading items of ``items`` are the very objects of ``old`` (compared in C)."""
    same = list(map(is_, items, old))
    try:
        return same.index(False)
    except ValueError:
        return len(same)


def _patch(base: list[bytes], middle: list[bytes], head: int, tail: int) -> dict[str, Any]:
    """``base[:head] + middle + base[len(base) - tail:]`` as ``{"p": [head, tail], "t":
    middle}``, ``head`` and ``tail`` grown over whatever ``middle`` shares with ``base``."""
    first, last = 0, len(middle)
    end = len(base) - tail  # base[head:end] is what middle replaces
    while first < last and head < end and middle[first] == base[head]:
        first, head = first + 1, head + 1
    while first < last and head < end and middle[last - 1] == base[end - 1]:
        last, end = last - 1, end - 1
    return {"p": [head, len(base) - end], "t": _names(middle[first:last])}


def _escaped(value: Any) -> Any:
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in _MARKERS:
        return {_RAW: value}
    return value


def _tops(skeleton: Any) -> Iterator[tuple[str, Any]]:
    """The (key, marker) pairs of a skeleton that reference payloads."""
    if not isinstance(skeleton, dict):
        return
    for key, top in skeleton.items():
        if isinstance(top, dict) and len(top) == 1:
            yield key, top


def chunk_refs(skeletons: Iterable[Any]) -> set[bytes]:
    """The chunk digests the skeletons name (the first lookup)."""
    refs: set[bytes] = set()
    for skeleton in skeletons:
        for _, top in _tops(skeleton):
            if _SEQ in top:
                refs.update(_split(top[_SEQ].get("c", "")))
    return refs


def _chunk_digests(data: bytes) -> list[bytes]:
    return [data[i : i + DIGEST_SIZE] for i in range(0, len(data), DIGEST_SIZE)]


def leaf_refs(skeletons: Iterable[Any], chunks: Mapping[bytes, bytes]) -> set[bytes]:
    """The item and value digests the skeletons name, their chunks read (the second lookup).

    A patch's shared items are its base's, named by the base's own skeleton.
    """
    refs: set[bytes] = set()
    for skeleton in skeletons:
        for _, top in _tops(skeleton):
            if _VALUE in top:
                refs.update(_split(top[_VALUE]))
            elif _SEQ in top:
                for digest in _split(top[_SEQ].get("c", "")):
                    refs.update(_chunk_digests(chunks[digest]))
                refs.update(_split(top[_SEQ]["t"]))
            elif _BODY in top:
                refs.update(leaf_refs([{"": top[_BODY]}], chunks))
    return refs


def sequences(skeleton: Any, blobs: Mapping[bytes, bytes]) -> dict[str, list[bytes]]:
    """The item digests of each list of a skeleton packed without a base."""
    return {
        key: _sequence_digests(top[_SEQ], blobs, None)
        for key, top in _tops(skeleton)
        if _SEQ in top
    }


def _sequence_digests(
    seq: dict[str, Any], blobs: Mapping[bytes, bytes], base: list[bytes] | None
) -> list[bytes]:
    middle = _split(seq["t"])
    if "p" in seq:
        if base is None:
            raise KeyError("a patch without its base")
        head, tail = seq["p"]
        return base[:head] + middle + base[len(base) - tail :]
    return [d for chunk in _split(seq["c"]) for d in _chunk_digests(blobs[chunk])] + middle


def unpack(
    skeleton: Any, blobs: Mapping[bytes, bytes], base: Mapping[str, list[bytes]] | None = None
) -> Any:
    """The body a skeleton stands for; ``blobs`` holds every chunk, item and value it names,
    ``base`` the sequences of the body its patches are against (:func:`sequences`).

    A digest missing from ``blobs`` raises ``KeyError`` (a broken log, not a client's doing).
    """
    if not isinstance(skeleton, dict):
        return skeleton
    if len(skeleton) == 1 and _BODY in skeleton:
        return _resolve("", skeleton[_BODY], blobs, {})
    return {key: _resolve(key, top, blobs, base or {}) for key, top in skeleton.items()}


def _resolve(
    key: str, top: Any, blobs: Mapping[bytes, bytes], base: Mapping[str, list[bytes]]
) -> Any:
    if not (isinstance(top, dict) and len(top) == 1):
        return top
    marker, value = next(iter(top.items()))
    if marker == _RAW:
        return value
    if marker == _VALUE:
        return orjson.loads(blobs[_split(value)[0]])
    if marker == _SEQ:
        digests = _sequence_digests(value, blobs, base.get(key))
        return [orjson.loads(blobs[digest]) for digest in digests]
    return top


#: Record fields holding a body (``attempts`` holds one per attempt, under ``forwarded``).
BODY_FIELDS = ("received", "forwarded")


def pack_bodies(
    row: dict[str, Any],
    packer: Packer,
    conversation: str | None = None,
    listed: tuple[Any, bytes] | None = None,
) -> dict[str, Any]:
    """``row``'s bodies packed: one whole (against its ``conversation``'s previous turn), the
    other and each attempt's ``forwarded`` as patches against it; ``findings``, when given, as
    one value (a repeat's findings are its first record's, stored once).

    The whole one is ``received``, unless ``listed`` (see :attr:`Record.listed`) holds a list of
    ``forwarded``: its JSON is at hand, so ``forwarded`` is packed whole and ``received`` as
    the patch (:func:`unpack_bodies` tells which from the skeletons).
    """
    out = dict(row)
    if out.get("findings") is not None:
        out["findings"] = packer.value(out["findings"])
    whole, patched = "received", "forwarded"
    if listed is not None and _holds(out.get("forwarded"), listed[0]):
        whole, patched = patched, whole
    base: dict[str, Listed] | None = None
    if out.get(whole) is not None:
        out[whole] = packer.body(out[whole], conversation=conversation, listed=listed)
        base = packer.sequences
    if out.get(patched) is not None:
        out[patched] = packer.body(out[patched], base)
    if out.get("attempts"):
        out["attempts"] = [_packed_attempt(a, packer, base) for a in out["attempts"]]
    return out


def _holds(body: Any, items: Any) -> bool:
    return isinstance(body, dict) and any(value is items for value in body.values())


def _packed_attempt(attempt: Any, packer: Packer, base: dict[str, Listed] | None) -> Any:
    if not isinstance(attempt, dict) or attempt.get("forwarded") is None:
        return attempt
    return {**attempt, "forwarded": packer.body(attempt["forwarded"], base)}


def skeletons(row: Mapping[str, Any]) -> list[Any]:
    """The packed bodies of a stored row."""
    found = [row[name] for name in BODY_FIELDS if row.get(name) is not None]
    found += [
        a["forwarded"]
        for a in row.get("attempts") or ()
        if isinstance(a, dict) and a.get("forwarded") is not None
    ]
    if isinstance(row.get("findings"), dict):
        found.append({"": row["findings"]})
    return found


def findings_refs(rows: Iterable[Mapping[str, Any]]) -> set[bytes]:
    """The payloads holding the findings of summary rows (repeats store theirs once)."""
    return leaf_refs(
        [{"": row["findings"]} for row in rows if isinstance(row["findings"], dict)], {}
    )


def unpack_findings(rows: Iterable[dict[str, Any]], blobs: Mapping[bytes, bytes]) -> None:
    """Put the findings of summary rows back in place."""
    for row in rows:
        if isinstance(row["findings"], dict):
            row["findings"] = unpack({"": row["findings"]}, blobs)[""]


def unpack_bodies(row: dict[str, Any], blobs: Mapping[bytes, bytes]) -> None:
    """Put ``row``'s bodies back together in place (the inverse of :func:`pack_bodies`)."""
    unpack_findings([row], blobs)
    whole, patched = "received", "forwarded"
    if _is_patch(row.get("received")):
        whole, patched = patched, whole
    base: dict[str, list[bytes]] = {}
    if row.get(whole) is not None:
        base = sequences(row[whole], blobs)
        row[whole] = unpack(row[whole], blobs)
    if row.get(patched) is not None:
        row[patched] = unpack(row[patched], blobs, base)
    for attempt in row.get("attempts") or ():
        if isinstance(attempt, dict) and attempt.get("forwarded") is not None:
            attempt["forwarded"] = unpack(attempt["forwarded"], blobs, base)


def _is_patch(skeleton: Any) -> bool:
    """Whether a packed body holds a patch (it was packed against the other one)."""
    return any(_SEQ in top and "p" in top[_SEQ] for _, top in _tops(skeleton))


#: Stored blobs start with a tag: ``=`` the bytes as they are, ``z`` zlib (when it is smaller).
_RAW_TAG, _ZLIB_TAG = b"=", b"z"


#: Payloads shorter than this are stored as they are: compressing one costs about as much
#: whatever its size (zlib sets up its tables each time), and what it saves on a short message
#: or a chunk (digests: nothing to gain) is a few bytes.
MIN_COMPRESSED = 512


def stored_blob(data: bytes) -> bytes:
    """A payload as stored: compressed when that pays (JSON text mostly halves)."""
    if len(data) >= MIN_COMPRESSED:
        packed = zlib.compress(data, 1)
        if len(packed) < len(data):
            return _ZLIB_TAG + packed
    return _RAW_TAG + data


def read_blob(stored: bytes) -> bytes:
    """The payload a stored blob holds."""
    if stored[:1] == _ZLIB_TAG:
        return zlib.decompress(stored[1:])
    return stored[1:]
