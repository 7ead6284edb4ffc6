"""The ``/repairs`` API's response models (its OpenAPI schema) and its error responses."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from proxy.endings import Ending

OutcomeName = Literal["repaired", "rejected", "warned", "upstream_rejected"]
Timestamp = Annotated[str, Field(json_schema_extra={"format": "date-time"})]


class ErrorDetail(BaseModel):
    message: str
    type: str
    param: str | None
    code: str | None


class ErrorResponse(BaseModel):
    """The OpenAI error shape."""

    error: ErrorDetail


class FindingOut(BaseModel):
    """A rule's finding; ``path`` points into the received body (``messages[5].tool_calls[1]``)."""

    model_config = ConfigDict(extra="allow")
    rule: str = ""
    action: str = ""
    path: str = ""
    detail: str = ""


class RecordSummary(BaseModel):
    id: str
    created_at: Timestamp
    upstream: str
    model: str | None
    path: str
    stream: bool
    outcome: OutcomeName
    upstream_status: int | None
    upstream_error_kind: str | None
    request_id: str | None
    duration_ms: float | None
    sanitize_ms: float | None
    upstream_ms: float | None
    status: int | None = Field(None, description="the status the client got")
    proxy_error: str | None = Field(None, description="the proxy's error code, if it answered")
    ending: Ending | None = Field(
        None,
        description="how the answer the client got ended: complete, upstream_cut (the upstream "
        "broke off mid-body), upstream_timeout (it went silent mid-body), client_gone (the "
        "client left first); null while the answer is still going, or for records written "
        "before endings were kept",
    )
    conversation: str | None = Field(
        None, description="the conversation's key (its stable start, or the client's own id)"
    )
    client: str | None = Field(
        None, description="the client's product token, from its User-Agent (openai-python/1.52.0)"
    )
    owner: str | None = Field(
        None,
        description="the client key that sent it (its digest, client:…) when client keys are "
        "configured: that key reads the record, the admin token too, no other key",
    )
    repeat_of: str | None = Field(
        None, description="the conversation's first record with the same findings, if a repeat"
    )
    repeats: int = Field(0, description="on a first record: how many later turns repeated it")
    last_seen: Timestamp | None = Field(None, description="on a first record: its last repeat")
    rules: dict[str, int] = Field(description="findings per rule")
    findings: list[FindingOut]


class RecordPage(BaseModel):
    data: list[RecordSummary]
    next_cursor: str | None = Field(description="pass as `cursor` for the next page")


class DiffEntry(BaseModel):
    op: Literal["unchanged", "changed", "removed", "added"]
    received: int | None = Field(description="index in the received messages")
    forwarded: int | None = Field(description="index in the forwarded messages")
    role: str | None
    keys: list[str] = Field(description="changed key paths (op = changed)")
    rules: list[str] = Field(description="rules with findings in the received message")


class RecordDiff(BaseModel):
    messages: list[DiffEntry]
    unified: str | None = Field(description="unified diff of the pretty-printed messages")


class Attempt(BaseModel):
    """One request sent upstream for a client request that was repaired and retried."""

    forwarded: Any
    upstream_status: int | None
    upstream_error: str | None
    upstream_error_kind: str | None
    retried_rule: str | None = Field(description="the rule whose repair made the next attempt")


class RecordDetail(RecordSummary):
    api: str = Field(description="the wire API (chat, responses, messages, gemini)")
    history_key: str = Field(description="the body's key holding the history (dotted if nested)")
    noun: str = Field(description="what the API's history items are called")
    views: dict[str, Any] = Field(
        description="the viewer's reading of each item of received, forwarded and each attempt"
    )
    upstream_error: str | None
    received: Any
    forwarded: Any
    attempts: list[Attempt] | None = Field(None, description="set when a refusal was retried")
    diff: RecordDiff | None = Field(description="null when nothing was forwarded")


class Stats(BaseModel):
    total: int
    since: Timestamp | None
    by_outcome: dict[str, int]
    by_rule: dict[str, int] = Field(description="records in which each rule fired")
    by_upstream: dict[str, int]
    by_error_kind: dict[str, int] = Field(description="upstream 4xx answers by classified kind")
    by_ending: dict[str, int] = Field(description="how the answers ended (complete, cut, ...)")
    repeats: int = Field(description="later turns counted on their conversation's first record")


class Deleted(BaseModel):
    deleted: int


ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorResponse, "description": text}
    for code, text in (
        (400, "invalid parameter (named in error.param)"),
        (401, "admin token (or, with client keys configured, client key) missing or wrong"),
        (403, "no admin token set while listening beyond loopback"),
        (503, "repair log unavailable"),
    )
}
