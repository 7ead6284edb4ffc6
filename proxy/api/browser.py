"""No web page can drive the proxy: ``Host``, ``Origin`` and the content type, checked in front.

A browser the operator uses can reach a proxy on loopback: a page can rebind its own name to
127.0.0.1 (DNS rebinding: same origin to the browser, so it reads ``/repairs``), or post a
"simple" cross-origin request (``text/plain``, no preflight) that the proxy would forward with
the provider key it injects. Every request passes :meth:`BrowserGuard.refusal` first, before
its body is read and before any key is checked:

- ``Host`` on a loopback bind must be ``localhost`` or a loopback literal (``127.0.0.1``,
  ``127.0.0.2``, ``[::1]``; any port), or a name in ``server.allowed_hosts``; beyond loopback,
  one of those when the list is set. Any other name can be rebound by a page, a dotless one
  too (a search domain or a local resolver turns ``rebind`` into a name the page controls).
- A browser's cross-origin request is refused: an ``Origin`` that is neither the request's own
  (scheme aside) nor in ``server.allowed_origins``, or ``Sec-Fetch-Site: cross-site`` without
  one (a plain link followed to a ``GET`` page, a navigation, still opens).
- A browser's ``POST`` must say ``Content-Type: application/json`` (the form-like types need no
  preflight); clients that are not browsers (no ``Origin``, no ``Sec-Fetch-Site``) keep
  sending what they send today, the checked APIs parsing the body as JSON whatever its type.
- ``OPTIONS`` is answered here, never relayed: a preflight from an allowed origin gets the
  CORS headers, any other ``OPTIONS`` a plain ``204`` with ``Allow``.

Requests from ``server.allowed_origins`` get ``Access-Control-Allow-Origin`` on their answer;
the upstream's own ``access-control-*`` headers never reach a client (:mod:`proxy.relay.base`).
"""

from __future__ import annotations

import ipaddress

from starlette.types import Message, Scope, Send

from proxy.errors import BrowserRefused, ProxyError
from proxy.relay.base import RawHeaders
from proxy.settings import ServerSettings

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "[::1]"})
#: Request bodies a browser sends cross-origin without asking first (the CORS "simple" types).
_JSON_TYPES = (b"application/json",)
#: Distinct Host values remembered with their decision.
_SEEN = 256
#: Probes name the pod by its address (Kubernetes), and their answers tell a page nothing.
_PROBES = frozenset({"/healthz", "/readyz"})
_METHODS = b"GET, HEAD, POST, DELETE, OPTIONS"
_EXPOSED = (
    b"x-request-id, x-toolcall-guard-outcome, x-toolcall-guard-rules, x-toolcall-guard-record"
)


class BrowserGuard:
    """The checks of the module docstring, with the allow-lists read once from the settings."""

    def __init__(self, server: ServerSettings) -> None:
        hosts = {host.strip().lower() for host in server.allowed_hosts if host.strip()}
        self.any_host = "*" in hosts or (not hosts and not server.is_loopback())
        self.hosts = frozenset(hosts | LOOPBACK_NAMES)
        self.origins = frozenset(o.strip().lower().rstrip("/") for o in server.allowed_origins)
        self.seen: dict[bytes, bool] = {}  # Host values already decided

    def refusal(self, scope: Scope) -> ProxyError | None:
        """Why this request is refused, or None; reads the headers only."""
        host, origin, site, content_type = _browser_headers(scope)
        if host is not None and not self._host_allowed(host) and scope["path"] not in _PROBES:
            return _host_refused(host)
        if origin is not None and not self.same_or_allowed(origin, host):
            return _origin_refused(origin)
        if origin is None and _cross_site_fetch(site, scope):
            return _cross_site()
        browser = origin is not None or site is not None
        if browser and scope["method"] == "POST" and not _is_json(content_type):
            return BrowserRefused(
                "A browser's POST must be sent with 'Content-Type: application/json'.",
                code="unsupported_content_type",
                status=415,
            )
        return None

    def _host_allowed(self, value: bytes) -> bool:
        known = self.seen.get(value)
        if known is not None:
            return known
        name = host_name(value)
        allowed = self.any_host or name in self.hosts or _loopback_literal(name)
        if len(self.seen) < _SEEN:  # clients send few; a flood of names is decided each time
            self.seen[value] = allowed
        return allowed

    def same_or_allowed(self, origin: bytes, host: bytes | None) -> bool:
        """Whether ``origin`` is the request's own (``scheme://`` + its ``Host``) or allowed."""
        text = origin.decode("latin-1").strip().lower()
        if text in self.origins or "*" in self.origins:
            return True
        own = text.partition("://")[2]
        return host is not None and own == host.decode("latin-1").strip().lower()

    def allowed_origin(self, scope: Scope) -> bytes | None:
        """The request's ``Origin`` when it is in ``server.allowed_origins`` (CORS applies)."""
        if not self.origins:
            return None
        for name, value in scope["headers"]:
            if name == b"origin":
                text = value.decode("latin-1").strip().lower()
                return value if text in self.origins or "*" in self.origins else None
        return None


