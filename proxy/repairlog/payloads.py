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
from typing import Any

import orjson

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


class Packer:
    """Packs bodies; :attr:`blobs` collects what they reference (digest -> JSON bytes)."""

    def __init__(self) -> None:
        self.blobs: dict[bytes, bytes] = {}
        #: The item digests of each list of the body packed last (a ``base`` for the next).
        self.sequences: dict[str, list[bytes]] = {}
        #: Digests of the item objects packed so far, by identity (the object is kept so its id
        #: stays its own): a repaired body shares every untouched item with the received one.
        self._known: dict[int, tuple[Any, bytes]] = {}

    def body(self, body: Any, base: dict[str, list[bytes]] | None = None) -> Any:
        """The skeleton of one request body (any JSON value).

        With ``base`` (the item digests of another body's lists, by key, as :meth:`digests`
        gave them), a list under the same key is stored as a patch against that list: what
        both share at the start and at the end, and the digests in between. A forwarded body
        differs from the received one by a repair or two, so its sequence costs a few bytes.
        """
        self.sequences = {}
        if not isinstance(body, dict) or (len(body) == 1 and _BODY in body):
            return {_BODY: self.value(body)}
        return {key: self._top(key, value, (base or {}).get(key)) for key, value in body.items()}

    def _top(self, key: str, value: Any, base: list[bytes] | None) -> Any:
        if isinstance(value, list) and value:
            digests = self.sequences[key] = self._items(value)
            if base is not None:
                return {_SEQ: _patch(base, digests)}
            return {_SEQ: self._sequence(digests)}
        return self.value(value)

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

    def _sequence(self, digests: list[bytes]) -> dict[str, str]:
        full = len(digests) - len(digests) % CHUNK
        chunks = []
        for start in range(0, full, CHUNK):
            data = b"".join(digests[start : start + CHUNK])
            digest = _digest(data)
            self.blobs[digest] = data
            chunks.append(digest)
        return {"c": _names(chunks), "t": _names(digests[full:])}


def _patch(base: list[bytes], digests: list[bytes]) -> dict[str, Any]:
    """``digests`` as ``{"p": [head, tail], "t": middle}``: ``base[:head] + middle +
    base[len(base) - tail:]``."""
    limit = min(len(base), len(digests))
    head = 0
    while head < limit and base[head] == digests[head]:
        head += 1
    tail = 0
    while tail < limit - head and base[-1 - tail] == digests[-1 - tail]:
        tail += 1
    return {"p": [head, tail], "t": _names(digests[head : len(digests) - tail])}


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


def pack_bodies(row: dict[str, Any], packer: Packer) -> dict[str, Any]:
    """``row``'s bodies packed: ``received`` whole, ``forwarded`` and each attempt's
    ``forwarded`` as patches against it; ``findings``, when given, as one value (a repeat's
    findings are its first record's, stored once)."""
    out = dict(row)
    if out.get("findings") is not None:
        out["findings"] = packer.value(out["findings"])
    base: dict[str, list[bytes]] | None = None
    if out.get("received") is not None:
        out["received"] = packer.body(out["received"])
        base = packer.sequences
    if out.get("forwarded") is not None:
        out["forwarded"] = packer.body(out["forwarded"], base)
    if out.get("attempts"):
        out["attempts"] = [_packed_attempt(a, packer, base) for a in out["attempts"]]
    return out


def _packed_attempt(attempt: Any, packer: Packer, base: dict[str, list[bytes]] | None) -> Any:
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
    base: dict[str, list[bytes]] = {}
    unpack_findings([row], blobs)
    if row.get("received") is not None:
        base = sequences(row["received"], blobs)
        row["received"] = unpack(row["received"], blobs)
    if row.get("forwarded") is not None:
        row["forwarded"] = unpack(row["forwarded"], blobs, base)
    for attempt in row.get("attempts") or ():
        if isinstance(attempt, dict) and attempt.get("forwarded") is not None:
            attempt["forwarded"] = unpack(attempt["forwarded"], blobs, base)


#: Stored blobs start with a tag: ``=`` the bytes as they are, ``z`` zlib (when it is smaller).
_RAW_TAG, _ZLIB_TAG = b"=", b"z"


def stored_blob(data: bytes) -> bytes:
    """A payload as stored: compressed when that pays (JSON text mostly halves)."""
    if len(data) >= MIN_BLOB:
        packed = zlib.compress(data, 1)
        if len(packed) < len(data):
            return _ZLIB_TAG + packed
    return _RAW_TAG + data


def read_blob(stored: bytes) -> bytes:
    """The payload a stored blob holds."""
    if stored[:1] == _ZLIB_TAG:
        return zlib.decompress(stored[1:])
    return stored[1:]
