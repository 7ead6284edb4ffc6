"""The start-up line: which config file was read, where the repair log is, which upstreams.

An operator who starts the proxy from another directory, in a container or with a variable
left in the shell sees at once what it runs with (issue 25 item 4). Credentials in the repair
log's URL are masked; keys are named by their variable, never shown.
"""

from __future__ import annotations

import logging
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import proxy.settings
from proxy.config_layers import anchored_log_url, read_toml, relative_sqlite_path
from proxy.settings import BASE_KEYS, Settings

LOGGER = logging.getLogger("toolcall_guard.startup")


def masked_url(url: str) -> str:
    """``url`` with its password replaced by ``***``; a relative SQLite path made absolute."""
    if url.startswith("sqlite:///") and not url.startswith("sqlite:////"):
        path, _, query = url.removeprefix("sqlite:///").partition("?")
        absolute = f"sqlite:///{Path(path).resolve()}"
        return absolute + (f"?{query}" if query else "")
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def config_described(settings: Settings) -> str:
    path = type(settings).config_file
    if path is not None:
        return f"config {Path(path).resolve()}"
    tried = ", ".join(str(p.resolve()) for p in proxy.settings.config_candidates())
    return f"config: none found (tried {tried}; built-in defaults and the environment)"


def upstreams_described(settings: Settings) -> str:
    """Each upstream's URL, and the variable of its key when that key is set (injected)."""
    described = []
    for name, upstream in settings.upstreams.items():
        key = f" (key {upstream.api_key_env})" if settings.secret(upstream.api_key_env) else ""
        base = next(b for k in BASE_KEYS if (b := getattr(upstream, k)) is not None)
        described.append(f"{name} {base}{key}")
    return ", ".join(described)


def log_described(settings: Settings) -> str:
    """The repair log's URL, and what a relative SQLite path was taken against."""
    url = settings.repair_log.url
    shown = f"repair log {masked_url(url)}"
    if relative_sqlite_path(url) is not None:
        return f"{shown} (relative to the working directory)"
    path = type(settings).config_file
    if path is not None and url == anchored_log_url(read_toml(Path(path)), Path(path)):
        return f"{shown} (relative to the config file's directory)"
    return shown


def startup_line(settings: Settings) -> str:
    """One line: the config file (or the paths tried), the repair log, the upstreams."""
    return (
        f"{config_described(settings)}; "
        f"{log_described(settings)}; "
        f"upstreams {upstreams_described(settings)}"
    )


def announce_start(settings: Settings) -> None:
    LOGGER.info("starting: %s", startup_line(settings))
