"""The check a wire API unit's request goes through before it is sent: parse, route, policy.

The body is parsed once; its item list is checked for the structure every request needs
(always a 400 otherwise, recorded like any rejection), routed, and run through the routed
upstream's policy. The bytes to send come back: the original bytes when nothing changed.
"""

from __future__ import annotations

from time import perf_counter
from typing import Any

import orjson

from proxy.api import limits
from proxy.api.counters import Counters
from proxy.api.learned import LearnedStrips
from proxy.api.state import RequestState
from proxy.api.units import WireApi
from proxy.core.forward import forwarded_body, found_at, placed
from proxy.core.policy import MODES, Outcome, Policy, sanitize
from proxy.core.rule import Finding, Items
from proxy.core.wire import Route
from proxy.errors import BadRequestBody, HistoryRejected, MalformedHistory
from proxy.relay.http import inflated
from proxy.routing import Router, check_model
from proxy.settings import Settings

#: A checked path that says nothing more (chat, Responses, Messages: the body says it all).
_ROUTE = Route(checked=True)
#: The pseudo-rule of findings about a body no policy can work on (always a 400).
MALFORMED = "malformed_history"


class Guard:
    """Parses, routes and sanitizes the requests of wire API units."""

    def __init__(
        self,
        settings: Settings,
        router: Router,
        counters: Counters,
        learned: LearnedStrips | None = None,
    ) -> None:
        self.server = settings.server
        self.learned = learned
        self.router = router
        self.counters = counters
        self.policies = {
            name: {mode: settings.policy_for(name).with_mode(mode) for mode in MODES}
            for name in settings.upstreams
        }

    def policy(self, upstream: str, state: RequestState) -> Policy:
        """The routed upstream's policy, in the mode the request asked for when allowed."""
        policies = self.policies[upstream]
        if state.mode is None:
            return policies["repair"]
        if not self.server.allow_mode_header:
            # Not applied, so it must not count anywhere else (the retry reads the mode too).
            state.mode_refused()
            return policies["repair"]
        try:
            return policies[mode_of(state)]
        except KeyError:
            raise BadRequestBody(
                f"x-toolcall-guard-mode must be one of {', '.join(MODES)}."
            ) from None

    def check(
        self,
        state: RequestState,
        unit: WireApi,
        upstream: str | None,
        body: bytes,
        route: Route = _ROUTE,
    ) -> tuple[str, bytes]:
        """Parse, route and sanitize; the upstream and the bytes to forward. ``route``: what
        the request path says (Gemini's: the model, whether it streams)."""
        started = perf_counter()
        api = unit.name  # read once: a property
        encoding = state.content_encoding()
        text = body if encoding is None else inflated(body, encoding, self.server.max_body_bytes)
        state.received(len(text))
        state.checking(api)
        data = limits.parse(text, self.server.max_json_depth)
        state.read(data)
        history = self._history(state, unit, data, route.model)
        unit.check_sizes(history, len(body), self.server)
        check_model(route.model or data.get("model"), self.server.max_model_length)
        state.parsed(data, route.model, route.streams)
        upstream = upstream or self.router.pick(
            state.upstream_name(), state.log.model, route.endpoint
        )
        state.routed(upstream)
        self.router.base_url(upstream, unit.base_key, api)  # 400 before any work
        policy = self.policy(upstream, state)
        outcome = sanitize(history, policy, api)
        elapsed = perf_counter() - started
        state.decided(outcome, policy, elapsed)
        self.counters.sanitize.observe(elapsed)
        self._count(upstream, api, outcome)
        if outcome.rejected:
            raise rejection(outcome)
        sent = data if not outcome.changed else forwarded_body(unit.wire, data, outcome)
        sent = self._strip_learned(state, upstream, sent)
        state.sending(sent, changed=sent is not data)
        if sent is data:  # clean or warned: forwarded as sent
            return upstream, body
        repaired, listed = dumps_listed(sent, unit.wire.location(sent))
        state.repaired_body(repaired, listed)
        return upstream, repaired

    def _strip_learned(self, state: RequestState, upstream: str, body: Any) -> Any:
        """``body`` without the fields ``upstream`` refused before for this model."""
        if self.learned is None or not self.learned.active:
            return body
        stripped, findings = self.learned.strip(upstream, state.log.model, body, state.client)
        state.stripped([f.as_dict() for f in findings])
        return stripped

    def _history(self, state: RequestState, unit: WireApi, data: Any, model: str) -> Items:
        """The unit's history; a malformed one is rejected and recorded (DESIGN §7)."""
        try:
            return unit.wire.history(data, model)
        except MalformedHistory as exc:
            state.malformed(Finding(MALFORMED, "reject", exc.path or "", str(exc)))
            raise BadRequestBody(str(exc), param=exc.path) from exc

    def _count(self, upstream: str, api: str, outcome: Outcome) -> None:
        self.counters.outcome(upstream, api, outcome.status).inc()
        for finding in outcome.findings:
            self.counters.finding(upstream, finding.rule, finding.action).inc()


def mode_of(state: RequestState) -> str:
    """The mode a request asked for (``repair`` when it asked for none)."""
    return "repair" if state.mode is None else state.mode.decode("latin-1").strip().lower()


def rejection(outcome: Outcome) -> HistoryRejected:
    """The 400 for a rejected history: the first rejection, its fix, and every finding."""
    findings = [f.as_dict() for f in outcome.findings]
    return HistoryRejected(
        outcome.rejection_message, param=outcome.rejection().path, findings=findings
    )


def dumps(body: Any) -> bytes:
    """A repaired body as bytes; 400 when it cannot be serialised."""
    try:
        return orjson.dumps(body)
    except orjson.JSONEncodeError as exc:  # nesting past orjson's 255 levels (max_json_depth > 255)
        raise BadRequestBody(f"The repaired request cannot be serialised: {exc}.") from exc


def dumps_listed(
    body: Any, location: tuple[str, ...]
) -> tuple[bytes, tuple[list[Any], bytes] | None]:
    """:func:`dumps`, and the history list at ``location`` with its own JSON (the same bytes
    the body holds, serialised once): the repair log packs them without serialising again."""
    items = found_at(body, location)
    if type(items) is not list:
        return dumps(body), None
    listed = dumps(items)
    return dumps(placed(body, location, orjson.Fragment(listed))), (items, listed)
