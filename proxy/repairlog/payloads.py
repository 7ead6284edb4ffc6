"""Content-addressed request bodies: each history item is stored once, a record holds references.

Agents send the whole history on every turn, so a conversation whose history broke once sends the
same items, a few more each turn, for the rest of its life. Stored whole, the log grew with
turns x history (63x the final body for 60 turns). Here a body is *packed* into a skeleton
(:mod:`~proxy.repairlog.packing` writes them; this module is the format, and reads them):

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
import binascii
import hashlib
import zlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import orjson

from proxy.errors import RepairLogError

#: Item digests per stored chunk of a sequence.
CHUNK = 16
DIGEST_SIZE = 12  # 96 bits: no collision in any log's lifetime
#: Top-level values whose JSON is shorter than this stay inline in the skeleton.
MIN_BLOB = 128
_SEQ, _VALUE, _RAW, _BODY = "$seq", "$v", "$raw", "$body"
_MARKERS = frozenset({_SEQ, _VALUE, _RAW, _BODY})


#: A fresh hasher, copied for each payload: a copy costs a third less than ``blake2b(data,
#: digest_size=…)``, which parses its keywords and sets up the parameter block every time.
_BLAKE2B = hashlib.blake2b(digest_size=DIGEST_SIZE)


def digest_of(data: bytes) -> bytes:
    # No domain separation is needed: equal bytes are equal content, whatever they stand for.
    hasher = _BLAKE2B.copy()
    hasher.update(data)
    return hasher.digest()


def names(digests: list[bytes]) -> str:
    """Digests as one string (base64 of their concatenation): compact in a JSON skeleton.
    ``base64.b64encode`` without its Python frame (a few thousand instructions a call, several
    calls a record)."""
    return binascii.b2a_base64(b"".join(digests), newline=False).decode()


def _split(names: str) -> list[bytes]:
    return _chunk_digests(base64.b64decode(names))


def escaped(value: Any) -> Any:
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
    """Put ``row``'s bodies back together in place (the inverse of
    :func:`~proxy.repairlog.rows.pack_bodies`)."""
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


def unpack_record(row: dict[str, Any], blobs: Mapping[bytes, bytes]) -> None:
    """:func:`unpack_bodies` for a record read back: a payload it lacks (taken by retention
    in between, or lost) is :class:`~proxy.errors.RepairLogError`."""
    try:
        unpack_bodies(row, blobs)
    except KeyError as exc:
        raise RepairLogError(f"record {row['id']}: a payload is missing") from exc


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
