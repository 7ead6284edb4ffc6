"""One object per proxied request: what the client sent, what the proxy decided, how it ended.

The endpoint fills a :class:`RequestState` as the request goes; what the proxy decided and how
the request ended are written through its methods only (:meth:`~RequestState.checking`,
:meth:`~RequestState.decided`, :meth:`~RequestState.sending`, :meth:`~RequestState.retrying`,
:meth:`~RequestState.answered`, :meth:`~RequestState.failed`, :meth:`~RequestState.gone`), not
by the guard, the retry and the endpoint each. When it ends, the log line and, when there is
something to keep, the repair-log :class:`~proxy.repairlog.record.Record` are both derived from
it (:meth:`RequestState.record`). Nothing is copied field by field on the way.
"""

from __future__ import annotations

from time import perf_counter
from typing import Any

from starlette.types import Receive, Scope, Send

from proxy.api.attempt import Attempt, event_error_type, rule_list
from proxy.api.scrub import redacted, secret_of
from proxy.core.policy import Outcome, Policy
from proxy.core.rule import Finding
from proxy.logs import RequestLog, request_id
from proxy.relay.asgi import RESPONSE_STARTED
from proxy.relay.base import REQUEST_DROP, RawHeaders, connection_tokens
from proxy.repairlog.classify import classify_refusal
from proxy.repairlog.conversation import client_product
from proxy.repairlog.record import Ending, Record, new_record_id

#: Request headers that carry a key for the upstream (Azure's, Anthropic's, Google's).
_KEY_HEADERS = frozenset({b"api-key", b"x-api-key", b"x-goog-api-key"})
#: Outcomes worth a record even when the upstream accepted the request.
_RECORDED = frozenset({"repaired", "rejected", "warned"})


