"""One entry point over the validators, and the providers' canned non-validation errors.

The second-tier emulators (`SECOND_TIER`: seven, plus the chat endpoints of Anthropic, GLM and
MiniMax from `chat_compat`) bring their canned texts as a `tier2.Dialect`.

`validate(provider, body)` never raises on a JSON value: every provider validator type-checks
before it indexes, and the semantic passes only run on schema-valid messages.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from proxy.emulator import deepseek, gemini, groq, kimi, mistral, ollama, openai, qwen, vllm, xai
from proxy.emulator.chat_compat import ANTHROPIC, GLM, MINIMAX
from proxy.emulator.common import (
    Rejection,
    deepseek_rejection,
    gemini_rejection,
    openai_rejection,
)
from proxy.emulator.tier2 import Dialect

Validator = Callable[[Any, bytes | None], Rejection | None]

VALIDATORS: dict[str, Validator] = {
    "openai": openai.validate,
    "deepseek": deepseek.validate,
    "gemini": gemini.validate,
}
SECOND_TIER: dict[str, Dialect] = {
    "kimi": kimi.DIALECT,
    "mistral": mistral.DIALECT,
    "groq": groq.DIALECT,
    "xai": xai.DIALECT,
    "qwen": qwen.DIALECT,
    "vllm": vllm.DIALECT,
    "ollama": ollama.DIALECT,
    "anthropic": ANTHROPIC,
    "glm": GLM,
    "minimax": MINIMAX,
}
VALIDATORS.update((name, dialect.validate) for name, dialect in SECOND_TIER.items())
PROVIDERS = tuple(VALIDATORS)

_OPENAI_FORCED = {
    401: (
        "Incorrect API key provided: sk-emul***ator. You can find your API key at "
        "https://platform.openai.com/account/api-keys.",
        "invalid_request_error",
        "invalid_api_key",
    ),
    429: (
        "Rate limit reached for requests per min (RPM). Please try again in 1s.",
        "requests",
        "rate_limit_exceeded",
    ),
    500: (
        "The server had an error while processing your request. Sorry about that!",
        "server_error",
        None,
    ),
    503: ("The engine is currently overloaded, please try again later.", "server_error", None),
}
# DeepSeek's "Error Codes" page names each status
_DEEPSEEK_FORCED = {
    400: "Invalid Format",
    401: "Authentication Fails",
    402: "Insufficient Balance",
    422: "Invalid Parameters",
    429: "Rate Limit Reached",
    500: "Server Error",
    503: "Server Overloaded",
}
_GEMINI_FORCED = {
    429: "Resource has been exhausted (e.g. check quota).",
    500: "An internal error has occurred. Please retry or report in "
    "https://developers.generativeai.google/guide/troubleshooting",
    503: "The model is overloaded. Please try again later.",
}


def validate(provider: str, body: Any, *, raw: bytes | None = None) -> Rejection | None:
    """The provider's first error for this parsed request body, or None if it is accepted.

    `raw` (the request bytes) only sharpens DeepSeek's ``at line L column C`` positions;
    without it they are computed on the compact serialization of `body`.
    """
    try:
        check = VALIDATORS[provider]
    except KeyError:
        raise ValueError(f"unknown provider {provider!r}; expected one of {PROVIDERS}") from None
    return check(body, raw)


def not_json(provider: str, line: int = 1, column: int = 1) -> Rejection:
    """The provider's 400 for a body that is not JSON (`line`/`column` of the parse error)."""
    if provider in SECOND_TIER:
        dialect = SECOND_TIER[provider]
        return dialect.reject(f"{dialect.prefix}-json", dialect.not_json, 400)
    if provider == "openai":
        return openai.not_json()
    if provider == "deepseek":
        return deepseek.not_json(line, column)
    return gemini.not_json()


#: OpenAI's 400 for a chat body without ``model`` (``param`` and ``code`` null), as its API
#: answers it in the wild (e.g. danielmiessler/Fabric#239, lss233/kirara-ai#800). The other
#: providers' texts are not in the evidence: they get the same wording in their own error shape
#: (our wording there, not theirs).
MISSING_MODEL = "you must provide a model parameter"


def missing_model(provider: str, body: Any) -> Rejection | None:
    """The 400 for a chat body whose ``model`` is missing or empty; None when it names one."""
    if not isinstance(body, dict) or body.get("model") not in (None, ""):
        return None
    if provider in SECOND_TIER:
        dialect = SECOND_TIER[provider]
        return dialect.reject(f"{dialect.prefix}-model", MISSING_MODEL, 400)
    if provider == "openai":
        return openai_rejection("O-model", MISSING_MODEL)
    if provider == "deepseek":
        return deepseek_rejection("D-model", MISSING_MODEL)
    return gemini_rejection("G-model", MISSING_MODEL)


def not_found(provider: str, method: str, path: str) -> Rejection:
    """The provider's 404 for an unknown path."""
    if provider in SECOND_TIER:
        return SECOND_TIER[provider].path_rejection(method, path)
    if provider == "openai":
        return openai_rejection("O-404", f"Invalid URL ({method} {path})", status=404)
    if provider == "deepseek":
        return deepseek_rejection("D-404", "Not Found", status=404, code=None)
    return gemini_rejection("G-404", "Requested entity was not found.", status=404)


def forced(provider: str, status: int) -> Rejection:
    """The error a provider sends with this status (the ``x-emulator-status`` knob)."""
    if provider in SECOND_TIER:
        return SECOND_TIER[provider].forced_rejection(status)
    rule = f"{provider[0].upper()}-{status}"
    if provider == "openai":
        default = ("Emulated error.", _openai_type(status), None)
        message, type_, code = _OPENAI_FORCED.get(status, default)
        return openai_rejection(rule, message, status=status, type_=type_, code=code)
    if provider == "deepseek":
        message = _DEEPSEEK_FORCED.get(status, "Emulated error")
        return deepseek_rejection(rule, message, status=status, type_=_openai_type(status))
    message = _GEMINI_FORCED.get(status, "Emulated error.")
    return gemini_rejection(rule, message, status=status)


def _openai_type(status: int) -> str:
    return "server_error" if status >= 500 else "invalid_request_error"
