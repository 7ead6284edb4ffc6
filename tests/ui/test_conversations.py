"""The viewer shows one row per broken conversation and opens any of its turns (issue 23)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from proxy.repairlog import Record
from tests.servers import running
from tests.ui.conftest import orphan_record, viewer_app
from tests.ui.test_viewer import expect, open_record, rows

T0 = datetime(2026, 11, 20, 10, 2, tzinfo=UTC)
TURNS = 4


@pytest.fixture(scope="module")
def turns() -> list[Record]:
    first = orphan_record(T0)
    return [
        dataclasses.replace(
            first,
            id=f"01a20000-0000-7000-8000-00000000000{n}",
            created_at=T0 + timedelta(minutes=n),
            conversation="conv-1",
            client="OpenAI/Python 1.52.0",
        )
        for n in range(TURNS)
    ]


@pytest.fixture(scope="module")
def viewer(turns: list[Record]) -> Iterator[str]:
    with running(viewer_app(turns)) as url:
        yield url


def test_a_broken_conversation_is_one_row_with_its_turns(
    page: Any, viewer: str, turns: list[Record]
) -> None:
    page.goto(f"{viewer}/ui#/")
    expect(rows(page)).to_have_count(1)
    summary = rows(page).first.locator(".turns")
    expect(summary).to_contain_text(f"{TURNS} turns")
    expect(summary).to_contain_text("OpenAI/Python 1.52.0")

    rows(page).first.click()
    expect(page.locator(".record-head")).to_contain_text("conversation")
    page.get_by_role("link", name=f"all {TURNS} turns").click()
    expect(rows(page)).to_have_count(TURNS)

    rows(page).first.click()  # the newest turn, a repeat
    expect(page.locator(".record-head")).to_contain_text("repeat of")
    page.get_by_role("link", name=turns[0].id).click()
    expect(page.locator(".record-head .id")).to_have_text(turns[0].id)


def test_a_repeat_opens_whole(page: Any, viewer: str, turns: list[Record]) -> None:
    open_record(page, viewer, turns[-1].id)
    expect(page.locator(".findings")).to_contain_text("orphan_tool_result")
