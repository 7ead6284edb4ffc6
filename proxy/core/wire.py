"""Every wire API as one row: what the rest of the proxy needs to know of it, and nothing else.

A wire API (chat completions, Responses, Anthropic Messages) is a package under ``core/`` (its
items and rules; the rules registered in :mod:`proxy.core.registry`) plus one :class:`Wire` row
here. The retry planner, ``toolcall-guard check``, the repair log's capture and diff, the
viewer's record payload, error rendering and key injection read the row instead of knowing each
API: the history key and how to read it, how an item is labelled, which error shape the API's
clients expect, how the provider key is sent, how a saved body is recognised. The I/O side of a
row (size limits, which base URL of an upstream serves it) is in :mod:`proxy.api.units`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from proxy.core import recognise
from proxy.core.chat.messages import History
from proxy.core.forward import found_at
from proxy.core.gemini.items import Contents, history_location
from proxy.core.gemini.paths import parse_native, split_native
from proxy.core.gemini.vocabulary import GEMINI_KEYS
from proxy.core.genai import Converter
from proxy.core.genai import anthropic as genai_anthropic
from proxy.core.genai import google as genai_google
from proxy.core.genai import openai as genai_openai
from proxy.core.messages.items import Messages
from proxy.core.policy import Outcome, Policy, sanitize
from proxy.core.responses.items import Items as ResponseItems
from proxy.core.rule import Items
from proxy.core.views import ItemView
from proxy.core.views.anthropic import messages_view
from proxy.core.views.google import content_view
from proxy.core.views.openai import chat_view, responses_view
from proxy.errors import AmbiguousBody

ErrorShape = Literal["openai", "anthropic", "google"]


class HistoryOf(Protocol):
    """A row's structural check: the rules' view of a body's history. ``model`` is the model
    the request path names (Gemini's native API), ``""`` where the body names it."""

    def __call__(self, body: Any, model: str = "") -> Items: ...


@dataclass(frozen=True, slots=True)
class Route:
    """What a request path says beyond which API serves it."""

    checked: bool  # a POST here carries a history the proxy checks
    model: str = ""  # the model the path names ("": the body names it)
    streams: bool = False  # the path asks for a streamed answer (the body's ``stream`` else)
    #: The kind of endpoint the path's shape belongs to (Gemini: ``vertex``, ``code-assist``),
    #: matched against upstream dialects when nothing else routes the request.
    endpoint: str = ""


@dataclass(frozen=True, slots=True)
class Wire:
    """One wire API whose request body carries a history."""

    name: str  # the rules' ``api``; the ``route`` of log lines, the ``api`` of metrics
    path: str  # what follows ``/v1`` (or ``/{upstream}/v1``) in a request it checks
    history_key: str  # the body's key holding the history
    #: The rules' view of a body's history after the structural checks every request needs
    #: (raises :class:`~proxy.core.history.MalformedHistory`: always a 400), body riding along.
    history: HistoryOf
    #: What an item is, for the diff and the viewer: a role, or an item type.
    kind: Callable[[Any], str | None]
    #: Whether a saved body is certainly of this API (``check`` without ``--api``).
    recognises: Callable[[Any], bool]
    #: Keys whose string values are ids (kept by every capture mode, not hashed).
    id_keys: tuple[str, ...] = ("id",)
    #: Keys of an item whose nested structure (call ids, types, tool names) capture ``none``
    #: keeps: chat's ``tool_calls``, Messages' content blocks.
    skeleton_keys: tuple[str, ...] = ()
    #: The error body its clients parse: OpenAI's ``{"error": {…}}`` or Anthropic's
    #: ``{"type": "error", "error": {…}}``.
    error_shape: ErrorShape = "openai"
    #: The request header carrying the provider's key (``authorization``: ``Bearer <key>``).
    key_header: str = "authorization"
    #: Sub-paths (``/messages/count_tokens``) routed and keyed like :attr:`path`, not checked.
    subpaths: bool = False
    #: For an API whose paths carry their own version (Gemini's native API, whose base URL
    #: has none): the ``(prefix, rest)`` of a request path that is this API's, else None;
    #: ``rest`` keeps the version and is appended to the base URL as it is.
    split: Callable[[str], tuple[str | None, str] | None] | None = None
    #: With :attr:`split`: what a ``rest`` names (None: relayed unchecked).
    route: Callable[[str], Route | None] | None = None
    #: What the viewer shows of one item (its kind, parts, call ids, functions, text).
    view: Callable[[Any], ItemView] = chat_view
    #: What the viewer calls the items (``messages``, ``items``, ``contents``).
    noun: str = "messages"
    #: Its content in the GenAI conventions, for traces (None: no content captured).
    genai: Converter | None = None
    #: Where a body keeps its history when not at :attr:`history_key` (Code Assist nests it
    #: under ``request``): the keys leading to the list.
    locate: Callable[[Any], tuple[str, ...]] | None = None
    #: Top-level keys holding the system text (a conversation's start includes it).
    system_keys: tuple[str, ...] = ("system", "instructions")
    #: The keys its request schema defines: redacted capture keeps them as they are (any other
    #: key of a body is the client's string, and is hashed).
    vocabulary: frozenset[str] = frozenset()
    #: How an error after a stream's first byte begins (Anthropic and Responses name the
    #: event; Gemini sends a bare ``data: {"error": …}``).
    stream_error: bytes = b"event: error"
    #: The GenAI semantic conventions' ``gen_ai.operation.name`` of a request (traces).
    operation: str = "chat"

    def location(self, body: Any) -> tuple[str, ...]:
        """The keys leading to ``body``'s history list (``("messages",)``; nested for an API
        that wraps its request, ``("request", "contents")``). The object holding the list holds
        the request-level fields a repair changes (:func:`proxy.core.forward.forwarded_body`)."""
        return (self.history_key,) if self.locate is None else self.locate(body)

    def items(self, body: Any) -> list[Any]:
        """The history list of a body (``[]`` when it has none), unchecked."""
        value = found_at(body, self.location(body)) if type(body) is dict else None
        return value if type(value) is list else []

    def views(self, body: Any) -> list[ItemView]:
        """What the viewer shows of each item of a body's history."""
        return [self.view(item) for item in self.items(body)]

    def item_index(self, path: str) -> int | None:
        """The item a finding's path names (``messages[3].content[0]`` → 3), or None."""
        head = f"{self.history_key}["
        if not path.startswith(head):
            return None
        digits = path[len(head) : path.find("]", len(head))]
        return int(digits) if digits.isdigit() else None

    def key_value(self, key: str, header: str | None = None) -> bytes:
        """The value of ``header`` (:attr:`key_header` by default) carrying the provider key."""
        bearer = (header or self.key_header) == "authorization"
        return b"Bearer " + key.encode() if bearer else key.encode()


def _chat_history(body: Any, model: str = "") -> Items:
    return History.of(body)


def _responses_history(body: Any, model: str = "") -> Items:
    return ResponseItems.of(body)


def _messages_history(body: Any, model: str = "") -> Items:
    return Messages.of(body)


def _role(item: Any) -> str | None:
    role = item.get("role") if type(item) is dict else None
    return role if type(role) is str else None


def _type_or_role(item: Any) -> str | None:
    """A Responses item's type (``function_call``…); a message item reads as its role."""
    kind = item.get("type") if type(item) is dict else None
    if type(kind) is str and kind != "message":
        return kind
    return _role(item) or (kind if type(kind) is str else None)


CHAT = Wire(
    name="chat",
    path="/chat/completions",
    history_key="messages",
    history=_chat_history,
    kind=_role,
    recognises=recognise.is_chat,
    id_keys=("id", "tool_call_id"),
    skeleton_keys=("tool_calls", "function", "function_call"),
    genai=genai_openai.CHAT,
)

RESPONSES = Wire(
    name="responses",
    path="/responses",
    history_key="input",
    history=_responses_history,
    view=responses_view,
    noun="items",
    kind=_type_or_role,
    recognises=recognise.is_responses,
    id_keys=("id", "call_id", "approval_request_id"),
    genai=genai_openai.RESPONSES,
)

MESSAGES = Wire(
    name="messages",
    path="/messages",
    history_key="messages",
    history=_messages_history,
    view=messages_view,
    kind=_role,
    recognises=recognise.is_messages,
    error_shape="anthropic",
    key_header="x-api-key",
    subpaths=True,
    id_keys=("id", "tool_use_id"),
    skeleton_keys=("content",),
    genai=genai_anthropic.MESSAGES,
)


def _gemini_route(rest: str) -> Route | None:
    found = parse_native(rest)
    if found is None:
        return None
    return Route(found.checked, found.model, found.streams, found.endpoint)


GEMINI = Wire(
    name="gemini",
    path="/models",  # AI Studio's; every native shape is matched by ``split``
    history_key="contents",
    history=Contents.of,
    kind=_role,
    recognises=recognise.is_gemini,
    error_shape="google",
    key_header="x-goog-api-key",
    skeleton_keys=("parts", "functionCall", "functionResponse", "function_call"),
    split=split_native,
    route=_gemini_route,
    system_keys=("systemInstruction", "system_instruction"),
    view=content_view,
    noun="contents",
    locate=history_location,
    vocabulary=GEMINI_KEYS,
    stream_error=b'data: {"error"',
    operation="generate_content",
    genai=genai_google.GEMINI,
)

#: Every wire API by name, in the order ``check`` falls back on when no row recognises a body.
WIRES: dict[str, Wire] = {wire.name: wire for wire in (CHAT, RESPONSES, MESSAGES, GEMINI)}
#: The rows whose paths :attr:`Wire.split` recognises.
_NATIVE = tuple(wire for wire in WIRES.values() if wire.split is not None)


def sanitize_body(wire: Wire, body: Any, policy: Policy) -> Outcome:
    """Check and repair the history of ``body`` under ``policy`` with ``wire``'s rules. Pure.

    Raises :class:`~proxy.core.history.MalformedHistory` for a body no policy can work on.
    When ``changed``, forward :func:`proxy.core.forward.forwarded_body` of the outcome.
    """
    return sanitize(wire.history(body), policy, wire.name)


_PATH = re.compile(r"^(?:/[^/]+)?/v1(/.*)$")


def wire_for_path(path: str) -> Wire | None:
    """The row serving a request path (``/v1/messages``, ``/deepseek/v1/chat/completions``,
    ``/v1/messages/count_tokens`` for a row with :attr:`Wire.subpaths`), or None."""
    native = native_target(path)
    if native is not None:
        return native[0]
    found = _PATH.match(path)
    if found is None:
        return None
    rest = found.group(1)
    for wire in WIRES.values():
        if wire.split is not None:
            continue
        if rest == wire.path or (wire.subpaths and rest.startswith(wire.path + "/")):
            return wire
    return None


def native_target(path: str) -> tuple[Wire, str | None, str] | None:
    """The row, prefix and rest of a path an API with its own versions serves, or None."""
    for wire in _NATIVE:
        assert wire.split is not None
        found = wire.split(path)
        if found is not None:
            return wire, found[0], found[1]
    return None


def wire_of_record(path: str | None, body: Any) -> Wire:
    """The row of a recorded request: by the path it came in on, else by the body's history
    key (a record of an older version, a body saved without its path)."""
    found = wire_for_path(path) if path else None
    if found is not None:
        return found
    keys: Mapping[str, Any] = body if type(body) is dict else {}
    return next((w for w in WIRES.values() if w.history_key in keys), CHAT)


def wire_of_body(body: Any, wanted: str | None = None) -> Wire:
    """The row of a saved request body: ``wanted`` when given, else the one row that recognises
    it, else the first row whose history key it has (chat for a bare ``messages``)."""
    if wanted is not None:
        return WIRES[wanted]
    sure = [wire for wire in WIRES.values() if wire.recognises(body)]
    if len(sure) > 1:
        names = ", ".join(wire.name for wire in sure)
        raise AmbiguousBody(f"the body could be any of {names}; name one with --api")
    if sure:
        return sure[0]
    keys: Mapping[str, Any] = body if type(body) is dict else {}
    return next((w for w in WIRES.values() if w.history_key in keys), CHAT)
