"""What a writer remembers between batches, so that a conversation's turn costs what is new.

Agents resend the whole history every turn. Packing a body hashes each of its items
(:mod:`~proxy.repairlog.payloads`), and storing it asks the database which of those digests it
holds: both grew with the history, so a broken conversation cost the writer its whole history
again on every turn. Two bounded memories cut that to the new items:

- :class:`Sequences`: per conversation, the list each top-level key held in the body packed
  last, as one canonical JSON text (``orjson.dumps`` of the list, which is the items' own texts
  joined by commas) with each item's end offset and digest. The next turn's list is dumped once
  (one C call) and compared with it byte for byte: the items of the common prefix keep their
  digests, and only the items after it are dumped and hashed one by one. Nothing is trusted
  that was not compared, so a client cannot make another's items count as its own; a stale or
  evicted entry only costs the hashing it would have saved.
- :class:`StoredDigests`: the payload digests this process wrote or found stored, with their
  ``last_used``. A digest whose ``last_used`` is within ``trust`` seconds (half of
  :data:`~proxy.repairlog.sql.LAST_USED_SLACK`) of the batch being written is taken as stored
  without asking: collection only takes payloads unused for longer than the slack before the
  oldest kept record, and never before the current time (:func:`~proxy.repairlog.sql.kept_since`),
  whichever process collects. The half leaves room for clocks that disagree. A collection run by
  this process clears it all the same.

Both are used by one writer at a time (the backend's writer thread, or its batches in turn).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import islice

#: Canonical JSON bytes the sequence memory holds at most (the last list of each conversation).
SEQUENCE_BYTES = 32 << 20
#: Digests the stored-digest memory holds at most (about 100 bytes each).
STORED_DIGESTS = 200_000


@dataclass(slots=True)
class Packed:
    """One list as it was packed: its canonical JSON, each item's end offset in it (exclusive),
    each item's digest and the digest of each full chunk of them; once the batch that packed
    it committed, ``confirmed``: the :class:`StoredDigests` generation and the oldest
    ``last_used`` of those payloads then (:meth:`StoredDigests.trusts`)."""

    data: bytes
    ends: list[int]
    digests: list[bytes]
    chunks: list[bytes]
    confirmed: tuple[int, int] | None = None

    def item(self, i: int) -> bytes:
        """Item ``i``'s own JSON (it starts one byte after the previous one ends: ``[`` or
        ``,``)."""
        start = self.ends[i - 1] + 1 if i else 1
        return self.data[start : self.ends[i]]


def shared_prefix(before: Packed, data: bytes) -> int:
    """How many leading items of the list whose canonical JSON is ``data`` are byte for byte
    those of ``before``.

    An item is shared when every byte up to its end is the same and a delimiter follows it in
    ``data`` too (so it ends there as well). The usual turn only appends: one comparison.
    """
    ends = before.ends
    if not ends:
        return 0
    last = ends[-1]
    if data[last : last + 1] in (b",", b"]") and data.startswith(memoryview(before.data)[:last]):
        return len(ends)
    old = before.data
    shared = start = 0
    for end in ends:  # an edited history: item by item, up to the first difference
        # Slices of bytes compare with memcmp (a memoryview's compare unpacks each byte).
        if data[start:end] != old[start:end] or data[end : end + 1] not in (b",", b"]"):
            break
        shared, start = shared + 1, end
    return shared


class Sequences:
    """The last packed list per (conversation, key), least recently used first out, within
    :data:`SEQUENCE_BYTES` of canonical JSON."""

    def __init__(self, max_bytes: int = SEQUENCE_BYTES) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self._lists: OrderedDict[tuple[str, str], Packed] = OrderedDict()

    def __len__(self) -> int:
        return len(self._lists)

    def get(self, key: tuple[str, str]) -> Packed | None:
        found = self._lists.get(key)
        if found is not None:
            self._lists.move_to_end(key)
        return found

    def put(self, key: tuple[str, str], packed: Packed) -> None:
        old = self._lists.pop(key, None)
        if old is not None:
            self.bytes -= len(old.data)
        if len(packed.data) > self.max_bytes:
            return
        self._lists[key] = packed
        self.bytes += len(packed.data)
        while self.bytes > self.max_bytes:
            _, evicted = self._lists.popitem(last=False)
            self.bytes -= len(evicted.data)


class StoredDigests:
    """Payload digests known to be stored, with their ``last_used`` (see the module docstring);
    the oldest entries go first beyond :data:`STORED_DIGESTS`."""

    def __init__(self, trust: int, limit: int = STORED_DIGESTS) -> None:
        self.trust = trust
        self.limit = limit
        self._used: dict[bytes, int] = {}
        #: Bumped by :meth:`clear`: a list confirmed before is not trusted any more.
        self.generation = 0

    def __len__(self) -> int:
        return len(self._used)

    def fresh(self, digests: Iterable[bytes], now: int) -> dict[bytes, int]:
        """Those of ``digests`` known stored with a ``last_used`` recent enough to trust."""
        used, since = self._used, now - self.trust
        found = {}
        for digest in digests:
            when = used.get(digest)
            if when is not None and when >= since:
                found[digest] = when
        return found

    def update(self, used: dict[bytes, int]) -> None:
        """Remember ``used`` (digest -> last_used) once the batch that stored it committed."""
        self._used.update(used)
        excess = len(self._used) - self.limit
        if excess > 0:
            for digest in list(islice(self._used, excess + self.limit // 4)):
                del self._used[digest]

    def trusts(self, packed: Packed, now: int) -> bool:
        """Whether every payload of ``packed`` is known stored with a ``last_used`` recent
        enough to trust (as :meth:`fresh` judges one digest), without looking at each."""
        confirmed = packed.confirmed
        return (
            confirmed is not None
            and confirmed[0] == self.generation
            and confirmed[1] >= now - self.trust
        )

    def clear(self) -> None:
        self._used.clear()
        self.generation += 1
