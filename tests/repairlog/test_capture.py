"""Capture modes: what of a body is kept (full, redacted, none), and never a credential."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
from typing import Any

import orjson
import pytest

from proxy.repairlog import apply_capture
from proxy.repairlog.capture import Digests, truncate
from tests.repairlog.records import make_record

BODY: dict[str, Any] = {
    "model": "gpt-4o",
    "api_key": "sk-live-123",
    "Authorization": "Bearer sk-live-456",
    "temperature": 0.5,
    "stream": True,
    "user": "alice@example.com",
    "tools": [
        {
            "type": "function",
            "function": {"name": "read_file", "description": "Reads a file", "parameters": {}},
        }
    ],
    "messages": [
        {"role": "system", "content": "You are a secret agent."},
        {"role": "user", "name": "Alice", "content": [{"type": "text", "text": "read it"}]},
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": "thinking hard",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "/etc/passwd"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "name": "read_file", "content": "root:x:0"},
        {"role": "assistant", "function_call": {"name": "legacy", "arguments": "{}"}},
    ],
}


#: The log's key, as the writer reads it from the log.
KEY = b"k" * 32
DIGESTS = Digests(KEY)
digest = DIGESTS.text


def captured(mode: str, body: Any = BODY) -> Any:
    record = make_record()
    record.received = body
    record.forwarded = body
    result = apply_capture(record, mode, 1024, DIGESTS)
    assert result.forwarded == result.received
    return result.received


def test_digest_is_length_and_a_keyed_hmac_sha256() -> None:
    """Issue 35: a plain SHA-256 of a short value falls to a dictionary; one keyed with the
    log's secret does not, and another log's key gives other digests."""
    mac = hmac.new(KEY, "héllo".encode(), hashlib.sha256).hexdigest()
    assert digest("héllo") == {"length": 5, "hmac_sha256": mac}
    assert hashlib.sha256(b"yes").hexdigest() not in str(digest("yes"))
    assert Digests(b"o" * 32).text("yes") != digest("yes")
    with pytest.raises(ValueError, match="needs the log's key"):
        apply_capture(make_record(), "redacted", 1024)


def test_full_keeps_the_body_but_no_credentials() -> None:
    kept = captured("full")
    assert "api_key" not in kept
    assert "Authorization" not in kept
    assert kept["messages"] == BODY["messages"]
    assert kept["user"] == "alice@example.com"
    assert BODY["api_key"] == "sk-live-123"  # the input is not mutated


#: Credentials by name, nested (issue 35 finding 3: ``mcp_servers[].authorization_token`` was
#: served back by ``GET /repairs/{id}``).
NESTED: dict[str, Any] = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 64,
    "mcp_servers": [
        {
            "type": "url",
            "url": "https://mcp.example/sse",
            "name": "tools",
            "authorization_token": "SECRET-mcp-token-1",
            "headers": {"Authorization": "Bearer SECRET-header-2", "X-Api-Key": "SECRET-3"},
        }
    ],
    "messages": [
        {"role": "user", "content": "hi", "extra": {"client_secret": "SECRET-4"}},
        {"role": "user", "content": [{"type": "text", "text": "x", "password": "SECRET-5"}]},
    ],
    "tools": [{"name": "t", "input_schema": {"properties": {"key": {"type": "string"}}}}],
    "metadata": {"deep": [{"access_token": "SECRET-6", "token": "SECRET-7", "api-key": "S-8"}]},
}


@pytest.mark.parametrize("mode", ["full", "redacted", "none"])
def test_no_credential_is_stored_at_any_depth(mode: str) -> None:
    record = make_record()
    record.path = "/v1/messages"
    record.received = record.forwarded = NESTED
    record.attempts = [{"forwarded": NESTED, "upstream_error": None, "retried_rule": "x"}]
    kept = apply_capture(record, mode, 1024, DIGESTS)
    stored = orjson.dumps(dataclasses.asdict(kept), default=str).decode()
    for secret in ("SECRET", "S-8"):
        assert secret not in stored
    if mode == "full":
        server = kept.received["mcp_servers"][0]
        assert "authorization_token" not in server
        assert server["headers"] == {}
        assert server["url"] == "https://mcp.example/sse"  # what is no credential stays
        assert kept.received["max_tokens"] == 64
        schema = kept.received["tools"][0]["input_schema"]  # a property called key is no key
        assert schema == {"properties": {"key": {"type": "string"}}}
    assert NESTED["mcp_servers"][0]["authorization_token"] == "SECRET-mcp-token-1"  # not mutated


def test_a_body_without_credentials_is_kept_as_the_same_object() -> None:
    record = make_record()
    assert apply_capture(record, "full", 1024).received is record.received


def test_redacted_keeps_structure_and_ids_and_hashes_text_and_names() -> None:
    kept = captured("redacted")
    system, user, assistant, tool, legacy = kept["messages"]
    assert system == {"role": "system", "content": digest("You are a secret agent.")}
    assert user["name"] == digest("Alice")  # a person's name is text
    assert user["content"] == [{"type": "text", "text": digest("read it")}]
    assert assistant["content"] is None
    assert assistant["reasoning_content"] == digest("thinking hard")
    call = assistant["tool_calls"][0]
    assert call["id"] == "call_1"
    assert call["type"] == "function"
    assert call["function"]["name"] == digest("read_file")  # a client's string (issue 24)
    assert call["function"]["arguments"] == digest('{"path": "/etc/passwd"}')
    assert tool == {
        "role": "tool",
        "tool_call_id": "call_1",
        "name": digest("read_file"),
        "content": digest("root:x:0"),
    }
    assert legacy["function_call"]["name"] == digest("legacy")
    assert kept["model"] == "gpt-4o"
    assert kept["temperature"] == 0.5
    assert kept["stream"] is True
    assert kept["user"] == digest("alice@example.com")
    assert kept["tools"][0]["function"]["name"] == digest("read_file")
    assert kept["tools"][0]["function"]["description"] == digest("Reads a file")
    assert "api_key" not in kept


def test_redacted_stores_no_text_at_all() -> None:
    text = str(captured("redacted"))
    for secret in ("secret agent", "Alice", "read it", "passwd", "root:x", "thinking", "sk-live"):
        assert secret not in text


def test_none_keeps_only_roles_types_and_ids() -> None:
    assert captured("none") == {
        "model": "gpt-4o",
        "stream": True,
        "messages": [
            {"role": "system"},
            {"role": "user"},
            {
                "role": "assistant",
                "tool_calls": [{"id": "call_1", "type": "function", "function": {}}],
            },
            {"role": "tool", "tool_call_id": "call_1"},
            {"role": "assistant", "function_call": {}},
        ],
        "tools": [{"type": "function", "function": {}}],
    }


@pytest.mark.parametrize("mode", ["full", "redacted", "none"])
def test_odd_bodies_do_not_break_capture(mode: str) -> None:
    for body in ([1, "a"], "text", None, {"messages": ["not a message", 3, None]}):
        captured(mode, body)


def test_rejected_records_keep_no_forwarded_body() -> None:
    record = make_record(outcome="rejected")
    assert apply_capture(record, "redacted", 1024, DIGESTS).forwarded is None


def test_upstream_error_is_bounded_on_a_character_boundary() -> None:
    assert truncate("short", 256) == "short"
    assert truncate(None, 256) is None
    cut = truncate("é" * 300, 257)
    assert cut == "é" * 128  # 256 bytes; half a character is not kept
    record = make_record(outcome="upstream_rejected", upstream_error="x" * 5000)
    assert apply_capture(record, "full", 300).upstream_error == "x" * 300


# --- no client string in redacted or none (issue 24 item 7) ----------------------------------

SECRET = "Sensitive-Client-Text"
ODD: dict[str, Any] = {
    "model": "gpt-4o",
    SECRET: 1,  # a client's own top-level key
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "get_" + SECRET,
                "parameters": {"type": "object", "properties": {SECRET + "_arg": {}}},
            },
        }
    ],
    "messages": [
        {"role": "user", "content": [{"type": f"x'. {SECRET}", "text": "hi"}]},
        {"role": "assistant", "content": "ok", SECRET + "_field": True},
    ],
}


@pytest.mark.parametrize("mode", ["redacted", "none"])
def test_no_client_string_in_keys_names_types_findings_or_errors(mode: str) -> None:
    record = make_record(outcome="upstream_rejected")
    record.received = record.forwarded = ODD
    record.findings = [
        {
            "rule": "unknown_message_field",
            "action": "strip",
            "path": f"messages[1].{SECRET}_field",
            "detail": f"upstream refused the field: Unknown parameter '{SECRET}_field'",
        }
    ]
    record.upstream_error = f"Invalid value: '{SECRET}'."
    record.attempts = [{"forwarded": ODD, "upstream_error": SECRET, "retried_rule": "x"}]
    kept = apply_capture(record, mode, 1024, DIGESTS)
    stored = orjson.dumps(dataclasses.asdict(kept), default=str).decode()
    assert SECRET.lower() not in stored.lower()
    [finding] = kept.findings
    assert (finding["rule"], finding["action"]) == ("unknown_message_field", "strip")
    assert finding["path"].startswith("messages[1].#")
    assert str(kept.upstream_error).startswith("[redacted]")
    if mode == "redacted":  # the hashed key in the path is the one in the body
        assert finding["path"].removeprefix("messages[1].") in kept.received["messages"][1]


def test_full_keeps_findings_and_errors_as_they_are() -> None:
    record = make_record(outcome="upstream_rejected", upstream_error=f"Invalid: '{SECRET}'")
    record.findings = [{"rule": "r", "action": "strip", "path": "messages[0].x", "detail": SECRET}]
    kept = apply_capture(record, "full", 1024)
    assert kept.findings == record.findings
    assert kept.upstream_error == record.upstream_error


def test_a_captured_copy_keeps_every_field_it_does_not_change() -> None:
    """The writer's copy (:func:`~proxy.repairlog.record.copied`) holds what
    ``dataclasses.replace`` would, unstored fields included, and leaves the original alone."""
    from proxy.repairlog.record import copied

    record = make_record(owner="k1", size=123, listed=([], b"[]"), repeats=2)
    copy = copied(record, model="other", repeats=3)
    want = dataclasses.replace(record, model="other", repeats=3)
    assert copy is not record
    for f in dataclasses.fields(record):
        assert getattr(copy, f.name) == getattr(want, f.name), f.name
    assert (record.model, record.repeats) != ("other", 3)


@pytest.mark.parametrize("mode", ["full", "redacted", "none"])
def test_what_a_forwarded_body_adds_to_the_received_one_is_checked(mode: str) -> None:
    """The forwarded body is checked where it differs from the received one only: a credential
    in what it adds (a new item, a new field) is dropped all the same."""
    record = make_record()
    received = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
    added = {"role": "user", "content": "x", "extra": {"api_key": "SECRET-1"}}
    record.received = received
    record.forwarded = {**received, "messages": [*received["messages"], added], "token": "S-2"}
    kept = apply_capture(record, mode, 1024, DIGESTS)
    stored = orjson.dumps(dataclasses.asdict(kept), default=str).decode()
    assert "SECRET" not in stored
    assert "S-2" not in stored
    if mode == "full":
        assert kept.received is received  # nothing to drop: the very object
        assert kept.forwarded["messages"][1] == {"role": "user", "content": "x", "extra": {}}


@pytest.mark.parametrize("mode", ["full", "redacted", "none"])
def test_a_repaired_body_is_checked_by_the_json_it_was_sent_as(mode: str) -> None:
    """A record whose forwarded history's JSON is at hand (:attr:`Record.listed`) is searched in
    that JSON, the received body only where it differs (what the repair dropped or replaced):
    the same record is stored as without it, a credential only the received body held dropped."""
    from proxy.repairlog.credentials import Checked

    kept = {"role": "user", "content": "hi"}
    dropped = {"role": "tool", "tool_call_id": "c", "content": "x", "extra": {"token": "S-1"}}
    received = {"model": "gpt-4o", "messages": [kept, dropped, kept]}
    items = [kept, {"role": "user", "content": "salvaged"}, kept]
    forwarded = {**received, "messages": items}
    listed = (items, orjson.dumps(items))
    record = make_record()
    record.received, record.forwarded = received, forwarded
    plain = apply_capture(record, mode, 1024, DIGESTS)
    checked = Checked()
    record.listed = listed
    fast = apply_capture(record, mode, 1024, DIGESTS, checked)
    assert (fast.received, fast.forwarded) == (plain.received, plain.forwarded)
    assert "S-1" not in orjson.dumps(fast.received).decode()
    assert checked.get(f"{fast.conversation}:listed") == listed[1]  # the sent JSON searched
    if mode == "full":
        assert fast.forwarded is forwarded
