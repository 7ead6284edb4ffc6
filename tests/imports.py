"""What a module imports, read from its source (the layering tests' AST scans)."""

from __future__ import annotations

import ast
from pathlib import Path


def imported_modules(file: Path) -> set[str]:
    """Every module ``file`` imports, and every name it imports from one as ``module.name``
    (``from proxy import errors`` gives ``proxy`` and ``proxy.errors``). The package uses
    absolute imports only: a relative one fails the scan."""
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
