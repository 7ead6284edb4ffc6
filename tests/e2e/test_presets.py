"""Each second-tier preset through the real proxy, in front of its own provider's emulator.

The histories are the preset golden cases (``tests/cases/presets.json``, built from the payloads
of the cited reports): a valid one is forwarded as the very bytes sent; a broken one is repaired
up front (one request upstream, no retry) into what the golden case says, the emulator answers
200, and no user text or tool result is lost. Issue 14, "Done when".
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from proxy.emulator import validate
from tests.e2e.conftest import Proxy, Upstream
from tests.e2e.test_retry_helpers import posts

pytest_plugins = ["tests.e2e.test_retry_helpers"]

CASES = json.loads((Path(__file__).parents[1] / "cases" / "presets.json").read_text())


def _texts(messages: list[dict[str, Any]]) -> list[str]:
    """The user texts and tool results of a history."""
    return [
        m["content"]
        for m in messages
        if m.get("role") in ("user", "tool") and isinstance(m.get("content"), str)
    ]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_a_preset_in_front_of_its_provider(
    case: dict[str, Any],
    start_proxy: Callable[..., Proxy],
    emulated: dict[str, Upstream],
) -> None:
    provider = case["policy"]
    upstream = emulated[provider]
    proxy = start_proxy(
        {provider: upstream.url},
        routing={"default": provider},
        upstream_overrides={"policy": provider, "retry_on_reject": False},
    )
    body = {**case["request"], "messages": case["input"]}
    sent = orjson.dumps(body, option=orjson.OPT_INDENT_2)  # any re-encoding would show
    response = proxy.http.post(
        proxy.v1 + "/chat/completions", content=sent, headers={"content-type": "application/json"}
    )

    assert response.status_code == 200, response.text
    [received] = [r for r in upstream.received if r.method == "POST"]
    if not case["findings"]:
        assert response.headers["x-toolcall-guard-outcome"] == "clean"
        assert received.body == sent
        return
    assert validate(provider, body) is not None, "the broken case must be refused as sent"
    assert response.headers["x-toolcall-guard-outcome"] == "repaired"
    [forwarded] = posts(upstream)
    assert forwarded["messages"] == case["output"]
    rest = {k: v for k, v in forwarded.items() if k != "messages"}
    assert rest == case.get("request_output", case["request"])
    kept = _texts(forwarded["messages"]) + [
        m.get("content") for m in forwarded["messages"] if m.get("role") == "user"
    ]
    for text in _texts(case["input"]):
        assert any(text in str(k) for k in kept), f"lost: {text!r}"
