"""``toolcall-guard check --fix`` prints the body the proxy forwards (issue 32, deliverable 1).

Every golden case of every API (``tests/cases/*.json`` for chat, ``messages/``, ``responses/``
and ``responses_external/``) goes through a real proxy, in front of an upstream that accepts
everything and keeps the body it received, and through ``check --fix`` (in process, the
command's own function) with the same configuration, parsed once for both: one upstream per
policy the cases name, its rule overrides in a ``[policies.X]`` table. The two must be the same
JSON; a case the proxy refuses (400) must be one ``check`` reports rejected (or cannot read: a
malformed history).
"""

from __future__ import annotations

import argparse
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from proxy import check as proxy_check
from proxy.app import create_app
from proxy.check import Unreadable, check
from proxy.core.wire import WIRES
from proxy.settings import Settings, load_settings
from tests.e2e.conftest import PacedEvents
from tests.servers import running

CASES = Path(__file__).parents[1] / "cases"
#: The cases where check and the proxy parted before (issue 32): a request-level field moved
#: (DeepSeek's Messages system message to the top-level ``system``) and one removed (xAI's
#: ``tool_choice`` without ``tools``).
KNOWN = {
    "system_message_first_moved_to_system_deepseek": ("system", True),
    "xai_tool_choice_without_tools_dropped": ("tool_choice", False),
}


@dataclass(frozen=True)
class Case:
    id: str
    api: str
    policy: str
    overrides: dict[str, Any] | None
    body: dict[str, Any]
    model: str | None = None  # the model a Gemini-native path names

    @property
    def config_key(self) -> str:
        return json.dumps([self.policy, self.overrides], sort_keys=True)


def _listed(pattern: str) -> Iterator[tuple[str, dict[str, Any]]]:
    for file in sorted(CASES.glob(pattern)):
        for case in json.loads(file.read_text()):
            yield f"{file.parent.name}/{file.stem}:{case['id']}", case


#: Each API's golden cases: the files, the body's history key and the case's key holding it.
SOURCES = (
    ("*.json", "chat", "messages", "input"),
    ("messages/*.json", "messages", "messages", "messages"),
    ("responses/*.json", "responses", "input", "input"),
    ("gemini/*.json", "gemini", "", "body"),  # the case holds the whole body
)


def _body(case: dict[str, Any], key: str, field: str) -> dict[str, Any]:
    return case[field] if not key else {**case.get("request", {}), key: case[field]}


def _cases() -> list[Case]:
    cases = [
        Case(i, api, c["policy"], c.get("overrides"), _body(c, key, field), c.get("model"))
        for pattern, api, key, field in SOURCES
        for i, c in _listed(pattern)
        if type(_body(c, key, field)) is dict
    ]
    for file in sorted((CASES / "responses_external").glob("*.json")):
        body = json.loads(file.read_text())["body"]
        cases.append(Case(f"responses_external:{file.stem}", "responses", "openai", None, body))
    return cases


ALL = _cases()
#: Each (policy, overrides) pair the cases name gets its upstream: ``u0``, ``u1``…
UPSTREAMS = {key: f"u{n}" for n, key in enumerate(dict.fromkeys(c.config_key for c in ALL))}


