"""The core (``proxy/core``) imports no I/O library, and the relay (``proxy/relay``) nothing of
the repair log, the API layer or the core: an AST scan says so."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.imports import imported_modules

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


#: What the core may import of the package beyond itself: the one error tree (a pure leaf).
CORE_MAY_IMPORT = ("proxy.core.", "proxy.errors.")
ERROR_TREE = [PROXY / "errors.py", PROXY / "errorshape.py"]


def test_core_imports_only_core_modules_of_the_package() -> None:
    for file in CORE:
        for module in _proxy_imports(file):
            assert f"{module}.".startswith(CORE_MAY_IMPORT), (file, module)


@pytest.mark.parametrize("file", ERROR_TREE, ids=lambda f: f.name)
def test_the_error_tree_is_a_pure_leaf(file: Path) -> None:
    """The core raises its errors from ``proxy/errors.py``: it must stay as pure as the core."""
    assert not _imports(file) & FORBIDDEN
    assert all(module.startswith("proxy.errorshape") for module in _proxy_imports(file))


RELAY = sorted((PROXY / "relay").rglob("*.py"))
#: What the relay (upstream I/O only) must not know: the repair log, the API layer, the core.
RELAY_FORBIDDEN = ("proxy.repairlog", "proxy.api", "proxy.core")


def _proxy_imports(file: Path) -> set[str]:
    """The ``proxy.*`` modules (and names of them) ``file`` imports."""
    return {name for name in imported_modules(file) if name.startswith("proxy.")}


@pytest.mark.parametrize("file", RELAY, ids=lambda f: f.name)
def test_relay_imports_nothing_of_the_repair_log_api_or_core(file: Path) -> None:
    assert not {m for m in _proxy_imports(file) if m.startswith(RELAY_FORBIDDEN)}, file


def test_the_relay_scan_sees_imports() -> None:
    """The scan reads what it should: the relay's own imports of the package are found."""
    assert "proxy.relay.base" in _proxy_imports(PROXY / "relay" / "asgi.py")
