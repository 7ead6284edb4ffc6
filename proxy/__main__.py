"""Command line: ``toolcall-guard serve | check | emulate`` (also ``python -m proxy``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

PROVIDERS = ("openai", "deepseek", "gemini")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="toolcall-guard",
        description="Keep tool-calling histories valid in front of OpenAI-compatible providers.",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the proxy")
    serve.add_argument("--config", help="TOML config file (default: config/toolcall-guard.toml)")
    serve.add_argument("--host", help="bind address (default from config: 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default from config: 8780)")
    serve.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")

    check = commands.add_parser("check", help="lint a saved request body or messages array")
    check.add_argument(
        "file", help="JSON file with a request body or a messages array; - for stdin"
    )
    check.add_argument("--upstream", help="upstream whose policy applies (default: routing)")
    check.add_argument("--config", help="TOML config file")
    check.add_argument("--fix", action="store_true", help="print the repaired body")
    check.add_argument("--format", choices=("text", "json"), default="text")

    emulate = commands.add_parser("emulate", help="serve a strict fake provider")
    emulate.add_argument("--provider", choices=PROVIDERS, required=True)
    emulate.add_argument("--host", default="127.0.0.1")
    emulate.add_argument("--port", type=int, default=8790)
    emulate.add_argument("--pacing-ms", type=float, default=0.0, help="delay between SSE chunks")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "check":
        from proxy.check import run_check

        return run_check(args)
    if args.command == "emulate":
        import uvicorn

        from proxy.emulator import create_emulator_app

        app = create_emulator_app(args.provider, pacing_ms=args.pacing_ms)
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
        return 0
    from proxy.server import serve

    return serve(config=args.config, host=args.host, port=args.port, workers=args.workers)


if __name__ == "__main__":
    sys.exit(main())
