"""Repair on reject: an upstream refused a unit's request for a catalogued reason; repair, resend.

The bounds (``repair-on-reject.md``): at most one retry per client request; only on 400, 404
and 422 (never 5xx, never mid-stream: the refusal is read whole before any byte reaches the
client); only when the repaired body differs from the refused one; never for ``background``,
``conversation`` or server-executed tools (:func:`proxy.core.retry.plan_retry` decides those);
never for requests in ``observe``, ``off`` or ``strict`` mode, nor to upstreams with
``retry_on_reject = false`` or whose policy is built on the ``observe``, ``passthrough`` or
``strict`` preset (they promise not to change a request); a rule the user set to ``off`` or
``reject`` is never applied.
"""

from __future__ import annotations

from proxy.api.counters import Counters
from proxy.api.guard import dumps, mode_of
from proxy.api.learned import LearnedStrips, body_reporter
from proxy.api.replay import Replayed, read_head
from proxy.api.state import RequestState
from proxy.core.retry import RETRY_STATUSES, plan_retry
from proxy.relay.base import UpstreamResponse
from proxy.relay.http import decoded, encoding_of
from proxy.settings import Settings


class Retry:
    """Decides whether a refusal is retried, and builds the second attempt."""

    def __init__(
        self, settings: Settings, counters: Counters, learned: LearnedStrips | None = None
    ) -> None:
        self.learned = learned
        self.enabled = {name: _retries(settings, name) for name in settings.upstreams}
        self.limit = settings.repair_log.max_error_body_bytes
        self.counters = counters

    def may_retry(self, state: RequestState, upstream: str, status: int) -> bool:
        """Whether this answer may be worth a second attempt (before reading it)."""
        return (
            status in RETRY_STATUSES
            and state.api is not None
            and len(state.attempts) == 1
            and self.enabled.get(upstream, False)
            and mode_of(state) == "repair"
        )

    async def refused(
        self, state: RequestState, upstream: str, response: UpstreamResponse, key: bytes | None
    ) -> tuple[Replayed, bytes | None]:
        """Read the refusal; the response to relay when no retry is due, else the body to send
        (the refused response is closed then). ``key`` is the one injected for ``upstream``."""
        replayed, complete = await read_head(response, self.limit)
        attempt = state.attempts[-1]
        text = decoded(replayed.head, encoding_of(response.headers), self.limit)
        state.refused(attempt, response.status, text, key)
        plan = None
        if complete and attempt.known and state.api is not None and state.policy is not None:
            error, model = attempt.error or "", state.log.model or ""
            plan = plan_retry(
                state.api, attempt.forwarded, response.status, error, state.policy, model=model
            )
        if plan is None:
            return replayed, None
        await response.aclose()
        if plan.learned is not None and self.learned is not None:
            reporter = state.client or body_reporter(attempt.forwarded)
            self.learned.learn(upstream, state.log.model, plan.learned, text, reporter=reporter)
        again = dumps(plan.body)
        state.retrying(plan.rule, [f.as_dict() for f in plan.findings], plan.body, len(again))
        self.counters.retries(upstream, plan.rule).inc()
        return replayed, again

    def sent(self, state: RequestState, upstream: str, status: int) -> None:
        """Count a retry the upstream refused again (it is relayed, never retried twice)."""
        if 400 <= status < 500:
            rule = state.attempts[-2].retried_rule or "-"
            self.counters.retries_failed(upstream, rule).inc()


#: Presets that promise not to change a request: their upstreams are never retried.
_HANDS_OFF = frozenset({"observe", "passthrough", "strict"})


def _retries(settings: Settings, upstream: str) -> bool:
    """``retry_on_reject`` of the upstream, unless its policy is built on a hands-off preset."""
    config = settings.upstreams[upstream]
    name = config.policy or "openai"
    section = settings.policies.get(name)
    preset = section.base if section is not None and section.base else name
    return config.retry_on_reject and preset not in _HANDS_OFF
