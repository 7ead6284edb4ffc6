"""The viewer explains what the proxy did (issue 16 item 5), reads Responses records (issue 13
item 4) and shows both attempts of a retried request (issue 15 item 5), in a real browser."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.servers import running
from tests.ui.conftest import screenshot, viewer_app
from tests.ui.records import Second
from tests.ui.test_viewer import expect, open_record, rows

OVERFLOW = "document.documentElement.scrollWidth - window.innerWidth"


@pytest.fixture(scope="module")
def second() -> Second:
    return Second()


@pytest.fixture(scope="module")
def viewer2(second: Second) -> Iterator[str]:
    with running(viewer_app(second.all)) as url:
        yield url


def row_kinds(page: Any, scope: str = ".compare") -> list[list[str | None]]:
    """[kind, received index, forwarded index] of the rows that show a change."""
    kinds: list[list[str | None]] = page.locator(f"{scope} .mrow:not(details)").evaluate_all(
        "rs => rs.map(r => [r.className.replace('mrow kind-', ''), r.dataset.left ?? null,"
        " r.dataset.right ?? null])"
    )
    return [k for k in kinds if k[0] != "same"]  # "same": flagged in place, not moved


def colour(locator: Any) -> str:
    value: str = locator.evaluate("el => getComputedStyle(el).backgroundColor")
    return value


# --- what the proxy did -----------------------------------------------------------------------


def test_salvaged_results_are_drawn_as_moved_not_removed(
    page: Any, viewer2: str, second: Second
) -> None:
    open_record(page, viewer2, second.salvage.id)
    # Received #3 and #4 (results of lost calls) went into the user message forwarded as #4.
    assert row_kinds(page) == [
        ["salvaged", "3", None],
        ["salvaged", "4", None],
        ["added", None, "4"],
    ]
    for index in (3, 4):
        moved = page.locator(f"#msg-{index}")
        expect(moved.locator(".mrow-head .kind")).to_have_text("salvaged")
        expect(moved.locator(".salvaged-into")).to_contain_text("moved into #4 user")
        expect(moved).not_to_contain_text("removed by the proxy")
    added = page.locator("#fwd-4")
    expect(added.locator(".mrow-head .pin-note .rule")).to_have_text(
        ["orphan_tool_result", "orphan_tool_result"]
    )
    expect(added.locator(".mrow-head")).to_contain_text("holds the text of #3, #4")
    expect(added.locator(".side-right")).to_contain_text("[toolcall-guard] Result of tool call zz")
    page.locator("#msg-3 .salvaged-into button").click()
    expect(added).to_have_class(re.compile(r"\bflash\b"))
    screenshot(page, "record-salvaged")


def test_added_messages_carry_the_rule_that_made_them(
    page: Any, viewer2: str, second: Second
) -> None:
    open_record(page, viewer2, second.synthesized.id)
    assert ["added", None, "3"] in row_kinds(page)
    head = page.locator("#fwd-3 .mrow-head")
    expect(head.locator(".rule")).to_have_text("missing_tool_result")
    expect(head.locator(".action")).to_have_text("synthesize")
    expect(page.locator("#fwd-3 .side-right .card-head")).to_have_text("#3 tool · t1")


def test_action_colours_agree_in_headers_findings_and_list(
    page: Any, viewer2: str, second: Second
) -> None:
    shades: dict[str, set[str]] = {}
    for record, action in (
        (second.rejected, "reject"),
        (second.warned, "warn"),
        (second.synthesized, "synthesize"),
    ):
        open_record(page, viewer2, record.id)
        for where in (".findings .action", ".mrow-head .action"):
            tag = page.locator(where).filter(has_text=action).first
            shades.setdefault(action, set()).add(colour(tag))
    assert all(len(found) == 1 for found in shades.values()), shades
    reject, warn, repair = (shades[a].pop() for a in ("reject", "warn", "synthesize"))
    assert len({reject, warn, repair}) == 3
    red, green = (int(c) for c in re.findall(r"\d+", reject)[:2])
    assert red > green  # a red shade, whatever the theme
    page.goto(f"{viewer2}/ui")
    expect(rows(page)).to_have_count(len(second.all))
    chip = rows(page).locator(".chip")
    assert colour(chip.filter(has_text="unknown_role")) == reject
    assert colour(chip.filter(has_text="consecutive_same_role")) == warn
    assert colour(chip.filter(has_text="missing_tool_result")) == repair


def test_status_column_is_never_cut_off(new_page: Any, viewer2: str, second: Second) -> None:
    for width in (1280, 1000, 800):  # 1000: the grid's narrowest status column
        page = new_page(viewport={"width": width, "height": 900})
        page.goto(f"{viewer2}/ui")
        row = page.locator(f'a.row[data-id="{second.upstream_rejected.id}"]')
        status = row.locator(".c-status")
        expect(status).to_contain_text("400")
        expect(status).to_contain_text("missing_thought_signature")
        cut = status.evaluate(
            "el => [el, ...el.children].filter(e => e.scrollWidth > e.clientWidth + 1).length"
        )
        assert cut == 0, width


def test_the_status_the_client_got_is_shown(page: Any, viewer2: str, second: Second) -> None:
    # The upstream was down: no upstream status, the client got the proxy's 502 (issue 16.4).
    page.goto(f"{viewer2}/ui")
    status = page.locator(f'a.row[data-id="{second.unreachable.id}"] .c-status')
    expect(status.locator(".code")).to_have_text("502")
    expect(status.locator(".err-kind")).to_have_text("upstream_unavailable")
    open_record(page, viewer2, second.unreachable.id)
    meta = page.locator(".meta")
    expect(meta).to_contain_text("client status502")
    expect(meta).to_contain_text("proxy errorupstream_unavailable")


def test_an_answer_that_did_not_end_whole_is_marked(
    page: Any, viewer2: str, second: Second
) -> None:
    page.goto(f"{viewer2}/ui")
    row = page.locator(f'a.row[data-id="{second.retried.id}"]')
    expect(row.locator(".ending")).to_have_text("cut by upstream")
    expect(page.locator("a.row .ending")).to_have_count(1)  # whole answers carry no mark
    page.goto(f"{viewer2}/ui#/?ending=upstream_cut")  # a bookmarked filter
    page.reload()
    expect(page.locator("select[name=ending]")).to_have_value("upstream_cut")
    expect(page.locator("a.row")).to_have_count(1)
    open_record(page, viewer2, second.retried.id)
    expect(page.locator(".meta")).to_contain_text("endingcut by upstream")


def test_summary_counts_follow_the_active_filter(page: Any, viewer2: str, second: Second) -> None:
    page.goto(f"{viewer2}/ui")
    outcomes = page.locator(".stat-outcome .stat")
    expect(page.locator(".stats")).to_have_attribute("data-scope", "all")
    expect(page.locator('.stat-outcome [data-key="repaired"] .count')).to_have_text("5")
    page.locator("select[name=outcome]").select_option("rejected")
    expect(rows(page)).to_have_count(1)
    expect(page.locator(".stats")).to_have_attribute("data-scope", "filtered")
    expect(outcomes).to_have_count(1)
    expect(page.locator('.stat-outcome [data-key="rejected"] .count')).to_have_text("1")
    expect(page.locator(".stat-rule .stat")).to_have_count(1)
    expect(page.locator('.stat-rule [data-key="unknown_role"] .count')).to_have_text("1")
    expect(page.locator(".stat-upstream .stat")).to_have_text(["deepseek1"])
    expect(page.locator(".stat-scope")).to_have_text("counts of the matching records")

    page.get_by_role("button", name="clear").click()
    page.locator("input[name=upstream]").fill("openai")
    expect(rows(page)).to_have_count(4)
    expect(page.locator('.stat-outcome [data-key="repaired"] .count')).to_have_text("3")
    expect(page.locator('.stat-outcome [data-key="warned"] .count')).to_have_text("1")
    page.get_by_role("button", name="clear").click()
    expect(page.locator(".stats")).to_have_attribute("data-scope", "all")
    expect(page.locator('.stat-outcome [data-key="repaired"] .count')).to_have_text("5")


def test_no_sideways_scrolling_at_800_pixels(new_page: Any, viewer2: str, second: Second) -> None:
    page = new_page(viewport={"width": 800, "height": 900})
    page.goto(f"{viewer2}/ui")
    expect(rows(page)).to_have_count(len(second.all))
    assert page.evaluate(OVERFLOW) <= 0
    # The list clips what does not fit (overflow: hidden): no row may be wider than the list.
    clipped = rows(page).evaluate_all(
        "rs => rs.filter(r => r.scrollWidth > r.clientWidth).map(r => r.dataset.id)"
    )
    assert clipped == []
    screenshot(page, "list-800", full_page=False)
    for record in (second.salvage, second.responses, second.retried):
        open_record(page, viewer2, record.id)
        assert page.evaluate(OVERFLOW) <= 0, record.path
    screenshot(page, "record-retried-800")


def test_a_record_that_is_not_found_does_not_blame_retention(page: Any, viewer2: str) -> None:
    page.goto(f"{viewer2}/ui#/r/01900000-0000-7000-8000-000000000001")
    box = page.locator(".error-box")
    expect(box).to_contain_text("There is no record with this id")
    expect(box).not_to_contain_text("retention")


# --- Responses records ------------------------------------------------------------------------


def test_responses_items_are_aligned_with_type_and_call_id(
    page: Any, viewer2: str, second: Second
) -> None:
    open_record(page, viewer2, second.responses.id)
    expect(page.locator(".compare h2")).to_have_text("Input items")
    expect(page.locator(".compare .heads")).to_contain_text("Received · 7 items")
    expect(page.locator(".compare .heads")).to_contain_text("Forwarded · 8 items")
    kinds = row_kinds(page)
    assert ["added", None, "5"] in kinds
    assert next(k for k in kinds if k[1] == "5")[0] == "salvaged"
    synth = page.locator("#fwd-5")
    expect(synth.locator(".card-head")).to_have_text("#5 function_call_output · call_t1")
    expect(synth.locator(".mrow-head .rule")).to_have_text("responses_missing_output")
    salvaged = page.locator("#msg-5")
    expect(salvaged.locator(".side-left .card-head")).to_have_text(
        "#5 function_call_output · call_zz"
    )
    expect(salvaged.locator(".side-left .tree")).to_have_class(re.compile(r"\bpinned\b"))
    expect(salvaged.locator(".mrow-head .rule")).to_have_text("responses_orphan_output")
    # Untouched items are folded with their type.
    page.locator(".compare .fold").first.click()
    expect(page.locator("details.mrow summary").nth(1)).to_contain_text("reasoning")
    expect(page.locator("details.mrow summary").nth(2)).to_contain_text("function_call")
    page.locator(".findings").get_by_role("button", name="input[5]").click()
    expect(salvaged).to_have_class(re.compile(r"\bflash\b"))
    screenshot(page, "record-responses")


# --- retried requests -------------------------------------------------------------------------


def test_a_retried_request_shows_both_attempts(page: Any, viewer2: str, second: Second) -> None:
    open_record(page, viewer2, second.retried.id)
    expect(page.locator(".meta")).to_contain_text("missing_reasoning_content")
    attempts = page.locator(".attempt")
    expect(attempts).to_have_count(2)
    first, again = attempts.nth(0), attempts.nth(1)
    expect(first.locator(".attempt-head")).to_contain_text("Attempt 1 of 2")
    expect(first.locator(".attempt-status")).to_have_text("upstream 400")
    expect(first.locator(".attempt-head")).not_to_contain_text("retry")
    expect(first.locator(".upstream-error-text")).to_contain_text("Missing `reasoning_content`")
    expect(first.locator(".compare .col-head")).to_have_text(
        "Sent as received, refused by the upstream (400) · 3 messages"
    )
    expect(again.locator(".attempt-head")).to_contain_text("Attempt 2 of 2")
    expect(again.locator(".attempt-status")).to_have_text("upstream 200")
    expect(again.locator(".attempt-head .rule")).to_have_text("missing_reasoning_content")
    assert row_kinds(page, ".attempt[data-attempt='2'] .compare") == [["changed", "1", "1"]]
    changed = again.locator("#a2-msg-1")
    expect(changed.locator(".mrow-head .rule")).to_have_text("missing_reasoning_content")
    expect(changed.locator(".side-right [data-path=reasoning_content]")).to_have_class(
        re.compile(r"\bmark-added\b")
    )
    # The record-level error box is not repeated above the attempts.
    expect(page.locator("section.upstream-error")).to_have_count(0)
    screenshot(page, "record-retried")
