"""The relay: the proxy's two sides of every exchange.

- :mod:`.base`: the :class:`~proxy.relay.base.Relay` interface and the header rules.
- :mod:`.aiohttp_engine` (production) and :mod:`.httpx_engine` (an injected httpx transport).
- :mod:`.asgi`: the client side in raw ASGI (read the body, answer, relay a stream).
- :mod:`.exchange`: one request's headers sorted on the way in and on the way out.
"""
