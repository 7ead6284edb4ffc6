"""Command line: ``toolcall-guard serve | check | emulate`` (also ``python -m proxy``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

PROVIDERS = (
    *("openai", "deepseek", "gemini"),
    *("kimi", "mistral", "groq", "xai", "qwen", "vllm", "ollama"),
    *("anthropic", "glm", "minimax"),
    *("vertex", "code-assist"),  # Gemini's native API only (gemini serves it beside chat)
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="toolcall-guard",
        description="Keep tool-calling histories valid in front of LLM providers, on chat "
        "completions, the Responses API, the Anthropic Messages API and Gemini's native API (POST "
        "/v1/chat/completions, /v1/responses, /v1/messages, /{version}/models/{model}"
        ":generateContent).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser(
        "serve",
        help="run the proxy",
        description="Run the proxy (default http://127.0.0.1:8780/v1).",
        epilog=SERVE_CONFIG_LAYERS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument(
        "--config",
        help="TOML config file (default: $TOOLCALL_GUARD_CONFIG, else config/toolcall-guard.toml "
        "in the working directory, else the one of the source checkout this runs from)",
    )
    serve.add_argument("--host", help="bind address (default from config: 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default from config: 8780)")
    serve.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    serve.add_argument(
        "--emulate",
        action="store_true",
        help="offline quick start: start strict emulators of the configured providers on free "
        "local ports and serve the proxy in front of them (no keys, no network); its records "
        "go to an in-memory log unless TOOLCALL_GUARD_REPAIR_LOG__URL names one",
    )

    check = commands.add_parser(
        "check",
        help="lint a saved request body or messages array",
        description="Check a saved request body or messages array against a policy, offline.",
        epilog=CHECK_EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    check.add_argument(
        "file", help="JSON file with a request body or a messages array; - for stdin"
    )
    check.add_argument(
        "--upstream",
        help="an upstream of the config (its policy applies), a [policies.NAME] table or a "
        "preset (default: the upstream routing picks for the body's model)",
    )
    check.add_argument(
        "--model",
        help="the model the history is for (default: the body's model): rules that hold for "
        "some models only (DeepSeek thinking mode, Gemini 3 signatures) need it",
    )
    check.add_argument(
        "--api",
        help="the wire API the body is for: chat, responses, messages or gemini (default: "
        "recognised by its shape; a bare messages array without chat or Anthropic signs is read "
        "as chat)",
    )
    check.add_argument("--config", help="TOML config file")
    check.add_argument("--fix", action="store_true", help="print the repaired body")
    check.add_argument(
        "--format", choices=("text", "json"), default="text", help="report format (default text)"
    )

    emulate = commands.add_parser(
        "emulate",
        help="serve a strict fake provider",
        description="Serve a strict fake provider that answers like the real one (status, error "
        "shape and text), to find an agent's protocol bugs offline without spending tokens.",
    )
    emulate.add_argument(
        "--provider", choices=PROVIDERS, required=True, help="which provider to emulate"
    )
    emulate.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    emulate.add_argument("--port", type=int, default=8790, help="port (default 8790)")
    emulate.add_argument(
        "--pacing-ms",
        type=float,
        default=0.0,
        help="delay between the chunks of streamed answers, in ms (default 0)",
    )
    return parser


SERVE_CONFIG_LAYERS = """configuration, highest first:
  1. these flags
  2. the environment: TOOLCALL_GUARD_<SECTION>__<KEY>, nested with __
     (TOOLCALL_GUARD_SERVER__PORT=9000, TOOLCALL_GUARD_REPAIR_LOG__URL=...,
     TOOLCALL_GUARD_UPSTREAMS__DEEPSEEK__BASE_URL=...); provider keys in the variables the
     upstreams name (OPENAI_API_KEY...)
  3. the TOML file: --config, else $TOOLCALL_GUARD_CONFIG, else config/toolcall-guard.toml
  4. built-in defaults
The first log line names the config file read (or the paths tried), the repair log and the
upstreams."""

CHECK_EXIT_CODES = """exit codes:
  0  clean: no rule fired
  1  findings, all repaired (or only warned about); --fix prints the repaired body
  2  rejected: no repair can save the history
  3  unreadable input or configuration (one line on stderr)"""


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("toolcall-guard")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "check":
        from proxy.check import run_check

        return run_check(args)
    if args.command == "emulate":
        return _emulate(args)
    if args.emulate:
        return _serve_emulated(args)
    from proxy.server import serve

    return serve(config=args.config, host=args.host, port=args.port, workers=args.workers)


#: The variable that points gemini-cli (and the GenAI SDKs) at each native Gemini emulator.
_GEMINI_BASE_URLS = {
    "gemini": "GOOGLE_GEMINI_BASE_URL",
    "vertex": "GOOGLE_VERTEX_BASE_URL",
    "code-assist": "CODE_ASSIST_ENDPOINT",
}


def _emulate(args: argparse.Namespace) -> int:
    import uvicorn

    from proxy.emulator import create_emulator_app
    from proxy.emulator.app import PREFIXES
    from proxy.emulator.gemini_native import create_gemini_native_app

    root = f"http://{args.host}:{args.port}"
    app: object
    if args.provider in PREFIXES:
        app = create_emulator_app(args.provider, pacing_ms=args.pacing_ms)
        print(f"emulating {args.provider} at {root}{PREFIXES[args.provider][0]}", flush=True)
        _announce_messages(args)
    else:
        app = create_gemini_native_app(args.provider, pacing_ms=args.pacing_ms)
        print(f"emulating {args.provider} (Gemini's native API) at {root}", flush=True)
    variable = _GEMINI_BASE_URLS.get(args.provider)
    if variable is not None:
        print(f"Gemini native API at {root} ({variable}={root})", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


def _announce_messages(args: argparse.Namespace) -> None:
    from proxy.emulator.messages import MESSAGES_PREFIXES

    if args.provider in MESSAGES_PREFIXES:
        root = f"http://{args.host}:{args.port}{MESSAGES_PREFIXES[args.provider][0][:-3]}"
        print(f"Messages API at {root}/v1/messages (ANTHROPIC_BASE_URL={root})", flush=True)


def _serve_emulated(args: argparse.Namespace) -> int:
    import os

    from proxy.errors import ConfigError
    from proxy.quickstart import serve_emulated

    if args.workers != 1:
        print("toolcall-guard: --emulate runs in one process; drop --workers", file=sys.stderr)
        return 2
    if args.host is not None:  # the same overrides serve applies, read by load_settings
        os.environ["TOOLCALL_GUARD_SERVER__HOST"] = args.host
    if args.port is not None:
        os.environ["TOOLCALL_GUARD_SERVER__PORT"] = str(args.port)
    try:
        return serve_emulated(args.config)
    except ConfigError as exc:
        print(f"toolcall-guard: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
