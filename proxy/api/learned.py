"""Learned field strips: fields an upstream refused, stripped up front on later requests.

When an upstream names a field it does not accept (Mistral's ``extra_forbidden`` ``loc``, Groq's
``property 'X' is unsupported``, OpenAI's ``Unknown parameter``), the retry
(:func:`proxy.core.retry.plan_retry`) yields a field pattern such as
``messages[*].tool_calls[*].index``. :class:`LearnedStrips` remembers ``(upstream, model,
pattern)`` with the refusal's text for ``ttl`` seconds, bounded to ``max_entries`` (the oldest
go first), and :meth:`LearnedStrips.strip` removes those fields from later requests before they
are sent, with a ``learned_field_strip`` finding naming the evidence (repair-on-reject.md C2,
bound 8).

**Per process**: nothing is shared between replicas or kept across restarts; each process
learns on its own (a refusal costs each replica one retry).

``GET /repairs/learned`` lists what is learned, ``DELETE /repairs/learned`` forgets it (admin,
like ``/repairs``). The router reads ``request.app.state.learned``. Mount :data:`router` before
:data:`proxy.api.repairs.router`, whose ``/repairs/{record_id}`` would otherwise take the path.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel

from proxy.api.auth import AdminRoute, require_admin
from proxy.api.repairs import ERRORS
from proxy.core.retry import strip_field
from proxy.core.rule import Finding
from proxy.errors import LearningUnavailable

RULE = "learned_field_strip"
DEFAULT_TTL = 3600.0
DEFAULT_MAX_ENTRIES = 256
#: The evidence kept per entry (the upstream's sentence), in characters.
MAX_EVIDENCE = 500

Key = tuple[str, str, str]  # (upstream, model, field pattern)


@dataclass(slots=True)
class Learned:
    """One field an upstream refused for a model, and since/until when it is stripped."""

    upstream: str
    model: str
    field: str
    evidence: str
    learned_at: float
    expires_at: float
    applied: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "upstream": self.upstream,
            "model": self.model,
            "field": self.field,
            "evidence": self.evidence,
            "learned_at": _iso(self.learned_at),
            "expires_at": _iso(self.expires_at),
            "applied": self.applied,
        }


class LearnedStrips:
    """The store: bounded in size and time; ``clock`` (seconds, wall time) is injected."""

    def __init__(
        self,
        *,
        ttl: float = DEFAULT_TTL,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if ttl <= 0 or max_entries < 1:
            raise ValueError("ttl must be positive and max_entries at least 1")
        self.ttl = ttl
        self.max_entries = max_entries
        self.clock = clock
        self._entries: OrderedDict[Key, Learned] = OrderedDict()  # oldest first

    def learn(self, upstream: str, model: str | None, field: str, evidence: str) -> None:
        """Remember that ``upstream`` refused ``field`` for ``model`` (learning it again renews
        it); past ``max_entries`` the oldest entry goes."""
        now = self.clock()
        key = (upstream, model or "", field)
        self._entries.pop(key, None)
        text = evidence[:MAX_EVIDENCE]
        self._entries[key] = Learned(*key, text, now, now + self.ttl)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def strip(
        self, upstream: str, model: str | None, body: dict[str, Any]
    ) -> tuple[dict[str, Any], list[Finding]]:
        """``body`` without the fields learned for ``(upstream, model)``, and one finding per
        field removed. Nothing learned or nothing present: the very same ``body``, no finding."""
        self._expire()
        findings: list[Finding] = []
        for (up, mod, field), entry in self._entries.items():
            if up != upstream or mod != (model or ""):
                continue
            body, removed = strip_field(body, field)
            if removed:
                entry.applied += 1
            detail = f"{upstream} refused {field} for {entry.model!r}: {entry.evidence}"
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


def _iso(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).isoformat().replace("+00:00", "Z")


class LearnedOut(BaseModel):
    upstream: str
    model: str
    field: str
    evidence: str
    learned_at: str
    expires_at: str
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
    """Fields upstreams refused, stripped up front until they expire (this process only)."""
    return {"data": [e.as_dict() for e in _store(request).entries()]}


@router.delete("/repairs/learned", response_model=Forgotten, summary="Forget learned fields")
async def forget_learned(request: Request) -> dict[str, int]:
    """Forget every learned field; returns how many entries went."""
    return {"deleted": _store(request).clear()}


def _store(request: Request) -> LearnedStrips:
    store: LearnedStrips | None = getattr(request.app.state, "learned", None)
    if store is None:
        raise LearningUnavailable("Learned field strips are not set up in this process.")
    return store
