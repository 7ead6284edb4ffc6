"""The core (``proxy/core``) imports no I/O library: an AST scan says so."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PROXY = Path(__file__).parent.parent / "proxy"
CORE = sorted((PROXY / "core").rglob("*.py"))
FORBIDDEN = {
    "os",
    "sys",
    "io",
    "socket",
    "logging",
    "httpx",
    "aiohttp",
    "fastapi",
    "starlette",
    "sqlite3",
    "psycopg",
    "asyncio",
    "subprocess",
    "pathlib",
    "time",
    "random",
    "uvicorn",
}


def _imports(file: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(file.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("file", CORE, ids=lambda f: f.name)
def test_core_module_imports_no_io(file: Path) -> None:
    assert not _imports(file) & FORBIDDEN


def test_core_imports_only_core_modules_of_the_package() -> None:
    for file in CORE:
        tree = ast.parse(file.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("proxy"):
                assert node.module.split(".")[1] == "core", (
                    file,
                    node.module,
                )
