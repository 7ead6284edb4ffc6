"""The proxy endpoint: every ``/v1/…`` and ``/{upstream}/v1/…`` request, as a raw ASGI callable.

A ``POST`` to a wire API unit's path (:mod:`proxy.api.units`: chat completions, Responses,
Messages) is parsed once (orjson), routed, checked under the upstream's policy and then
rejected (400 naming the item, the rule and the fix), forwarded as the original bytes (clean,
warned) or forwarded repaired. Its sub-paths (``/messages/count_tokens``) are routed the same
way and relayed unchecked; every other path is relayed untouched to ``base_url``. The answer
is relayed chunk by chunk as it arrives. When the upstream refuses a unit's request for a
catalogued reason before any byte reached the client, :mod:`proxy.api.retry` repairs it and
sends it once more. No FastAPI machinery on this path: no body model, no dependency
injection, one state object per request.

Choices a client can see:

- Keys (:mod:`proxy.api.keys`): an upstream whose ``api_key_env`` is set gets that key in the
  header the API's row names (``Authorization: Bearer``; ``x-api-key`` for Messages), and none
  of the client's: every key-carrying header (``authorization``, ``x-api-key``, ``api-key``,
  ``x-goog-api-key``) and ``?key=`` is removed. Otherwise the client's pass through, except
  when client keys are configured: then the client's ``Authorization`` holds a key for this
  proxy, never forwarded (the upstream answers 401, which says plainly that its key is
  missing), and so is every other carrier whose value is a client key.
- Errors of the proxy's own come in the error shape of the API's clients (the row's
  ``error_shape``: Anthropic's on ``/v1/messages``).
- ``x-request-id`` in the answer is the proxy's request id (the client's own when sane); the
  upstream's ``x-request-id`` comes back as ``x-upstream-request-id``.
- ``x-toolcall-guard-record`` names the record as the answer starts; the record is submitted
  when the answer ends (with the status the client got and the upstream's error) and can be read
  at once (the writer serves records it has not stored yet).
- A client that disconnects, before the upstream answered or while its answer is relayed,
  cancels the upstream request: its connection is closed at once.
"""

from __future__ import annotations

import asyncio
from functools import partial
from time import perf_counter
from typing import TYPE_CHECKING

from starlette.types import Receive, Scope, Send

from proxy.api import fate, limits
from proxy.api.counters import Counters
from proxy.api.guard import Guard
from proxy.api.headers import ClientHeaders, own_headers
from proxy.api.keyring import Keyring
from proxy.api.learned import LearnedStrips
from proxy.api.noapi import explained
from proxy.api.retry import Retry
from proxy.api.scrub import masked, scrubbed
from proxy.api.state import RequestState
from proxy.api.units import UNITS, WireApi, native_unit, unit_for
from proxy.core.wire import CHAT, Route, Wire
from proxy.errors import ClientGone, ProxyError
from proxy.relay.asgi import (
    ClientWatch,
    ErrorEvent,
    read_body,
    relay_body,
    send_error,
    start_response,
)
from proxy.relay.base import RawHeaders, Relay, UpstreamResponse
from proxy.relay.http import decoded, upstream_target
from proxy.repairlog import RecordWriter
from proxy.routing import Router, Target
from proxy.settings import Settings

if TYPE_CHECKING:
    from proxy.telemetry.otel import Tracing


