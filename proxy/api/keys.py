"""Where a request carries an API key, and which of those a request sent upstream keeps.

Every wire API the proxy relays takes its key in one of a few places (:data:`KEY_HEADERS` and
the ``key`` query parameter, :data:`KEY_QUERY`): OpenAI's ``Authorization: Bearer``,
Anthropic's ``x-api-key``, Azure's ``api-key``, Google's ``x-goog-api-key`` or ``?key=``. They
are one family: a request is relayed with at most the key its upstream should see.

- Where the proxy injects its own provider key, every carrier of the family is removed from the
  client's request and the proxy's key goes in the one its wire API's row names.
- A value the proxy accepts as a client key (``server.client_keys_env``) is the proxy's, never
  the upstream's: no carrier holding one is forwarded (the Anthropic SDK sends the same key as
  ``Authorization`` and ``x-api-key`` when both of its variables are set).

A new API that takes its key in one of these places needs nothing more; one that takes it
elsewhere adds that place here.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import unquote_to_bytes

#: Request headers that carry an API key, in every API family the proxy relays.
KEY_HEADERS: tuple[bytes, ...] = (b"authorization", b"x-api-key", b"api-key", b"x-goog-api-key")
#: The query parameter that carries one (Google's ``?key=``).
KEY_QUERY = b"key"


def key_of(name: bytes, value: bytes) -> bytes:
    """The key a carrier holds: ``Authorization: Bearer sk-…`` holds ``sk-…``."""
    if name == b"authorization":
        scheme, _, token = value.partition(b" ")
        return token.strip() if scheme.lower() == b"bearer" else value.strip()
    return value.strip()


def query_keys(query: bytes) -> list[bytes]:
    """The values of every ``key`` parameter of a query string, decoded as a server would."""
    pairs = (part.partition(b"=") for part in query.split(b"&"))
    return [_decoded(value) for name, _, value in pairs if _decoded(name) == KEY_QUERY]


def target_without_keys(target: str, dropped: Callable[[bytes], bool]) -> str:
    """An upstream request target (path and query) without the ``key`` parameters (however
    escaped) whose value ``dropped`` says go; the rest of it byte for byte."""
    path, mark, query = target.partition("?")
    if not mark or ("key" not in query and "%" not in query):  # nothing to look at
        return target
    kept = []
    for part in query.split("&"):
        name, _, value = part.partition("=")
        if _decoded(name.encode()) == KEY_QUERY and dropped(_decoded(value.encode())):
            continue
        kept.append(part)
    return path + "?" + "&".join(kept) if kept else path


def _decoded(text: bytes) -> bytes:
    return unquote_to_bytes(text.replace(b"+", b" "))
