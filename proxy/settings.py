"""Typed configuration, validated at start.

Precedence: init arguments > environment (``TOOLCALL_GUARD_…``, nested with ``__``) > TOML file
(``--config``, ``TOOLCALL_GUARD_CONFIG``, or ``config/toolcall-guard.toml`` when present) >
built-in defaults. Secrets never live in the file: it names the environment variable.
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from proxy.core.policy import PRESETS, Policy, build_policy
from proxy.errors import ConfigError

DEFAULT_CONFIG = Path("config/toolcall-guard.toml")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ServerSettings(_Section):
    host: str = "127.0.0.1"
    port: int = Field(8780, ge=1, le=65535)
    max_body_bytes: int = Field(32 * 1024 * 1024, ge=1024)
    max_messages: int = Field(20_000, ge=1)
    max_tool_calls_per_message: int = Field(4_096, ge=1)
    max_json_depth: int = Field(64, ge=4, le=1000)
    body_timeout: float = Field(30.0, gt=0)
    admin_token_env: str = "TOOLCALL_GUARD_ADMIN_TOKEN"
    client_keys_env: str = "TOOLCALL_GUARD_CLIENT_KEYS"
    allow_mode_header: bool = False
    log_format: Literal["auto", "json", "text"] = "auto"
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    log_contents: bool = False

    def is_loopback(self) -> bool:
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False


class RepairLogSettings(_Section):
    url: str = "sqlite:///data/repairs.sqlite3"
    capture: Literal["full", "redacted", "none"] = "full"
    retention_days: float = Field(30, gt=0)
    max_records: int = Field(100_000, ge=1)
    queue_size: int = Field(10_000, ge=1)
    queue_bytes: int = Field(32 * 1024 * 1024, ge=1024)
    batch_size: int = Field(200, ge=1)
    flush_interval: float = Field(1.0, gt=0, le=60)
    max_error_body_bytes: int = Field(16_384, ge=256)


class UpstreamSettings(_Section):
    base_url: str
    api_key_env: str | None = None
    models: list[str] = []
    policy: str | None = None  # default: the upstream's own name if that is a preset, else openai
    connect_timeout: float = Field(10.0, gt=0)
    read_timeout: float = Field(600.0, gt=0)

    @model_validator(mode="after")
    def _url(self) -> UpstreamSettings:
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError("base_url must start with http:// or https://")
        self.base_url = self.base_url.rstrip("/")
        return self


class RoutingSettings(_Section):
    default: str | None = "openai"


class PolicySettings(_Section):
    base: str | None = None
    dialect: str | None = None
    rules: dict[str, Any] = {}


def _default_upstreams() -> dict[str, UpstreamSettings]:
    return {
        "openai": UpstreamSettings(
            base_url="https://api.openai.com/v1",
            api_key_env="OPENAI_API_KEY",
            models=["gpt-*", "o1*", "o3*", "o4*", "chatgpt-*"],
            policy="openai",
        ),
        "deepseek": UpstreamSettings(
            base_url="https://api.deepseek.com/v1",
            api_key_env="DEEPSEEK_API_KEY",
            models=["deepseek-*"],
            policy="deepseek",
        ),
        "gemini": UpstreamSettings(
            base_url="https://generativelanguage.googleapis.com/v1beta/openai",
            api_key_env="GEMINI_API_KEY",
            models=["gemini-*"],
            policy="gemini",
        ),
    }


class Settings(BaseSettings):
    """The whole configuration. Build it with :func:`load_settings`."""

    model_config = SettingsConfigDict(
        env_prefix="TOOLCALL_GUARD_", env_nested_delimiter="__", extra="forbid"
    )

    server: ServerSettings = ServerSettings()
    repair_log: RepairLogSettings = RepairLogSettings()
    routing: RoutingSettings = RoutingSettings()
    upstreams: dict[str, UpstreamSettings] = Field(default_factory=_default_upstreams)
    policies: dict[str, PolicySettings] = {}

    _policies: dict[str, Policy] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _check(self) -> Settings:
        if not self.upstreams:
            raise ValueError("upstreams: at least one upstream is required")
        if self.routing.default is not None and self.routing.default not in self.upstreams:
            raise ValueError(
                f"routing.default: unknown upstream {self.routing.default!r}; "
                f"allowed: {', '.join(self.upstreams)}"
            )
        for name, section in self.policies.items():
            self._policies[name] = build_policy(
                name, base=section.base, dialect=section.dialect, overrides=section.rules
            )
        for name, upstream in self.upstreams.items():
            policy = upstream.policy or (name if name in PRESETS else "openai")
            upstream.policy = policy
            if policy not in self._policies:
                if policy not in PRESETS:
                    allowed = ", ".join([*PRESETS, *self.policies])
                    raise ValueError(
                        f"upstreams.{name}.policy: unknown policy {policy!r}; allowed: {allowed}"
                    )
                self._policies[policy] = build_policy(policy)
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml_file = settings_cls.model_config.get("toml_file")
        sources: tuple[PydanticBaseSettingsSource, ...] = (init_settings, env_settings)
        if toml_file:
            sources += (TomlConfigSettingsSource(settings_cls, toml_file=toml_file),)
        return sources

    def policy_for(self, upstream: str) -> Policy:
        return self._policies[self.upstreams[upstream].policy or "openai"]

    def policy_named(self, name: str) -> Policy:
        return self._policies[name]

    def secret(self, env_name: str | None) -> str | None:
        """The value of the environment variable the config names, if set and non-empty."""
        if not env_name:
            return None
        return os.environ.get(env_name) or None

    def admin_token(self) -> str | None:
        return self.secret(self.server.admin_token_env)

    def client_keys(self) -> frozenset[str]:
        raw = self.secret(self.server.client_keys_env) or ""
        return frozenset(key.strip() for key in raw.split(",") if key.strip())


def config_path(explicit: str | Path | None = None) -> Path | None:
    """The TOML file to read: explicit > $TOOLCALL_GUARD_CONFIG > the default when present."""
    if explicit:
        return Path(explicit)
    env = os.environ.get("TOOLCALL_GUARD_CONFIG")
    if env:
        return Path(env)
    return DEFAULT_CONFIG if DEFAULT_CONFIG.is_file() else None


def load_settings(config: str | Path | None = None, **overrides: Any) -> Settings:
    """Load and validate the settings; any problem raises :class:`ConfigError` naming the key."""
    path = config_path(config)
    if path is not None and not path.is_file():
        raise ConfigError(f"config file not found: {path}")

    class _FromFile(Settings):
        model_config = SettingsConfigDict(toml_file=path)

    try:
        return _FromFile(**overrides)
    except ValidationError as exc:
        raise ConfigError(_explain(exc)) from exc
    except ValueError as exc:  # a policy error raised while validating
        raise ConfigError(str(exc)) from exc


def _explain(exc: ValidationError) -> str:
    lines = []
    for error in exc.errors():
        key = ".".join(str(part) for part in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        lines.append(f"{key}: {message}" if key else message)
    return "invalid configuration: " + "; ".join(lines)
