"""The proxy endpoint: every ``/v1/…`` and ``/{upstream}/v1/…`` request, as a raw ASGI callable.

``POST …/chat/completions`` is parsed once (orjson), routed, sanitized under the upstream's
policy and then rejected (400 naming the message, the rule and the fix), forwarded as the
original bytes (clean, warned) or forwarded repaired. Every other path is relayed untouched.
The answer is relayed chunk by chunk as it arrives. No FastAPI machinery on this path: no body
model, no dependency injection, one small object per request.

Choices a client can see:

- Keys: an upstream whose ``api_key_env`` is set gets that key, replacing the client's
  ``Authorization``; otherwise the client's passes through, except when client keys are
  configured: then the client's ``Authorization`` holds a key for this proxy, which is never
  forwarded (the upstream answers 401, which says plainly that its key is missing).
- ``x-request-id`` in the answer is the proxy's request id (the client's own when sane); the
  upstream's ``x-request-id`` comes back as ``x-upstream-request-id``.
- ``x-toolcall-guard-record`` names the record id as the answer starts; the record itself is
  submitted when the answer ends (with the upstream's status and error). A full queue drops it
  (counted in ``toolcall_guard_repairlog_dropped_total``), so the id can, rarely, find nothing.
- A client that disconnects, before the upstream answered or while its answer is relayed,
  cancels the upstream request: its connection is closed at once.
"""

from __future__ import annotations

import asyncio
from time import perf_counter
from typing import Any

import orjson
from starlette.types import Receive, Scope, Send

from proxy import metrics
from proxy.api import limits
from proxy.core.chat.messages import MalformedHistory, messages_of
from proxy.core.policy import MODES, Outcome, Policy, apply_policy
from proxy.core.registry import ALL_RULES as RULES
from proxy.errors import BadRequestBody, HistoryRejected, ProxyError, Unauthorized
from proxy.relay.asgi import (
    ClientGone,
    ClientWatch,
    read_body,
    relay_body,
    send_error,
    start_response,
)
from proxy.relay.base import RawHeaders, Relay, UpstreamResponse
from proxy.relay.exchange import (
    ClientHeaders,
    Exchange,
    decoded,
    own_headers,
    upstream_target,
)
from proxy.repairlog import RecordWriter, classify_upstream_error
from proxy.repairlog.record import Record
from proxy.routing import Router
from proxy.settings import Settings


