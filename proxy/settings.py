"""Typed configuration, validated at start.

Precedence: init arguments > environment (``TOOLCALL_GUARD_…``, nested with ``__``) > TOML file
(``--config``, ``TOOLCALL_GUARD_CONFIG``, or ``config/toolcall-guard.toml`` when present) >
built-in defaults. Secrets never live in the file: it names the environment variable. How the
layers of upstreams combine (the file extends the built-ins, the environment only changes known
upstreams, ``enabled = false`` drops one) is in :mod:`proxy.config_layers`.
"""

from __future__ import annotations

import ipaddress
import os
import typing
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator
from pydantic_settings import (
    BaseSettings,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from proxy.config_layers import LayeredSource, builtin_upstreams
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
    max_model_length: int = Field(256, ge=1, le=65_536)
    body_timeout: float = Field(30.0, gt=0)
    #: Bounds on each connection before any request reaches the app (proxy/connection.py).
    max_header_bytes: int = Field(32 * 1024, ge=1024)
    max_headers: int = Field(128, ge=8)
    header_timeout: float = Field(10.0, gt=0)
    keep_alive_timeout: float = Field(5.0, gt=0)
    max_connections: int = Field(1000, ge=1)
    admin_token_env: str = "TOOLCALL_GUARD_ADMIN_TOKEN"
    client_keys_env: str = "TOOLCALL_GUARD_CLIENT_KEYS"
    allow_mode_header: bool = False
    log_format: Literal["auto", "json", "text"] = "auto"
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    log_contents: bool = False
    #: Proxies trusted to set X-Forwarded-For/-Proto (uvicorn's forwarded_allow_ips: comma-
    #: separated addresses or networks, "*" for any); empty: those headers are not read at all.
    forwarded_allow_ips: str = ""
    #: Host names served besides localhost, 127.0.0.1 and [::1] ("*": any); beyond loopback an
    #: empty list serves any (proxy/api/browser.py).
    allowed_hosts: list[str] = []
    #: Web origins ("https://app.example") whose pages may call the proxy ("*": any).
    allowed_origins: list[str] = []
    #: Serve beyond loopback with provider keys and no client keys (proxy/exposure.py).
    allow_open_relay: bool = False

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
    #: The upstream's OpenAI-compatible base (ends with its version, e.g. /v1): serves chat
    #: completions, Responses and every other /v1/… path. An upstream that serves only another
    #: API (Vertex, Code Assist) has none.
    base_url: str | None = None
    #: The upstream's Anthropic-compatible base (ends in /v1): serves POST /v1/messages.
    anthropic_base_url: str | None = None
    #: The root of the upstream's Gemini-native API, without a version
    #: (https://generativelanguage.googleapis.com): serves /{version}/models/{model}:… and
    #: the other native paths, the version of the request's path appended.
    gemini_base_url: str | None = None
    api_key_env: str | None = None
    #: The request header the proxy's key goes in when it is not the API's usual one
    #: (Vertex and Code Assist take ``authorization`` for a Bearer token).
    key_header: Literal["authorization", "x-api-key", "x-goog-api-key", "api-key"] | None = None
    models: list[str] = []
    policy: str | None = None  # default: the upstream's own name if that is a preset, else openai
    connect_timeout: float = Field(10.0, gt=0)
    read_timeout: float = Field(600.0, gt=0)
    #: False drops the upstream (a built-in one included): proxy/config_layers.py.
    enabled: bool = True
    #: Repair and resend once when this upstream refuses a history for a catalogued reason.
    retry_on_reject: bool = True

    @model_validator(mode="after")
    def _url(self) -> UpstreamSettings:
        bases = [name for name in BASE_KEYS if getattr(self, name) is not None]
        if not bases:
            raise ValueError(f"required: an upstream needs one of {', '.join(BASE_KEYS)}")
        for name in bases:
            value: str = getattr(self, name)
            if not value.startswith(("http://", "https://")):
                raise ValueError(f"{name} must start with http:// or https://")
            setattr(self, name, value.rstrip("/"))
        return self


#: The upstream settings naming a base URL, one per kind of API an upstream serves.
BASE_KEYS = ("base_url", "anthropic_base_url", "gemini_base_url")


class RoutingSettings(_Section):
    default: str | None = "openai"


class PolicySettings(_Section):
    base: str | None = None
    dialect: str | None = None
    rules: dict[str, Any] = {}


def _default_upstreams() -> dict[str, UpstreamSettings]:
    return {name: UpstreamSettings(**fields) for name, fields in builtin_upstreams().items()}


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
    #: The TOML file read beneath the environment (:func:`load_settings` sets it).
    config_file: ClassVar[Path | None] = None

    @model_validator(mode="after")
    def _check(self) -> Settings:
        disabled = [name for name, upstream in self.upstreams.items() if not upstream.enabled]
        self.upstreams = {n: u for n, u in self.upstreams.items() if u.enabled}
        if not self.upstreams:
            raise ValueError("upstreams: at least one upstream is required")
        default = self.routing.default
        if default is not None and default not in self.upstreams:
            why = "is disabled (enabled = false)" if default in disabled else "is not configured"
            raise ValueError(
                f"routing.default: upstream {default!r} {why}; "
                f"configured: {', '.join(self.upstreams)}"
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
        assert isinstance(init_settings, InitSettingsSource)
        toml_file = getattr(settings_cls, "config_file", None)
        layers = LayeredSource(
            settings_cls, init=init_settings, env=env_settings, toml_file=toml_file
        )
        return (init_settings, layers)

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


def config_candidates() -> list[Path]:
    """Where the config is looked for when none is named: the working directory's
    ``config/toolcall-guard.toml``, then the one of the source checkout the package runs from
    (``make run``'s command started in another directory still reads the repository's)."""
    checkout = Path(__file__).resolve().parent.parent
    beside = checkout / DEFAULT_CONFIG
    if not (checkout / "pyproject.toml").is_file() or beside == DEFAULT_CONFIG.resolve():
        return [DEFAULT_CONFIG]
    return [DEFAULT_CONFIG, beside]


def config_path(explicit: str | Path | None = None) -> Path | None:
    """The TOML file to read: explicit > $TOOLCALL_GUARD_CONFIG > the first candidate present."""
    if explicit:
        return Path(explicit)
    env = os.environ.get("TOOLCALL_GUARD_CONFIG")
    if env:
        return Path(env)
    return next((path for path in config_candidates() if path.is_file()), None)


def load_settings(config: str | Path | None = None, **overrides: Any) -> Settings:
    """Load and validate the settings; any problem raises :class:`ConfigError` naming the key.

    ``overrides`` are init arguments, above the environment; an ``upstreams`` override lists
    every upstream (the built-in ones are left out), as tests and ``make demo`` want.
    """
    path = config_path(config)
    if path is not None and not path.is_file():
        raise ConfigError(f"config file not found: {path}")

    class _FromFile(Settings):
        config_file: ClassVar[Path | None] = path

    try:
        return _FromFile(**overrides)
    except ValidationError as exc:
        raise ConfigError(_explain(exc)) from exc
    except ValueError as exc:  # a policy error raised while validating
        raise ConfigError(str(exc)) from exc


def _explain(exc: ValidationError) -> str:
    lines = []
    for error in exc.errors():
        loc = error["loc"]
        key = ".".join(str(part) for part in loc)
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            allowed = _fields_at(loc[:-1])
            message = "unknown key" + (f"; allowed: {', '.join(allowed)}" if allowed else "")
        lines.append(f"{key}: {message}" if key else message)
    return "invalid configuration: " + "; ".join(lines)


def _fields_at(loc: tuple[int | str, ...]) -> list[str]:
    """The keys allowed in the table at ``loc`` (``("upstreams", "x")`` → an upstream's)."""
    model: Any = Settings
    parts = iter(loc)
    for part in parts:
        fields = getattr(model, "model_fields", {})
        if part not in fields:
            return []
        model = fields[part].annotation
        if typing.get_origin(model) is dict:  # upstreams, policies: the next part is a name
            model = typing.get_args(model)[1]
            if next(parts, None) is None:
                return []
    return list(getattr(model, "model_fields", {}))
