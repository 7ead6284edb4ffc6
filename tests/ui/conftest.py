"""Browser tests of the repair-log viewer: Debian's chromium, headless, driven by Playwright.

The viewer runs against a real uvicorn server on loopback serving the real ``/repairs`` API over
a memory repair log seeded with realistic records. Without chromium or the ``playwright``
package the tests are skipped with the reason, unless ``CI=true``: then they fail.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI

from proxy.api import repairs, ui
from proxy.core.policy import build_policy
from proxy.repairlog import open_repair_log
from proxy.repairlog.record import Record
from proxy.settings import load_settings
from tests.factories import sanitize_chat
from tests.servers import running

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).parent.parent / "artifacts"
TOKEN_ENV = "TOOLCALL_GUARD_TEST_UI_TOKEN"
TOKEN = "s3cret-admin-token"
#: A variable nobody sets stands for "no token", whatever the developer's shell exports.
NO_TOKEN_ENV = "TOOLCALL_GUARD_TEST_UI_UNSET"

#: Script and markup that must stay text wherever it appears.
XSS = '<img src=x onerror="window.__xss=1;document.title=`pwned`"><script>window.__xss=1</script>'


def _missing(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (required when CI=true)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    """One headless chromium for the viewer's tests. Package-scoped: sync Playwright keeps an
    event loop running on the main thread while it is open, and ``asyncio.run`` in any test
    collected after these would fail."""
    if not Path(CHROMIUM).exists() and shutil.which("chromium") is None:
        _missing(f"chromium is not installed ({CHROMIUM}); apt-get install chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("the playwright package is not installed (pip install -e '.[dev]')")
    executable = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


class PageProblems:
    """Uncaught errors and CSP violations a page reported; a test ends with none."""

    INIT = (
        "window.__csp = [];"
        "document.addEventListener('securitypolicyviolation',"
        " (e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));"
    )

    def __init__(self, page: Any) -> None:
        self.page = page
        self.errors: list[str] = []
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        page.add_init_script(self.INIT)

    def check(self) -> None:
        violations = [] if self.page.is_closed() else self.page.evaluate("window.__csp || []")
        assert self.errors == [], self.errors
        assert violations == [], violations


@pytest.fixture
def new_page(browser: Any) -> Iterator[Any]:
    """``new_page(**context_options)`` -> a page in a fresh context (its own sessionStorage)."""
    contexts: list[tuple[Any, PageProblems]] = []

    def make(**options: Any) -> Any:
        options.setdefault("viewport", {"width": 1280, "height": 900})
        context = browser.new_context(**options)
        context.set_default_timeout(5_000)
        page = context.new_page()
        contexts.append((context, PageProblems(page)))
        return page

    yield make
    for context, problems in contexts:
        problems.check()
        context.close()


@pytest.fixture
def page(new_page: Any) -> Any:
    return new_page()


def screenshot(page: Any, name: str, *, full_page: bool = True) -> Path:
    """Save a screenshot under tests/artifacts/ (gitignored) for a human to look at."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"ui-{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path


def viewer_app(
    records: list[Record], *, admin_token_env: str | None = None, host: str = "127.0.0.1"
) -> FastAPI:
    """The repairs API and the viewer over a memory log holding ``records`` (``host``: the
    bind the settings say, for the admin rule; the test server itself is on loopback).

    ``POST /test/records`` (this test app only) appends one more record, for live refresh.
    """
    server = {"admin_token_env": admin_token_env or NO_TOKEN_ENV, "host": host}
    settings = load_settings(server=server, repair_log={"url": "memory://"})

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        log = open_repair_log("memory://")
        await log.open()
        await log.write(records)
        app.state.repair_log = log
        yield
        await log.close()

    app = FastAPI(lifespan=lifespan)
    app.state.settings = settings
    app.include_router(repairs.router)
    app.include_router(ui.router)

    @app.post("/test/records")
    async def add_record() -> dict[str, str]:
        record = orphan_record(created_at=datetime.now(UTC))
        await app.state.repair_log.write([record])
        return {"id": record.id}

    return app


def sanitized(policy: str, messages: list[dict[str, Any]], **fields: Any) -> Record:
    """A record as the proxy writes it: the history run through the real policy."""
    model = fields.pop("model", "gpt-4o")
    outcome = sanitize_chat(messages, build_policy(policy))
    received = {"model": model, "messages": messages}
    forwarded = None if outcome.rejected else {"model": model, "messages": list(outcome.messages)}
    defaults: dict[str, Any] = {
        "upstream": policy,
        "path": "/v1/chat/completions",
        "stream": False,
        "outcome": outcome.status,
        "findings": [f.as_dict() for f in outcome.findings],
        "received": received,
        "forwarded": forwarded,
        "upstream_status": None if outcome.rejected else 200,
        "duration_ms": 0.6 if outcome.rejected else 812.5,
    }
    return Record(model=model, **(defaults | fields))


def call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def orphan_record(created_at: datetime) -> Record:
    """Repaired: dict arguments, and a tool result whose call was lost (salvaged)."""
    messages = [
        {"role": "system", "content": "You are a weather agent."},
        {"role": "user", "content": "Weather in Paris and Berlin?"},
        {"role": "assistant", "content": None, "tool_calls": [call("call_a1", "get_weather", {})]},
        {"role": "tool", "tool_call_id": "call_a1", "content": "18°C, cloudy"},
        {"role": "tool", "tool_call_id": "call_b2", "content": "21°C, sunny"},
        {"role": "user", "content": "And tomorrow?"},
    ]
    messages[2]["tool_calls"][0]["function"]["arguments"] = {"city": "Paris"}
    return sanitized(
        "openai", messages, stream=True, request_id="req_orphan", created_at=created_at
    )


def rejected_record(created_at: datetime) -> Record:
    """Rejected: a role no provider knows."""
    messages = [{"role": "user", "content": "hi"}, {"role": "critic", "content": "meh"}]
    return sanitized("deepseek", messages, model="deepseek-chat", created_at=created_at)


def upstream_rejected_record(created_at: datetime) -> Record:
    """Clean for the policy, refused by the upstream anyway (a Gemini thought signature)."""
    messages = [
        {"role": "user", "content": "Search the docs"},
        {"role": "assistant", "content": "", "tool_calls": [call("c1", "search", "{}")]},
        {"role": "tool", "tool_call_id": "c1", "content": "3 hits"},
    ]
    error = (
        '[{"error": {"code": 400, "message": "Function call is missing a thought_signature in '
        'functionCall parts.", "status": "INVALID_ARGUMENT"}}]'
    )
    body = {"model": "gemini-3-pro-preview", "messages": messages}
    return sanitized(
        "passthrough",
        messages,
        upstream="gemini",
        model=body["model"],
        outcome="upstream_rejected",
        forwarded=body,
        upstream_status=400,
        upstream_error=error,
        upstream_error_kind="missing_thought_signature",
        created_at=created_at,
    )


def hostile_record(created_at: datetime) -> Record:
    """Markup and script in every value a client controls, findings' details included."""
    messages = [
        {"role": "user", "content": XSS},
        {"role": "assistant", "content": XSS, "tool_calls": [call(XSS, XSS, XSS)]},
        {"role": "tool", "tool_call_id": "x" + XSS, "content": XSS},
    ]
    return sanitized(
        "openai", messages, model=XSS, upstream_error=XSS, request_id=XSS, created_at=created_at
    )


def filler_records(count: int, newest: datetime) -> list[Record]:
    """Older warned records (two user messages in a row), a minute apart, to page through."""
    messages = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
    return [
        sanitized("observe", messages, upstream="openai", model="gpt-4o-mini", created_at=moment)
        for moment in (newest - timedelta(minutes=i) for i in range(count))
    ]


class Seeded:
    """The records of the shared server, by role."""

    def __init__(self) -> None:
        now = datetime.now(UTC)
        self.orphan = orphan_record(now - timedelta(minutes=4))
        self.rejected = rejected_record(now - timedelta(minutes=3))
        self.upstream_rejected = upstream_rejected_record(now - timedelta(minutes=2))
        self.hostile = hostile_record(now - timedelta(minutes=1))
        self.recent = [self.hostile, self.upstream_rejected, self.rejected, self.orphan]
        self.old = filler_records(110, now - timedelta(days=2))
        self.all = self.recent + self.old


@pytest.fixture(scope="session")
def seeded() -> Seeded:
    return Seeded()


@pytest.fixture(scope="module")
def viewer(seeded: Seeded) -> Iterator[str]:
    """Base URL of a server with the seeded log and no admin token."""
    with running(viewer_app(seeded.all)) as url:
        yield url


@pytest.fixture
def writable(seeded: Seeded) -> Iterator[str]:
    """Base URL of a server of its own, for a test that adds records."""
    with running(viewer_app(seeded.recent)) as url:
        yield url


@pytest.fixture
def guarded(monkeypatch: pytest.MonkeyPatch, seeded: Seeded) -> Iterator[str]:
    """Base URL of a server whose admin API needs ``TOKEN``."""
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    with running(viewer_app(seeded.recent, admin_token_env=TOKEN_ENV)) as url:
        yield url
