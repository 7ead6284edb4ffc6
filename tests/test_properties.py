"""The sanitizer's invariants (DESIGN §4), checked against the independent strict emulators.

1. Valid out: a broken history comes out accepted by the provider's validator.
2. No false positives: a valid history yields no findings and the same list object.
3. Idempotent: sanitizing the output again finds nothing.
4. Nothing silently lost: the input is never mutated; no user message disappears.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy.core.policy import apply_policy, build_policy
from proxy.emulator import validate
from tests.factories import DIALECTS, body, broken_histories, for_dialect, histories

POLICIES = {dialect: build_policy(dialect) for dialect in DIALECTS}
PROPERTY_SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def _users(messages: list[dict[str, Any]]) -> int:
    return sum(1 for m in messages if m.get("role") == "user")


@pytest.mark.parametrize("dialect", DIALECTS)
@PROPERTY_SETTINGS
@given(data=st.data())
def test_valid_histories_pass_untouched(dialect: str, data: st.DataObject) -> None:
    messages = for_dialect(data.draw(histories()), dialect)
    assert validate(dialect, body(messages, dialect)) is None, "generator made an invalid history"
    outcome = apply_policy(messages, POLICIES[dialect])
    assert outcome.findings == ()
    assert outcome.messages is messages
    assert not outcome.changed


@pytest.mark.parametrize("dialect", DIALECTS)
@PROPERTY_SETTINGS
@given(data=st.data())
def test_broken_histories_come_out_valid(dialect: str, data: st.DataObject) -> None:
    messages = data.draw(broken_histories(dialect))
    snapshot = copy.deepcopy(messages)
    outcome = apply_policy(messages, POLICIES[dialect])
    assert messages == snapshot, "apply_policy mutated its input"
    assert not outcome.rejected, [f.as_dict() for f in outcome.findings]
    rejection = validate(dialect, body(outcome.messages, dialect))
    assert rejection is None, (rejection.rule, rejection.body, outcome.messages)
    again = apply_policy(outcome.messages, POLICIES[dialect])
    assert again.findings == (), [f.as_dict() for f in again.findings]
    assert _users(outcome.messages) >= _users(messages)
    for finding in outcome.findings:
        assert finding.path.startswith("messages[")


@pytest.mark.parametrize("dialect", DIALECTS)
@PROPERTY_SETTINGS
@given(data=st.data())
def test_direct_sends_of_broken_histories_are_refused_or_harmless(
    dialect: str, data: st.DataObject
) -> None:
    """Whenever the emulator refuses a history, the sanitizer has something to say about it."""
    messages = data.draw(broken_histories(dialect))
    if validate(dialect, body(messages, dialect)) is not None:
        assert apply_policy(messages, POLICIES[dialect]).findings