class ProxyEndpoint:
    """Serves ``/v1/…`` and ``/{upstream}/v1/…``; :meth:`bind` it to a relay before use."""

    def __init__(self, settings: Settings) -> None:
        server = settings.server
        self.settings = settings
        self.router = Router(settings)
        self.max_body = server.max_body_bytes
        self.body_timeout = server.body_timeout
        self.allow_mode = server.allow_mode_header
        self.log_contents = server.log_contents
        self.error_bytes = settings.repair_log.max_error_body_bytes
        self.base_urls = {name: u.base_url for name, u in settings.upstreams.items()}
        self.policies = {
            name: {mode: settings.policy_for(name).with_mode(mode) for mode in MODES}
            for name in settings.upstreams
        }
        # Keys are read from the environment once, at start.
        self.injected = {
            name: b"Bearer " + key.encode()
            for name, u in settings.upstreams.items()
            if (key := settings.secret(u.api_key_env))
        }
        self.client_keys = frozenset(key.encode() for key in settings.client_keys())
        self.relay: Relay | None = None
        self.writer: RecordWriter | None = None
        self.counters = _Counters()

    def bind(self, relay: Relay | None, writer: RecordWriter | None) -> None:
        self.relay = relay
        self.writer = writer

    async def __call__(
        self, scope: Scope, receive: Receive, send: Send, target: tuple[str | None, str]
    ) -> None:
        ex = Exchange(scope, receive, send)
        log = ex.log
        try:
            self._authorize(ex.auth)  # first: nothing, not even upstream names, before a key
            prefix, rest = target
            upstream = self.router.by_prefix(prefix) if prefix is not None else None
            path = upstream_target(scope, prefix, rest)
            body = await read_body(receive, self.max_body, self.body_timeout)
            ex.body_size = len(body)
            if rest == "/chat/completions" and scope["method"] == "POST":
                log.route = "chat"
                upstream, body = self._sanitize(ex, upstream, body)
            elif upstream is None:
                header = _text(ex.upstream_header)  # the body is parsed only when it must be
                model = limits.model_of(body) if header is None else None
                upstream = self.router.pick(header, model)
            log.upstream = upstream
            await self._forward(ex, upstream, path, body)
        except ProxyError as exc:
            log.status = exc.status
            log.error = exc.code
            if not log.started:
                await send_error(send, exc, own_headers(log))
        except ClientGone:
            log.status = 499  # nginx's "client closed request"; nothing was sent
            log.end = "client_gone"
        finally:
            self._finish(ex)

    def _authorize(self, auth: bytes | None) -> None:
        if not self.client_keys:
            return
        scheme, _, token = (auth or b"").partition(b" ")
        if scheme.lower() != b"bearer" or token.strip() not in self.client_keys:
            raise Unauthorized(
                "This proxy needs a client key: send 'Authorization: Bearer <key>' with one of "
                "the keys configured in the variable named by server.client_keys_env."
            )

    def _sanitize(self, ex: Exchange, upstream: str | None, body: bytes) -> tuple[str, bytes]:
        """Parse, route and sanitize a chat request; the bytes to forward."""
        log = ex.log
        started = perf_counter()
        server = self.settings.server
        data = ex.data = limits.parse(body, server.max_json_depth)
        try:
            messages = messages_of(data)
        except MalformedHistory as exc:
            raise BadRequestBody(str(exc), param=exc.path) from exc
        limits.check_sizes(messages, len(body), server)
        model = data.get("model")
        log.model = model if type(model) is str else None
        upstream = upstream or self.router.pick(_text(ex.upstream_header), model)
        outcome = apply_policy(messages, self._policy(upstream, ex.mode))
        elapsed = perf_counter() - started
        log.sanitize_ms = elapsed * 1000
        metrics.SANITIZE_SECONDS.observe(elapsed)
        status = log.outcome = outcome.status
        self._count(upstream, outcome)
        if status == "clean":
            return upstream, body
        log.rules = ",".join(f"{rule}={n}" for rule, n in outcome.rule_counts().items())
        forwarded = None if status == "rejected" else {**data, "messages": outcome.messages}
        record = ex.record = self._record(ex, upstream, status, outcome, forwarded)
        if status == "rejected":
            raise _rejection(outcome)
        if status == "warned":
            return upstream, body
        repaired = _dumps(forwarded)
        record.size += len(repaired)
        return upstream, repaired

    def _policy(self, upstream: str, mode: bytes | None) -> Policy:
        policies = self.policies[upstream]
        if mode is None or not self.allow_mode:
            return policies["repair"]
        try:
            return policies[mode.decode("latin-1").strip().lower()]
        except KeyError:
            raise BadRequestBody(
                f"x-toolcall-guard-mode must be one of {', '.join(MODES)}.", status=400
            ) from None

    def _count(self, upstream: str, outcome: Outcome) -> None:
        self.counters.outcome(upstream, outcome.status).inc()
        for finding in outcome.findings:
            self.counters.finding(upstream, finding.rule, finding.action).inc()

    def _record(
        self, ex: Exchange, upstream: str, outcome: Any, result: Outcome | None, forwarded: Any
    ) -> Record:
        log = ex.log
        record = Record(
            upstream=upstream,
            model=log.model,
            path=log.path,
            stream=type(ex.data) is dict and ex.data.get("stream") is True,
            outcome=outcome,
            findings=[f.as_dict() for f in result.findings] if result else [],
            received=ex.data,
            forwarded=forwarded,
            request_id=log.request_id,
            size=ex.body_size,
        )
        log.record = record.id
        return record

    async def _forward(self, ex: Exchange, upstream: str, path: str, body: bytes) -> None:
        assert self.relay is not None, "ProxyEndpoint used before bind()"
        scope = ex.scope
        url = self.base_urls[upstream] + path
        headers = self._upstream_headers(ex, upstream)
        watch = ClientWatch(ex.receive)
        try:
            sent = perf_counter()
            metrics.OVERHEAD_SECONDS.observe(sent - ex.log.t0)
            response = await self.relay.send(upstream, scope["method"], url, headers, body)
            waited = perf_counter() - sent
            ex.log.upstream_ms = waited * 1000
            self.counters.upstream_seconds(upstream).observe(waited)
            await self._relay(ex, upstream, response)
        except asyncio.CancelledError:
            if not watch.absorb():
                raise
            ex.log.status = ex.log.status or 499  # nginx's "client closed request"
            ex.log.end = "client_gone"
        finally:
            watch.stop()

    async def _relay(self, ex: Exchange, upstream: str, response: UpstreamResponse) -> None:
        try:
            await self._answer(ex, upstream, response)
        finally:  # also when cancelled before the body started (relay_body closes it then)
            await response.aclose()

    async def _answer(self, ex: Exchange, upstream: str, response: UpstreamResponse) -> None:
        log = ex.log
        status = log.status = response.status
        out = ClientHeaders(response.headers, log)
        capture = 0
        if log.route == "chat" and 400 <= status < 500:
            capture = self.error_bytes
            if ex.record is None:
                ex.record = self._record(ex, upstream, "upstream_rejected", None, ex.data)
                out.headers.append((b"x-toolcall-guard-record", ex.record.id.encode()))
        await start_response(ex.scope, ex.send, status, out.headers)
        log.started = True
        log.end, captured = await relay_body(
            ex.send, response, sized=out.sized, sse=out.sse, capture=capture
        )
        if captured is not None and ex.record is not None:
            text = decoded(captured, out.encoding, capture)
            text = ex.scrub(text, self.injected.get(upstream))  # upstreams may quote keys
            self._upstream_rejected(ex.record, status, text)

    def _upstream_headers(self, ex: Exchange, upstream: str) -> RawHeaders:
        headers = ex.forward
        key = self.injected.get(upstream)
        if key is not None:
            headers.append((b"authorization", key))
        elif ex.auth is not None and not self.client_keys:
            # With client keys configured the client's Authorization is a key for this proxy,
            # not for the upstream: it is never forwarded (the upstream then answers 401).
            headers.append((b"authorization", ex.auth))
        return headers

    def _upstream_rejected(self, record: Record, status: int, text: str) -> None:
        record.outcome = "upstream_rejected"
        record.upstream_error = text
        record.upstream_error_kind = kind = classify_upstream_error(status, text)
        self.counters.upstream_rejected(record.upstream, kind or "unknown").inc()

    def _finish(self, ex: Exchange) -> None:
        log = ex.log
        record = ex.record
        if log.status is None:  # an unexpected error is on its way to the app's one handler
            log.status, log.error = 502, "proxy_internal_error"
        self.counters.request(log.upstream or "-", log.route, str(log.status)).inc()
        if self.log_contents:
            log.request = ex.data
        log.emit()
        if record is not None and self.writer is not None:
            record.upstream_status = log.status if log.started else None
            record.duration_ms = log.total_ms
            record.sanitize_ms = log.sanitize_ms
            record.upstream_ms = log.upstream_ms
            self.writer.submit(record)


