"""Pick the upstream for a request: path prefix > header > model glob > default.

``/v1/<rest>`` and ``/<upstream>/v1/<rest>`` are the proxied paths; ``<rest>`` is appended to
the upstream's ``base_url`` (which ends with its own version segment, e.g. ``/v1`` or
``/v1beta/openai``).
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any

from proxy.core.wire import Wire, native_target
from proxy.errors import ApiNotServed, BadRequestBody, UnknownUpstream
from proxy.settings import Settings

#: Distinct models remembered per router; beyond it the cache starts over (clients send few).
#: With models at most ``server.max_model_length`` long, the cache is bounded in bytes too.
_CACHE_SIZE = 1024
#: How much of a client's value an error message quotes.
_QUOTED = 64


def check_model(model: Any, limit: int) -> None:
    """400 for a ``model`` longer than ``limit`` (``server.max_model_length``) characters: the
    model is routed (the route cached), logged and recorded, so a client must not choose how
    large it is."""
    if type(model) is str and len(model) > limit:
        raise BadRequestBody(
            f"'model' is {len(model)} characters long; this proxy accepts at most {limit}"
            " (server.max_model_length).",
            param="model",
        )


def clipped(value: str, limit: int = _QUOTED) -> str:
    """``value`` cut to ``limit`` characters, for an error message or a log line."""
    return value if len(value) <= limit else value[:limit] + "…"


Target = tuple[str | None, str, Wire | None]


def split_target(path: str) -> Target | None:
    """:func:`split_path`'s prefix and rest, and the row of an API whose paths carry their own
    version (Gemini's native API: the rest then keeps its version), None for a path the proxy
    does not relay. The OpenAI family's ``/v1/…`` paths are told apart without a pattern."""
    if not path.startswith("/v1/") or ":" in path or path.startswith(_NATIVE_V1):
        native = native_target(path)
        if native is not None:
            return native[1], native[2], native[0]
    found = split_path(path)
    return None if found is None else (*found, None)


#: ``/v1/`` paths of Vertex resources (Gemini's native API on Google Cloud).
_NATIVE_V1 = ("/v1/projects/", "/v1/publishers/")


def split_path(path: str) -> tuple[str | None, str] | None:
    """``("openai", "/chat/completions")`` for ``/openai/v1/chat/completions``, ``(None, …)`` for
    ``/v1/…``, None for a path the proxy does not relay."""
    if path.startswith("/v1/"):
        return None, path[3:]
    slash = path.find("/", 1)
    if slash > 1 and path.startswith("/v1/", slash):
        return path[1:slash], path[slash + 3 :]
    return None


def upstream_for_model(settings: Settings, model: Any) -> str | None:
    """The first upstream whose ``models`` globs match ``model``, else ``routing.default``."""
    if type(model) is str:
        for name, upstream in settings.upstreams.items():
            if any(fnmatchcase(model, pattern) for pattern in upstream.models):
                return name
    return settings.routing.default


class Router:
    """Routing with the settings' tables precomputed and model lookups cached."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._names = frozenset(settings.upstreams)
        self._names_in_order = tuple(settings.upstreams)
        self._max_model = settings.server.max_model_length
        self._by_model: dict[str, str | None] = {}
        dialects: dict[str, list[str]] = {}
        for name in settings.upstreams:
            dialects.setdefault(settings.policy_for(name).dialect, []).append(name)
        #: The upstream of each dialect only one upstream has (Vertex, Code Assist paths).
        self._by_dialect = {d: names[0] for d, names in dialects.items() if len(names) == 1}

    def by_prefix(self, prefix: str) -> str:
        """The upstream a path prefix names; 404 ``unknown_upstream`` when there is none."""
        if prefix in self._names:
            return prefix
        raise UnknownUpstream(
            f"No upstream is named {clipped(prefix)!r} (path /{clipped(prefix)}/v1/…); "
            f"configured: {', '.join(sorted(self._names))}.",
            status=404,
        )

    def pick(
        self, header: str | None, model: Any, endpoint: str = "", base_key: str = "base_url"
    ) -> str:
        """The upstream named by the header, else the one upstream whose dialect is the kind
        of ``endpoint`` the path's shape says (a Vertex or Code Assist path), else matched by
        ``model``, else the default. A request that names no model (Gemini's model listing)
        and whose default serves no ``base_key`` goes to the first upstream that does."""
        if header is None and endpoint in self._by_dialect:
            return self._by_dialect[endpoint]
        if header is not None:
            if header in self._names:
                return header
            raise UnknownUpstream(
                f"x-toolcall-guard-upstream names no configured upstream: {clipped(header)!r}; "
                f"configured: {', '.join(sorted(self._names))}."
            )
        check_model(model, self._max_model)
        name = self._model_upstream(model)
        if model is None and name is not None and self._serves(name, base_key) is None:
            name = next((n for n in self._names_in_order if self._serves(n, base_key)), name)
        if name is None:
            shown = clipped(model) if type(model) is str else model
            raise UnknownUpstream(
                f"No upstream matches model {shown!r} and routing.default is not set; use "
                "/<upstream>/v1/… or the x-toolcall-guard-upstream header."
            )
        return name

    def _serves(self, upstream: str, key: str) -> str | None:
        base: str | None = getattr(self._settings.upstreams[upstream], key)
        return base

    def base_url(self, upstream: str, key: str = "base_url", api: str = "") -> str:
        """The base URL of ``upstream`` its setting ``key`` names (``anthropic_base_url`` for
        Messages); 400 in the API's error shape when the upstream has none."""
        base: str | None = getattr(self._settings.upstreams[upstream], key)
        if base is None:
            serving = [n for n, u in self._settings.upstreams.items() if getattr(u, key)]
            raise ApiNotServed(
                f"Upstream {upstream!r} does not serve the {api or key} API: it has no {key}. "
                f"Set upstreams.{upstream}.{key}, or route the request to one that has it "
                f"(/<upstream>/v1/… or x-toolcall-guard-upstream): {', '.join(serving) or 'none'}."
            )
        return base

    def _model_upstream(self, model: Any) -> str | None:
        if type(model) is not str:
            return self._settings.routing.default
        try:
            return self._by_model[model]
        except KeyError:
            pass
        if len(self._by_model) >= _CACHE_SIZE:
            self._by_model.clear()
        name = self._by_model[model] = upstream_for_model(self._settings, model)
        return name
