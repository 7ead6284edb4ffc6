"""One request sent upstream for a client request, and the small texts derived from a request's
fate (the rules list of headers and log lines, the type of an error event)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson


@dataclass(slots=True)
class Attempt:
    """One request sent upstream for a client request (two when a refusal was repaired)."""

    forwarded: Any  # the parsed body sent (the original's parse when sent as received)
    status: int | None = None
    error: str | None = None  # the upstream's error body, truncated and scrubbed of keys
    error_kind: str | None = None  # the catalogued signature it matched
    known: bool = False  # whether any catalogued signature matched the error
    retried_rule: str | None = None  # the rule whose repair produced the next attempt

    def as_dict(self) -> dict[str, Any]:
        return {
            "forwarded": self.forwarded,
            "upstream_status": self.status,
            "upstream_error": self.error,
            "upstream_error_kind": self.error_kind,
            "retried_rule": self.retried_rule,
        }


def event_error_type(event: str) -> str:
    """``overloaded_error`` from ``event: error`` / ``data: {"type": "error", "error": {"type":
    "overloaded_error", …}}``; ``stream_error`` when the data says no type."""
    _, _, data = event.partition("data:")
    try:
        found = orjson.loads(data.split("\n", 1)[0])
    except orjson.JSONDecodeError:
        return "stream_error"
    error = found.get("error") if type(found) is dict else None
    # Anthropic's and OpenAI's name a ``type``; Google's a ``status`` (``UNAVAILABLE``).
    kind = (error.get("type") or error.get("status")) if type(error) is dict else None
    return kind if type(kind) is str and len(kind) <= 64 else "stream_error"


def rule_list(counts: dict[str, int]) -> str:
    """``orphan_tool_result=1,missing_tool_result=2``: the rules header and log field."""
    return ",".join(f"{rule}={n}" for rule, n in counts.items())
