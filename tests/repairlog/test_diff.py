"""The received-vs-forwarded diff shown by ``GET /repairs/{id}``."""

from __future__ import annotations

from typing import Any

from proxy.repairlog import record_diff
from proxy.repairlog.diff import MAX_UNIFIED_LINES, changed_paths


def call(call_id: str, arguments: Any = "{}") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "f", "arguments": arguments}}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def tool(call_id: str, text: str = "ok") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def assistant(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": list(calls)}


def ops(received: list[Any], forwarded: list[Any], findings: Any = ()) -> list[tuple[Any, ...]]:
    diff = record_diff({"messages": received}, {"messages": forwarded}, findings)
    assert diff is not None
    return [(e["op"], e["received"], e["forwarded"], e["keys"]) for e in diff["messages"]]


def test_nothing_forwarded_means_no_diff() -> None:
    assert record_diff({"messages": [user("a")]}, None) is None


def test_identical_messages_are_unchanged() -> None:
    messages = [user("a"), assistant(call("c1")), tool("c1")]
    assert ops(messages, messages) == [("unchanged", i, i, []) for i in range(3)]
    diff = record_diff({"messages": messages}, {"messages": messages})
    assert diff is not None
    assert diff["unified"] == ""


def test_a_rewritten_message_is_changed_with_its_keys() -> None:
    before = [user("a"), assistant(call("c1", {"x": 1})), tool("c1")]
    after = [user("a"), assistant(call("c1", '{"x":1}')), tool("c1")]
    assert ops(before, after) == [
        ("unchanged", 0, 0, []),
        ("changed", 1, 1, ["tool_calls[0].function.arguments"]),
        ("unchanged", 2, 2, []),
    ]


def test_an_orphan_salvaged_as_user_text_is_removed_then_added() -> None:
    before = [user("a"), tool("gone", "result"), user("b")]
    after = [user("a"), user("[result of gone]: result"), user("b")]
    assert ops(before, after) == [
        ("unchanged", 0, 0, []),
        ("removed", 1, None, []),
        ("added", None, 1, []),
        ("unchanged", 2, 2, []),
    ]


def test_a_synthesized_result_is_added_and_a_dropped_message_removed() -> None:
    before = [user("a"), assistant(call("c1"), call("c2")), tool("c1"), {"role": "assistant"}]
    after = [user("a"), assistant(call("c1"), call("c2")), tool("c1"), tool("c2", "none")]
    assert ops(before, after) == [
        ("unchanged", 0, 0, []),
        ("unchanged", 1, 1, []),
        ("unchanged", 2, 2, []),
        ("removed", 3, None, []),
        ("added", None, 3, []),
    ]
    inserted = [user("a"), assistant(call("c1")), tool("c1", "none"), user("b")]
    assert ops([user("a"), assistant(call("c1")), user("b")], inserted) == [
        ("unchanged", 0, 0, []),
        ("unchanged", 1, 1, []),
        ("added", None, 2, []),
        ("unchanged", 2, 3, []),
    ]


def test_remapped_ids_change_call_and_result_together() -> None:
    long_id = "call_" + "x" * 50
    before = [user("a"), assistant(call(long_id)), tool(long_id)]
    after = [user("a"), assistant(call("call_short")), tool("call_short")]
    assert ops(before, after) == [
        ("unchanged", 0, 0, []),
        ("changed", 1, 1, ["tool_calls[0].id"]),
        ("changed", 2, 2, ["tool_call_id"]),
    ]


def test_entries_name_the_rules_found_in_each_received_message() -> None:
    findings = [
        {"rule": "orphan_tool_result", "action": "salvage", "path": "messages[1]", "detail": ""},
        {"rule": "unknown_message_field", "action": "strip", "path": "messages[1].index"},
        {"rule": "orphan_tool_result", "action": "salvage", "path": "messages[1].role"},
        {"rule": "developer_role", "action": "warn", "path": "tools"},
    ]
    diff = record_diff(
        {"messages": [user("a"), tool("x")]}, {"messages": [user("a"), user("x")]}, findings
    )
    assert diff is not None
    by_index = {e["received"]: e["rules"] for e in diff["messages"]}
    assert by_index[1] == ["orphan_tool_result", "unknown_message_field"]
    assert by_index[0] == []
    assert by_index[None] == []


def test_unified_diff_shows_removed_and_added_lines() -> None:
    diff = record_diff({"messages": [user("before")]}, {"messages": [user("after")]})
    assert diff is not None
    lines = diff["unified"].splitlines()
    assert lines[:2] == ["--- received", "+++ forwarded"]
    assert '-    "content": "before"' in lines
    assert '+    "content": "after"' in lines


def test_huge_histories_leave_the_unified_diff_out() -> None:
    many = [user(str(n)) for n in range(MAX_UNIFIED_LINES // 3)]
    diff = record_diff({"messages": many}, {"messages": [*many, user("end")]})
    assert diff is not None
    assert diff["unified"] is None
    assert diff["messages"][-1]["op"] == "added"


def test_odd_bodies_give_an_empty_diff() -> None:
    for received, forwarded in (({}, {}), ([1], {"messages": "x"}), ("text", {"messages": [3]})):
        diff = record_diff(received, forwarded)
        assert diff is not None
        assert all(e["op"] == "added" for e in diff["messages"])


def test_changed_paths() -> None:
    assert changed_paths({"a": 1, "b": [1, 2]}, {"a": 1, "b": [1, 3], "c": None}) == ["b[1]", "c"]
    assert changed_paths([1], [1, 2]) == ["."]
    assert changed_paths({"a": {"b": "x"}}, {"a": "y"}) == ["a"]
