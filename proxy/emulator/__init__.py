"""Strict fake providers: OpenAI, DeepSeek and Gemini (OpenAI-compatible endpoint).

They validate ``messages`` the way the real providers do and answer with the real status
codes, error JSON shapes and error texts of /work/shared/provider-rules.md (rows named in each
validator's docstring: `openai`/`openai_schema`, `deepseek`/`deepseek_schema`, `gemini`).
They are written independently of the sanitizer (nothing here imports `proxy.core.chat.messages`,
`proxy.core.chat.rules` or `proxy.core.policy`; a test checks it), so they can judge its output.

- `validate(provider, body)` → `Rejection` (status, exact body bytes, provider-rules row id,
  message) or None. It never raises on a JSON value; the first violation in the provider's
  own order wins (documented per provider).
- `create_emulator_app(provider, pacing_ms=, chunks=, received=)` → raw ASGI app serving
  ``POST {prefix}/chat/completions`` and ``GET {prefix}/models`` (see `app` for the test knobs).
- `serve(provider, host, port, **kw)` runs it under uvicorn (``toolcall-guard emulate``).
- `create_gemini_native_app(endpoint, …)` → the strict emulators of Gemini's native API
  (``aistudio``, ``vertex``, ``code-assist``; `gemini_native`); the ``gemini`` app above also
  serves AI Studio's native routes.

Rule ids besides the rows: ``O-schema``/``D-schema``/``G-schema`` (schema errors no row
covers), ``O-json``/``D-json``/``G-json`` (body not JSON or not an object), ``O-404``…
(unknown path) and ``O-429``… (forced by the ``x-emulator-status`` header).
"""

from __future__ import annotations

from typing import Any

from proxy.emulator.app import EmulatorApp, create_emulator_app
from proxy.emulator.asgi import ReceivedRequest
from proxy.emulator.common import Rejection
from proxy.emulator.gemini_native import create_gemini_native_app
from proxy.emulator.validators import PROVIDERS, validate

__all__ = [
    "PROVIDERS",
    "EmulatorApp",
    "ReceivedRequest",
    "Rejection",
    "create_emulator_app",
    "create_gemini_native_app",
    "serve",
    "validate",
]


def serve(provider: str, host: str = "127.0.0.1", port: int = 8790, **kw: Any) -> None:
    """Run the `provider` emulator under uvicorn until interrupted (`kw` go to the app)."""
    import uvicorn

    app = create_emulator_app(provider, **kw)
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
