"""TEMPORARY stub (replaced by the gemini-core branch)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from proxy.core.history import MalformedHistory


class Contents:
    def __init__(self, contents: list[Any], request: Mapping[str, Any], head: str) -> None:
        self.messages = contents
        self.request = request
        self.head = head
        self.tool_free = True

    @classmethod
    def of(cls, body: Any, model: str = "") -> Contents:
        if type(body) is not dict:
            raise MalformedHistory("The request body must be a JSON object.", None)
        holder, head = body, "contents"
        if "contents" not in body and type(body.get("request")) is dict:
            holder, head = body["request"], "request.contents"
        contents = holder.get("contents")
        if type(contents) is not list or not contents:
            raise MalformedHistory(f"{head}: a non-empty list is required.", head)
        return cls(contents, holder, head)

    def path(self, i: int, where: str = "") -> str:
        return f"{self.head}[{i}]{where}"


def history_location(body: Any) -> tuple[str, ...]:
    inner = body.get("request") if type(body) is dict else None
    nested = type(body) is dict and "contents" not in body and type(inner) is dict
    return ("request", "contents") if nested else ("contents",)
