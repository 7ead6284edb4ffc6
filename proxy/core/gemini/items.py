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

from proxy.core.gemini import carry
from proxy.core.gemini.index import index_of, scan
from proxy.core.gemini.parts import Item, Part, check_content, parts_of
from proxy.core.gemini.parts import role_of as role_of  # noqa: PLC0414 (the tests read it here)
from proxy.core.history import CopyOnWrite, MalformedHistory

Location = tuple[str, ...]
CONTENTS: Location = ("contents",)
CODE_ASSIST_CONTENTS: Location = ("request", "contents")


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
    (:meth:`Contents.of` makes the same checks in the walk that indexes the history.)
    """
    contents, holder, where = located(body)
    name = ".".join(where)
    for i, content in enumerate(contents):
        check_content(content, f"{name}[{i}]")
    return contents, holder, where


def located(body: Any) -> tuple[list[Any], dict[str, Any], Location]:
    """The history list of ``body`` (its contents unchecked), the mapping holding it, and
    where it is; raises :class:`MalformedHistory` for a body that is no object or a history
    that is no list."""
    if type(body) is not dict:
        raise MalformedHistory("The request body must be a JSON object.", None)
    where = history_location(body)
    holder: dict[str, Any] = body if where == CONTENTS else body["request"]
    contents = holder.get("contents")
    if type(contents) is not list:
        name = ".".join(where)
        raise MalformedHistory(f"{name}: a list of Content objects is required.", name)
    return contents, holder, where


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
        """The history of the request ``body``, checked as :func:`contents_of` checks it, in
        the walk that indexes it (:func:`~proxy.core.gemini.index.scan`). ``model`` is the
        model of the URL path (AI Studio, Vertex); when empty, the body's ``model`` (Code
        Assist)."""
        contents, holder, where = located(body)
        index = scan(contents, check_content, ".".join(where))
        if not model and type(body.get("model")) is str:
            model = body["model"]
        request = MappingProxyType(holder)
        history = cls(contents, request=request, model=_model_name(model), location=where)
        history.seed("index", index)
        return history

    @property
    def tool_free(self) -> bool:
        """Whether no part is a ``functionCall`` or a ``functionResponse``."""
        return not index_of(self).tools

    @property
    def roles(self) -> list[str]:
        """:func:`role_of` every content, in order (read-only: the index's list)."""
        return index_of(self).roles

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
        other = self._same(super().replace(changes))
        known, index = self.memoized("index")
        if known and other is not self:  # the unchanged contents' findings carry over
            other.seed("index", carry.replaced(index, other.messages, changes))
        return other

    def rebuild(self, entries: Iterable[tuple[Item, int | None]]) -> Self:
        return self._same(super().rebuild(entries))

    def edited(
        self, inserts: Mapping[int, Iterable[tuple[Item, int | None]]], skip: Iterable[int]
    ) -> Self:
        return self._same(super().edited(inserts, skip))

    def _carry(self, edited: Self, runs: list[tuple[int, int, int]]) -> None:
        known, index = self.memoized("index")
        if known:  # the findings of the runs carry over, shifted
            edited.seed("index", carry.edited(index, edited.messages, runs))
