"""What a rule is: a pure detector plus named pure repairs, declared with :func:`rule`.

A detector looks at a history (a wire API's item list: chat ``messages``, Responses ``input``)
and returns :class:`Hit` s; a repair takes the history and those hits and returns a new history
(never mutating the old one). The engine in :mod:`proxy.core.policy` turns hits into
:class:`Finding` s and decides, per the policy, whether to repair, warn, reject or skip the rule.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol, TypeVar

import proxy.errors

Params = Mapping[str, Any]
#: Detectors and repairs take their own API's history type (chat's ``History``, Responses'
#: ``Items``); the engine only needs what :class:`Items` says.
DetectFn = Callable[[Any, Params], list["Hit"]]
RepairFn = Callable[[Any, Sequence["Hit"], Params], Any]
_Repair = TypeVar("_Repair", bound=RepairFn)
ParamsCheck = Callable[[Params], None]


class Items(Protocol):
    """What the engine needs of a history, whichever wire API it comes from."""

    @property
    def messages(self) -> list[Any]:
        """The items, as they would be forwarded (chat messages, Responses input items)."""

    @property
    def request(self) -> Mapping[str, Any]:
        """The request body around the items (a request-level repair returns a new one)."""

    @property
    def tool_free(self) -> bool:
        """True when no item is about a tool call (``tools_only`` rules are skipped)."""

    def path(self, i: int, where: str = "") -> str:
        """The JSON path, into the original request, of item ``i`` (plus ``where``)."""


#: Actions every rule accepts besides its own repairs.
BASE_ACTIONS = ("off", "warn", "reject")


@dataclass(frozen=True, slots=True)
class Hit:
    """One violation, found at ``index`` of the current history.

    ``where`` is the JSON path below the message (``.tool_calls[1].id``); ``data`` carries what
    the repair needs and never reaches a finding. Repairs leave ``fatal`` hits alone.
    """

    index: int
    where: str = ""
    detail: str = ""
    data: Any = None
    fatal: bool = False  # no repair can fix it: the request is rejected unless the rule only warns


@dataclass(frozen=True, slots=True)
class Finding:
    """One violation as reported: recorded, counted and sent back in errors and headers."""

    rule: str
    action: str
    path: str
    detail: str
    hint: str = ""  # what the client should change (the rule's hint)

    def as_dict(self) -> dict[str, str]:
        """The one shape of a finding: in records, HTTP 400 bodies and ``check --format json``."""
        found = {"rule": self.rule, "action": self.action, "path": self.path, "detail": self.detail}
        if self.hint:
            found["hint"] = self.hint
        return found

    @property
    def message(self) -> str:
        """One sentence for a person: where, what, which rule, and the fix."""
        text = f"{self.path}: {self.detail} (rule {self.rule})."
        return f"{text} Fix in the client: {self.hint}" if self.hint else text


@dataclass(slots=True)
class Rule:
    """A registered rule: its docstring (the detector's) is its documentation."""

    name: str
    detect: DetectFn
    hint: str
    params: Mapping[str, Any] = field(default_factory=dict)
    repairs: dict[str, RepairFn] = field(default_factory=dict)
    check_params: ParamsCheck | None = None  # raises BadParam for values the rule cannot use
    #: Fires only on messages about tool calls: skipped on a history that has none.
    tools_only: bool = False
    #: The wire API whose history it reads (``chat``, ``responses``).
    api: str = "chat"

    @property
    def doc(self) -> str:
        return (self.detect.__doc__ or "").strip()

    @property
    def summary(self) -> str:
        return self.doc.split("\n\n", 1)[0].replace("\n", " ")

    @property
    def actions(self) -> tuple[str, ...]:
        return (*BASE_ACTIONS, *self.repairs)

    @property
    def default_repair(self) -> str:
        """The first declared repair, or ``reject`` for a rule that has none."""
        return next(iter(self.repairs), "reject")

    def repair(self, action: str) -> Callable[[_Repair], _Repair]:
        """Register ``fn`` as the repair called ``action`` (the first registered is the default)."""
        if action in BASE_ACTIONS:
            raise ValueError(f"{action!r} is reserved")

        def register(fn: _Repair) -> _Repair:
            self.repairs[action] = fn
            return fn

        return register


def rule(
    name: str | None = None,
    *,
    hint: str,
    params: Mapping[str, Any] | None = None,
    check_params: ParamsCheck | None = None,
    tools_only: bool = False,
    api: str = "chat",
) -> Callable[[DetectFn], Rule]:
    """Declare a rule from its detector, named ``name`` (by default the detector's own name: the
    function is called what the rule is). ``hint`` says what the client should change.

    ``check_params`` validates the rule's parameters once, when a policy is built.
    ``tools_only``: the detector can only find something where :attr:`History.tool_free` is
    false (a role ``tool``/``function``, a ``tool_calls``, ``function_call`` or
    ``tool_call_id`` key); the engine skips it elsewhere. ``api`` names the wire API whose
    history the detector reads (its pipeline in :mod:`proxy.core.registry`).
    """

    def declare(detect: DetectFn) -> Rule:
        return Rule(
            name=name or detect.__name__,
            detect=detect,
            hint=hint,
            params=dict(params or {}),
            check_params=check_params,
            tools_only=tools_only,
            api=api,
        )

    return declare


class Declare(Protocol):
    """:func:`rule` with the wire API given (:func:`rule_for`)."""

    def __call__(
        self,
        name: str | None = None,
        *,
        hint: str,
        params: Mapping[str, Any] | None = None,
        check_params: ParamsCheck | None = None,
        tools_only: bool = False,
    ) -> Callable[[DetectFn], Rule]: ...


def rule_for(api: str) -> Declare:
    """The :func:`rule` of one wire API's rule modules (``rule = rule_for("messages")`` in the
    package's ``common.py``): its declarations name neither the API nor, twice, the rule."""
    return partial(rule, api=api)


#: Importable from here while core/chat/rules/ids.py still does (the class: proxy.errors).
BadParam = proxy.errors.BadParam
