"""Upstream 4xx answers classified against the signature catalogue (``proxy.core.signatures``).

The kind is the rule the catalogued text names (so the records show histories the policy
missed, by rule), else ``auth`` (401/403), ``rate_limit`` (429) or ``other`` (a text no
signature knows, or one no rule repairs). The catalogue opens the envelopes providers and
relays wrap errors in (OpenRouter's ``metadata.raw``, Gemini's list, Mistral's ``detail``,
DashScope's prefix) before matching.
"""

from __future__ import annotations

from proxy.core.errortext import SCAN_CHARS
from proxy.core.signatures import SIGNATURES, match

#: How much of an error body is searched; the known texts come first in every body seen.
SCAN_BYTES = SCAN_CHARS

#: Every kind :func:`classify_upstream_error` can return.
KINDS = tuple(
    dict.fromkeys(
        [s.rule for s in SIGNATURES if s.rule is not None] + ["auth", "rate_limit", "other"]
    )
)


def classify_upstream_error(status: int, body: bytes | str) -> str | None:
    """A stable kind for an upstream 4xx answer; None for any other status."""
    if not 400 <= status < 500:
        return None
    if status in (401, 403):
        return "auth"
    if status == 429:
        return "rate_limit"
    found = match(status, body)
    return found.rule if found is not None and found.rule is not None else "other"
