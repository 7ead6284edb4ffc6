"""Config layers and their errors (issue 16 item 6): the file extends the built-in upstreams,
the environment only changes known ones, and every mistake names what is allowed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from proxy import config_layers
from proxy import settings as settings_module
from proxy.config_layers import (
    ANTHROPIC_COMPATIBLE,
    FIRST_TIER,
    GOOGLE_CLOUD,
    SECOND_TIER,
    builtin_upstreams,
)
from proxy.errors import ConfigError
from proxy.settings import ServerSettings, UpstreamSettings, load_settings

BUILT_IN = [*FIRST_TIER, *SECOND_TIER, *ANTHROPIC_COMPATIBLE, *GOOGLE_CLOUD]


@pytest.fixture(autouse=True)
def _no_ambient_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No developer's TOOLCALL_GUARD_* variables, and no config/ under the working directory
    (nor the checkout's, which is found from elsewhere too)."""
    for name in list(os.environ):
        if name.startswith("TOOLCALL_GUARD_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(
        settings_module, "config_candidates", lambda: [settings_module.DEFAULT_CONFIG]
    )


def _toml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "guard.toml"
    path.write_text(text)
    return path


def _error(*args: object, **kwargs: object) -> str:
    with pytest.raises(ConfigError) as caught:
        load_settings(*args, **kwargs)  # type: ignore[arg-type]
    return str(caught.value)


def test_a_misspelt_upstream_in_the_environment_names_the_known_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TOOLCALL_GUARD_UPSTREAMS__DEEPSEK__BASE_URL", "http://127.0.0.1:9/v1")
    message = _error()
    assert "TOOLCALL_GUARD_UPSTREAMS__DEEPSEK__BASE_URL" in message
    assert "'deepsek'" in message
    assert f"known upstreams: {', '.join(BUILT_IN)}." in message


