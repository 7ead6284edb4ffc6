"""The README's offline quick start, run as a newcomer would (issue 16 item 1): `make run
ARGS=--emulate` serves the proxy in front of the emulators, and the README's Python example,
taken from the README itself, prints exactly what the README says it prints."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import tomllib
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
README = (ROOT / "README.md").read_text()
CONFIG = ROOT / "config" / "toolcall-guard.toml"
README_URL = "http://127.0.0.1:8780"
START_TIMEOUT = 30.0


def quick_start() -> str:
    return README.split("## Quick start", 1)[1].split("\n## ", 1)[0]


def block(text: str, language: str) -> str:
    found = re.search(rf"```{language}\n(.*?)```", text, re.DOTALL)
    assert found, f"no ```{language} block"
    return found.group(1)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _clean_env() -> dict[str, str]:
    """A newcomer's environment: no provider keys, no proxy settings."""
    drop = ("OPENAI_", "ANTHROPIC_", "DEEPSEEK_", "GEMINI_", "TOOLCALL_GUARD_")
    return {k: v for k, v in os.environ.items() if not k.startswith(drop)}


def _lines(stream: object, into: queue.Queue[str]) -> None:
    for line in stream:  # type: ignore[attr-defined]
        into.put(line)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """`toolcall-guard serve --emulate` on a free port; yields (base URL, its banner)."""
    port = free_port()
    command = [sys.executable, "-m", "proxy", "serve", "--emulate", "--port", str(port)]
    with subprocess.Popen(
        [*command, "--config", str(CONFIG)],
        cwd=tmp_path_factory.mktemp("quickstart"),  # not the checkout: its config is passed
        env=_clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as proc:
        lines: queue.Queue[str] = queue.Queue()
        reader = threading.Thread(target=_lines, args=(proc.stdout, lines), daemon=True)
        reader.start()
        banner = ""
        try:
            while "Ctrl-C" not in banner:
                banner += lines.get(timeout=START_TIMEOUT)  # queue.Empty if it never starts
            yield f"http://127.0.0.1:{port}", banner
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                assert proc.wait(timeout=15) == 0, "Ctrl-C stops it cleanly"
            finally:
                proc.kill()
                reader.join(5)


def test_the_banner_says_where_the_proxy_and_the_emulators_are(served: tuple[str, str]) -> None:
    url, banner = served
    assert f"{url}/v1" in banner
    for name, path in (("openai", "/v1"), ("deepseek", "/v1"), ("gemini", "/v1beta/openai")):
        assert re.search(rf"^  {name}\s+http://127\.0\.0\.1:\d+{path}\s", banner, re.MULTILINE)
    assert f"{url}/ui" in banner


def banner_environment(banner: str) -> dict[str, str]:
    """The variables the banner says to set: ``proxy  URL  (set NAME to this…``."""
    found = re.findall(r"^  proxy\s+(\S+)\s+\(set (\w+) to this", banner, re.MULTILINE)
    return {name: url for url, name in found}


def run_snippet(code: str, banner: str) -> subprocess.CompletedProcess[str]:
    """A README snippet, as written, in a newcomer's environment plus what the banner says."""
    return subprocess.run(
        [sys.executable, "-c", code],
        env=_clean_env() | banner_environment(banner),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_readme_example_prints_what_the_readme_says(served: tuple[str, str]) -> None:
    _, banner = served
    section = quick_start()
    code = block(section, "python")
    expected = block(section.split(code, 1)[1], "text")
    assert README_URL in code  # the default port needs nothing set
    assert "api_key=" in code  # works without OPENAI_API_KEY
    result = run_snippet(code, banner)
    assert result.returncode == 0, result.stderr
    assert result.stdout == expected


def test_the_banner_names_the_variables_the_snippets_read(served: tuple[str, str]) -> None:
    url, banner = served
    assert banner_environment(banner) == {
        "OPENAI_BASE_URL": f"{url}/v1",
        "ANTHROPIC_BASE_URL": url,
        "GOOGLE_GEMINI_BASE_URL": url,
    }


SNIPPETS = re.findall(r"```python\n(.*?)```\n(.*?)(?=```|\n## )", README, re.DOTALL)


@pytest.mark.parametrize(
    ("code", "after"), SNIPPETS, ids=[f"snippet{i}" for i in range(len(SNIPPETS))]
)
def test_every_readme_python_snippet_runs_as_written(
    served: tuple[str, str], code: str, after: str
) -> None:
    """Issue 37 items 3 and 7: each snippet carries what it needs (a key for its SDK, a current
    model), imports only what `make run` installs (`.[quickstart]`), and reaches the proxy on
    the port it runs on through the variables the banner prints (here a free port, not 8780)."""
    url, banner = served
    assert not url.endswith(":8780")
    result = run_snippet(code, banner)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip(), "a snippet shows what it got"
    said = re.search(r"it prints `([^`]+)`", after)
    if said:  # what the README says right after the snippet that it prints
        assert result.stdout.strip() == said.group(1)


def _distribution(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", re.split(r"[<>=\[ ;]", requirement)[0]).lower()


def test_the_snippets_sdks_are_in_the_quick_start_install() -> None:
    """`make run` installs `.[quickstart]`: every package a README snippet imports is in it."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    installed = project["optional-dependencies"]["quickstart"] + project["dependencies"]
    names = {_distribution(r) for r in installed}
    providers = importlib.metadata.packages_distributions()
    for code, _ in SNIPPETS:
        for module in re.findall(r"^(?:from|import) (\w+)", code, re.MULTILINE):
            if module in sys.stdlib_module_names:
                continue
            found = {_distribution(d) for d in providers.get(module, [module])}
            assert found & names, f"{module} is not installed by `make run`"


def test_the_readme_command_runs_serve_emulate() -> None:
    command = block(quick_start(), "sh").split("#")[0].strip()
    assert command == "make run ARGS=--emulate"
    dry = subprocess.run(
        ["make", "-n", *command.split()[1:]],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert ".venv/bin/toolcall-guard serve --emulate" in dry.stdout.splitlines()


def test_the_readme_says_where_the_command_is() -> None:
    assert "`.venv/bin/toolcall-guard`" in quick_start()
    assert "source .venv/bin/activate" in quick_start()
    assert "make demo" in quick_start()


def test_messages_reach_each_providers_messages_emulator(served: tuple[str, str]) -> None:
    """``ANTHROPIC_BASE_URL`` at the proxy: a Messages body is routed by its model to that
    provider's emulator (its own Messages path), checked clean and relayed byte for byte."""
    url, banner = served
    assert f"{url}        (set ANTHROPIC_BASE_URL" in banner
    for model in ("deepseek-chat", "kimi-k2-0905-preview"):
        body = json.dumps({
            "model": model, "max_tokens": 64, "thinking": {"type": "disabled"},
            "messages": [{"role": "user", "content": "hi"}],
        }).encode()  # fmt: skip
        request = urllib.request.Request(
            url + "/v1/messages", data=body, headers={"content-type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200
            assert response.headers["x-toolcall-guard-outcome"] == "clean"
            sent = response.headers["x-emulator-body-sha256"]
            assert sent == hashlib.sha256(body).hexdigest()
            assert json.loads(response.read())["model"] == model
