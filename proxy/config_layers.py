"""Where configuration values come from, and how the layers of upstreams combine.

Layers, lowest first: the built-in upstreams (:data:`BUILTIN_UPSTREAMS`), the TOML file, the
environment (``TOOLCALL_GUARD_…``), init arguments. Sections (``server``, ``repair_log``…) merge
key by key. Upstreams merge by name, with these rules (DESIGN §5, issue 16 item 6):

- the file extends the built-ins: ``[upstreams.openai]`` changes keys of the built-in openai
  upstream, ``[upstreams.mine]`` adds an upstream (it needs ``base_url``); ``enabled = false``
  drops one (see :mod:`proxy.settings`);
- the environment changes keys of upstreams the built-ins or the file define; it adds a new one
  only when it sets both its ``BASE_URL`` and its ``POLICY``, so a misspelt name
  (``TOOLCALL_GUARD_UPSTREAMS__DEEPSEK__BASE_URL``) is an error naming the known upstreams
  instead of a silent new upstream;
- init arguments (the programmatic API: tests, ``make demo``) that pass ``upstreams`` give the
  complete set: the built-ins are left out.

A relative SQLite path in the file (``sqlite:///data/repairs.sqlite3``) names a file next to
the config file, wherever ``serve`` is started; elsewhere (the environment, the default) it is
relative to the working directory. A TOML syntax error names the file and the line.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, InitSettingsSource, PydanticBaseSettingsSource

from proxy.errors import ConfigError

ENV_PREFIX = "TOOLCALL_GUARD_"

#: The first-tier upstreams: real base URLs, key variables, model globs (DESIGN §5).
FIRST_TIER: dict[str, dict[str, Any]] = {
    "openai": {
        "base_url": "https://api.openai.com/v1",
        "api_key_env": "OPENAI_API_KEY",
        "models": ["gpt-*", "o1*", "o3*", "o4*", "chatgpt-*"],
        "policy": "openai",
    },
    "deepseek": {
        "base_url": "https://api.deepseek.com/v1",
        "anthropic_base_url": "https://api.deepseek.com/anthropic/v1",
        "api_key_env": "DEEPSEEK_API_KEY",
        "models": ["deepseek-*"],
        "policy": "deepseek",
    },
    "gemini": {
        "base_url": "https://generativelanguage.googleapis.com/v1beta/openai",
        "gemini_base_url": "https://generativelanguage.googleapis.com",
        "api_key_env": "GEMINI_API_KEY",
        "models": ["gemini-*"],
        "policy": "gemini",
    },
}

#: The second tier (issue 14 item 3). groq, vllm and ollama serve model names that overlap
#: others' (llama-*, qwen*…), so they have no globs: reach them by path prefix (/groq/v1/…).
SECOND_TIER: dict[str, dict[str, Any]] = {
    "kimi": {
        "base_url": "https://api.moonshot.ai/v1",
        "anthropic_base_url": "https://api.moonshot.ai/anthropic/v1",
        "api_key_env": "MOONSHOT_API_KEY",
        "models": ["kimi-*", "moonshot-*"],
        "policy": "kimi",
    },
    "mistral": {
        "base_url": "https://api.mistral.ai/v1",
        "api_key_env": "MISTRAL_API_KEY",
        "models": ["mistral-*", "devstral-*", "codestral-*", "magistral-*"],
        "policy": "mistral",
    },
    "groq": {
        "base_url": "https://api.groq.com/openai/v1",
        "api_key_env": "GROQ_API_KEY",
        "models": [],
        "policy": "groq",
    },
    "xai": {
        "base_url": "https://api.x.ai/v1",
        "api_key_env": "XAI_API_KEY",
        "models": ["grok-*"],
        "policy": "xai",
    },
    "qwen": {
        "base_url": "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
        "api_key_env": "DASHSCOPE_API_KEY",
        "models": ["qwen*", "qwq-*"],
        "policy": "qwen",
    },
    "vllm": {"base_url": "http://127.0.0.1:8000/v1", "models": [], "policy": "vllm"},
    "ollama": {"base_url": "http://127.0.0.1:11434/v1", "models": [], "policy": "ollama"},
}

#: Providers reached mostly through their Anthropic-compatible Messages API (issue 21;
#: anthropic-messages.md §7); glm and minimax serve chat completions too. Always built in.
ANTHROPIC_COMPATIBLE: dict[str, dict[str, Any]] = {
    "anthropic": {
        "base_url": "https://api.anthropic.com/v1",
        "anthropic_base_url": "https://api.anthropic.com/v1",
        "api_key_env": "ANTHROPIC_API_KEY",
        "models": ["claude-*"],
        "policy": "anthropic",
    },
    "glm": {
        "base_url": "https://open.bigmodel.cn/api/paas/v4",
        "anthropic_base_url": "https://open.bigmodel.cn/api/anthropic/v1",
        "api_key_env": "ZHIPUAI_API_KEY",
        "models": ["glm-*"],
        "policy": "glm",
    },
    "minimax": {
        "base_url": "https://api.minimax.io/v1",
        "anthropic_base_url": "https://api.minimax.io/anthropic/v1",
        "api_key_env": "MINIMAX_API_KEY",
        "models": ["MiniMax-*"],
        "policy": "minimax",
    },
}

#: Gemini's native API on Google Cloud (issue 33; gemini-native.md §7): Vertex AI and Code
#: Assist (gemini-cli's Google login, ``CODE_ASSIST_ENDPOINT``). Both take an OAuth token as
#: ``Authorization: Bearer``: the client's passes through unless the operator names a variable
#: holding one (``api_key_env``). No model globs: Gemini model names are the ``gemini``
#: upstream's; reach these by path prefix (/vertex/v1beta1/…), by the header, or because a
#: Vertex path (/…/projects/{p}/locations/{l}/publishers/google/models/…) or Code Assist's
#: /v1internal says so.
GOOGLE_CLOUD: dict[str, dict[str, Any]] = {
    "vertex": {
        "gemini_base_url": "https://aiplatform.googleapis.com",
        "key_header": "authorization",
        "models": [],
        "policy": "vertex",
    },
    "code-assist": {
        "gemini_base_url": "https://cloudcode-pa.googleapis.com",
        "key_header": "authorization",
        "models": [],
        "policy": "code-assist",
    },
}

#: The second tier is built in now that its presets exist (proxy/core/policy.py); False keeps
#: the built-ins to the first tier.
SECOND_TIER_BUILT_IN = True


def builtin_upstreams() -> dict[str, dict[str, Any]]:
    """The built-in upstreams as plain data (fresh copies, safe to merge into)."""
    table = (
        FIRST_TIER
        | (SECOND_TIER if SECOND_TIER_BUILT_IN else {})
        | ANTHROPIC_COMPATIBLE
        | GOOGLE_CLOUD
    )
    return {name: {**fields, "models": list(fields["models"])} for name, fields in table.items()}


def read_toml(path: Path) -> dict[str, Any]:
    """The parsed file; a syntax error becomes a :class:`ConfigError` naming file and line."""
    try:
        with path.open("rb") as file:
            return tomllib.load(file)
    except tomllib.TOMLDecodeError as exc:  # its message ends "(at line L, column C)"
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from exc


def relative_sqlite_path(url: Any) -> str | None:
    """The path of a ``sqlite:///relative/path`` URL (None for any other URL)."""
    if (
        not isinstance(url, str)
        or not url.startswith("sqlite:///")
        or url.startswith("sqlite:////")
    ):
        return None
    path = url.removeprefix("sqlite:///").partition("?")[0]
    return path if path and path != ":memory:" else None  # the backend refuses those, named