def _loopback_literal(name: str) -> bool:
    """A loopback address written as one (``127.0.0.2``, ``[::1]``): no DNS answer is asked,
    so no page can rebind it. Names are not: a single-label one (``rebind``) resolves through
    search domains and local resolvers a page can reach, and ``*.localhost`` is only as safe as
    the resolver that honours RFC 6761."""
    try:
        return ipaddress.ip_address(name.strip("[]")).is_loopback
    except ValueError:
        return False


#: The headers :meth:`BrowserGuard.refusal` reads, by their slot in what _browser_headers returns.
_READ = {b"host": 0, b"origin": 1, b"sec-fetch-site": 2, b"content-type": 3}


def _browser_headers(scope: Scope) -> list[bytes | None]:
    """``Host``, ``Origin``, ``Sec-Fetch-Site`` and ``Content-Type``, if sent (one dict lookup
    per header: this runs on every request)."""
    found: list[bytes | None] = [None, None, None, None]
    slot = _READ.get
    for name, value in scope["headers"]:
        i = slot(name)
        if i is not None:
            found[i] = value
    return found


def host_name(value: bytes) -> str:
    """``localhost`` of ``localhost:8780``, ``[::1]`` of ``[::1]:8780``, lower-cased."""
    text = value.decode("latin-1").strip().lower()
    if text.startswith("["):
        return text[: text.find("]") + 1] if "]" in text else text
    return text.rpartition(":")[0] if ":" in text else text


def _cross_site_fetch(site: bytes | None, scope: Scope) -> bool:
    """``Sec-Fetch-Site: cross-site`` on anything but a ``GET`` navigation."""
    return site is not None and site.lower() == b"cross-site" and not _navigation(scope)


def _navigation(scope: Scope) -> bool:
    """A top-level ``GET`` navigation: its answer is shown to the user, never to the page."""
    if scope["method"] not in ("GET", "HEAD"):
        return False
    return any(n == b"sec-fetch-mode" and v.lower() == b"navigate" for n, v in scope["headers"])


def _is_json(content_type: bytes | None) -> bool:
    if content_type is None:
        return False
    media = content_type.partition(b";")[0].strip().lower()
    return media in _JSON_TYPES or media.endswith(b"+json")


def _host_refused(host: bytes) -> BrowserRefused:
    return BrowserRefused(
        f"Host {host.decode('latin-1')[:100]!r} is not served here: on a loopback bind only "
        "localhost and loopback addresses (127.0.0.1, [::1]) are, plus the names in "
        "server.allowed_hosts (any other name is how DNS rebinding reaches a local proxy).",
        code="host_not_allowed",
    )


def _cross_site() -> BrowserRefused:
    return BrowserRefused(
        "Cross-site requests from a browser are not accepted (Sec-Fetch-Site: cross-site); "
        "allow the page's origin in server.allowed_origins.",
        code="cross_site_request",
    )


def _origin_refused(origin: bytes) -> BrowserRefused:
    return BrowserRefused(
        f"Requests from the web origin {origin.decode('latin-1')[:100]!r} are not accepted; "
        "allow it in server.allowed_origins if a page there should use this proxy.",
        code="origin_not_allowed",
    )


async def answer_options(send: Send, scope: Scope, origin: bytes | None) -> None:
    """``204`` to any ``OPTIONS``, with CORS headers for an allowed ``origin``."""
    headers = preflight_headers(origin, scope)
    await send({"type": "http.response.start", "status": 204, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


def preflight_headers(origin: bytes | None, scope: Scope) -> RawHeaders:
    """The answer to ``OPTIONS``: ``Allow``, and CORS headers for an allowed ``origin``."""
    headers: RawHeaders = [(b"allow", _METHODS)]
    if origin is None:
        return headers
    requested = b""
    for name, value in scope["headers"]:
        if name == b"access-control-request-headers":
            requested = value
    headers += [
        (b"access-control-allow-origin", origin),
        (b"access-control-allow-methods", _METHODS),
        (b"access-control-allow-headers", requested or b"authorization, content-type"),
        (b"access-control-max-age", b"600"),
        (b"vary", b"origin"),
    ]
    return headers


def with_cors(send: Send, origin: bytes) -> Send:
    """``send`` adding ``Access-Control-Allow-Origin`` for an allowed origin to the answer."""

    async def cors(message: Message) -> None:
        if message["type"] == "http.response.start":
            extra = [
                (b"access-control-allow-origin", origin),
                (b"access-control-expose-headers", _EXPOSED),
                (b"vary", b"origin"),
            ]
            message = {**message, "headers": [*message.get("headers", []), *extra]}
        await send(message)

    return cors
