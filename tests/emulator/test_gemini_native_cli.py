"""The native Gemini emulators in ``toolcall-guard emulate`` and ``serve --emulate``."""

from __future__ import annotations

import io
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from proxy.__main__ import _parser
from proxy.quickstart import _gemini_url, banner, emulated
from proxy.settings import load_settings

CONFIG = Path(__file__).resolve().parents[2] / "config" / "toolcall-guard.toml"
CALL = "/v1internal:generateContent"


@pytest.mark.parametrize("provider", ["gemini", "vertex", "code-assist"])
def test_the_parser_knows_the_native_emulators(provider: str) -> None:
    assert _parser().parse_args(["emulate", "--provider", provider]).provider == provider


def _post_when_up(url: str, body: Any, deadline: float) -> httpx.Response:
    end = time.monotonic() + deadline
    while True:
        try:
            return httpx.post(url, json=body, timeout=2)
        except httpx.TransportError:
            assert time.monotonic() < end, "the emulator did not start"
            time.sleep(0.05)


def test_cli_emulate_code_assist_prints_its_root_and_serves_it() -> None:
    with socket.socket() as probe:  # a free port (released just before the child binds it)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    root = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "proxy", "emulate", "--provider", "code-assist"]
    with subprocess.Popen(
        [*command, "--port", str(port)], stdout=subprocess.PIPE, text=True
    ) as child:
        try:
            assert child.stdout is not None
            assert child.stdout.readline() == (
                f"emulating code-assist (Gemini's native API) at {root}\n"
            )
            assert child.stdout.readline() == (
                f"Gemini native API at {root} (CODE_ASSIST_ENDPOINT={root})\n"
            )
            body = {"model": "gemini-2.5-pro", "request": {"contents": [
                {"role": "user", "parts": [{"text": "Hi."}]}]}}  # fmt: skip
            answer = _post_when_up(root + CALL, body, deadline=20).json()
            assert answer["response"]["candidates"][0]["content"]["role"] == "model"
        finally:
            child.terminate()
            child.wait(10)


def test_gemini_base_url_points_at_the_emulators_root() -> None:
    fields = {"base_url": "x", "gemini_base_url": "https://generativelanguage.googleapis.com"}
    chat = "http://127.0.0.1:5001/v1beta/openai"
    assert _gemini_url("gemini", chat, fields) == {"gemini_base_url": "http://127.0.0.1:5001"}
    native = "http://127.0.0.1:5002"
    assert _gemini_url("vertex", native, fields) == {"gemini_base_url": native}
    assert _gemini_url("code-assist", native, fields) == {"gemini_base_url": native}
    assert _gemini_url("openai", "http://127.0.0.1:5003/v1", fields) == {}
    assert _gemini_url("gemini", chat, {"base_url": "x"}) == {}  # settings without the key


def test_the_banner_names_google_gemini_base_url() -> None:
    settings = load_settings(CONFIG)
    out = io.StringIO()
    banner(settings, {"gemini": "http://127.0.0.1:5001/v1beta/openai"}, out)
    base = f"http://{settings.server.host}:{settings.server.port}"
    assert re.search(
        rf"^  proxy\s+{re.escape(base)}\s+\(set GOOGLE_GEMINI_BASE_URL to this",
        out.getvalue(),
        re.M,
    )
    out = io.StringIO()
    banner(settings, {"openai": "http://127.0.0.1:5003/v1"}, out)
    assert "GOOGLE_GEMINI_BASE_URL" not in out.getvalue()


def test_serve_emulate_points_each_native_upstream_at_its_emulator() -> None:
    """gemini's ``gemini_base_url`` at its chat emulator's root (which serves AI Studio natively);
    vertex and code-assist at theirs, with no chat base left that could reach out."""
    settings = load_settings(CONFIG)
    urls = {
        "gemini": "http://127.0.0.1:5001/v1beta/openai",
        "vertex": "http://127.0.0.1:5002",
        "code-assist": "http://127.0.0.1:5003",
    }
    upstreams = emulated(settings, CONFIG, urls).upstreams
    assert upstreams["gemini"].base_url == urls["gemini"]
    assert upstreams["gemini"].gemini_base_url == "http://127.0.0.1:5001"
    for name in ("vertex", "code-assist"):
        assert upstreams[name].gemini_base_url == urls[name]
        assert upstreams[name].base_url is None
        assert upstreams[name].anthropic_base_url is None
    assert all(u.api_key_env is None for u in upstreams.values() if u.enabled)
    assert "openai" not in upstreams  # no emulator started for it: dropped
