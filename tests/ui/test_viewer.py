"""The repair-log viewer in a real browser against the real /repairs API on loopback."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx
import pytest

from proxy.api.ui import CSP, UI_DIR
from proxy.app import create_app
from proxy.settings import load_settings
from tests.servers import running
from tests.ui.conftest import NO_TOKEN_ENV, TOKEN, XSS, Seeded, screenshot, viewer_app


def expect(target: Any) -> Any:
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(target)


def rows(page: Any) -> Any:
    return page.locator(".rows a.row")


def open_record(page: Any, viewer: str, record_id: str) -> None:
    page.goto(f"{viewer}/ui#/r/{record_id}")
    expect(page.locator(".record-head")).to_be_visible()


# --- the static files -------------------------------------------------------------------------


def test_page_and_assets_are_served_with_strict_headers(viewer: str) -> None:
    with httpx.Client(base_url=viewer) as client:
        page = client.get("/ui")
        assert page.status_code == 200
        assert page.headers["content-type"] == "text/html; charset=utf-8"
        assert page.headers["content-security-policy"] == CSP
        assert page.headers["cache-control"] == "no-cache"
        assert page.headers["x-content-type-options"] == "nosniff"
        for name, kind in (("app.js", "text/javascript"), ("style.css", "text/css")):
            asset = client.get(f"/ui/{name}")
            assert asset.status_code == 200
            assert asset.headers["content-type"].startswith(kind)
            assert asset.headers["content-security-policy"] == CSP
            again = client.get(f"/ui/{name}", headers={"if-none-match": asset.headers["etag"]})
            assert again.status_code == 304
        assert client.get("/ui/").text == page.text
        for missing in ("/ui/nope.js", "/ui/..%2Fapi%2Fui.py", "/ui/.hidden.js", "/ui/x.py"):
            assert client.get(missing).status_code == 404, missing


def test_the_proxy_app_serves_the_viewer_and_its_api() -> None:
    settings = load_settings(
        repair_log={"url": "memory://"}, server={"admin_token_env": NO_TOKEN_ENV}
    )
    with running(create_app(settings)) as url, httpx.Client(base_url=url) as client:
        assert client.get("/ui").headers["content-security-policy"] == CSP
        assert client.get("/ui/app.js").status_code == 200
        assert client.get("/repairs").json() == {"data": [], "next_cursor": None}


def test_no_inline_code_and_no_markup_from_data() -> None:
    html = (UI_DIR / "index.html").read_text()
    assert re.findall(r"<script(?![^>]*\ssrc=)", html) == []
    assert "<style" not in html
    assert " style=" not in html
    assert not re.search(r"\son[a-z]+=", html)
    assert not re.search(r"https?://", html)
    for script in UI_DIR.glob("*.js"):
        source = script.read_text()
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
            assert sink not in source, f"{script.name} uses {sink}"


# --- the list ---------------------------------------------------------------------------------


def test_list_shows_newest_first_with_counts_per_rule(
    page: Any, viewer: str, seeded: Seeded
) -> None:
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(f"{viewer}/ui")
    expect(rows(page)).to_have_count(50)
    shown = rows(page).evaluate_all("rows => rows.map(r => r.dataset.id)")
    newest = sorted(seeded.all, key=lambda r: r.created_at, reverse=True)
    assert shown == [r.id for r in newest[:50]]
    first = rows(page).nth(1)  # the upstream-rejected record
    expect(first.locator(".badge")).to_have_text("upstream rejected")
    expect(first.locator(".c-status")).to_contain_text("400")
    orphan = page.locator(f'a.row[data-id="{seeded.orphan.id}"]')
    expect(orphan.locator(".chip")).to_have_text(["arguments_not_string", "orphan_tool_result"])
    stats = page.locator(".stat-rule")
    expect(stats.locator('[data-key="consecutive_same_role"] .count')).to_have_text("110")
    expect(stats.locator('[data-key="orphan_tool_result"] .count')).to_have_text("2")
    expect(page.locator('.stat-outcome [data-key="rejected"] .count')).to_have_text("1")
    screenshot(page, "list", full_page=False)
    listed = [urlparse(u) for u in requests if urlparse(u).path == "/repairs"]
    assert listed
    assert all(parse_qs(u.query)["limit"] == ["50"] for u in listed)


def test_load_more_follows_the_cursor_to_the_end(page: Any, viewer: str, seeded: Seeded) -> None:
    page.goto(f"{viewer}/ui")
    expect(rows(page)).to_have_count(50)
    more = page.get_by_role("button", name="Load more")
    more.click()
    expect(rows(page)).to_have_count(100)
    more.click()
    expect(rows(page)).to_have_count(len(seeded.all))
    expect(more).to_be_hidden()
    expect(page.locator(".status")).to_have_text(f"All {len(seeded.all)} records shown.")
    shown = rows(page).evaluate_all("rows => rows.map(r => r.dataset.id)")
    assert len(set(shown)) == len(seeded.all)


def test_filters_narrow_the_list_and_live_in_the_url(
    page: Any, viewer: str, seeded: Seeded
) -> None:
    page.goto(f"{viewer}/ui")
    expect(rows(page)).to_have_count(50)
    page.locator("select[name=outcome]").select_option("rejected")
    expect(rows(page)).to_have_count(1)
    expect(rows(page).first).to_have_attribute("data-id", seeded.rejected.id)
    assert page.url.endswith("#/?outcome=rejected")

    page.get_by_role("button", name="clear").click()
    expect(rows(page)).to_have_count(50)
    page.locator('.stat-rule [data-key="orphan_tool_result"]').click()
    expect(page.locator("input[name=rule]")).to_have_value("orphan_tool_result")
    expect(rows(page)).to_have_count(2)

    page.get_by_role("button", name="clear").click()
    page.locator("input[name=upstream]").fill("gemini")
    expect(rows(page)).to_have_count(1)
    expect(rows(page).first).to_have_attribute("data-id", seeded.upstream_rejected.id)
    page.locator("input[name=upstream]").fill("")
    page.locator("input[name=model]").fill("gpt-4o-mini")
    expect(rows(page)).to_have_count(50)
    page.locator("select[name=range]").select_option("24h")
    expect(page.locator(".status")).to_have_text("No records match these filters.")
    page.locator("input[name=model]").fill("")
    expect(rows(page)).to_have_count(len(seeded.recent))

    page.goto(f"{viewer}/ui#/?upstream=deepseek")  # a bookmarked filter
    page.reload()
    expect(page.locator("input[name=upstream]")).to_have_value("deepseek")
    expect(rows(page)).to_have_count(1)


def test_custom_time_range(page: Any, viewer: str, seeded: Seeded) -> None:
    page.goto(f"{viewer}/ui")
    page.locator("select[name=range]").select_option("custom")
    since = page.locator("input[name=since]")
    expect(since).to_be_visible()
    oldest = min(r.created_at for r in seeded.old)  # the fillers are a minute apart

    def local_minute(moment: datetime) -> str:  # what a datetime-local input holds
        return page.evaluate(
            "iso => { const d = new Date(iso);"
            " d.setMinutes(d.getMinutes() - d.getTimezoneOffset());"
            " return d.toISOString().slice(0, 16); }",
            moment.isoformat(),
        )

    since.fill(local_minute(oldest))
    page.locator("input[name=until]").fill(local_minute(oldest + timedelta(minutes=2)))
    page.locator("input[name=until]").dispatch_event("change")
    expect(rows(page)).to_have_count(2)  # since is inclusive, until exclusive
    assert "range=custom" in page.url


def test_live_refresh_adds_new_records_on_top(page: Any, writable: str) -> None:
    page.clock.install()
    page.goto(f"{writable}/ui")
    expect(rows(page)).to_have_count(4)
    added = httpx.post(f"{writable}/test/records").json()["id"]
    page.clock.run_for(5_000)
    expect(rows(page)).to_have_count(5)
    expect(rows(page).first).to_have_attribute("data-id", added)
    expect(rows(page).first).to_have_class(re.compile(r"\bfresh\b"))

    page.locator("input[name=live]").uncheck()
    assert page.url.endswith("live=0")
    polled: list[str] = []
    page.on("request", lambda r: polled.append(r.url) if "/repairs" in r.url else None)
    later = httpx.post(f"{writable}/test/records").json()["id"]
    page.clock.run_for(20_000)
    page.evaluate("new Promise(r => setTimeout(r, 0))")
    assert polled == []
    page.locator("input[name=live]").check()
    page.clock.run_for(5_000)
    expect(rows(page).first).to_have_attribute("data-id", later)


# --- one record -------------------------------------------------------------------------------


def test_record_page_aligns_highlights_and_pins(page: Any, viewer: str, seeded: Seeded) -> None:
    page.goto(f"{viewer}/ui")
    page.locator(f'a.row[data-id="{seeded.orphan.id}"]').click()
    expect(page.locator(".record-head .badge")).to_have_text("repaired")
    expect(page.locator(".meta")).to_contain_text("req_orphan")

    # #2 edited in place; the orphan result (#4) became a user message (salvaged); the rest
    # unchanged and folded.
    kinds = page.locator(".compare .mrow:not(details)").evaluate_all(
        "rs => rs.map(r => [r.className, r.dataset.left, r.dataset.right])"
    )
    assert kinds == [["mrow kind-changed", "2", "2"], ["mrow kind-salvaged", "4", "4"]]
    expect(page.locator("details.mrow.kind-same")).to_have_count(4)

    args = page.locator("#msg-2 .side-left [data-path='tool_calls[0].function.arguments']")
    expect(args).to_have_class(re.compile(r"\bpinned\b"))
    expect(args.locator(".pin").first).to_have_text("arguments_not_string")
    right_args = page.locator("#msg-2 .side-right [data-path='tool_calls[0].function.arguments']")
    expect(right_args).to_have_class(re.compile(r"\bmark-changed\b"))
    # Only the arguments differ, one mark on each side.
    expect(page.locator("#msg-2 .mark-changed, #msg-2 .mark-added")).to_have_count(2)

    salvaged = page.locator("#msg-4")
    expect(salvaged.locator(".side-left .tree")).to_have_class(re.compile(r"\bpinned\b"))
    expect(salvaged.locator(".pin-note")).to_contain_text(seeded.orphan.findings[1]["detail"])
    expect(salvaged.locator(".side-left [data-path=tool_call_id]")).to_have_class(
        re.compile(r"\bmark-removed\b")
    )
    for field in ("role", "content"):
        expect(salvaged.locator(f".side-right [data-path={field}]")).to_have_class(
            re.compile(r"\bmark-changed\b")
        )
    expect(salvaged.locator(".side-right")).to_contain_text("Result of tool call call_b2")

    page.locator(".findings").get_by_role("button", name="messages[4]").click()
    expect(salvaged).to_have_class(re.compile(r"\bflash\b"))
    screenshot(page, "record-repaired")

    page.locator(".crumbs a").click()
    expect(rows(page)).to_have_count(50)


def test_rejected_record_shows_what_was_refused(page: Any, viewer: str, seeded: Seeded) -> None:
    open_record(page, viewer, seeded.rejected.id)
    expect(page.locator(".compare .col-head")).to_contain_text("not forwarded")
    expect(page.locator(".mrow .cols.single")).to_have_count(2)
    role = page.locator("#msg-1 [data-path=role]")
    expect(role).to_have_class(re.compile(r"\bpinned\b"))
    expect(role.locator(".pin")).to_have_text("unknown_role")
    expect(page.get_by_role("button", name="Copy forwarded body")).to_be_disabled()


def test_upstream_rejection_shows_the_upstream_error(
    page: Any, viewer: str, seeded: Seeded
) -> None:
    open_record(page, viewer, seeded.upstream_rejected.id)
    error = page.locator(".upstream-error")
    expect(error.locator("h2")).to_have_text("Upstream error (400)")
    expect(error.locator("pre")).to_contain_text('"status": "INVALID_ARGUMENT"')
    expect(page.locator(".meta")).to_contain_text("missing_thought_signature")
    expect(page.locator(".mrow.kind-sent")).to_have_count(3)
    screenshot(page, "record-upstream-rejected")


def test_copy_buttons_give_the_forwarded_body_and_the_command(
    new_page: Any, viewer: str, seeded: Seeded
) -> None:
    page = new_page(permissions=["clipboard-read", "clipboard-write"])
    open_record(page, viewer, seeded.orphan.id)
    page.get_by_role("button", name="Copy forwarded body").click()
    expect(page.get_by_role("button", name="Copied")).to_be_visible()
    assert json.loads(page.evaluate("navigator.clipboard.readText()")) == seeded.orphan.forwarded
    page.get_by_role("button", name="Copy command").click()
    command = "toolcall-guard check history.json --api chat --upstream openai --fix"
    assert page.evaluate("navigator.clipboard.readText()") == command
    expect(page.locator("pre.command")).to_have_text(command)


def test_unknown_record_says_so(page: Any, viewer: str) -> None:
    page.goto(f"{viewer}/ui#/r/01900000-0000-7000-8000-000000000000")
    expect(page.locator(".error-box")).to_contain_text("no record with this id")


# --- untrusted values -------------------------------------------------------------------------


def test_hostile_values_are_shown_as_text_and_never_run(
    new_page: Any, viewer: str, seeded: Seeded
) -> None:
    # Without the CSP's help: escaping alone must hold.
    page = new_page(bypass_csp=True)
    page.goto(f"{viewer}/ui")
    row = page.locator(f'a.row[data-id="{seeded.hostile.id}"]')
    expect(row.locator(".c-model")).to_have_text(XSS)
    row.click()
    expect(page.locator(".upstream-error pre")).to_have_text(XSS)
    expect(page.locator(".mrow").first).to_be_visible()
    for selector in (".meta", ".findings", ".compare"):
        expect(page.locator(selector).first).to_contain_text(XSS)
    page.locator(".compare details summary").first.click()
    assert page.get_by_text(XSS, exact=True).count() >= 8
    assert page.evaluate("window.__xss") is None
    assert page.title() == "Record · toolcall-guard"
    assert page.evaluate("document.querySelectorAll('img').length") == 0
    assert page.evaluate("document.scripts.length") == 1
    screenshot(page, "record-hostile")


# --- the admin token --------------------------------------------------------------------------


def test_token_is_asked_once_and_kept_for_the_tab(new_page: Any, guarded: str) -> None:
    page = new_page()
    sent: list[str | None] = []
    page.on(
        "request",
        lambda r: sent.append(r.headers.get("authorization")) if "/repairs" in r.url else None,
    )
    page.goto(f"{guarded}/ui")
    dialog = page.locator("dialog.token-dialog")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("401")
    expect(page.locator("dialog.token-dialog")).to_have_count(1)  # one dialog for both requests
    dialog.locator("input[name=token]").fill("wrong")
    dialog.get_by_role("button", name="Use token").click()
    expect(dialog.locator("h2")).to_have_text("The admin token was not accepted")
    screenshot(page, "token", full_page=False)
    dialog.locator("input[name=token]").fill(TOKEN)
    dialog.get_by_role("button", name="Use token").click()
    expect(rows(page)).to_have_count(4)
    expect(dialog).to_have_count(0)
    assert page.evaluate("sessionStorage.getItem('toolcall-guard.admin-token')") == TOKEN
    assert f"Bearer {TOKEN}" in sent

    page.reload()  # same tab: no question asked
    expect(rows(page)).to_have_count(4)
    expect(page.locator("dialog.token-dialog")).to_have_count(0)
    rows(page).first.click()
    expect(page.locator(".record-head")).to_be_visible()


def test_cancelling_the_token_prompt_explains(new_page: Any, guarded: str) -> None:
    page = new_page()
    page.goto(f"{guarded}/ui")
    page.get_by_role("button", name="Cancel").click()
    expect(page.locator(".status.error")).to_contain_text("401")
    expect(page.get_by_role("button", name="Retry")).to_be_visible()


def test_no_token_can_open_a_log_closed_to_the_network(new_page: Any, seeded: Seeded) -> None:
    # Beyond loopback with no admin token configured: a 403 no token typed here can change.
    with running(viewer_app(seeded.recent, host="0.0.0.0")) as url:
        page = new_page()
        page.goto(f"{url}/ui")
        dialog = page.locator("dialog.closed-dialog")
        expect(dialog.locator("h2")).to_have_text("The repair log is closed to the network")
        expect(dialog).to_contain_text("no token typed here can open it")
        expect(dialog).to_contain_text("TOOLCALL_GUARD_ADMIN_TOKEN")
        expect(page.locator("input[name=token]")).to_have_count(0)  # nothing to type
        screenshot(page, "closed", full_page=False)
        dialog.get_by_role("button", name="Close").click()
        expect(page.locator("dialog")).to_have_count(0)
        expect(page.locator(".status.error")).to_contain_text("403")


def test_a_single_record_is_counted_in_the_singular(new_page: Any, seeded: Seeded) -> None:
    with running(viewer_app(seeded.recent[:1])) as url:
        page = new_page()
        page.goto(f"{url}/ui")
        expect(rows(page)).to_have_count(1)
        expect(page.locator(".status")).to_have_text("The only record shown.")


# --- layout -----------------------------------------------------------------------------------


@pytest.mark.parametrize("width", [390, 800, 1280], ids=["phone", "small", "laptop"])
def test_readable_without_sideways_scrolling(
    new_page: Any, viewer: str, seeded: Seeded, width: int
) -> None:
    page = new_page(viewport={"width": width, "height": 844})
    page.goto(f"{viewer}/ui")
    expect(rows(page)).to_have_count(50)
    overflow = "document.documentElement.scrollWidth - window.innerWidth"
    assert page.evaluate(overflow) <= 0
    screenshot(page, f"list-{width}", full_page=False)
    open_record(page, viewer, seeded.orphan.id)
    assert page.evaluate(overflow) <= 0
    stacked = page.locator("#msg-2 .cols").evaluate(
        "el => getComputedStyle(el).gridTemplateColumns.split(' ').length"
    )
    assert stacked == (1 if width < 700 else 2)
    screenshot(page, f"record-{width}")


# --- the alignment, at scale ------------------------------------------------------------------


def test_alignment_of_a_long_history_is_fast_and_local(page: Any, viewer: str) -> None:
    page.goto(f"{viewer}/ui")
    result = page.evaluate(
        """async () => {
        const { align } = await import('/ui/align.js');
        const left = [];
        for (let i = 0; i < 20000; i++) {  // repeated texts: few unique anchors
            left.push({ role: i % 2 ? 'assistant' : 'user', content: 'message ' + (i % 50) });
        }
        const right = left.map((m) => ({ ...m }));
        right.splice(10000, 1);
        right[500] = { ...right[500], content: right[500].content + ' (edited)' };
        right.splice(15000, 0, { role: 'tool', tool_call_id: 'x', content: 'new' });
        const t0 = performance.now();
        const ops = align(left, right);
        const ms = performance.now() - t0;
        const odd = ops.filter((o) => o.kind !== 'same').map((o) => [o.kind, o.left, o.right]);
        return { ms, odd, n: ops.length };
    }"""
    )
    assert result["odd"] == [
        ["changed", 500, 500],
        ["removed", 10000, None],
        ["added", None, 15000],
    ]
    assert result["n"] == 20001
    assert result["ms"] < 2_000


def test_a_lost_call_id_aligns_by_what_survived(page: Any, viewer: str, seeded: Seeded) -> None:
    # The hostile record is the classic id mismatch: the call (id remapped) lost its result,
    # which was synthesized, and the result of an unknown id was salvaged as a user message.
    open_record(page, viewer, seeded.hostile.id)
    kinds = page.locator(".compare .mrow").evaluate_all(
        "rs => rs.map(r => [r.className, r.dataset.left, r.dataset.right])"
    )
    assert kinds == [
        ["mrow kind-same", "0", "0"],
        ["mrow kind-changed", "1", "1"],
        ["mrow kind-added", None, "2"],
        ["mrow kind-salvaged", "2", "3"],
    ]


def test_asset_list_is_what_the_page_loads(page: Any, viewer: str) -> None:
    loaded: list[str] = []
    page.on("response", lambda r: loaded.append(urlparse(r.url).path) if r.ok else None)
    page.goto(f"{viewer}/ui")
    expect(rows(page)).to_have_count(50)
    served = {f"/ui/{p.name}" for p in Path(UI_DIR).iterdir() if p.name != "index.html"}
    assert served <= set(loaded)