def test_the_environment_changes_one_key_of_a_built_in_upstream(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TOOLCALL_GUARD_UPSTREAMS__DEEPSEEK__BASE_URL", "http://127.0.0.1:9/v1")
    deepseek = load_settings().upstreams["deepseek"]
    assert deepseek.base_url == "http://127.0.0.1:9/v1"
    assert deepseek.api_key_env == "DEEPSEEK_API_KEY"  # the other keys stay built-in
    assert deepseek.models == ["deepseek-*"]


def test_the_environment_adds_an_upstream_when_it_gives_base_url_and_policy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TOOLCALL_GUARD_UPSTREAMS__LOCAL__BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("TOOLCALL_GUARD_UPSTREAMS__LOCAL__POLICY", "openai")
    settings = load_settings()
    assert list(settings.upstreams) == [*BUILT_IN, "local"]
    assert settings.upstreams["local"].policy == "openai"


def test_the_environment_may_change_an_upstream_the_file_adds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _toml(tmp_path, '[upstreams.local]\nbase_url = "http://127.0.0.1:9/v1"\n')
    monkeypatch.setenv("TOOLCALL_GUARD_UPSTREAMS__LOCAL__READ_TIMEOUT", "5")
    assert load_settings(path).upstreams["local"].read_timeout == 5


def test_one_upstream_table_extends_the_built_in_upstreams(tmp_path: Path) -> None:
    path = _toml(tmp_path, '[upstreams.local]\nbase_url = "http://127.0.0.1:9/v1"\n')
    settings = load_settings(path)
    assert list(settings.upstreams) == [*BUILT_IN, "local"]
    assert settings.routing.default == "openai"
    assert settings.upstreams["openai"].models == FIRST_TIER["openai"]["models"]


def test_a_table_for_a_built_in_upstream_changes_only_its_keys(tmp_path: Path) -> None:
    path = _toml(tmp_path, '[upstreams.openai]\nbase_url = "http://127.0.0.1:9/v1"\n')
    openai = load_settings(path).upstreams["openai"]
    assert openai.base_url == "http://127.0.0.1:9/v1"
    assert openai.api_key_env == "OPENAI_API_KEY"


def test_enabled_false_drops_a_built_in_upstream(tmp_path: Path) -> None:
    path = _toml(tmp_path, "[upstreams.gemini]\nenabled = false\n")
    assert list(load_settings(path).upstreams) == [n for n in BUILT_IN if n != "gemini"]


def test_a_default_route_to_a_dropped_upstream_says_so(tmp_path: Path) -> None:
    path = _toml(tmp_path, "[upstreams.openai]\nenabled = false\n")
    message = _error(path)
    assert "routing.default" in message
    assert "disabled" in message
    assert "configured: deepseek, gemini, kimi" in message


def test_a_new_upstream_without_base_url_says_it_is_required(tmp_path: Path) -> None:
    path = _toml(tmp_path, '[upstreams.local]\nmodels = ["local-*"]\n')
    assert "upstreams.local: required: an upstream needs one of base_url" in _error(path)


@pytest.mark.parametrize(
    ("text", "key", "allowed"),
    [
        ("[server]\nprot = 1\n", "server.prot", list(ServerSettings.model_fields)),
        (
            '[upstreams.openai]\nbase_ur = "x"\n',
            "upstreams.openai.base_ur",
            list(UpstreamSettings.model_fields),
        ),
        ("[sever]\nport = 1\n", "sever", ["server", "repair_log", "routing", "upstreams"]),
    ],
)
def test_an_unknown_key_lists_the_allowed_keys(
    tmp_path: Path, text: str, key: str, allowed: list[str]
) -> None:
    message = _error(_toml(tmp_path, text))
    assert f"{key}: unknown key; allowed: " in message
    listed = message.split("allowed: ", 1)[1].split(", ")
    assert all(name in listed for name in allowed)


def test_a_toml_syntax_error_names_the_file_and_the_line(tmp_path: Path) -> None:
    path = _toml(tmp_path, '[server]\nhost = "127.0.0.1"\nport = \n')
    message = _error(path)
    assert str(path) in message
    assert "line 3" in message


def test_init_upstreams_list_every_upstream() -> None:
    settings = load_settings(
        upstreams={"local": {"base_url": "http://127.0.0.1:9/v1"}}, routing={"default": "local"}
    )
    assert list(settings.upstreams) == ["local"]


def test_the_second_tier_has_the_real_base_urls_and_key_variables() -> None:
    """issue 14 item 3."""
    assert {name: u["base_url"] for name, u in SECOND_TIER.items()} == {
        "kimi": "https://api.moonshot.ai/v1",
        "mistral": "https://api.mistral.ai/v1",
        "groq": "https://api.groq.com/openai/v1",
        "xai": "https://api.x.ai/v1",
        "qwen": "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
        "vllm": "http://127.0.0.1:8000/v1",
        "ollama": "http://127.0.0.1:11434/v1",
    }
    assert {name: u.get("api_key_env") for name, u in SECOND_TIER.items()} == {
        "kimi": "MOONSHOT_API_KEY",
        "mistral": "MISTRAL_API_KEY",
        "groq": "GROQ_API_KEY",
        "xai": "XAI_API_KEY",
        "qwen": "DASHSCOPE_API_KEY",
        "vllm": None,
        "ollama": None,
    }
    assert all(u["policy"] == name for name, u in SECOND_TIER.items())
    for name in ("groq", "vllm", "ollama"):  # overlapping model names: path prefix only
        assert SECOND_TIER[name]["models"] == []


def test_the_second_tier_is_built_in_behind_one_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    assert list(builtin_upstreams()) == BUILT_IN
    assert list(load_settings().upstreams) == BUILT_IN  # each routed with its own preset
    assert all(u.policy == name for name, u in load_settings().upstreams.items())
    monkeypatch.setattr(config_layers, "SECOND_TIER_BUILT_IN", False)
    assert list(builtin_upstreams()) == [*FIRST_TIER, *ANTHROPIC_COMPATIBLE, *GOOGLE_CLOUD]
