"""`toolcall-guard check --upstream NAME` for every preset, on that preset's own golden cases:
exit 0 for a valid history, 1 with the case's rules for a broken one (issue 14, "Done when")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from proxy.core.policy import PRESETS
from tests.cli.test_check import _run

CASES = json.loads((Path(__file__).parents[1] / "cases" / "presets.json").read_text())
#: One valid and one broken case per second-tier preset.
PICKED = {(c["policy"], bool(c["findings"])): c for c in CASES if c["policy"] in PRESETS}


@pytest.mark.parametrize("case", list(PICKED.values()), ids=[c["id"] for c in PICKED.values()])
def test_check_names_the_preset_and_its_findings(case: dict[str, Any], tmp_path: Path) -> None:
    body = {**case["request"], "messages": case["input"]}
    file = tmp_path / "body.json"
    file.write_text(json.dumps(body))
    done = _run(str(file), "--upstream", case["policy"], "--format", "json")
    assert done.returncode == (1 if case["findings"] else 0), done.stderr
    report = json.loads(done.stdout)
    assert report["policy"] == case["policy"]
    assert {f["rule"] for f in report["findings"]} == {f["rule"] for f in case["findings"]}
