"""Builders of repair-log records for the repair-log and /repairs tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from proxy.repairlog import Record

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def body(*contents: str, model: str = "gpt-4o") -> dict[str, Any]:
    """A request body whose keys are deliberately not in sorted order."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": c} for c in contents]
    return {"model": model, "messages": messages, "temperature": 0.2, "a_last_key": True}


def make_record(
    n: int = 0,
    *,
    outcome: str = "repaired",
    upstream: str = "openai",
    model: str | None = "gpt-4o",
    rules: tuple[str, ...] = ("orphan_tool_result",),
    at: datetime | None = None,
    **fields: Any,
) -> Record:
    """Record ``n``, created ``n`` seconds after :data:`T0` unless ``at`` says otherwise."""
    findings = [
        {"rule": rule, "action": "repair", "path": f"messages[{k}]", "detail": f"{rule} here"}
        for k, rule in enumerate(rules)
    ]
    received = body(f"question {n}", "ünïcödé ✓")
    forwarded = None if outcome == "rejected" else body(f"question {n}", "ünïcödé ✓ fixed")
    upstream_fields: dict[str, Any] = {}
    if outcome == "upstream_rejected":
        upstream_fields = {
            "upstream_status": 400,
            "upstream_error": '{"error": {"message": "insufficient tool messages"}}',
            "upstream_error_kind": "missing_tool_result",
        }
    return Record(
        upstream=upstream,
        model=model,
        path="/v1/chat/completions",
        stream=n % 2 == 1,
        outcome=outcome,  # type: ignore[arg-type]
        findings=findings,
        received=received,
        forwarded=forwarded,
        request_id=f"req-{n}",
        created_at=at or T0 + timedelta(seconds=n),
        **{**upstream_fields, **fields},
    )


def mixed_records(count: int) -> list[Record]:
    """``count`` records cycling through outcomes, upstreams, models and rules; every third
    one shares its timestamp with the previous, so pages must break ties on the id."""
    outcomes = ("repaired", "rejected", "warned", "upstream_rejected")
    upstreams = ("openai", "deepseek", "gemini")
    rule_sets = (("orphan_tool_result",), ("missing_tool_result", "orphan_tool_result"), ())
    endings = ("complete", "complete", "upstream_cut", "complete", "client_gone")
    records = []
    for n in range(count):
        second = n - 1 if n % 3 == 2 else n
        records.append(
            make_record(
                n,
                outcome=outcomes[n % 4],
                upstream=upstreams[n % 3],
                model=("gpt-4o", "deepseek-chat", None)[n % 3],
                rules=rule_sets[n % 3],
                at=T0 + timedelta(seconds=second),
                ending=endings[n % 5],
            )
        )
    return records


def newest_first(records: list[Record]) -> list[str]:
    """Ids in the order the API lists them."""
    ordered = sorted(records, key=lambda r: (r.created_at, r.id), reverse=True)
    return [r.id for r in ordered]
