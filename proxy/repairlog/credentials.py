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

#: How every credential's name ends, as a key of compact JSON lower-cased: the test before the
#: walk (one pass in C over the serialised body; a quote escaped in a string never matches).
_ENDING = re.compile(
    rb'(?:key|token|secret|passw(?:or)?d|cookie|authorization|bearer|credentials)":'
)
#: Names already decided (a body's keys repeat: role, content, type…), bounded.
_DECIDED: dict[str, bool] = {}
_DECIDED_MAX = 4096


def is_credential(name: str, top: bool = False) -> bool:
    """Whether a field called ``name`` holds a credential (``top``: at a body's top level)."""
    norm = name.lower().replace("-", "_")
    if norm in CREDENTIAL_NAMES or norm.endswith(CREDENTIAL_SUFFIXES):
        return True
    return top and norm in TOP_LEVEL_NAMES


def without_credentials(body: Any) -> Any:
    """``body`` without any field :func:`is_credential` names, at any depth. The same object
    when there is none; else a copy along the paths that changed, the input never mutated.
    The body is serialised once to tell (in C); only a body that may hold one is walked."""
    if not isinstance(body, (dict, list)):
        return body
    try:
        maybe = _ENDING.search(orjson.dumps(body).lower()) is not None
    except orjson.JSONEncodeError:  # not JSON (no key a wire API sent): walked as it is
        maybe = True
    return _walk(body, True) if maybe else body


def _walk(value: Any, top: bool) -> Any:
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value  # the common leaves, told apart first
    if isinstance(value, dict):
        return _walk_dict(value, top)
    if isinstance(value, list):
        return _walk_list(value)
    return value


def _named_credential(name: Any, top: bool) -> bool:
    if top or type(name) is not str:
        return isinstance(name, str) and is_credential(name, top)
    decided = _DECIDED.get(name)
    if decided is None:
        decided = is_credential(name)
        if len(_DECIDED) < _DECIDED_MAX:
            _DECIDED[name] = decided
    return decided


def _walk_list(value: list[Any]) -> list[Any]:
    out: list[Any] | None = None
    for i, item in enumerate(value):
        kept = _walk(item, False)
        if kept is not item:
            out = out if out is not None else list(value)
            out[i] = kept
    return value if out is None else out


def _walk_dict(value: dict[Any, Any], top: bool) -> dict[Any, Any]:
    out: dict[Any, Any] | None = None
    for name, item in value.items():
        credential = _named_credential(name, top)
        kept = None if credential else _walk(item, False)
        if credential or kept is not item:
            out = out if out is not None else dict(value)
            if credential:
                del out[name]
            else:
                out[name] = kept
    return value if out is None else out
