"""Whose key goes where: the client keys a request must present, the provider key the proxy
injects, and which of the client's key carriers (:mod:`proxy.api.keys`) an upstream gets."""

from __future__ import annotations

from proxy.api.keys import key_of, query_keys, target_without_keys
from proxy.api.learned import client_digests
from proxy.api.scrub import readable_codings
from proxy.api.state import RequestState
from proxy.core.wire import Wire
from proxy.errors import Unauthorized
from proxy.relay.base import RawHeaders
from proxy.settings import Settings


class Keyring:
    """The keys of one deployment, read from the environment once, at start."""

    def __init__(self, settings: Settings) -> None:
        self.keys = {
            name: key
            for name, u in settings.upstreams.items()
            if (key := settings.secret(u.api_key_env))
        }
        #: The header an upstream takes its key in, where not the API's usual one (Vertex).
        self.key_headers = {n: u.key_header for n, u in settings.upstreams.items() if u.key_header}
        #: The configured client keys, each with its reporter name (a digest, never the key).
        self.client_keys = client_digests(settings.client_keys())

    def authorize(self, state: RequestState, wire: Wire) -> None:
        """401 unless the client sent a client key (when they are configured): as
        ``Authorization: Bearer``, or in the row's key header (``x-api-key``). The key used is
        for this proxy: it is never forwarded."""
        if not self.client_keys:
            return
        scheme, _, token = (state.key(b"authorization") or b"").partition(b" ")
        if scheme.lower() == b"bearer" and token.strip() in self.client_keys:
            state.authorized(self.client_keys[token.strip()])
            return
        header = wire.key_header.encode()
        carried = [] if header == b"authorization" else [state.key(header)]
        if header == b"x-goog-api-key":  # Google's clients send it as ?key= just as well
            carried += query_keys(state.scope["query_string"])
        for value in carried:
            if value is not None and key_of(header, value) in self.client_keys:
                state.authorized(self.client_keys[key_of(header, value)])
                return
        where = "'Authorization: Bearer <key>'"
        if header != b"authorization":
            where += f" or '{wire.key_header}: <key>'"
        if header == b"x-goog-api-key":
            where += " or '?key=<key>'"
        raise Unauthorized(
            f"This proxy needs a client key: send {where} with one of the keys configured in "
            "the variable named by server.client_keys_env."
        )

    def injected(self, upstream: str, wire: Wire) -> bytes | None:
        """The value of the key header the proxy sends ``upstream`` for ``wire``, if any."""
        key = self.keys.get(upstream)
        return None if key is None else wire.key_value(key, self.key_headers.get(upstream))

    def upstream_headers(self, state: RequestState, upstream: str, wire: Wire) -> RawHeaders:
        """The client's headers, with the keys :mod:`proxy.api.keys` says the upstream gets."""
        headers = state.forward
        key = self.injected(upstream, wire)
        if key is not None:  # the proxy's key, as the row says; every one of the client's goes
            # The answer is read for the key as it streams: in an encoding the proxy reads.
            for i, (name, value) in enumerate(headers):
                if name == b"accept-encoding":
                    headers[i] = (name, readable_codings(value))
            header = self.key_headers.get(upstream) or wire.key_header
            headers.append((header.encode(), key))
            return headers
        for name, value in state.keys:
            # With client keys configured the client's Authorization is a key for this proxy,
            # not for the upstream (which then answers 401); so is any client key, wherever.
            if self.client_keys and (
                name == b"authorization" or key_of(name, value) in self.client_keys
            ):
                continue
            headers.append((name, value))
        return headers

    def without_query_keys(self, url: str, injected: bool) -> str:
        """``url`` without the ``key`` query parameters the upstream must not get: every one
        when the proxy injects its key, a client key's always."""
        if injected:
            return target_without_keys(url, lambda _: True)
        if self.client_keys:
            return target_without_keys(url, lambda value: value.strip() in self.client_keys)
        return url
