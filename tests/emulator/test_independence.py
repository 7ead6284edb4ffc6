"""The emulators judge the sanitizer's output, so they share no code with it (AST scan)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.imports import imported_modules

EMULATOR = Path(__file__).parents[2] / "proxy" / "emulator"
FILES = sorted(EMULATOR.glob("*.py"))
SANITIZER = ("proxy.core.chat.messages", "proxy.core.chat.rules", "proxy.core.policy")


def test_the_scan_sees_every_module() -> None:
    assert {f.name for f in FILES} >= {"__init__.py", "openai.py", "deepseek.py", "gemini.py",
                                       "gemini_native.py", "gemini_native_rules.py"}  # fmt: skip


@pytest.mark.parametrize("file", FILES, ids=lambda f: f.name)
def test_emulator_imports_nothing_of_the_sanitizer(file: Path) -> None:
    for module in imported_modules(file):
        assert not module.startswith(SANITIZER), f"{file.name} imports {module}"
        if module.startswith("proxy") and module != "proxy":
            assert module.startswith("proxy.emulator"), f"{file.name} imports {module}"
