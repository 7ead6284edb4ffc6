"""Learned field strips: fields an upstream refused, stripped up front on later requests.

When an upstream names a field it does not accept (Mistral's ``extra_forbidden`` ``loc``, Groq's
``property 'X' is unsupported``, OpenAI's ``Unknown parameter``), the retry
(:func:`proxy.core.retry.plan_retry`) yields a field pattern such as
``messages[*].tool_calls[*].index``. :class:`LearnedStrips` remembers ``(upstream, model,
pattern)`` with the refusal's text for ``ttl`` seconds, bounded to ``max_entries`` (the oldest
go first), and :meth:`LearnedStrips.strip` removes those fields from later requests before they
are sent, with a ``learned_field_strip`` finding naming the evidence (repair-on-reject.md C2,
bound 8).

**One client cannot change another's requests.** A refusal is evidence from one request,
and its text may echo that client's values, so an entry starts *pending*: it applies to later
requests only once ``confirmations`` (2) distinct reporters saw the same refusal. A reporter is
the client (a digest of its key) when client keys are configured, so one client alone never
changes another's request, while its own later requests are stripped at once (per-client
scope); without client keys clients cannot be told apart, and a reporter is the refused body
(its digest): one crafted request teaches nothing, and what a client could still send twice
is fenced in by the signatures (anchored, agreeing with the envelope's ``param``,
:mod:`proxy.core.errortext`) and by what may be learned at all (optional extras only, present
in the refused request: :mod:`proxy.core.learnable`). Past ``max_entries`` pending entries go
before confirmed ones, so a flood of one-off refusals cannot push out what a fleet confirmed.

**Per process**, unless the repair log is PostgreSQL: then every replica shares what it learns
through a table (:mod:`proxy.api.learned_shared`) and applies it within seconds; with SQLite
or memory, each process learns on its own (a refusal costs it one retry per reporter needed).

``GET /repairs/learned`` lists what is learned, ``DELETE /repairs/learned`` forgets it (admin,
like ``/repairs``). The router reads ``request.app.state.learned``. Mount :data:`router` before
:data:`proxy.api.repairs.router`, whose ``/repairs/{record_id}`` would otherwise take the path.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson
from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel

from proxy.api.auth import AdminRoute, require_admin
from proxy.api.repair_models import ERRORS
from proxy.core.retry import strip_field
from proxy.core.rule import Finding
from proxy.errors import LearningUnavailable

RULE = "learned_field_strip"
DEFAULT_TTL = 3600.0
DEFAULT_MAX_ENTRIES = 256
#: Distinct reporters (clients, or refused bodies without client keys) before an entry applies
#: to everyone.
DEFAULT_CONFIRMATIONS = 2
#: The evidence kept per entry (the upstream's sentence), in characters.
MAX_EVIDENCE = 500

Key = tuple[str, str, str]  # (upstream, model, field pattern)
#: A report to share with other replicas: the key, the reporter, the evidence, the expiry.
Report = tuple[Key, str, str, float]
#: What the shared table holds for one key: its reporters, evidence and latest expiry.
Shared = tuple[set[str], str, float]


@dataclass(slots=True)
class Learned:
    """One field an upstream refused for a model, and since/until when it is stripped."""

    upstream: str
    model: str
    field: str
    evidence: str
    learned_at: float
    expires_at: float
    #: Who saw the refusal: client digests, or refused-body digests (bounded by the store).
    reporters: set[str] = dataclasses.field(default_factory=set)
    confirmed: bool = False
    applied: int = 0
    #: Seen in the shared table (:mod:`proxy.api.learned_shared`): gone from it, it was forgotten.
    shared: bool = False

    def applies_to(self, client: str | None) -> bool:
        """Whether a request from ``client`` (None: clients are not told apart) is stripped."""
        return self.confirmed or (client is not None and client in self.reporters)

    def as_dict(self) -> dict[str, Any]:
        return {
            "upstream": self.upstream,
            "model": self.model,
            "field": self.field,
            "evidence": self.evidence,
            "learned_at": _iso(self.learned_at),
            "expires_at": _iso(self.expires_at),
            "confirmations": len(self.reporters),
            "confirmed": self.confirmed,
            "applied": self.applied,
        }


class LearnedStrips:
    """The store: bounded in size and time; ``clock`` (seconds, wall time) is injected."""

    def __init__(
        self,
        *,
        ttl: float = DEFAULT_TTL,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        confirmations: int = DEFAULT_CONFIRMATIONS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if ttl <= 0 or max_entries < 1 or confirmations < 1:
            raise ValueError("ttl must be positive, max_entries and confirmations at least 1")
        self.ttl = ttl
        self.max_entries = max_entries
        self.confirmations = confirmations
        self.clock = clock
        self._entries: OrderedDict[Key, Learned] = OrderedDict()  # oldest first
        #: Set while a shared table syncs this store: reports then wait in the outbox.
        self.sharing = False
        self._outbox: list[Report] = []

    def learn(
        self, upstream: str, model: str | None, field: str, evidence: str, *, reporter: str
    ) -> None:
        """Remember that ``upstream`` refused ``field`` for ``model``, seen by ``reporter``
        (learning it again renews it and adds the reporter); past ``max_entries`` the oldest
        pending entry goes, else the oldest."""
        key = (upstream, model or "", field)
        expires_at = self.clock() + self.ttl
        if key in self._entries:
            self._entries.move_to_end(key)  # renewed: the newest
        self._merge(key, {reporter}, evidence, expires_at)
        if self.sharing and len(self._outbox) < self.max_entries * self.confirmations:
            self._outbox.append((key, reporter, evidence[:MAX_EVIDENCE], expires_at))

    def drain(self) -> list[Report]:
        """The reports made since the last call, for the shared table."""
        reports, self._outbox = self._outbox, []
        return reports

    def absorb(self, table: dict[Key, Shared]) -> None:
        """Take in what the shared table holds: its reporters count towards confirmation here
        too; an entry that was in the table and is gone from it was forgotten elsewhere."""
        for key in [k for k, e in self._entries.items() if e.shared and k not in table]:
            del self._entries[key]
        for key, (reporters, evidence, expires_at) in table.items():
            self._merge(key, reporters, evidence, expires_at).shared = True
        self._expire()

    def _merge(self, key: Key, reporters: set[str], evidence: str, expires_at: float) -> Learned:
        entry = self._entries.get(key)
        if entry is None:
            now = self.clock()
            entry = self._entries[key] = Learned(*key, "", now, now)
        entry.evidence = evidence[:MAX_EVIDENCE]
        entry.expires_at = max(entry.expires_at, expires_at)
        room = self.confirmations - len(entry.reporters)
        entry.reporters.update(sorted(reporters - entry.reporters)[: max(room, 0)])
        entry.confirmed = len(entry.reporters) >= self.confirmations
        while len(self._entries) > self.max_entries:
            pending = next((k for k, e in self._entries.items() if not e.confirmed), None)
            self._entries.pop(pending) if pending is not None else self._entries.popitem(False)
        return entry

    def strip(
        self, upstream: str, model: str | None, body: dict[str, Any], client: str | None = None
    ) -> tuple[dict[str, Any], list[Finding]]:
        """``body`` without the fields learned for ``(upstream, model)`` that apply to
        ``client``, and one finding per field removed. Nothing learned or nothing present: the
        very same ``body``, no finding."""
        self._expire()
        findings: list[Finding] = []
        for (up, mod, pattern), entry in self._entries.items():
            if up != upstream or mod != (model or "") or not entry.applies_to(client):
                continue
            body, removed = strip_field(body, pattern)
            if removed:
                entry.applied += 1
            detail = f"{upstream} refused {pattern} for {entry.model!r}: {entry.evidence}"
            findings.extend(Finding(RULE, "strip", path, detail) for path in removed)
        return body, findings

    @property
    def active(self) -> bool:
        """Whether anything is learned (expired entries too): the hot path's cheap test."""
        return bool(self._entries)

    def entries(self) -> list[Learned]:
        """What is learned and not expired, oldest first."""
        self._expire()
        return list(self._entries.values())

    def clear(self) -> int:
        """Forget everything; returns how many entries went."""
        count = len(self._entries)
        self._entries.clear()
        return count

    def __len__(self) -> int:
        return len(self.entries())

    def _expire(self) -> None:
        now = self.clock()
        for key in [k for k, e in self._entries.items() if e.expires_at <= now]:
            del self._entries[key]