class ProxyEndpoint:
    """Serves ``/v1/…`` and ``/{upstream}/v1/…``; :meth:`bind` it to a relay before use."""

    def __init__(
        self,
        settings: Settings,
        units: dict[str, WireApi] | None = None,
        tracing: Tracing | None = None,
    ) -> None:
        server = settings.server
        self.router = Router(settings)
        self.units = UNITS if units is None else units
        self.max_body = server.max_body_bytes
        self.body_timeout = server.body_timeout
        self.log_contents = server.log_contents
        self.error_bytes = settings.repair_log.max_error_body_bytes
        self.counters = Counters()
        #: Fields upstreams refused, stripped up front (per process; ``/repairs/learned``).
        self.learned = LearnedStrips()
        self.guard = Guard(settings, self.router, self.counters, self.learned)
        self.retry = Retry(settings, self.counters, self.learned)
        self.keyring = Keyring(settings)
        self.relay: Relay | None = None
        self.writer: RecordWriter | None = None
        self.tracing = tracing  # OpenTelemetry (proxy.telemetry): None when off

    def bind(self, relay: Relay | None, writer: RecordWriter | None) -> None:
        self.relay = relay
        self.writer = writer

    async def __call__(self, scope: Scope, receive: Receive, send: Send, target: Target) -> None:
        state = RequestState(scope, receive, send)
        if self.tracing is not None:  # telemetry
            state.trace = self.tracing.start(state)
        prefix, rest, native = target
        unit, route = self._unit(rest, native)
        wire = CHAT if unit is None else unit.wire
        try:
            self.keyring.authorize(
                state, wire
            )  # first: nothing, not even upstream names, before a key
            upstream = self.router.by_prefix(prefix) if prefix is not None else None
            path = upstream_target(scope, prefix, rest, versioned=native is not None)
            body = await read_body(receive, self.max_body, self.body_timeout)
            state.received(len(body))
            if route is not None and route.checked and scope["method"] == "POST":
                assert unit is not None
                upstream, body = self.guard.check(state, unit, upstream, body, route)
            elif upstream is None:
                header = state.upstream_name()  # the body is parsed only when it must be
                model = _model(route, body) if header is None else None
                endpoint, base_key = (route.endpoint if route else ""), _base(unit)[0]
                upstream = self.router.pick(header, model, endpoint, base_key)
            state.routed(upstream)
            base = self.router.base_url(upstream, *_base(unit))
            await self._forward(state, upstream, base + path, body, wire)
        except ProxyError as exc:
            state.failed(exc.status, exc.code)
            if not state.started:
                await send_error(send, exc, self._own_headers(state), wire.error_shape)
                state.ended("complete")  # the proxy's own answer, sent whole
        except ClientGone:
            state.gone()  # nothing was sent
        finally:
            self._finish(state)

    def _unit(self, rest: str, native: Wire | None) -> tuple[WireApi | None, Route | None]:
        """The unit serving the path, and what the path says (checked, model, streaming)."""
        if native is not None:
            unit = native_unit(self.units, native)
            found = native.route(rest) if native.route is not None else None
            return unit, found or _RELAYED
        unit = unit_for(self.units, rest)
        if unit is None:
            return None, None
        return unit, _CHECKED if rest == unit.path else _RELAYED

    async def _forward(
        self, state: RequestState, upstream: str, url: str, body: bytes, wire: Wire
    ) -> None:
        assert self.relay is not None, "ProxyEndpoint used before bind()"
        headers = self.keyring.upstream_headers(state, upstream, wire)
        key = self.keyring.injected(upstream, wire)
        url = self.keyring.without_query_keys(url, key is not None)
        watch = ClientWatch(state.receive)
        response: UpstreamResponse | None = None
        try:
            response = await self._send(state, upstream, url, headers, body)
            if self.retry.may_retry(state, upstream, response.status):
                response, again = await self.retry.refused(state, upstream, response, key)
                if again is not None:  # the refused response is closed: the retry's replaces it
                    response = await self._send(state, upstream, url, headers, again)
                    self.retry.sent(state, upstream, response.status)
            if response.status == 404 and wire is not CHAT and state.scope["method"] == "POST":
                response = await explained(response, upstream, url, wire)
            await self._answer(state, upstream, response, wire)
        except asyncio.CancelledError:
            if not watch.absorb():
                raise
            state.gone()  # also mid-stream: its 200 never finished
        finally:
            watch.stop()
            if response is not None:  # on every path: a refusal read that failed halfway too
                await response.aclose()

    async def _send(
        self, state: RequestState, upstream: str, url: str, headers: RawHeaders, body: bytes
    ) -> UpstreamResponse:
        assert self.relay is not None
        sent = perf_counter()
        if not state.attempts:  # the proxy's own share: everything before the first send
            self.counters.overhead.observe(sent - state.log.t0)
        if state.trace is not None:  # telemetry: a CLIENT span, its traceparent upstream
            headers = state.trace.attempt(state, upstream, url, headers)
        response = await self.relay.send(upstream, state.scope["method"], url, headers, body)
        waited = perf_counter() - sent
        state.upstream_answered(response.status, waited)
        self.counters.upstream_seconds(upstream).observe(waited)
        return response

    async def _answer(
        self, state: RequestState, upstream: str, response: UpstreamResponse, wire: Wire
    ) -> None:
        log = state.log
        status = response.status
        refused = state.answered(status)
        attempt = state.attempts[-1] if state.attempts else None
        # A refusal the retry already read (and did not retry) is not captured again.
        capture = self.error_bytes if refused and attempt and attempt.error is None else 0
        if (key := self.keyring.injected(upstream, wire)) is not None:  # it may quote the key
            response = await scrubbed(response, key) if status >= 400 else masked(response, key)
        out = ClientHeaders(response.headers, self._own_headers(state), log)
        # telemetry: the answer read as it is relayed
        observe = state.trace.reading(out.sse) if state.trace is not None else None
        await start_response(state.scope, state.send, status, out.headers)
        sse = out.sse and attempt is not None
        errors = ErrorEvent(self.error_bytes, wire.stream_error) if sse else None
        ending, captured = await relay_body(
            state.send,
            response,
            sized=out.sized,
            sse=out.sse,
            capture=capture,
            shape=wire.error_shape,
            errors=errors,
            observe=observe,
        )
        state.ended(ending)
        if errors is not None and errors.found is not None and attempt is not None:
            text = bytes(errors.found).decode("utf-8", "replace")
            state.stream_failed(attempt, text, self.keyring.injected(upstream, wire))
        if not refused or attempt is None:
            return
        if captured is not None:
            text = decoded(captured, out.encoding, capture)
            state.refused(attempt, status, text, self.keyring.injected(upstream, wire))
        kind = attempt.error_kind if attempt.known else "unknown"  # unknown: no row matched
        self.counters.upstream_rejected(upstream, state.api or "-", kind or "unknown").inc()

    def _own_headers(self, state: RequestState) -> RawHeaders:
        if state.record_id is not None and self.writer is not None:
            # The id goes out now: its record must answer GET /repairs/{id} from now on, even
            # while the answer (a stream) is still being relayed.
            build = partial(fate.record, state, state.log.upstream or "-")
            self.writer.announce(state.record_id, build)
        extra: RawHeaders = []
        if state.mode_ignored:
            extra.append((b"x-toolcall-guard-mode-ignored", b"server.allow_mode_header is off"))
        retried = [a.retried_rule for a in state.attempts if a.retried_rule]
        if retried:
            extra.append((b"x-toolcall-guard-retried", ",".join(retried).encode()))
        return own_headers(state.log, state.record_id, extra)

    def _finish(self, state: RequestState) -> None:
        log = state.log
        state.finished()
        upstream = log.upstream or "-"
        self.counters.request(upstream, state.api or "passthrough", str(log.status)).inc()
        self.counters.ending(upstream, state.ending or "unknown").inc()
        if self.log_contents:
            log.request = state.data
        wanted = self.writer is not None and fate.wants_record(state)
        if wanted:
            state.recording()
        log.emit()  # before the record: it sets the total duration the record keeps
        if wanted and self.writer is not None:
            self.writer.submit(fate.record(state, upstream))
        elif state.record_id is not None and self.writer is not None:
            self.writer.withdraw(state.record_id)
        if state.trace is not None:  # telemetry: the spans end with the state's fate
            state.trace.end(state)


_CHECKED, _RELAYED = Route(checked=True), Route(checked=False)


def _model(route: Route | None, body: bytes) -> object:
    """The model a request the proxy does not check is routed by: its path's, else its body's."""
    return route.model if route is not None and route.model else limits.model_of(body)


def _base(unit: WireApi | None) -> tuple[str, str]:
    """The upstream setting naming the base URL that serves ``unit`` (and the API's name)."""
    return ("base_url", "") if unit is None else (unit.base_key, unit.name)