def _toml(value: Any) -> str:
    """A TOML value (strings as JSON strings, which TOML reads the same)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    assert isinstance(value, dict), value
    return "{" + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + "}"


def _config(base_url: str) -> str:
    lines = ['[repair_log]\nurl = "memory://"\nflush_interval = 0.05\n']
    for key, name in UPSTREAMS.items():
        preset, overrides = json.loads(key)
        policy = preset
        if overrides:
            policy = f"p_{name}"
            lines.append(f'[policies.{policy}]\nbase = "{preset}"\nrules = {_toml(overrides)}\n')
        lines.append(
            f'[upstreams.{name}]\nbase_url = "{base_url}/v1"\n'
            f'anthropic_base_url = "{base_url}/v1"\ngemini_base_url = "{base_url}"\n'
            f'policy = "{policy}"\n'
            "retry_on_reject = false\n"
        )
    return "\n".join(lines)


@dataclass
class Served:
    proxy: str
    config: Path
    upstream: PacedEvents  # answers 200 to anything (no event) and keeps what it received
    http: httpx.Client


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    upstream = PacedEvents(count=0, pace=0)
    with running(upstream, lifespan="off") as url, httpx.Client(timeout=10.0) as http:
        config = tmp_path_factory.mktemp("parity") / "toolcall-guard.toml"
        config.write_text(_config(url))
        settings = load_settings(config)
        with running(create_app(settings)) as proxy, pytest.MonkeyPatch.context() as patch:
            # ``check`` reads the same file for every case: parsed once (0.2 s a time).
            patch.setattr(proxy_check, "load_settings", lambda path: _same(path, config, settings))
            yield Served(proxy, config, upstream, http)


def _same(path: Any, config: Path, settings: Settings) -> Settings:
    assert Path(path) == config
    return settings


def _through_proxy(served: Served, case: Case, upstream: str) -> tuple[int, Any]:
    """The proxy's status, and the body the upstream received (None when none arrived)."""
    before = len(served.upstream.requests)
    response = served.http.post(
        f"{served.proxy}/{upstream}{_path(case)}",
        content=orjson.dumps(case.body),
        headers={
            "content-type": "application/json",
            "authorization": "Bearer sk-parity",
            "x-api-key": "sk-parity",
            "anthropic-version": "2023-06-01",
        },
    )
    arrived = [body for _, _, body in served.upstream.requests[before:]]
    assert len(arrived) <= 1, "one request, one forwarded body (no retry here)"
    return response.status_code, orjson.loads(arrived[0]) if arrived else None


def _path(case: Case) -> str:
    """Where a client sends the case: the API's path, or Gemini's native one."""
    if case.api != "gemini":
        return f"/v1{WIRES[case.api].path}"
    if case.model is None:  # Code Assist: the model is in the body
        return "/v1internal:generateContent"
    return f"/v1beta/models/{case.model}:generateContent"


def _through_check(served: Served, case: Case, upstream: str, tmp: Path) -> dict[str, Any] | None:
    """``check --fix --format json``'s report on the case's body, or None when it cannot
    read the body (a malformed history: exit status 3)."""
    source = tmp / "body.json"
    source.write_bytes(orjson.dumps(case.body))
    args = argparse.Namespace(
        file=str(source),
        config=str(served.config),
        upstream=upstream,
        api=case.api,
        model=case.model,
        format="json",
        fix=True,
    )
    out = io.StringIO()
    try:
        check(args, out)
    except Unreadable:
        return None
    report: dict[str, Any] = orjson.loads(out.getvalue())
    return report


@pytest.mark.parametrize("case", ALL, ids=lambda c: c.id)
def test_check_fix_prints_what_the_proxy_forwards(
    served: Served, case: Case, tmp_path: Path
) -> None:
    upstream = UPSTREAMS[case.config_key]
    status, forwarded = _through_proxy(served, case, upstream)
    report = _through_check(served, case, upstream, tmp_path)
    if status == 400:
        assert forwarded is None
        assert report is None or report["status"] == "rejected", report
        assert report is None or report["fixed"] is None
        return
    assert status == 200, status
    assert report is not None
    assert report["status"] != "rejected", report
    assert forwarded == report["fixed"]


@pytest.mark.parametrize("name", list(KNOWN))
def test_the_request_level_differences_are_covered(
    served: Served, name: str, tmp_path: Path
) -> None:
    """The two cases that parted: the field the repair replaces (or drops) is in the body both
    give (or in neither), changed from what the client sent."""
    case = next(c for c in ALL if c.id.endswith(":" + name))
    field, present = KNOWN[name]
    upstream = UPSTREAMS[case.config_key]
    _, forwarded = _through_proxy(served, case, upstream)
    report = _through_check(served, case, upstream, tmp_path)
    assert report is not None
    assert (field in forwarded) is present
    assert (field in report["fixed"]) is present
    assert forwarded.get(field) != case.body.get(field), "the repair changed the field"
    assert forwarded == report["fixed"]


def test_every_api_is_covered() -> None:
    """Every folder of golden cases is read here (a new API's too: add it to SOURCES)."""
    read = {pattern.split("/")[0] for pattern, *_ in SOURCES} | {"responses_external"}
    assert {folder.name for folder in CASES.iterdir() if folder.is_dir()} <= read
    assert {"chat", "messages", "responses", "gemini"} <= {case.api for case in ALL}
    assert len(ALL) > 300
