"""``toolcall-guard serve --emulate``: the offline quick start (issue 16 item 1).

It starts one strict emulator per configured upstream that has one (openai, deepseek,
gemini…), each on a free loopback port in this process, and serves the proxy in front of
them: the config's upstreams keep their model globs and policies, but their ``base_url`` is
the emulator's (and their ``anthropic_base_url`` the emulator's Messages endpoint, for
anthropic, deepseek, kimi, glm and minimax; their ``gemini_base_url`` the emulator's root for
Gemini's native API: gemini's AI Studio routes, and the vertex and code-assist emulators) and
no key is sent (``api_key_env`` cleared), so
nothing leaves the machine and no provider key is needed. Upstreams without an emulator are
left out. Everything else (port, repair log, ``[policies.…]``) comes from the config as
``serve`` reads it.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, TextIO

import uvicorn

from proxy.emulator.app import PREFIXES
from proxy.emulator.gemini_native_errors import CODE_ASSIST, VERTEX
from proxy.emulator.messages import MESSAGES_PREFIXES
from proxy.emulator.validators import PROVIDERS
from proxy.errors import ConfigError
from proxy.settings import Settings, load_settings
from proxy.startup import announce_start, masked_url

START_TIMEOUT = 10.0
#: Where ``serve --emulate`` records go by default: nothing the emulators answered is kept.
DEMO_LOG_URL = "memory://"
#: Upstreams served by a native Gemini emulator only (no OpenAI-compatible chat endpoint).
NATIVE_ONLY = {"vertex": VERTEX, "code-assist": CODE_ASSIST}
#: Upstreams whose emulator speaks Gemini's native API (``gemini_base_url``).
GEMINI_NATIVE = ("gemini", *NATIVE_ONLY)
_NATIVE_ROUTES = {"vertex": "/…/publishers/google/models/…", "code-assist": "/v1internal:…"}


@contextmanager
def serve_in_thread(app: Any) -> Iterator[str]:
    """Serve ``app`` on a free loopback port in a daemon thread; yield its base URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, log_level="error", lifespan="on", log_config=None)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    if not server.started:
        raise RuntimeError("a local server did not start")
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(START_TIMEOUT)
        sock.close()


def emulated(settings: Settings, config: str | Path | None, urls: dict[str, str]) -> Settings:
    """``settings`` with each upstream named in ``urls`` pointed at its emulator, keyless, and
    every other upstream disabled."""
    upstreams: dict[str, Any] = {}
    for name, upstream in settings.upstreams.items():
        fields = upstream.model_dump()
        if name in urls:
            # a native-only emulator serves no chat: nothing of the upstream's may reach out
            chat = None if name in NATIVE_ONLY else urls[name]
            upstreams[name] = fields | {"base_url": chat, "api_key_env": None}
            upstreams[name] |= {"anthropic_base_url": None} if name in NATIVE_ONLY else {}
            upstreams[name] |= _messages_url(name, urls[name], fields)
            upstreams[name] |= _gemini_url(name, urls[name], fields)
        else:
            upstreams[name] = fields | {"enabled": False}
    default = settings.routing.default
    routing = {"default": default if default in urls else next(iter(urls))}
    return load_settings(
        config, upstreams=upstreams, routing=routing, repair_log=_demo_log(settings)
    )


def _demo_log(settings: Settings) -> dict[str, Any]:
    """The emulated traffic's records stay out of the real log: in memory, unless the
    environment names a log (``TOOLCALL_GUARD_REPAIR_LOG__URL``)."""
    fields = settings.repair_log.model_dump()
    if not os.environ.get("TOOLCALL_GUARD_REPAIR_LOG__URL"):
        fields["url"] = DEMO_LOG_URL
    return fields


def _messages_url(name: str, url: str, fields: dict[str, Any]) -> dict[str, str]:
    """``anthropic_base_url`` at the emulator's Messages endpoint, for upstreams that have one."""
    if name not in MESSAGES_PREFIXES or "anthropic_base_url" not in fields:
        return {}
    root = url.removesuffix(PREFIXES[name][0])
    return {"anthropic_base_url": root + MESSAGES_PREFIXES[name][0]}


def _gemini_url(name: str, url: str, fields: dict[str, Any]) -> dict[str, str]:
    """``gemini_base_url`` (the API root, no version) at the emulator serving Gemini's native
    API, for upstreams that have one and settings that know the key."""
    if name not in GEMINI_NATIVE or "gemini_base_url" not in fields:
        return {}
    return {"gemini_base_url": url.removesuffix(PREFIXES[name][0]) if name in PREFIXES else url}


