"""Every kind of record reads right in a real browser (issue 37 item 1): one record of each
outcome, each ending, each wire API (chat, Responses, Messages), a retried one, a proxy 502,
the redacted and structure-only captures and a conversation with repeats, on the list and on
its own page. No visible text (nor a tooltip) may show a value the viewer failed to render:
``[object …]``, ``undefined``, ``NaN`` or ``null`` (a JSON ``null`` in a body is data, drawn
as such)."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from proxy.repairlog.capture import Digests, apply_capture
from proxy.repairlog.record import Record, new_record_id
from tests.servers import running
from tests.ui.conftest import orphan_record, screenshot, viewer_app
from tests.ui.records import Second
from tests.ui.test_viewer import expect, open_record, rows
from tests.ui.test_viewer_messages import messages_record

#: What a value the viewer failed to render looks like on the page.
JUNK = re.compile(r"\[object|\bundefined\b|\bNaN\b|\bnull\b")
TURNS = 3

#: The visible text of the page's view, node by node (``[text, in a <pre>]``), and its
#: tooltips; a JSON ``null`` in a body (``.scalar.null``) is left out: it is the data.
VISIBLE_TEXT = """
(root) => {
  const texts = [];
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const el = node.parentElement;
    if (!el || !el.checkVisibility() || el.closest('.scalar.null')) continue;
    if (node.textContent.trim()) texts.push([node.textContent, !!el.closest('pre')]);
  }
  for (const el of root.querySelectorAll('[title]')) texts.push([el.title, false]);
  return texts;
}
"""

#: The log's key the writer would read from it (issue 35: redacted digests are keyed).
KEYED = Digests(b"k" * 32)


def _json_nulls_dropped(text: str) -> str:
    """A pretty-printed JSON body (an upstream error) without its ``null`` values: those are
    the upstream's."""
    try:
        json.loads(text)
    except ValueError:
        return text
    return re.sub(r"(:\s*|\[\s*|,\s*)null\b", r"\1", text)


def junk_on(page: Any) -> list[str]:
    texts: list[list[Any]] = page.locator("main").evaluate(VISIBLE_TEXT)
    shown = [_json_nulls_dropped(text) if in_pre else text for text, in_pre in texts]
    return [text for text in shown if JUNK.search(text)]


def _ended(record: Record, ending: str | None, minutes: int) -> Record:
    return dataclasses.replace(
        record,
        id=new_record_id(),
        ending=ending,
        created_at=record.created_at - timedelta(seconds=minutes),
    )


class EveryKind:
    """The records, by kind (a name for the test ids and the screenshots)."""

    def __init__(self) -> None:
        second = Second()
        now = datetime.now(UTC)
        start = now - timedelta(hours=1)
        self.turns = [
            dataclasses.replace(
                orphan_record(start),
                id=f"01a20000-0000-7000-8000-00000000001{n}",
                created_at=start + timedelta(minutes=n),
                conversation="conv-every-kind",
                client="Anthropic/Python 0.70.0",
            )
            for n in range(TURNS)
        ]
        messages = messages_record()
        self.kinds: dict[str, Record] = {
            "repaired-chat": second.salvage,
            "synthesized": second.synthesized,
            "warned": second.warned,
            "rejected": second.rejected,
            "upstream-rejected": second.upstream_rejected,
            "responses": second.responses,
            "messages": messages,
            "retried-cut": second.retried,
            "proxy-502": second.unreachable,
            "ending-complete": _ended(second.synthesized, "complete", 1),
            "ending-timeout": _ended(messages, "upstream_timeout", 2),
            "ending-client-gone": _ended(second.responses, "client_gone", 3),
            "redacted": apply_capture(_ended(messages, None, 4), "redacted", 4096, KEYED),
            "structure-only": apply_capture(
                _ended(second.upstream_rejected, None, 5), "none", 0, KEYED
            ),
            "conversation": self.turns[0],
            "repeat": self.turns[-1],
        }
        unique = {id(r): r for r in [*self.kinds.values(), *self.turns]}
        self.all = list(unique.values())


@pytest.fixture(scope="module")
def every() -> EveryKind:
    return EveryKind()


@pytest.fixture(scope="module")
def viewer_all(every: EveryKind) -> Iterator[str]:
    with running(viewer_app(every.all)) as url:
        yield url


def test_the_list_shows_every_kind_without_junk(
    page: Any, viewer_all: str, every: EveryKind
) -> None:
    page.goto(f"{viewer_all}/ui#/")
    listed = len(every.all) - (TURNS - 1)  # the repeats count on their conversation's row
    expect(rows(page)).to_have_count(listed)
    conversation = page.locator(f'a.row[data-id="{every.turns[0].id}"] .turns')
    expect(conversation).to_contain_text(f"{TURNS} turns · since ")
    expect(conversation.locator("time")).to_have_count(2)  # since, last: times, not "[object"
    expect(conversation).to_contain_text("· Anthropic/Python 0.70.0")
    screenshot(page, "every-kind-list")
    assert junk_on(page) == []


@pytest.mark.parametrize(
    "kind",
    [
        "repaired-chat",
        "synthesized",
        "warned",
        "rejected",
        "upstream-rejected",
        "responses",
        "messages",
        "retried-cut",
        "proxy-502",
        "ending-complete",
        "ending-timeout",
        "ending-client-gone",
        "redacted",
        "structure-only",
        "conversation",
        "repeat",
    ],
)
def test_each_record_page_reads_without_junk(
    page: Any, viewer_all: str, every: EveryKind, kind: str
) -> None:
    record = every.kinds[kind]
    open_record(page, viewer_all, record.id)
    expect(page.locator(".record-head .id")).to_have_text(record.id)
    if record.findings:
        expect(page.locator(".findings li")).to_have_count(len(record.findings))
    screenshot(page, f"every-kind-{kind}")
    assert junk_on(page) == []


def test_each_finding_shows_its_fix_in_the_client(
    page: Any, viewer_all: str, every: EveryKind
) -> None:
    record = every.kinds["repaired-chat"]
    hints = [f["hint"] for f in record.findings]
    assert hints
    assert all(hints)
    open_record(page, viewer_all, record.id)
    shown = page.locator(".findings li .hint")
    expect(shown).to_have_count(len(hints))
    expect(shown).to_have_text([f"Fix in the client: {hint}" for hint in hints])
