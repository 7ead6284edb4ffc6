"""Gemini's native history: the ``contents`` of ``models/{m}:generateContent`` (AI Studio,
Vertex) or ``request.contents`` of Code Assist's ``v1internal:generateContent`` (§1.3).

Pure: no I/O. Contents stay the plain dicts ``orjson.loads`` produced; a :class:`Contents` is
an immutable list of them plus, for each, the index it had in the original request, so that
every finding names a JSON path into what the client sent (``contents[3].parts[1]``,
``request.contents[3].parts[1]`` on Code Assist). The mapping holding the list rides along
read-only (:attr:`Contents.request`), and the model (from the URL path, or the body's
``model`` on Code Assist) is :attr:`Contents.model`.

Part kinds are gemini-native.md §1.2; both spellings of every key read alike (§1.4,
:mod:`proxy.core.gemini.spelling`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, Self

from proxy.core.gemini.spelling import get, key_in
from proxy.core.history import CopyOnWrite, MalformedHistory

Item = dict[str, Any]
Part = dict[str, Any]
Location = tuple[str, ...]

#: The ``data`` oneof of a Part (types.py ``class Part``, §1.2): a part needs exactly one.
DATA_FIELDS = (
    "text",
    "inlineData",
    "fileData",
    "functionCall",
    "functionResponse",
    "executableCode",
    "codeExecutionResult",
    "toolCall",
    "toolResponse",
)
#: Part fields that are metadata beside the data (a part holding only these has no data).
METADATA_FIELDS = (
    "thought",
    "thoughtSignature",
    "videoMetadata",
    "mediaResolution",
    "partMetadata",
)
#: Other APIs' roles and the Gemini role each means (N14).
ROLE_ALIASES: Mapping[str, str] = MappingProxyType(
    {"assistant": "model", "tool": "user", "function": "user"}
)
CONTENTS: Location = ("contents",)
CODE_ASSIST_CONTENTS: Location = ("request", "contents")


def call_of(part: Part) -> dict[str, Any] | None:
    """The part's ``functionCall`` object (either spelling), or None."""
    value = get(part, "functionCall")
    return value if type(value) is dict else None


def response_of(part: Part) -> dict[str, Any] | None:
    """The part's ``functionResponse`` object (either spelling), or None."""
    value = get(part, "functionResponse")
    return value if type(value) is dict else None


def signature_of(part: Part) -> Any:
    """The part's ``thoughtSignature`` (either spelling), or None."""
    return get(part, "thoughtSignature")


def signed(part: Part) -> bool:
    """Whether the part carries a signature (an empty one is none: the bytes field is unset)."""
    return signature_of(part) not in (None, "")


def parts_of(content: Item) -> list[Part]:
    """The content's parts (``[]`` when it has none)."""
    parts = content.get("parts")
    return parts if type(parts) is list else []


def role_of(content: Item) -> str:
    """The role the content plays: ``model`` or ``user`` (other APIs' names mapped, N14); a
    content without one is the model's when it calls a function, else the user's."""
    role = content.get("role")
    if role is None:
        return "model" if any(call_of(p) is not None for p in parts_of(content)) else "user"
    return ROLE_ALIASES.get(role, role)


def history_location(body: Any) -> Location:
    """Where ``body`` keeps its history: ``("contents",)``, or ``("request", "contents")`` for
    Code Assist's wrapper (no top-level ``contents``, ``request`` an object; §1.3)."""
    if type(body) is dict and "contents" not in body and type(body.get("request")) is dict:
        return CODE_ASSIST_CONTENTS
    return CONTENTS


def contents_of(body: Any) -> tuple[list[Item], Mapping[str, Any], Location]:
    """The history of ``body``, the mapping holding it, and where it is, after the checks that
    hold whatever the policy.

    The body is an object; the history a list of objects whose ``role`` (when present) is a
    string and whose ``parts`` (when present) is a list of objects; ``functionCall`` and
    ``functionResponse`` are objects. Raises :class:`MalformedHistory` naming the place.
    """
    if type(body) is not dict:
        raise MalformedHistory("The request body must be a JSON object.", None)
    where = history_location(body)
    holder: dict[str, Any] = body if where == CONTENTS else body["request"]
    name = ".".join(where)
    contents = holder.get("contents")
    if type(contents) is not list:
        raise MalformedHistory(f"{name}: a list of Content objects is required.", name)
    for i, content in enumerate(contents):
        _check_content(content, f"{name}[{i}]")
    return contents, holder, where


