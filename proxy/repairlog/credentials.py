"""Fields that hold a credential by their name are never stored, at any depth of a body.

A request body can carry credentials of its own, not only in headers: Anthropic's
``mcp_servers[].authorization_token``, a tool's ``headers.Authorization``, a client's extra
``api_key``. Every capture mode (``full`` included) drops such a field wherever it is, in the
received and forwarded bodies and in every attempt, before anything else reads them.

A name is a credential's when, lower-cased with ``-`` read as ``_``, it is one of
:data:`CREDENTIAL_NAMES` or ends in one of :data:`CREDENTIAL_SUFFIXES`. ``key`` alone counts at
the top level only (Google's ``?key=`` as a body field): deeper, ``key`` is a common property
name of tool schemas and arguments. Pure: no I/O.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

#: Names that hold a credential wherever they are.
CREDENTIAL_NAMES = frozenset(
    {
        *("api_key", "apikey", "x_api_key", "x_goog_api_key", "authorization"),
        *("proxy_authorization", "token", "secret", "password", "passwd", "cookie"),
        *("set_cookie", "bearer", "credentials", "private_key"),
    }
)
#: Endings of names that hold one (``authorization_token``, ``client_secret``, ``db_password``).
CREDENTIAL_SUFFIXES = ("_token", "_secret", "_password", "_api_key", "_apikey", "_private_key")
#: Names that hold one at the top level of a body only.
TOP_LEVEL_NAMES = frozenset({"key"})

#: A key of a compact JSON text that may name a credential: the cheap test before the walk
#: (an escaped quote inside a string never matches ``"name":``).
_MAYBE = re.compile(
    rb'"(?:[^"\\]*(?:token|secret|password|passwd|api.?key|apikey|cookie|private.?key)'
    rb'|authorization|proxy.authorization|bearer|credentials|key)":',
    re.IGNORECASE,
)


def is_credential(name: str, top: bool = False) -> bool:
    """Whether a field called ``name`` holds a credential (``top``: at a body's top level)."""
    norm = name.lower().replace("-", "_")
    if norm in CREDENTIAL_NAMES or norm.endswith(CREDENTIAL_SUFFIXES):
        return True
    return top and norm in TOP_LEVEL_NAMES


def without_credentials(body: Any) -> Any:
    """``body`` without any field :func:`is_credential` names, at any depth. The same object
    when there is none (a body is serialised once to tell; the walk runs only on a hit); else a
    copy along the paths that changed, the input never mutated."""
    if not isinstance(body, (dict, list)):
        return body
    try:
        text = orjson.dumps(body)
    except orjson.JSONEncodeError:  # not JSON: walked as it is
        text = b'"key":'
    if _MAYBE.search(text) is None:
        return body
    return _walk(body, True)


def _walk(value: Any, top: bool) -> Any:
    if isinstance(value, dict):
        return _walk_dict(value, top)
    if isinstance(value, list):
        items: list[Any] | None = None
        for i, item in enumerate(value):
            kept = _walk(item, False)
            if kept is not item:
                if items is None:
                    items = list(value)
                items[i] = kept
        return value if items is None else items
    return value


def _walk_dict(value: dict[Any, Any], top: bool) -> dict[Any, Any]:
    out: dict[Any, Any] | None = None
    for name, item in value.items():
        if isinstance(name, str) and is_credential(name, top):
            if out is None:
                out = dict(value)
            del out[name]
            continue
        kept = _walk(item, False)
        if kept is not item:
            if out is None:
                out = dict(value)
            out[name] = kept
    return value if out is None else out
