"""Policies for the Gemini-native endpoints in the core tests.

The ``gemini`` preset exists; ``vertex`` and ``code-assist`` presets (and their provider
records) come with the routing work, so until then a policy for them is the ``gemini``
preset with a stand-in provider record of that name (the Gemini facts are chosen by the
provider's name, :func:`proxy.core.gemini.facts.facts_of`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from proxy.core.policy import DIALECTS, Policy, Setting, build_policy
from proxy.core.providers import Provider

ENDPOINTS = ("gemini", "vertex", "code-assist")


def gemini_policy(endpoint: str, overrides: Mapping[str, Any] | None = None) -> Policy:
    """The policy of ``endpoint`` (``gemini``, ``vertex`` or ``code-assist``)."""
    if endpoint in DIALECTS:
        return build_policy(endpoint, overrides=overrides)
    base = build_policy("gemini", overrides=overrides)
    provider = Provider(name=endpoint)
    settings = {
        name: Setting(s.action, {**s.params, "provider": provider})
        for name, s in base.settings.items()
    }
    return Policy(endpoint, "gemini", settings, base.pinned)