def _rejection(outcome: Outcome) -> HistoryRejected:
    first = outcome.rejection()
    more = len(outcome.findings) - 1
    message = (
        f"{first.path}: {first.detail} (rule {first.rule}). "
        f"Fix in the client: {RULES[first.rule].hint}"
    )
    if more:
        message += f" ({more} more finding{'s' if more > 1 else ''} in error.findings.)"
    findings = [f.as_dict() for f in outcome.findings]
    return HistoryRejected(message, param=first.path, findings=findings)


def _dumps(body: Any) -> bytes:
    try:
        return orjson.dumps(body)
    except orjson.JSONEncodeError as exc:  # nesting past orjson's 255 levels (max_json_depth > 255)
        raise BadRequestBody(f"The repaired request cannot be serialised: {exc}.") from exc


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode("latin-1").strip()


class _Children:
    """Cached labelled children of one metric (``.labels()`` takes a lock and hashes)."""

    def __init__(self, metric: Any) -> None:
        self._metric = metric
        self._cache: dict[tuple[str, ...], Any] = {}

    def __call__(self, *labels: str) -> Any:
        child = self._cache.get(labels)
        if child is None:
            child = self._cache[labels] = self._metric.labels(*labels)
        return child


class _Counters:
    def __init__(self) -> None:
        self.request = _Children(metrics.REQUESTS)
        self.outcome = _Children(metrics.OUTCOMES)
        self.finding = _Children(metrics.FINDINGS)
        self.upstream_rejected = _Children(metrics.UPSTREAM_REJECTED)
        self.upstream_seconds = _Children(metrics.UPSTREAM_SECONDS)
