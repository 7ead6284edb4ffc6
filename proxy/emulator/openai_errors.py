"""OpenAI's schema error wording: ``Unknown parameter``, ``Missing required parameter``,
``Invalid type for``, ``Invalid value``, ``empty array`` (the texts of rows O5, O7, O12, O13,
O15 and their unnumbered siblings), with the ``param`` and ``code`` OpenAI sends."""

from __future__ import annotations

from typing import Any

from proxy.emulator.common import Rejection, json_kind, openai_rejection


def quoted_list(items: tuple[str, ...]) -> str:
    """``'a'``, ``'a' and 'b'``, ``'a', 'b', and 'c'`` as OpenAI lists supported values."""
    quoted = [f"'{item}'" for item in items]
    if len(quoted) <= 2:
        return " and ".join(quoted)
    return ", ".join(quoted[:-1]) + ", and " + quoted[-1]


def unknown(path: str, rule: str = "O12") -> Rejection:
    """``Unknown parameter: 'messages[1].tool_calls[0].index'.`` (O12)."""
    msg = f"Unknown parameter: '{path}'."
    return openai_rejection(rule, msg, param=path, code="unknown_parameter")


def missing(path: str) -> Rejection:
    """``Missing required parameter: 'messages[0].content'.``"""
    msg = f"Missing required parameter: '{path}'."
    return openai_rejection("O-schema", msg, param=path, code="missing_required_parameter")


def wrong_type(path: str, expected: str, value: Any, rule: str = "O-schema") -> Rejection:
    """``Invalid type for 'x': expected a string, but got an object instead.`` (O5 style)."""
    msg = f"Invalid type for '{path}': expected {expected}, but got {json_kind(value)} instead."
    return openai_rejection(rule, msg, param=path, code="invalid_type")


def invalid_value(path: str, value: str, supported: tuple[str, ...]) -> Rejection:
    """``Invalid value: 'x'. Supported values are: 'a' and 'b'.``"""
    msg = f"Invalid value: '{value}'. Supported values are: {quoted_list(supported)}."
    return openai_rejection("O-schema", msg, param=path, code="invalid_value")


def too_long(path: str, value: str, most: int, rule: str) -> Rejection:
    """``Invalid 'x': string too long. Expected a string with maximum length 40, …``."""
    msg = (
        f"Invalid '{path}': string too long. Expected a string with maximum length "
        f"{most}, but got a string with length {len(value)} instead."
    )
    return openai_rejection(rule, msg, param=path, code="string_above_max_length")


def empty_array(path: str, rule: str = "O-schema") -> Rejection:
    """``Invalid 'messages[2].tool_calls': empty array. ...`` (O7, O15)."""
    msg = (
        f"Invalid '{path}': empty array. Expected an array with minimum length 1, "
        "but got an empty array instead."
    )
    return openai_rejection(rule, msg, param=path, code="empty_array")


def check_keys(
    obj: dict[str, Any],
    allowed: tuple[str, ...] | frozenset[str],
    required: tuple[str, ...],
    path: str,
    rule: str,
) -> Rejection | None:
    """Unknown keys first (in the object's key order), then the first missing required key."""
    for key in obj:
        if key not in allowed:
            return unknown(f"{path}.{key}", rule)
    for key in required:
        if key not in obj:
            return missing(f"{path}.{key}")
    return None
