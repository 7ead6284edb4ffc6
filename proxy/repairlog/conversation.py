"""Which conversation a request belongs to, and whether its findings repeat an earlier turn's.

Agents resend the whole history every turn, so one break recurs on every later turn of its
conversation. The repair log groups those turns: a record carries a conversation key and a
finding key, and a record whose conversation already has a record with the same finding key is
a *repeat* of that first record (it counts on the first record as ``repeats`` and
``last_seen``). Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import orjson

from proxy.core.wire import Wire, wire_of_record
from proxy.repairlog.record import Record

#: A product token and an optional bare version after it: ``OpenAI/Python 1.52.0``.
_CLIENT = re.compile(
    rb"[A-Za-z][A-Za-z0-9._+-]{0,40}(?:/[A-Za-z0-9._+-]{1,24})?(?: [0-9][0-9.]{0,15})?"
)

#: History items read for the key at most, when no user turn comes early (bounded work).
_START_ITEMS = 8


#: A fresh hasher, copied for each key (cheaper than building one: see ``payloads.digest_of``).
_BLAKE2B = hashlib.blake2b(digest_size=8)


def _hex(*parts: Any) -> str:
    hasher = _BLAKE2B.copy()
    hasher.update(orjson.dumps(parts))
    return hasher.hexdigest()


def conversation_key(
    path: str, body: Any, scope: tuple[Any, ...] = (), wire: Wire | None = None
) -> str | None:
    """A stable key for the conversation ``body`` belongs to, or None when there is none.

    The client's own conversation id where the API has one (Responses' ``conversation``, the
    session in an Anthropic ``metadata.user_id`` as Claude Code sends it); otherwise the
    history's stable start: the system text (``system``/``instructions``) and the items up to
    and including the first user turn. Later turns only add items, so the start stays the same.
    Within ``scope`` (the upstream, and the client key that sent it when client keys are
    configured): the body is the client's to write, so a client that copies another's start or
    ids gets a conversation of its own, not turns counted on the other's. ``wire``: the row
    serving ``path``, when the caller knows it (else found from the path).
    """
    if not isinstance(body, dict):
        return None
    conversation = body.get("conversation")
    if isinstance(conversation, dict):
        conversation = conversation.get("id")
    if isinstance(conversation, str) and conversation:
        return _hex("conversation", path, scope, conversation)
    metadata = body.get("metadata")
    user_id = metadata.get("user_id") if isinstance(metadata, dict) else None
    if isinstance(user_id, str) and "session" in user_id:
        return _hex("session", path, scope, user_id)
    wire = wire or wire_of_record(path, body)
    history = wire.items(body)
    if not history:
        return None
    start = []
    for item in history[:_START_ITEMS]:
        start.append(item)
        if isinstance(item, dict) and item.get("role") == "user":
            break
    return _hex("start", path, scope, *map(body.get, wire.system_keys), start)


def client_product(user_agent: bytes | None) -> str | None:
    """Which client sent a request: the leading product token of its ``User-Agent`` (and the
    version after it), never more: ``claude-cli/2.1.3 (external, cli)`` -> ``claude-cli/2.1.3``.
    It names a library, not a person, so every capture mode keeps it."""
    if not user_agent:
        return None
    match = _CLIENT.match(user_agent)
    return None if match is None else match.group().decode()


def finding_key(record: Record) -> str:
    """The same findings at the same places (whatever their order), with the same fate for the
    client (outcome, status, how the answer ended), give the same key: a turn whose answer was
    cut, or that failed where the first succeeded, is a first record of its own, listed."""
    places = sorted({(str(f.get("rule")), str(f.get("path"))) for f in record.findings})
    return _hex(record.outcome, record.status, record.ending, places)


#: A conversation and a finding key: what a repeat is matched on.
RepeatKey = tuple[str, str]


def repeat_keys(records: Sequence[Record]) -> dict[str, RepeatKey]:
    """Each record's repeat key, by record id (records without a conversation have none)."""
    return {r.id: (r.conversation, finding_key(r)) for r in records if r.conversation is not None}


def assign_repeats(
    records: Sequence[Record], keys: dict[str, RepeatKey], firsts: dict[RepeatKey, str]
) -> dict[str, tuple[int, datetime]]:
    """Mark the records that repeat a first record, in order; the counts to add to each first.

    ``firsts`` holds the first records already stored, by key; a record with no first becomes
    the first of its key for the records after it in the batch.
    """
    bumps: dict[str, tuple[int, datetime]] = {}
    for record in records:
        key = keys.get(record.id)
        if key is None:
            continue
        first = firsts.setdefault(key, record.id)
        if first == record.id:
            continue
        record.repeat_of = first
        count, seen = bumps.get(first, (0, record.created_at))
        bumps[first] = (count + 1, max(seen, record.created_at))
    return bumps
