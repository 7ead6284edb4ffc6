"""The paths of Gemini's native API, as the proxy reads them (gemini-native.md §7). Pure.

A client sets its base URL to the proxy's root (``GOOGLE_GEMINI_BASE_URL``, ``baseURL``) and
sends, after an optional ``/<upstream>`` prefix, the same path it would send Google:

- AI Studio: ``/{v}/models/{model}:{method}`` (``v1beta`` by default, ``v1``, ``v1alpha``);
- Vertex AI: ``/{v}/projects/{p}/locations/{l}/publishers/google/models/{model}:{method}``,
  and Express mode ``/{v}/publishers/google/models/{model}:{method}`` (``v1``, ``v1beta1``);
- Code Assist: ``/v1internal:{method}``, the model in the body (§1.3).

Only ``generateContent`` and ``streamGenerateContent`` carry a history the proxy checks; every
other native path (``countTokens``, ``embedContent``, model listing, ``cachedContents``,
``files``, Code Assist's ``loadCodeAssist``…) is routed the same way and relayed unchecked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Endpoint = Literal["ai-studio", "vertex", "code-assist"]

#: Version segments of Google's APIs (§7 "Versions seen").
_VERSION = r"v1(?:beta1?|alpha)?"
#: A native path after the optional prefix: the version segment, then anything; or Code
#: Assist's ``v1internal:{method}``. ``/v1/…`` is the OpenAI-compatible family's too, so there
#: only the shapes no OpenAI path has are native: a model action, a Vertex resource.
_NATIVE = re.compile(
    r"^(?:/(?P<prefix>[^/:]+))?(?P<rest>/v1internal:[A-Za-z]+"
    r"|/(?:v1beta1|v1beta|v1alpha)(?:/.*)?"
    r"|/v1/(?:projects|publishers)/.*|/v1/models/[^/]+:[A-Za-z]+)$"
)
_MODEL_ACTION = re.compile(
    rf"^/(?P<version>{_VERSION})(?P<resource>/projects/[^/]+/locations/[^/]+)?"
    rf"(?P<publisher>/publishers/google)?/models/(?P<model>[^/:]+):(?P<method>[A-Za-z]+)$"
)
_CODE_ASSIST = re.compile(r"^/v1internal:(?P<method>[A-Za-z]+)$")
#: The methods whose body carries a history (``contents``) the proxy checks.
CHECKED = frozenset({"generateContent", "streamGenerateContent"})


@dataclass(frozen=True, slots=True)
class NativePath:
    """What a native path says: which endpoint's shape, which model and method."""

    endpoint: Endpoint
    method: str
    model: str  # "" when the path names none (Code Assist: the body's ``model``)

    @property
    def checked(self) -> bool:
        return self.method in CHECKED

    @property
    def streams(self) -> bool:
        return self.method == "streamGenerateContent"


def split_native(path: str) -> tuple[str | None, str] | None:
    """``(prefix, rest)`` for a native path (``rest`` keeps its version segment:
    ``/v1beta/models/gemini-2.5-flash:generateContent``), None for any other path."""
    found = _NATIVE.match(path)
    return None if found is None else (found.group("prefix"), found.group("rest"))


def parse_native(rest: str) -> NativePath | None:
    """The model action a native ``rest`` names, or None (a path relayed unchecked)."""
    found = _CODE_ASSIST.match(rest)
    if found is not None:
        return NativePath("code-assist", found.group("method"), "")
    found = _MODEL_ACTION.match(rest)
    if found is None:
        return None
    vertex = found.group("resource") is not None or found.group("publisher") is not None
    return NativePath("vertex" if vertex else "ai-studio", found.group("method"), found["model"])
