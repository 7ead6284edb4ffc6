"""Policies for the Gemini-native endpoints in the core tests: the presets ``gemini`` (AI
Studio), ``vertex`` and ``code-assist`` (the Gemini facts are chosen by the provider's name,
:func:`proxy.core.gemini.facts.facts_of`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from proxy.core.policy import Policy, build_policy

ENDPOINTS = ("gemini", "vertex", "code-assist")


def gemini_policy(endpoint: str, overrides: Mapping[str, Any] | None = None) -> Policy:
    """The policy of ``endpoint`` (``gemini``, ``vertex`` or ``code-assist``)."""
    return build_policy(endpoint, overrides=overrides)