def anchored_log_url(file: dict[str, Any], path: Path) -> str | None:
    """The file's ``repair_log.url`` when it is a relative SQLite path, resolved against the
    file's directory (not the working directory of ``serve``); None otherwise."""
    section = file.get("repair_log")
    url = section.get("url") if isinstance(section, dict) else None
    relative = relative_sqlite_path(url)
    if relative is None:
        return None
    query = str(url).partition("?")[2]
    absolute = os.path.normpath(path.resolve().parent / relative)
    return f"sqlite:///{absolute}" + (f"?{query}" if query else "")


def _anchored(file: dict[str, Any], path: Path) -> dict[str, Any]:
    url = anchored_log_url(file, path)
    return file if url is None else merge(file, {"repair_log": {"url": url}})


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``over`` on top of ``base``, tables merged key by key (neither is changed)."""
    merged = dict(base)
    for key, value in over.items():
        below = merged.get(key)
        both = isinstance(value, dict) and isinstance(below, dict)
        merged[key] = merge(below, value) if both else value  # type: ignore[arg-type]
    return merged


def merge_upstreams(
    builtin: dict[str, dict[str, Any]],
    file: dict[str, Any],
    env: dict[str, Any],
    given: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """The upstream tables, by the rules of the module docstring (``given``: the names init
    arguments define, which the environment may change too)."""
    upstreams = merge(builtin, file)
    known = [*upstreams, *(name for name in given if name not in upstreams)]
    for name, fields in env.items():
        complete = isinstance(fields, dict) and "policy" in fields and _has_base(fields)
        if name not in known and not complete:
            raise ConfigError(_unknown_env_upstream(name, fields, known))
    return merge(upstreams, env)


def _has_base(fields: dict[str, Any]) -> bool:
    return any(key.endswith("base_url") for key in fields)


def _unknown_env_upstream(name: str, fields: Any, known: list[str]) -> str:
    keys = sorted(fields) if isinstance(fields, dict) else []
    variables = ", ".join(f"{ENV_PREFIX}UPSTREAMS__{name.upper()}__{k.upper()}" for k in keys)
    stem = f"{ENV_PREFIX}UPSTREAMS__{name.upper()}__"
    return (
        f"{variables or stem}: no upstream is named {name!r}; known upstreams: "
        f"{', '.join(known)}. The environment changes upstreams the config defines; to add "
        f"a new one from it, set both {stem}BASE_URL and {stem}POLICY."
    )


class LayeredSource(PydanticBaseSettingsSource):
    """Built-ins < TOML file < environment, as one source (init arguments stay above it)."""

    def __init__(
        self,
        settings_cls: type[BaseSettings],
        *,
        init: InitSettingsSource,
        env: PydanticBaseSettingsSource,
        toml_file: Path | None,
    ) -> None:
        super().__init__(settings_cls)
        self._init, self._env, self._toml_file = init, env, toml_file

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # unused: __call__ builds the whole dict

    def __call__(self) -> dict[str, Any]:
        path = self._toml_file
        file = _anchored(read_toml(path), path) if path is not None else {}
        env = self._env()
        data = merge(file, env)
        tables = file.get("upstreams", {}), env.get("upstreams", {})
        given = self._init.init_kwargs.get("upstreams")
        if not all(isinstance(t, dict) for t in (*tables, given or {})):
            return data  # not tables: validation names the key
        # Init arguments that pass upstreams list every upstream: no built-ins then.
        builtin = {} if given is not None else builtin_upstreams()
        data["upstreams"] = merge_upstreams(builtin, *tables, frozenset(given or ()))
        return data
