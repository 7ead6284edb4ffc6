"""Every test runs apart from the developer's shell and from the shipped deployment config.

- ``load_settings()`` without an explicit file reads ``config/toolcall-guard.toml`` from the
  working directory: the real providers, merged under whatever a test passes. Tests get an
  empty config file instead, so only what a test passes (over the built-in defaults) applies.
- ``TOOLCALL_GUARD_*`` variables and provider keys are removed: no test picks up a local
  override, and no real key can be injected into a request, even to a local fake upstream.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

#: Variables a developer's shell may hold that would change what the tests do.
_PROVIDER_VARIABLES = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "DEEPSEEK_API_KEY", "GEMINI_API_KEY")
_PROVIDER_VARIABLES += ("MOONSHOT_API_KEY", "MISTRAL_API_KEY", "GROQ_API_KEY", "XAI_API_KEY")
_PROVIDER_VARIABLES += ("DASHSCOPE_API_KEY",)


@pytest.fixture(scope="session")
def empty_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("config") / "empty.toml"
    path.write_text("# no settings: the built-in defaults and what each test passes\n")
    return path


@pytest.fixture(autouse=True)
def _isolated_settings(monkeypatch: pytest.MonkeyPatch, empty_config: Path) -> None:
    for name in list(os.environ):
        if name.startswith("TOOLCALL_GUARD_") or name in _PROVIDER_VARIABLES:
            monkeypatch.delenv(name)
    monkeypatch.setenv("TOOLCALL_GUARD_CONFIG", str(empty_config))
