"""Routing: path prefix > x-toolcall-guard-upstream > model glob > routing.default."""

from __future__ import annotations

import pytest

from proxy.errors import UnknownUpstream
from proxy.routing import Router, split_path, upstream_for_model
from proxy.settings import Settings, load_settings


@pytest.fixture
def settings() -> Settings:
    return load_settings(
        upstreams={
            "openai": {"base_url": "http://127.0.0.1:1/v1", "models": ["gpt-*", "o3*"]},
            "deepseek": {"base_url": "http://127.0.0.1:2/v1", "models": ["deepseek-*"]},
            "catchall": {"base_url": "http://127.0.0.1:3/v1", "models": ["*"]},
        },
        routing={"default": "openai"},
    )


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/v1/chat/completions", (None, "/chat/completions")),
        ("/v1/models", (None, "/models")),
        ("/v1/", (None, "/")),
        ("/deepseek/v1/chat/completions", ("deepseek", "/chat/completions")),
        ("/gemini/v1/models/gemini-2.5-flash", ("gemini", "/models/gemini-2.5-flash")),
        ("/nowhere/v1/x", ("nowhere", "/x")),
        ("/v1", None),
        ("/healthz", None),
        ("/repairs/0190", None),
        ("/a/b/v1/chat/completions", None),
        ("//v1/chat/completions", None),
        ("/openai/v2/chat/completions", None),
    ],
    ids=str,
)
def test_split_path(path: str, expected: tuple[str | None, str] | None) -> None:
    assert split_path(path) == expected


def test_header_beats_model(settings: Settings) -> None:
    assert Router(settings).pick("deepseek", "gpt-4o") == "deepseek"


def test_first_matching_glob_wins_in_config_order(settings: Settings) -> None:
    router = Router(settings)
    assert router.pick(None, "gpt-4o") == "openai"
    assert router.pick(None, "o3-mini") == "openai"
    assert router.pick(None, "deepseek-chat") == "deepseek"
    assert router.pick(None, "mistral-large") == "catchall"


def test_globs_are_case_sensitive(settings: Settings) -> None:
    assert Router(settings).pick(None, "GPT-4o") == "catchall"


def test_default_when_no_glob_matches() -> None:
    settings = load_settings(
        upstreams={
            "a": {"base_url": "http://127.0.0.1:1/v1", "models": ["a-*"]},
            "b": {"base_url": "http://127.0.0.1:2/v1", "models": ["b-*"]},
        },
        routing={"default": "b"},
    )
    router = Router(settings)
    assert router.pick(None, "c-1") == "b"
    assert router.pick(None, None) == "b"
    assert router.pick(None, 42) == "b"  # not a string: no glob can match


def test_no_default_and_no_match_is_unknown_upstream() -> None:
    settings = load_settings(
        upstreams={"a": {"base_url": "http://127.0.0.1:1/v1", "models": ["a-*"]}},
        routing={"default": None},
    )
    with pytest.raises(UnknownUpstream) as caught:
        Router(settings).pick(None, "zzz")
    assert caught.value.status == 400
    assert caught.value.code == "unknown_upstream"
    assert "zzz" in caught.value.message


def test_unknown_header_is_400(settings: Settings) -> None:
    with pytest.raises(UnknownUpstream) as caught:
        Router(settings).pick("mistral", "gpt-4o")
    assert caught.value.status == 400
    assert "mistral" in caught.value.message
    assert "openai" in caught.value.message  # names what is configured


def test_unknown_prefix_is_404(settings: Settings) -> None:
    router = Router(settings)
    assert router.by_prefix("deepseek") == "deepseek"
    with pytest.raises(UnknownUpstream) as caught:
        router.by_prefix("nowhere")
    assert caught.value.status == 404
    assert caught.value.code == "unknown_upstream"


def test_model_cache_answers_like_the_globs(settings: Settings) -> None:
    router = Router(settings)
    models = [f"gpt-{i}" for i in range(1500)] + ["deepseek-chat", "llama"]
    for model in models * 2:  # past the cache size, and again from the cache
        assert router.pick(None, model) == upstream_for_model(settings, model)


def test_upstream_for_model_falls_back_to_default(settings: Settings) -> None:
    assert upstream_for_model(settings, "deepseek-reasoner") == "deepseek"
    assert upstream_for_model(settings, None) == "openai"
