"""One object per proxied request: what the client sent, what the proxy decided, how it ended.

The endpoint fills a :class:`RequestState` as the request goes; what the proxy decided and how
the request ended are written through its methods only (:meth:`~RequestState.received`,
:meth:`~RequestState.checking`, :meth:`~RequestState.routed`, :meth:`~RequestState.decided`,
:meth:`~RequestState.sending`, :meth:`~RequestState.retrying`,
:meth:`~RequestState.upstream_answered`, :meth:`~RequestState.answered`,
:meth:`~RequestState.failed`, :meth:`~RequestState.gone`…), never by the guard, the retry and the
endpoint each. When it ends, the log line's and headers' outcome, the metrics and, when there is
something to keep, the repair-log :class:`~proxy.repairlog.record.Record` are all derived from it
in one vocabulary (:mod:`proxy.api.fate`). Nothing is copied field by field on the way.
"""

from __future__ import annotations

from time import perf_counter
from typing import TYPE_CHECKING, Any, Literal

from starlette.types import Receive, Scope, Send

from proxy.api.attempt import Attempt, event_error_type, rule_list
from proxy.api.headers import read_request_headers
from proxy.api.keys import KEY_HEADERS, key_of, query_keys
from proxy.api.scrub import redacted, secret_of
from proxy.core.policy import Outcome, Policy
from proxy.core.rule import Finding
from proxy.logs import RequestLog, request_id
from proxy.relay.asgi import RESPONSE_STARTED
from proxy.repairlog.classify import classify_refusal
from proxy.repairlog.record import Ending, new_record_id

if TYPE_CHECKING:
    from proxy.telemetry.spans import RequestTrace

#: What the proxy did to a request (:meth:`RequestState.status`).
Status = Literal["clean", "repaired", "warned", "rejected"]
#: Request headers that carry a key (:data:`proxy.api.keys.KEY_HEADERS`), set aside.
_KEY_HEADERS = frozenset(KEY_HEADERS)