def emulator_urls(names: list[str], stack: ExitStack) -> dict[str, str]:
    """Start an emulator for each name that has one; their base URLs (with the API prefix;
    the root for the native-only Gemini emulators)."""
    from proxy.emulator import create_emulator_app
    from proxy.emulator.gemini_native import create_gemini_native_app

    urls = {}
    for name in names:
        if name in PREFIXES:
            url = stack.enter_context(serve_in_thread(create_emulator_app(name)))
            urls[name] = url + PREFIXES[name][0]
        elif name in NATIVE_ONLY:
            app = create_gemini_native_app(NATIVE_ONLY[name])
            urls[name] = stack.enter_context(serve_in_thread(app))
    return urls


def banner(settings: Settings, urls: dict[str, str], out: TextIO) -> None:
    """What is running and what to try, printed once the proxy listens."""
    base = f"http://{settings.server.host}:{settings.server.port}"
    lines = [
        "toolcall-guard: offline quick start (strict emulators; no keys, nothing leaves "
        "this machine)",
        "",
        f"  proxy      {base}/v1     (set OPENAI_BASE_URL to this)",
    ]
    if any(settings.upstreams[name].model_dump().get("anthropic_base_url") for name in urls):
        lines.append(f"  proxy      {base}        (set ANTHROPIC_BASE_URL to this: Claude Code)")
    if any(name in GEMINI_NATIVE for name in urls):
        lines.append(
            f"  proxy      {base}        (set GOOGLE_GEMINI_BASE_URL to this: gemini-cli, the "
            "GenAI SDKs)"
        )
    for name, url in urls.items():
        globs = ", ".join(settings.upstreams[name].models)
        globs = globs or _NATIVE_ROUTES.get(name) or f"path /{name}/v1/…"
        lines.append(f"  {name:<10} {url}  strict {name} emulator ({globs})")
    log = settings.repair_log.url
    where = "in memory, gone at exit" if log == DEMO_LOG_URL else masked_url(log)
    lines.append(f"  {'records':<10} {where}  (not the real repair log)")
    lines += [
        "",
        "Try:",
        f"  curl -s {base}/v1/chat/completions -H 'content-type: application/json' \\",
        '    -d \'{"model": "deepseek-chat", "messages": [{"role": "user", '
        '"content": "hi"}, {"role": "tool", "tool_call_id": "call_1", "content": "42"}]}\' -i',
        "  the Python example at the top of README.md",
        f"  {base}/ui  to see each repair side by side",
        "",
        "Ctrl-C stops the proxy and the emulators.",
    ]
    print("\n".join(lines), file=out, flush=True)


def serve_emulated(config: str | None, out: TextIO | None = None) -> int:
    """Run the emulators and the proxy in front of them until interrupted; the exit status.

    Raises :class:`~proxy.errors.ConfigError` for a bad config (``serve`` reports it).
    """
    from proxy.app import create_app
    from proxy.collector import tune_gc
    from proxy.logs import configure_logging
    from proxy.server import uvicorn_options

    out = out or sys.stdout
    settings = load_settings(config)
    with ExitStack() as stack:
        urls = emulator_urls(list(settings.upstreams), stack)
        if not urls:
            raise ConfigError(
                "--emulate: no configured upstream has an emulator; "
                f"emulated: {', '.join((*PROVIDERS, *NATIVE_ONLY))}"
            )
        settings = emulated(settings, config, urls)
        configure_logging(settings.server)
        announce_start(settings)
        app = create_app(settings)
        server = uvicorn.Server(uvicorn.Config(app, **uvicorn_options(settings)))
        tune_gc()
        announce = threading.Thread(target=_announce, args=(server, settings, urls, out))
        announce.start()
        try:
            server.run()
        except SystemExit as exc:  # uvicorn exits this way when start-up fails (port taken)
            return exc.code if isinstance(exc.code, int) else 1
        except KeyboardInterrupt:  # uvicorn re-raises the Ctrl-C it handled, once shut down
            pass
        finally:
            server.should_exit = True  # ends the announcing thread if start-up failed
            announce.join(START_TIMEOUT)
        return 0


def _announce(
    server: uvicorn.Server, settings: Settings, urls: dict[str, str], out: TextIO
) -> None:
    while not server.started and not server.should_exit:
        time.sleep(0.02)
    if server.started:
        banner(settings, urls, out)
