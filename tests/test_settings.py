"""The shipped config/toolcall-guard.toml: complete, documented, and in line with the defaults."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from proxy.settings import RepairLogSettings, ServerSettings, Settings, load_settings

CONFIG = Path(__file__).resolve().parent.parent / "config" / "toolcall-guard.toml"


def test_shipped_config_loads_and_equals_the_built_in_defaults() -> None:
    """The same, but where the log is: the shipped file names the checkout's data/ (relative
    to itself), the default the working directory's."""
    shipped = load_settings(CONFIG).model_dump()
    assert (
        shipped["repair_log"].pop("url") == f"sqlite:///{CONFIG.parent.parent}/data/repairs.sqlite3"
    )
    defaults = Settings().model_dump()
    assert defaults["repair_log"].pop("url") == "sqlite:///data/repairs.sqlite3"
    assert shipped == defaults


@pytest.mark.parametrize(
    ("section", "model"), [("server", ServerSettings), ("repair_log", RepairLogSettings)]
)
def test_every_key_of_the_section_is_in_the_file(section: str, model: type) -> None:
    data = tomllib.loads(CONFIG.read_text())
    assert set(data[section]) == set(model.model_fields)


def test_the_providers_real_endpoints_and_key_variables() -> None:
    upstreams = tomllib.loads(CONFIG.read_text())["upstreams"]
    assert upstreams["openai"]["base_url"] == "https://api.openai.com/v1"
    assert upstreams["deepseek"]["base_url"] == "https://api.deepseek.com/v1"
    assert (
        upstreams["gemini"]["base_url"] == "https://generativelanguage.googleapis.com/v1beta/openai"
    )
    assert upstreams["kimi"]["base_url"] == "https://api.moonshot.ai/v1"
    assert upstreams["mistral"]["base_url"] == "https://api.mistral.ai/v1"
    assert upstreams["groq"]["base_url"] == "https://api.groq.com/openai/v1"
    assert upstreams["xai"]["base_url"] == "https://api.x.ai/v1"
    assert upstreams["qwen"]["base_url"] == "https://dashscope-intl.aliyuncs.com/compatible-mode/v1"
    assert upstreams["vllm"]["base_url"] == "http://127.0.0.1:8000/v1"
    assert upstreams["ollama"]["base_url"] == "http://127.0.0.1:11434/v1"
    assert {u.get("api_key_env") for u in upstreams.values()} == {
        "OPENAI_API_KEY",
        "DEEPSEEK_API_KEY",
        "GEMINI_API_KEY",
        "MOONSHOT_API_KEY",
        "MISTRAL_API_KEY",
        "GROQ_API_KEY",
        "XAI_API_KEY",
        "DASHSCOPE_API_KEY",
        "ANTHROPIC_API_KEY",
        "ZHIPUAI_API_KEY",
        "MINIMAX_API_KEY",
        None,  # vllm and ollama: local servers, the client's Authorization passes through
    }
    assert {
        n: u["anthropic_base_url"] for n, u in upstreams.items() if "anthropic_base_url" in u
    } == {
        "deepseek": "https://api.deepseek.com/anthropic/v1",
        "kimi": "https://api.moonshot.ai/anthropic/v1",
        "anthropic": "https://api.anthropic.com/v1",
        "glm": "https://open.bigmodel.cn/api/anthropic/v1",
        "minimax": "https://api.minimax.io/anthropic/v1",
    }
    assert {n: u["gemini_base_url"] for n, u in upstreams.items() if "gemini_base_url" in u} == {
        "gemini": "https://generativelanguage.googleapis.com",
        "vertex": "https://aiplatform.googleapis.com",
        "code-assist": "https://cloudcode-pa.googleapis.com",
    }
    # each upstream is routed with the policy of its own name
    assert all(u["policy"] == name for name, u in upstreams.items())
    # servers whose model names overlap are reached by path prefix only
    unglobbed = ["groq", "vllm", "ollama", "vertex", "code-assist"]
    assert [n for n, u in upstreams.items() if not u["models"]] == unglobbed


def test_every_key_has_a_comment() -> None:
    lines = CONFIG.read_text().splitlines()
    undocumented = []
    in_upstreams = False
    for i, line in enumerate(lines):
        if line.startswith("["):
            in_upstreams = line.startswith("[upstreams.")
        if "=" not in line or line.lstrip().startswith("#") or in_upstreams:
            continue  # upstream keys share the block comment above the tables
        if not lines[i - 1].lstrip().startswith("#"):
            undocumented.append(line)
    assert undocumented == []


def test_upstream_table_keys_are_explained_in_the_block_comment() -> None:
    text = CONFIG.read_text()
    upstream_keys = {k for u in tomllib.loads(text)["upstreams"].values() for k in u}
    block = text.split("[upstreams.openai]")[0]
    assert all(key in block for key in upstream_keys), upstream_keys


def test_environment_overrides_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLCALL_GUARD_SERVER__PORT", "9123")
    assert load_settings(CONFIG).server.port == 9123
