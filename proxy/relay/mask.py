"""Keys masked in a body as it streams: no buffering, nothing relayed before it was checked.

An upstream can quote the key the proxy gave it in a ``200`` too: an ``event: error`` of an
event stream (``Incorrect API key provided: sk-…``). :class:`KeyMask` replaces every key in the
bytes as they pass, in any letter case, with a mask of the same length (a declared
``content-length`` stays true, an event's framing too). A key can straddle two chunks, so a
chunk's last bytes are held back while they could be the start of a key: at most
``len(key) - 1`` bytes, and none when the chunk ends in anything a key does not start with (an
event's closing blank line goes out with its event). :class:`Inflater` decodes a gzip or
deflate body chunk by chunk, for a mask to read. Pure: no I/O.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

#: Shorter values are no key: masking them would garble unrelated bytes.
MIN_KEY = 6
#: What a key becomes (cut or padded with ``*`` to the key's length).
MASK = b"[redacted]"


def mask_of(length: int) -> bytes:
    """The mask of a key of ``length`` bytes: ``[redacted]`` padded with ``*``, or ``*`` only
    when the key is shorter than the word."""
    return MASK.ljust(length, b"*") if length >= len(MASK) else b"*" * length


class KeyMask:
    """Masks ``keys`` in a stream fed chunk by chunk (see the module docstring)."""

    __slots__ = ("held", "keys")

    def __init__(self, keys: Iterable[bytes]) -> None:
        self.keys = sorted({k.lower() for k in keys if len(k) >= MIN_KEY}, key=len, reverse=True)
        self.held = b""

    def feed(self, chunk: bytes) -> bytes:
        """The bytes of ``chunk`` (after those held from the last) that can go out now."""
        data = self.held + chunk if self.held else chunk
        if not self.keys:
            return data
        low = data.lower()
        found = [(at, len(key)) for key in self.keys for at in _all(low, key)]
        if found:
            masked = bytearray(data)
            for at, length in found:
                masked[at : at + length] = mask_of(length)
            data, low = bytes(masked), bytes(masked).lower()
        hold = max(_open_end(low, key) for key in self.keys)
        self.held = data[len(data) - hold :] if hold else b""
        return data[: len(data) - hold] if hold else data

    def flush(self) -> bytes:
        """What is still held at the body's end (no key: the body ended before one could)."""
        held, self.held = self.held, b""
        return held


def _all(data: bytes, key: bytes) -> Iterable[int]:
    at = data.find(key)
    while at >= 0:
        yield at
        at = data.find(key, at + len(key))


def _open_end(data: bytes, key: bytes) -> int:
    """How many of ``data``'s last bytes begin ``key`` (fewer than the whole key)."""
    start = max(0, len(data) - len(key) + 1)
    at = data.find(key[:1], start)
    while at >= 0:
        if key.startswith(data[at:]):
            return len(data) - at
        at = data.find(key[:1], at + 1)
    return 0


class Inflater:
    """A gzip (every member) or deflate body decoded chunk by chunk."""

    __slots__ = ("_inflater",)

    def __init__(self) -> None:
        self._inflater = zlib.decompressobj(wbits=47)  # gzip or zlib, told by the header

    def feed(self, chunk: bytes) -> bytes:
        """The decoded bytes of ``chunk``; :class:`zlib.error` when it is no such data."""
        out = [self._inflater.decompress(chunk)]
        while self._inflater.eof and self._inflater.unused_data:  # the next gzip member
            rest = self._inflater.unused_data
            self._inflater = zlib.decompressobj(wbits=47)
            out.append(self._inflater.decompress(rest))
        return b"".join(out)
