"""The Node tests' set-up (tests/node.py): when npm cannot install (the registry unreachable)
the tests are skipped with npm's reason, and under CI=true they fail instead of skipping."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.node import node_with

FAILING_NPM = """#!/bin/sh
echo "npm error code EAI_AGAIN" >&2
echo "npm error request to the registry failed, reason: getaddrinfo EAI_AGAIN" >&2
exit 1
"""


@pytest.fixture
def offline_npm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """PATH with a node and an npm that cannot reach its registry."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "npm").write_text(FAILING_NPM)
    (bin_dir / "node").write_text("#!/bin/sh\nexit 0\n")
    for tool in ("npm", "node"):
        (bin_dir / tool).chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    return tmp_path / "node"


def test_an_unreachable_registry_skips_with_npms_reason(
    offline_npm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        node_with(offline_npm, ("openai@^4",), offline_npm / "node_modules" / "openai", what="x")
    reason = str(skipped.value)
    assert "npm could not install openai@^4 for x" in reason
    assert "EAI_AGAIN" in reason


def test_under_ci_an_unreachable_registry_fails(
    offline_npm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="required under CI=true: npm could not"):
        node_with(offline_npm, ("openai@^4",), offline_npm / "node_modules" / "openai", what="x")


def test_an_installed_package_is_not_installed_again(
    offline_npm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    installed = offline_npm / "node_modules" / "openai"
    installed.mkdir(parents=True)
    assert node_with(offline_npm, ("openai@^4",), installed, what="x").endswith("/node")