def _check_content(content: Any, where: str) -> None:
    if type(content) is not dict:
        raise MalformedHistory(f"{where} must be an object.", where)
    role = content.get("role")
    if role is not None and type(role) is not str:
        raise MalformedHistory(f"{where}.role must be a string.", f"{where}.role")
    parts = content.get("parts")
    if parts is None:
        return
    if type(parts) is not list:
        raise MalformedHistory(f"{where}.parts must be a list of parts.", f"{where}.parts")
    for j, part in enumerate(parts):
        place = f"{where}.parts[{j}]"
        if type(part) is not dict:
            raise MalformedHistory(f"{place} must be an object.", place)
        for camel in ("functionCall", "functionResponse"):
            key = key_in(part, camel)
            if key is not None and part[key] is not None and type(part[key]) is not dict:
                raise MalformedHistory(f"{place}.{key} must be an object.", f"{place}.{key}")


def _model_name(model: str) -> str:
    """The model id of a resource name (``models/gemini-3-pro``, ``publishers/google/models/…``)."""
    return model.rsplit("/", 1)[-1]


class Contents(CopyOnWrite):
    """Gemini ``contents`` as a copy-on-write history (:class:`~proxy.core.history.CopyOnWrite`)."""

    __slots__ = ("location", "model")

    def __init__(
        self,
        messages: list[Item],
        origins: list[int | None] | None = None,
        request: Mapping[str, Any] | None = None,
        *,
        model: str = "",
        location: Location = CONTENTS,
    ) -> None:
        super().__init__(messages, origins, request)
        self.model = model  # the model id, without ``models/``
        self.location = location  # where the history sits in the body (for paths)

    @classmethod
    def of(cls, body: Any, model: str = "") -> Contents:
        """The history of the request ``body`` (:func:`contents_of`). ``model`` is the model of
        the URL path (AI Studio, Vertex); when empty, the body's ``model`` (Code Assist)."""
        contents, holder, where = contents_of(body)
        if not model and type(body.get("model")) is str:
            model = body["model"]
        request = MappingProxyType(holder)
        return cls(contents, request=request, model=_model_name(model), location=where)

    @property
    def tool_free(self) -> bool:
        """Whether no part is a ``functionCall`` or a ``functionResponse``."""
        return self.memo("tool_free", _tool_free)

    @property
    def roles(self) -> list[str]:
        """:func:`role_of` every content, in order."""
        return self.memo("roles", _roles)

    def path(self, i: int, where: str = "") -> str:
        prefix = ".".join(self.location)
        if i == -1:
            return ".".join((*self.location[:-1], where.lstrip("."))) if where else prefix
        index = self.origin(i)
        return f"{prefix}[{'+' if index is None else index}]{where}"

    def parts_at(self) -> Iterator[tuple[int, int, Part]]:
        """``(i, j, part)`` for every part of every content."""
        for i, content in enumerate(self.messages):
            for j, part in enumerate(parts_of(content)):
                yield i, j, part

    # The machinery builds new histories with ``type(self)(items, origins, request)``: the
    # model and the location ride along.
    def _same(self, other: Self) -> Self:
        if other is not self:
            other.model, other.location = self.model, self.location
        return other

    def replace(self, changes: Mapping[int, Item]) -> Self:
        return self._same(super().replace(changes))

    def rebuild(self, entries: Iterable[tuple[Item, int | None]]) -> Self:
        return self._same(super().rebuild(entries))

    def edited(
        self, inserts: Mapping[int, Iterable[tuple[Item, int | None]]], skip: Iterable[int]
    ) -> Self:
        return self._same(super().edited(inserts, skip))


def _tool_free(history: Contents) -> bool:
    return not any(
        call_of(p) is not None or response_of(p) is not None for _, _, p in history.parts_at()
    )


def _roles(history: Contents) -> list[str]:
    return [role_of(c) for c in history.messages]
