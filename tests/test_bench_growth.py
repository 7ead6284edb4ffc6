"""The 60-turn growth run (bench/growth.py): it drives serve and the emulator as the issue says,
and its checks fail on what they check."""

from __future__ import annotations

import orjson

from bench import growth, sessions


def test_a_short_run_through_serve_and_the_emulator_gives_every_figure() -> None:
    figures = growth.run(rounds=1, turns=3)
    mine = figures["toolcall-guard"]
    assert mine["last_record_complete"] is True
    assert mine["ratio_schedstat"] > 0  # CPU was read (the 10 ms ticks may say 0 this short)
    assert mine["log_ratio"] <= 3  # a 3-turn conversation may fit in the pages already there
    assert mine["final_body_bytes"] == len(growth._bodies(True, "final", 3)[-1])
    lines = growth.table(figures).splitlines()
    assert lines[0] == "| figure | toolcall-guard | goal |"
    assert len(lines) == 2 + len(growth.ROWS)


def test_a_record_is_complete_only_with_the_body_sent_the_one_forwarded_and_findings() -> None:
    body = sessions.conversation(True, "s", 2, model=growth.MODEL)[-1]
    sent = orjson.loads(body)
    whole = {"received": sent, "forwarded": {"messages": [1]}, "findings": [{"rule": "r"}]}
    assert growth.complete(whole, body)
    assert not growth.complete(None, body)
    assert not growth.complete({**whole, "received": {**sent, "messages": []}}, body)
    assert not growth.complete({**whole, "forwarded": None}, body)
    assert not growth.complete({**whole, "findings": []}, body)


def test_the_config_names_the_emulator_and_the_log() -> None:
    text = growth.config_text("http://127.0.0.1:9", growth.Path("/tmp/x.sqlite3"), 8)
    assert 'base_url = "http://127.0.0.1:9/v1"' in text
    assert 'url = "sqlite:////tmp/x.sqlite3"' in text
    assert "port = 8" in text
