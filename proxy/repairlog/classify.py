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
    return classify_refusal(status, body)[0]


def classify_refusal(status: int, body: bytes | str) -> tuple[str | None, bool]:
    """:func:`classify_upstream_error`'s kind, and whether a catalogued signature matched (an
    ``other`` that matched none is what the catalogue still misses)."""
    if not 400 <= status < 500:
        return None, False
    if status in (401, 403):
        return "auth", True
    if status == 429:
        return "rate_limit", True
    found = match(status, body)
    if found is None:
        return "other", False
    return (found.rule if found.rule is not None else "other"), True
