"""Prometheus metrics, in prometheus-client's default registry.

Module-level metric objects are prometheus-client's intended use; they hold no connections and
start nothing. With ``--workers N`` each worker exports its own values (labelled ``pid`` by the
exposition in :mod:`proxy.api.ops` when ``PROMETHEUS_MULTIPROC_DIR`` is set, see the README).
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

_FAST = (0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1)
_SLOW = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)

REQUESTS = Counter(
    "toolcall_guard_requests_total",
    "Requests handled, by upstream, route and HTTP status returned to the client.",
    ["upstream", "route", "status"],
)
OUTCOMES = Counter(
    "toolcall_guard_outcomes_total",
    "Requests of a wire API (chat, responses, messages) by sanitizer outcome (clean, repaired, "
    "warned, rejected).",
    ["upstream", "api", "outcome"],
)
ENDINGS = Counter(
    "toolcall_guard_answer_endings_total",
    "Answers by how they ended: complete, upstream_cut (the upstream broke off mid-body), "
    "upstream_timeout (it went silent past read_timeout mid-body), client_gone (the client "
    "left first), unknown (an unexpected error). Every request counts, recorded or not.",
    ["upstream", "ending"],
)
FINDINGS = Counter(
    "toolcall_guard_findings_total",
    "Rule findings, by upstream, rule and the action taken.",
    ["upstream", "rule", "action"],
)
UPSTREAM_REJECTED = Counter(
    "toolcall_guard_upstream_rejected_total",
    "Upstream 4xx answers to wire API requests, by upstream, API and the catalogued signature "
    "they matched ('unknown': none, what the catalogue still misses).",
    ["upstream", "api", "kind"],
)
RETRIES = Counter(
    "toolcall_guard_retries_total",
    "Refused requests repaired and sent once more, by upstream and the rule the retry applied.",
    ["upstream", "rule"],
)
RETRIES_FAILED = Counter(
    "toolcall_guard_retries_failed_total",
    "Retried requests the upstream refused again (4xx), by upstream and the retry's rule.",
    ["upstream", "rule"],
)
SANITIZE_SECONDS = Histogram(
    "toolcall_guard_sanitize_seconds",
    "Time spent parsing and sanitizing a chat request body.",
    buckets=_FAST,
)
OVERHEAD_SECONDS = Histogram(
    "toolcall_guard_proxy_overhead_seconds",
    "Time the proxy spends on a request before sending it upstream.",
    buckets=_FAST,
)
UPSTREAM_SECONDS = Histogram(
    "toolcall_guard_upstream_seconds",
    "Time from sending a request upstream to receiving its response headers.",
    ["upstream"],
    buckets=_SLOW,
)
REPAIRLOG_QUEUE_DEPTH = Gauge(
    "toolcall_guard_repairlog_queue_depth",
    "Records waiting to be written to the repair log.",
)
REPAIRLOG_WRITTEN = Counter(
    "toolcall_guard_repairlog_written_total",
    "Records written to the repair log.",
)
REPAIRLOG_REPEATS = Counter(
    "toolcall_guard_repairlog_repeats_total",
    "Records written as repeats: a later turn of a conversation with the same findings at the"
    " same places as its first record (counted on it); written_total counts them too.",
)
REPAIRLOG_DROPPED = Counter(
    "toolcall_guard_repairlog_dropped_total",
    "Records dropped instead of written (queue full, or the backend failed).",
    ["reason"],
)
REPAIRLOG_ERRORS = Counter(
    "toolcall_guard_repairlog_errors_total",
    "Failed attempts to write a batch to the repair log.",
)