class RequestState:
    """A request: the ASGI triple, what the client sent that matters, its log line, its fate.

    The client's headers are read once: control headers (``x-toolcall-guard-*``) and
    ``authorization`` are set aside, hop-by-hop ones dropped, the rest kept in order to be
    forwarded as they are.
    """

    __slots__ = (
        "api",
        "api_key",
        "attempts",
        "auth",
        "body_size",
        "client",
        "data",
        "ending",
        "extra_findings",
        "forward",
        "listed",
        "log",
        "mode",
        "mode_ignored",
        "outcome",
        "policy",
        "receive",
        "record_id",
        "scope",
        "send",
        "stream",
        "upstream_header",
    )

    def __init__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.scope = scope
        self.receive = receive
        self.send = send
        self.auth: bytes | None = None
        self.api_key: bytes | None = None  # the client's x-api-key (Anthropic clients' key)
        #: The reporter name of the client key the request came with (client keys configured).
        self.client: str | None = None
        self.mode: bytes | None = None
        self.mode_ignored = False  # a mode header the config does not allow
        self.upstream_header: bytes | None = None
        self.api: str | None = None  # the wire API unit that checked the body, if any
        self.data: Any = None  # the parsed body (units only)
        self.body_size = 0  # bytes of the bodies the record holds, decompressed
        #: A repaired body's history list and its JSON as sent (:attr:`Record.listed`).
        self.listed: tuple[list[Any], bytes] | None = None
        self.stream = False
        self.outcome: Outcome | None = None
        self.policy: Policy | None = None  # the policy the unit's check ran under
        self.attempts: list[Attempt] = []
        #: Changes made after the policy: learned field strips, a retry's repair.
        self.extra_findings: list[dict[str, str]] = []
        self.record_id: str | None = None
        #: How the answer the client got ended (None until it has: see :meth:`ended`).
        self.ending: Ending | None = None
        sent_id = connection = None
        forward: RawHeaders = []
        for name, value in scope["headers"]:
            if name in REQUEST_DROP:
                if name == b"x-toolcall-guard-upstream":
                    self.upstream_header = value
                elif name == b"x-toolcall-guard-mode":
                    self.mode = value
                elif name == b"connection":
                    connection = value
                continue
            if name == b"authorization":
                self.auth = value
                continue
            if name == b"x-api-key":
                self.api_key = value
                continue
            if name == b"x-request-id":
                sent_id = value
            forward.append((name, value))
        if connection is not None:  # it names more hop-by-hop headers (RFC 9110 §7.6.1)
            extra = connection_tokens(connection)
            forward = [(k, v) for k, v in forward if k not in extra]
        self.forward = forward
        self.log = RequestLog(scope["method"], scope["path"], request_id(sent_id), perf_counter())

    @property
    def started(self) -> bool:
        """Whether the response has started: from then on nothing else can be answered."""
        return bool(self.scope.get(RESPONSE_STARTED))

    def ended(self, ending: Ending) -> None:
        """The answer ended: whole, cut by the upstream, or abandoned by the client. The log
        line's ``end`` and the record's ``ending`` both say it; a cut answer keeps the status
        that went out with its headers (a 200 whose body never finished), so the ending is
        what tells it from a whole one."""
        self.ending = self.log.end = ending

    def refused(self, attempt: Attempt, status: int, text: str, key: bytes | None) -> None:
        """Keep the upstream's refusal on ``attempt``: keys scrubbed (``key`` is the one the
        proxy injected), classified against the signature catalogue."""
        attempt.error = text = self.scrub(text, key)
        attempt.error_kind, attempt.known = classify_refusal(status, text)

    # --- what the proxy decided and how the request ended: written here only ----------------

    def checking(self, api: str) -> None:
        """The body goes through wire API ``api``'s check."""
        self.log.route = self.api = api

    def parsed(self, data: dict[str, Any], model: str = "", streams: bool = False) -> None:
        """The body parsed: a JSON object with a well-formed history. ``model`` and
        ``streams``: what the request path says (Gemini's native API), else the body."""
        self.data = data
        named = model or data.get("model")
        self.log.model = named if type(named) is str else None
        self.stream = streams or data.get("stream") is True

    def malformed(self, finding: Finding) -> None:
        """The body has no history any policy can work on: rejected (and recorded)."""
        self.outcome = Outcome([], (finding,), changed=False, rejected=True)
        self.log.outcome = "rejected"
        self.record_id = new_record_id()

    def decided(self, outcome: Outcome, policy: Policy, seconds: float) -> None:
        """The policy's outcome, found in ``seconds``."""
        self.outcome, self.policy = outcome, policy
        self.log.sanitize_ms = seconds * 1000
        self.log.outcome = outcome.status
        if outcome.rejected:
            self.log.rules = rule_list(outcome.rule_counts())
            self.record_id = new_record_id()

    def sending(self, body: Any, changed: bool) -> None:
        """The first attempt: ``body`` (``changed``: not the bytes the client sent)."""
        self.attempts.append(Attempt(body))
        if changed or self.log.outcome != "clean":
            self.log.rules = rule_list(self.rule_counts())
            self.record_id = new_record_id()
        if changed:
            self.log.outcome = "repaired"

    def retrying(self, rule: str, findings: list[dict[str, str]], body: Any) -> None:
        """A refusal repaired by ``rule``: ``body`` is sent once more."""
        self.attempts[-1].retried_rule = rule
        self.record_id = self.record_id or new_record_id()  # named as the answer starts
        self.extra_findings.extend(findings)
        self.log.outcome = "repaired"  # the answer's headers say what was finally sent
        self.log.rules = rule_list(self.rule_counts())
        self.attempts.append(Attempt(body))

    def answered(self, status: int) -> bool:
        """The upstream's answer starts; whether it refuses a unit's request (recorded)."""
        self.log.status = status
        refused = bool(self.attempts) and self.api is not None and 400 <= status < 500
        if refused:
            self.record_id = self.record_id or new_record_id()
        return refused

    def failed(self, status: int, code: str | None) -> None:
        """The proxy answered with its own error."""
        self.log.status, self.log.error = status, code

    def gone(self) -> None:
        """The client disconnected: nothing more can reach it."""
        self.log.status = self.log.status or 499  # nginx's "client closed request"
        if self.ending is None:  # not after the whole answer went out (closing upstream)
            self.ended("client_gone")

    def stream_failed(self, attempt: Attempt, text: str, key: bytes | None) -> None:
        """An ``event: error`` in the answer's stream after its status went out: kept on
        ``attempt`` (keys scrubbed; kind: the error's ``type``) and recorded."""
        attempt.error = self.scrub(text, key)
        attempt.error_kind = event_error_type(text)
        self.record_id = self.record_id or new_record_id()

    def upstream_name(self) -> str | None:
        """The upstream the ``x-toolcall-guard-upstream`` header names, if any."""
        value = self.upstream_header
        return None if value is None else value.decode("latin-1").strip()

    def rule_counts(self) -> dict[str, int]:
        """Findings per rule: the policy's, then those of learned strips and of a retry."""
        counts = self.outcome.rule_counts() if self.outcome is not None else {}
        for finding in self.extra_findings:
            counts[finding["rule"]] = counts.get(finding["rule"], 0) + 1
        return counts

    def content_encoding(self) -> bytes | None:
        """The request body's ``Content-Encoding``, if the client sent one."""
        for name, value in self.forward:
            if name == b"content-encoding":
                return value
        return None

    def scrub(self, text: str, injected: bytes | None) -> str:
        """``text`` (an upstream's error) without the keys this request carried upstream."""
        values = [v for k, v in self.forward if k in _KEY_HEADERS]
        if self.api_key is not None:
            values.append(self.api_key)
        values += [secret_of(auth) for auth in (self.auth, injected) if auth is not None]
        return redacted(text, values)

    def finished(self) -> None:
        """The request is over: a status is set whatever happened."""
        if self.log.status is None:  # an unexpected error is on its way to the app's one handler
            self.log.status, self.log.error = 502, "proxy_internal_error"

    def wants_record(self) -> bool:
        """A record is kept for every repaired, rejected or warned request of a unit, and for
        every one the upstream refused (4xx), retried or not.

        How the answer ended does not make a record: a clean request whose answer was cut (or
        whose client left) has none. The repair log says what the proxy changed and what the
        upstream refused; an upstream that breaks off is an outage of the upstream, seen in the
        request's log line (``end``) and in ``toolcall_guard_answer_endings_total``. Recording
        it would write a record, bodies included, for every failing request exactly when the
        upstream (and often the log) is struggling, for requests the proxy did not touch. A
        record that exists carries its true ending all the same (:attr:`ending`)."""
        if self.extra_findings or (self.outcome is not None and self.outcome.status in _RECORDED):
            return True
        return any(
            a.error is not None or (a.status is not None and 400 <= a.status < 500)
            for a in self.attempts
        )

    def record(self, upstream: str) -> Record:
        """The repair-log record of this request, derived from what it did."""
        log = self.log
        outcome = self.outcome
        last = self.attempts[-1] if self.attempts else None
        refused = last is not None and last.status is not None and 400 <= last.status < 500
        retried = len(self.attempts) > 1
        status = outcome.status if outcome is not None else "clean"
        if self.extra_findings and status in ("clean", "warned"):
            status = "repaired"
        errored = refused or (last is not None and last.error is not None)  # event: error too
        kind = "upstream_rejected" if errored or status == "clean" else status
        findings = [f.as_dict() for f in outcome.findings] if outcome is not None else []
        findings += self.extra_findings
        return Record(
            upstream=upstream,
            model=log.model,
            path=log.path,
            stream=self.stream,
            outcome=kind,  # type: ignore[arg-type]
            findings=findings,
            received=self.data,
            forwarded=None if status == "rejected" or last is None else last.forwarded,
            upstream_status=last.status if last is not None else None,
            upstream_error=last.error if last is not None else None,
            upstream_error_kind=last.error_kind if last is not None else None,
            duration_ms=log.total_ms,
            sanitize_ms=log.sanitize_ms,
            upstream_ms=log.upstream_ms,
            request_id=log.request_id,
            status=log.status,
            proxy_error=log.error,
            ending=self.ending,
            client=client_product(next((v for k, v in self.forward if k == b"user-agent"), None)),
            attempts=[a.as_dict() for a in self.attempts] if retried else None,
            id=self.record_id or new_record_id(),
            listed=self.listed,
            owner=self.client,
            size=self.body_size + sum(len(a.error or "") for a in self.attempts),
        )
