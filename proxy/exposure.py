"""No open key relay: a proxy reachable from the network that injects a provider key must know
its clients.

Bound beyond loopback, with a provider key in the environment (an upstream's ``api_key_env``)
and no client keys (``server.client_keys_env``), the proxy would spend that key for anyone who
can reach its port. ``serve`` refuses to start so unless ``server.allow_open_relay = true``
says it is meant (a network only trusted clients reach), and then says so as it starts.
"""

from __future__ import annotations

from proxy.errors import ConfigError
from proxy.settings import Settings


def keyed_upstreams(settings: Settings) -> list[str]:
    """The upstreams whose key the proxy injects (their ``api_key_env`` is set)."""
    return [name for name, u in settings.upstreams.items() if settings.secret(u.api_key_env)]


def open_relay(settings: Settings) -> str | None:
    """What an open relay would spend, or None when this config is not one (see the module)."""
    keyed = keyed_upstreams(settings)
    if settings.server.is_loopback() or not keyed or settings.client_keys():
        return None
    variables = ", ".join(str(settings.upstreams[name].api_key_env) for name in keyed)
    return (
        f"bound to {settings.server.host} (beyond loopback) with provider keys in the "
        f"environment ({variables}: upstreams {', '.join(keyed)}) and no client keys "
        f"({settings.server.client_keys_env} is empty)"
    )


def check_open_relay(settings: Settings) -> str | None:
    """Raise :class:`ConfigError` for an open relay not opted into; the start-up warning for
    one that is, else None."""
    relay = open_relay(settings)
    if relay is None:
        return None
    if not settings.server.allow_open_relay:
        raise ConfigError(
            f"refusing to start as an open key relay: {relay}, so anyone who reaches the port "
            f"would use those keys. Set client keys in {settings.server.client_keys_env} "
            "(server.client_keys_env), bind to loopback (server.host), or set "
            "server.allow_open_relay = true if only trusted clients can reach this address."
        )
    return f"open key relay (server.allow_open_relay = true): {relay}"