def client_digests(keys: Iterable[str]) -> dict[bytes, str]:
    """Each configured client key's reporter name: a digest of it, never the key itself."""
    return {key.encode(): "client:" + _digest(key.encode()) for key in keys}


def body_reporter(body: Any) -> str:
    """The reporter name of a refused request when clients are not told apart: its body."""
    return "body:" + _digest(orjson.dumps(body, option=orjson.OPT_SORT_KEYS))


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=12).hexdigest()


def _iso(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).isoformat().replace("+00:00", "Z")


class LearnedOut(BaseModel):
    upstream: str
    model: str
    field: str
    evidence: str
    learned_at: str
    expires_at: str
    confirmations: int
    confirmed: bool
    applied: int


class LearnedList(BaseModel):
    data: list[LearnedOut]


class Forgotten(BaseModel):
    deleted: int


router = APIRouter(
    tags=["repairs"],
    route_class=AdminRoute,
    dependencies=[Depends(require_admin)],
    responses=ERRORS,
)


@router.get("/repairs/learned", response_model=LearnedList, summary="Fields learned to strip")
async def list_learned(request: Request) -> dict[str, Any]:
    """Fields upstreams refused, stripped up front until they expire (this process, or every
    replica of a PostgreSQL repair log)."""
    return {"data": [e.as_dict() for e in _store(request).entries()]}


@router.delete("/repairs/learned", response_model=Forgotten, summary="Forget learned fields")
async def forget_learned(request: Request) -> dict[str, int]:
    """Forget every learned field; returns how many entries went."""
    shared = getattr(request.app.state, "learned_shared", None)
    if shared is not None:  # every replica of a PostgreSQL repair log forgets it too
        await shared.clear()
    return {"deleted": _store(request).clear()}


def _store(request: Request) -> LearnedStrips:
    store: LearnedStrips | None = getattr(request.app.state, "learned", None)
    if store is None:
        raise LearningUnavailable("Learned field strips are not set up in this process.")
    return store