class RequestState:
    """A request: the ASGI triple, what the client sent that matters, its log line, its fate.

    The client's headers are read once: control headers (``x-toolcall-guard-*``) and those
    carrying a key (:data:`~proxy.api.keys.KEY_HEADERS`: the endpoint decides which go upstream)
    are set aside, hop-by-hop ones dropped, the rest kept in order to be forwarded as they are.
    """

    __slots__ = (
        "api",
        "attempts",
        "body_size",
        "client",
        "data",
        "ending",
        "extra_findings",
        "forward",
        "keys",
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
        "trace",
        "upstream_header",
    )

    def __init__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.scope = scope
        self.receive = receive
        self.send = send
        #: The reporter name of the client key the request came with (client keys configured).
        self.client: str | None = None
        self.mode_ignored = False  # a mode header the config does not allow
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
        self.trace: RequestTrace | None = None  # its spans, while tracing is on (telemetry)
        sent = read_request_headers(scope["headers"], _KEY_HEADERS)
        self.forward, self.keys = sent.forward, sent.keys
        self.mode, self.upstream_header = sent.mode, sent.upstream
        self.log = RequestLog(
            scope["method"], scope["path"], request_id(sent.request_id), perf_counter()
        )

    def key(self, name: bytes) -> bytes | None:
        """The value of the key-carrying header ``name``, if the client sent it."""
        for carrier, value in self.keys:
            if carrier == name:
                return value
        return None

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

    def authorized(self, client: str) -> None:
        """The request came with the client key whose reporter name is ``client``."""
        self.client = client

    def received(self, size: int) -> None:
        """The body arrived: ``size`` bytes (decompressed, once a unit's check inflated it:
        what the record holds is the parsed body, not the wire's)."""
        self.body_size = size

    def checking(self, api: str) -> None:
        """The body goes through wire API ``api``'s check."""
        self.log.route = self.api = api

    def routed(self, upstream: str) -> None:
        """The request goes to ``upstream`` (a rejected request's record names it too)."""
        self.log.upstream = upstream

    def mode_refused(self) -> None:
        """The mode header asked for is not allowed: not applied, so it counts nowhere."""
        self.mode, self.mode_ignored = None, True

    def stripped(self, findings: list[dict[str, str]]) -> None:
        """Fields the upstream refused before were stripped up front (learned strips)."""
        self.extra_findings.extend(findings)

    def repaired_body(self, sent: bytes, listed: tuple[list[Any], bytes] | None) -> None:
        """The repaired body goes out as ``sent`` (plain JSON: a content encoding the client
        used no longer applies); ``listed``: its history list and that list's own JSON."""
        self.forward = [(k, v) for k, v in self.forward if k != b"content-encoding"]
        self.listed = listed
        self.body_size += len(sent) + (len(listed[1]) if listed else 0)

    def read(self, data: Any) -> None:
        """The body parsed (its record holds it, a malformed history's too)."""
        self.data = data

    def parsed(self, data: dict[str, Any], model: str = "", streams: bool = False) -> None:
        """The body is a JSON object with a well-formed history. ``model`` and ``streams``:
        what the request path says (Gemini's native API), else the body."""
        self.data = data
        named = model or data.get("model")
        self.log.model = named if type(named) is str else None
        self.stream = streams or data.get("stream") is True

    def malformed(self, finding: Finding) -> None:
        """The body has no history any policy can work on: rejected (and recorded)."""
        self.outcome = Outcome([], (finding,), changed=False, rejected=True)
        self.log.outcome = self.status()
        self.record_id = new_record_id()

    def decided(self, outcome: Outcome, policy: Policy, seconds: float) -> None:
        """The policy's outcome, found in ``seconds``."""
        self.outcome, self.policy = outcome, policy
        self.log.sanitize_ms = seconds * 1000
        self.log.outcome = self.status()
        if outcome.rejected:
            self.log.rules = rule_list(outcome.rule_counts())
            self.record_id = new_record_id()

    def sending(self, body: Any, changed: bool) -> None:
        """The first attempt: ``body`` (``changed``: not the bytes the client sent)."""
        self.attempts.append(Attempt(body))
        if changed or self.log.outcome != "clean":
            self.log.rules = rule_list(self.rule_counts())
            self.record_id = new_record_id()
        self.log.outcome = self.status()

    def retrying(self, rule: str, findings: list[dict[str, str]], body: Any, size: int) -> None:
        """A refusal repaired by ``rule``: ``body`` (``size`` bytes) is sent once more."""
        self.body_size += size  # the record holds this attempt's body too
        self.attempts[-1].retried_rule = rule
        self.record_id = self.record_id or new_record_id()  # named as the answer starts
        self.extra_findings.extend(findings)
        self.log.outcome = self.status()  # the answer's headers say what was finally sent
        self.log.rules = rule_list(self.rule_counts())
        self.attempts.append(Attempt(body))

    def upstream_answered(self, status: int, seconds: float) -> None:
        """An attempt's response headers arrived after ``seconds``."""
        self.log.upstream_ms = (self.log.upstream_ms or 0.0) + seconds * 1000
        if self.attempts:
            self.attempts[-1].status = status

    def recording(self) -> str:
        """The request gets a record: its id (named at once when the answer started)."""
        self.log.record = self.record_id = self.record_id or new_record_id()
        return self.record_id

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

    def status(self) -> Status:
        """What the proxy did to the request, in the one vocabulary the header, the log line,
        the metrics and the record derive from: ``rejected`` (400 before anything was sent),
        ``repaired`` (what went out differs from what came in: the policy's repair, a learned
        strip, a retry's repair), ``warned`` (findings, forwarded as sent) or ``clean``."""
        outcome = self.outcome
        if outcome is not None and outcome.rejected:
            return "rejected"
        if self.extra_findings or (outcome is not None and outcome.changed):
            return "repaired"
        return "warned" if outcome is not None and outcome.findings else "clean"

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
        values = [key_of(name, value) for name, value in self.keys]
        values += query_keys(self.scope["query_string"])
        if injected is not None:
            values.append(secret_of(injected))
        return redacted(text, values)

    def finished(self) -> None:
        """The request is over: a status is set whatever happened."""
        if self.log.status is None:  # an unexpected error is on its way to the app's one handler
            self.log.status, self.log.error = 502, "proxy_internal_error"
