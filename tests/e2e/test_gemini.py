"""Gemini's native API over real sockets (issue 33): AI Studio, Vertex and Code Assist paths
routed to each upstream's ``gemini_base_url`` with their version, valid histories byte for byte,
broken ones repaired so that the strict emulators answer 200, refusals in Google's shape, both
stream formats relayed unchanged, an error event after the first chunk recorded, N8's foreign
signatures repaired on reject, and a ``key`` query parameter never logged or recorded.

Upstreams: the strict native emulators (proxy/emulator/gemini_native*.py), one per endpoint.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import orjson
import pytest

from proxy.app import create_app
from proxy.emulator import ReceivedRequest, create_gemini_native_app
from proxy.settings import load_settings
from tests.servers import running

AS = "/v1beta/models/{model}:{method}"
VX = "/v1beta1/projects/p1/locations/us-central1/publishers/google/models/{model}:{method}"
CA = "/v1internal:{method}"
TOOLS = [{"functionDeclarations": [{"name": "read", "parameters": {"type": "object"}}]}]


def call(name: str = "read", cid: str | None = None, **extra: Any) -> dict[str, Any]:
    inner = {"name": name, "args": {"path": "a.txt"}} | ({"id": cid} if cid else {})
    return {"functionCall": inner, **extra}


def answer(name: str = "read", cid: str | None = None, output: Any = "A") -> dict[str, Any]:
    inner = {"name": name, "response": {"output": output}} | ({"id": cid} if cid else {})
    return {"functionResponse": inner}


def user(*parts: Any) -> dict[str, Any]:
    return {"role": "user", "parts": list(parts) or [{"text": "Read a.txt"}]}


def model(*parts: Any) -> dict[str, Any]:
    return {"role": "model", "parts": list(parts)}


def body(*contents: dict[str, Any]) -> dict[str, Any]:
    return {"contents": list(contents), "tools": TOOLS}


class Google:
    """The proxy in front of one strict emulator per endpoint, and what each received."""

    def __init__(
        self, url: str, roots: dict[str, str], received: dict[str, list[ReceivedRequest]]
    ) -> None:
        self.url = url
        self.roots = roots  # each emulator's own root, to send it a body directly
        self.received = received

    def post(self, path: str, payload: Any, **kwargs: Any) -> httpx.Response:
        data = payload if isinstance(payload, bytes) else orjson.dumps(payload)
        headers = {"content-type": "application/json", **kwargs.pop("headers", {})}
        return httpx.post(self.url + path, content=data, headers=headers, timeout=10, **kwargs)

    def record(self, answer: httpx.Response) -> dict[str, Any]:
        found = httpx.get(f"{self.url}/repairs/{answer.headers['x-toolcall-guard-record']}")
        assert found.status_code == 200, found.text
        return found.json()  # type: ignore[no-any-return]

    def clear(self) -> None:
        for received in self.received.values():
            received.clear()


@pytest.fixture(scope="module")
def google() -> Iterator[Google]:
    with ExitStack() as stack:
        received: dict[str, list[ReceivedRequest]] = {}
        roots = {}
        for endpoint in ("aistudio", "vertex", "code-assist"):
            received[endpoint] = []
            app = create_gemini_native_app(endpoint, received=received[endpoint])
            roots[endpoint] = stack.enter_context(running(app))
        settings = load_settings(
            upstreams={
                "gemini": {"gemini_base_url": roots["aistudio"], "models": ["gemini-*"]},
                "vertex": {"gemini_base_url": roots["vertex"], "policy": "vertex"},
                "code-assist": {"gemini_base_url": roots["code-assist"], "policy": "code-assist"},
            },
            routing={"default": "gemini"},
            repair_log={"url": "memory://", "flush_interval": 0.05},
        )
        url = stack.enter_context(running(create_app(settings)))
        yield Google(url, roots, received)


@pytest.fixture
def g(google: Google) -> Google:
    google.clear()
    return google


#: Valid histories as the clients send them (gemini-native.md §4): each leaves byte for byte.
VALID = {
    # gemini-cli on Gemini 2.5: ids everywhere, the documented dummy on the first call.
    "gemini-cli 2.5": (
        AS.format(model="gemini-2.5-flash", method="generateContent"),
        body(
            user(),
            model(
                call(cid="c1", thoughtSignature="skip_thought_signature_validator"), call(cid="c2")
            ),
            user(answer(cid="c1"), answer(cid="c2", output="B")),
        ),
    ),
    # the GenAI SDK: no ids; a cancelled call answered with an error.
    "genai sdk": (
        AS.format(model="gemini-2.5-pro", method="generateContent"),
        body(user(), model(call()), user(answer(output=None) | {}), user({"text": "And now?"})),
    ),
    "vertex express": (
        "/v1/publishers/google/models/gemini-2.5-flash:generateContent",
        body(user(), model({"text": "Reading."}, call()), user(answer())),
    ),
}


@pytest.mark.parametrize("case", sorted(VALID))
def test_a_valid_history_leaves_byte_for_byte(g: Google, case: str) -> None:
    path, payload = VALID[case]
    sent = orjson.dumps(payload)
    answered = g.post(path, sent)
    assert answered.status_code == 200, answered.text
    assert answered.headers["x-toolcall-guard-outcome"] == "clean"
    assert answered.headers["x-emulator-body-sha256"] == hashlib.sha256(sent).hexdigest()
    endpoint = "vertex" if "publishers" in path else "aistudio"
    (seen,) = g.received[endpoint]
    assert seen.path == path  # the version kept, appended to the root


#: Broken histories the strict emulators refuse, each with the rule that repairs it.
BROKEN = {
    "interrupted call (N1)": (
        "gemini-2.5-flash",
        body(user(), model(call(cid="c1"), call(cid="c2")), user(answer(cid="c1"))),
        "gemini_missing_response",
    ),
    "orphan response after compression (N3)": (
        "gemini-2.5-flash",
        body(user(), user(answer(cid="c9")), user({"text": "Go on"})),
        "gemini_orphan_response",
    ),
    "history starting with a call (N2)": (
        "gemini-2.5-flash",
        body(model(call()), user(answer()), user({"text": "Go on"})),
        "gemini_call_turn_order",
    ),
    "responses split over two turns (N15)": (
        "gemini-2.5-flash",
        body(user(), model(call(), call()), user(answer()), user(answer(output="B"))),
        "gemini_split_responses",
    ),
    "model switch lost the signature (N5)": (
        "gemini-3-pro-preview",
        body(user(), model(call(cid="c1")), user(answer(cid="c1"))),
        "gemini_missing_signature",
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_history_is_repaired_and_answered(g: Google, case: str) -> None:
    name, payload, rule = BROKEN[case]
    path = AS.format(model=name, method="generateContent")
    refused = httpx.post(g.roots["aistudio"] + path, json=payload, timeout=10)
    assert refused.status_code == 400, refused.text  # else repairing it proves nothing
    g.clear()
    answered = g.post(path, payload)
    assert answered.status_code == 200, answered.text
    assert answered.headers["x-toolcall-guard-outcome"] == "repaired"
    assert rule in answered.headers["x-toolcall-guard-rules"]
    record = g.record(answered)
    assert record["api"] == "gemini"
    assert record["noun"] == "contents"
    assert record["views"]["forwarded"][0]["kind"] == "user"
    assert any(rule in f["rule"] for f in record["findings"])


def test_a_refused_body_gets_googles_shape_naming_the_part(g: Google) -> None:
    payload = body(
        user(), {"role": "model", "parts": [{"functionCall": {"name": "f", "args": [1]}}]}
    )
    answered = g.post(AS.format(model="gemini-2.5-flash", method="generateContent"), payload)
    assert answered.status_code == 400
    error = answered.json()["error"]
    assert error["code"] == 400
    assert error["status"] == "INVALID_ARGUMENT"
    assert error["message"].startswith("contents[1].parts[0].functionCall.args")
    assert "gemini_struct_value" in error["message"]
    (violation,) = error["details"][0]["fieldViolations"]
    assert violation["field"] == "contents[1].parts[0].functionCall.args"
    assert not g.received["aistudio"]  # nothing was sent


def test_code_assist_repairs_request_contents_and_keeps_the_wrapper(g: Google) -> None:
    inner = body(user(), model(call(cid="c1"), call(cid="c2")), user(answer(cid="c1")))
    wrapped = {"model": "gemini-2.5-pro", "project": "p1", "user_prompt_id": "u1", "request": inner}
    answered = g.post(CA.format(method="generateContent"), wrapped)
    assert answered.status_code == 200, answered.text
    assert answered.headers["x-toolcall-guard-outcome"] == "repaired"
    assert "response" in answered.json()
    (seen,) = g.received["code-assist"]
    sent = orjson.loads(seen.body)
    assert {k: v for k, v in sent.items() if k != "request"} == {
        k: v for k, v in wrapped.items() if k != "request"
    }
    assert len(sent["request"]["contents"][2]["parts"]) == 2
    assert g.record(answered)["history_key"] == "request.contents"


def test_a_vertex_path_goes_to_the_vertex_upstream_unprefixed(g: Google) -> None:
    payload = body(user(), model(call()), user(answer()))
    answered = g.post(VX.format(model="gemini-2.5-pro", method="generateContent"), payload)
    assert answered.status_code == 200, answered.text
    assert len(g.received["vertex"]) == 1
    assert not g.received["aistudio"]


def test_an_sse_stream_is_relayed_unchanged(g: Google) -> None:
    payload = orjson.dumps(body(user(), model(call()), user(answer())))
    path = AS.format(model="gemini-2.5-flash", method="streamGenerateContent") + "?alt=sse"
    with httpx.stream(
        "POST",
        g.url + path,
        content=payload,
        timeout=10,
        headers={"content-type": "application/json"},
    ) as streamed:
        assert streamed.headers["content-type"].startswith("text/event-stream")
        relayed = b"".join(streamed.iter_raw())
    direct = httpx.post(g.roots["aistudio"] + path, content=payload, timeout=10)
    assert relayed == direct.content
    assert relayed.startswith(b"data: {")
    assert b"[DONE]" not in relayed


def test_an_error_event_after_the_first_chunk_is_recorded(g: Google) -> None:
    payload = body(user(), model(call()), user(answer()))
    path = AS.format(model="gemini-2.5-flash", method="streamGenerateContent") + "?alt=sse"
    answered = g.post(path, payload, headers={"x-emulator-stream-error": "503"})
    assert answered.status_code == 200
    assert b'data: {"error"' in answered.content
    # Its headers went out before the error: the record is found in the log, not named there.
    record = _newest(g, path.split("?")[0])
    assert record["outcome"] == "upstream_rejected"
    assert record["upstream_error_kind"] == "UNAVAILABLE"
    assert record["ending"] == "complete"


def _newest(g: Google, path: str, within: float = 5.0) -> dict[str, Any]:
    """The newest record of ``path``, once the writer has it (bounded wait)."""
    deadline = time.monotonic() + within
    while True:
        listed = httpx.get(f"{g.url}/repairs", params={"limit": 5}, timeout=10).json()["data"]
        found = [r for r in listed if r["path"] == path]
        if found:
            return httpx.get(f"{g.url}/repairs/{found[0]['id']}", timeout=10).json()  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, f"no record of {path} within {within} s"
        time.sleep(0.05)


def test_foreign_signatures_are_replaced_once_the_upstream_says_so(g: Google) -> None:
    foreign = "Zm9yZWlnbi1zaWduYXR1cmU="
    payload = body(user(), model(call(cid="c1", thoughtSignature=foreign)), user(answer(cid="c1")))
    answered = g.post(AS.format(model="gemini-3-pro-preview", method="generateContent"), payload)
    assert answered.status_code == 200, answered.text
    assert answered.headers["x-toolcall-guard-retried"] == "gemini_foreign_signature"
    first, second = g.received["aistudio"]
    assert foreign.encode() in first.body
    assert foreign.encode() not in second.body
    assert b"skip_thought_signature_validator" in second.body


def test_a_key_query_parameter_passes_through_and_is_never_kept(
    g: Google, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="toolcall_guard")
    payload = body(user(), model(call(cid="c1"), call(cid="c2")), user(answer(cid="c1")))
    path = AS.format(model="gemini-2.5-flash", method="generateContent") + "?key=AIzaSecret42"
    answered = g.post(path, payload)
    assert answered.status_code == 200, answered.text
    (seen,) = g.received["aistudio"]
    assert seen.path.endswith(":generateContent")  # the emulator saw the key in the query
    record = httpx.get(f"{g.url}/repairs/{answered.headers['x-toolcall-guard-record']}").text
    assert "AIzaSecret42" not in record
    assert "AIzaSecret42" not in caplog.text


def test_count_tokens_and_model_listing_are_relayed_unchecked(g: Google) -> None:
    counted = g.post(
        AS.format(model="gemini-2.5-flash", method="countTokens"), {"contents": [user(answer())]}
    )
    assert counted.status_code == 200
    assert "totalTokens" in counted.json()
    assert "x-toolcall-guard-outcome" not in counted.headers
    listed = httpx.get(g.url + "/v1beta/models", timeout=10)
    assert listed.status_code == 200
    assert "models" in listed.json()
