"""The emulators judge the sanitizer's output, so they share no code with it (AST scan)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

EMULATOR = Path(__file__).parents[2] / "proxy" / "emulator"
FILES = sorted(EMULATOR.glob("*.py"))
SANITIZER = ("proxy.core.chat.messages", "proxy.core.chat.rules", "proxy.core.policy")


def imported_modules(file: Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(file.read_text())):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{file.name}: relative import"
            base = node.module or ""
            modules.add(base)
            modules.update(f"{base}.{alias.name}" for alias in node.names)
    return modules


def test_the_scan_sees_every_module() -> None:
    assert {f.name for f in FILES} >= {"__init__.py", "openai.py", "deepseek.py", "gemini.py",
                                       "gemini_native.py", "gemini_native_rules.py"}  # fmt: skip


@pytest.mark.parametrize("file", FILES, ids=lambda f: f.name)
def test_emulator_imports_nothing_of_the_sanitizer(file: Path) -> None:
    for module in imported_modules(file):
        assert not module.startswith(SANITIZER), f"{file.name} imports {module}"
        if module.startswith("proxy") and module != "proxy":
            assert module.startswith("proxy.emulator"), f"{file.name} imports {module}"
