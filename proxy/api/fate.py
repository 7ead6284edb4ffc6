"""What a finished request leaves behind, derived from its :class:`RequestState` alone: whether
it is worth a record, and the record. The vocabulary is the state's (:meth:`RequestState.status`);
the record adds ``upstream_rejected`` for a request the upstream refused (or whose stream
carried an error), whatever the proxy did to it."""

from __future__ import annotations

from proxy.api.state import RequestState, Status
from proxy.repairlog.conversation import client_product
from proxy.repairlog.record import Outcome, Record, new_record_id

#: What the proxy did that is worth a record even when the upstream accepted the request.
_RECORDED: frozenset[Status] = frozenset({"repaired", "rejected", "warned"})


def wants_record(state: RequestState) -> bool:
    """A record is kept for every repaired, rejected or warned request of a unit, and for
    every one the upstream refused (4xx), retried or not.

    How the answer ended does not make a record: a clean request whose answer was cut (or
    whose client left) has none. The repair log says what the proxy changed and what the
    upstream refused; an upstream that breaks off is an outage of the upstream, seen in the
    request's log line (``end``) and in ``toolcall_guard_answer_endings_total``. Recording
    it would write a record, bodies included, for every failing request exactly when the
    upstream (and often the log) is struggling, for requests the proxy did not touch. A
    record that exists carries its true ending all the same (``Record.ending``)."""
    if state.status() in _RECORDED:
        return True
    return any(
        a.error is not None or (a.status is not None and 400 <= a.status < 500)
        for a in state.attempts
    )


def record_outcome(state: RequestState) -> Outcome:
    """The record's outcome: the state's status, or ``upstream_rejected`` when the upstream
    refused what was sent (or its stream carried an error), or accepted it untouched."""
    status = state.status()
    if status == "rejected":
        return "rejected"
    last = state.attempts[-1] if state.attempts else None
    refused = last is not None and last.status is not None and 400 <= last.status < 500
    errored = refused or (last is not None and last.error is not None)  # event: error too
    if errored or status == "clean":
        return "upstream_rejected"
    return status


def record(state: RequestState, upstream: str) -> Record:
    """The repair-log record of a request, derived from what it did."""
    log, outcome = state.log, state.outcome
    last = state.attempts[-1] if state.attempts else None
    findings = [f.as_dict() for f in outcome.findings] if outcome is not None else []
    findings += state.extra_findings
    kind = record_outcome(state)
    user_agent = next((v for k, v in state.forward if k == b"user-agent"), None)
    return Record(
        upstream=upstream,
        model=log.model,
        path=log.path,
        stream=state.stream,
        outcome=kind,
        findings=findings,
        received=state.data,
        forwarded=None if kind == "rejected" or last is None else last.forwarded,
        upstream_status=last.status if last is not None else None,
        upstream_error=last.error if last is not None else None,
        upstream_error_kind=last.error_kind if last is not None else None,
        duration_ms=log.total_ms,
        sanitize_ms=log.sanitize_ms,
        upstream_ms=log.upstream_ms,
        request_id=log.request_id,
        status=log.status,
        proxy_error=log.error,
        ending=state.ending,
        client=client_product(user_agent),
        attempts=[a.as_dict() for a in state.attempts] if len(state.attempts) > 1 else None,
        id=state.record_id or new_record_id(),
        listed=state.listed,
        owner=state.client,
        size=state.body_size + sum(len(a.error or "") for a in state.attempts),
    )
