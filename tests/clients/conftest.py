"""Clients in other languages against our server: Node's ``@lancedb/lancedb`` (``node/``, pinned with its
lockfile) and DuckDB's Lance extension.

Node and its packages come from the machine: Debian's ``nodejs`` and ``npm`` (``.ci/run`` and ``make
node-clients`` install them), then ``npm ci`` in ``tests/clients/node`` (run here when ``node_modules`` is
missing). Without Node a developer's run skips the Node tests and says why; under CI (``CI=true``) they fail
instead: CI never skips them.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pytest

NODE_DIR = Path(__file__).parent / "node"


def _missing(what: str) -> None:
    message = f"{what}: install Debian's nodejs and npm (`make node-clients`, as .ci/run does)"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"CI runs the Node client tests: {message}")
    pytest.skip(message)


@pytest.fixture(scope="session")
def node() -> str:
    """The ``node`` executable, with ``tests/clients/node``'s locked packages installed."""
    executable = shutil.which("node")
    if executable is None:
        _missing("Node.js is not installed")
    version = subprocess.run([executable, "--version"], capture_output=True, text=True, check=True).stdout
    if int(version.strip().lstrip("v").split(".")[0]) < 18:
        _missing(f"Node.js {version.strip()} is too old (@lancedb/lancedb needs 18 or later)")
    with open(NODE_DIR / ".npm-ci.lock", "w") as lock:  # pytest-xdist workers: one `npm ci`, the others wait
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (NODE_DIR / "node_modules" / "@lancedb" / "lancedb").is_dir():
            npm = shutil.which("npm")
            if npm is None:
                _missing("npm is not installed (needed once for `npm ci` in tests/clients/node)")
            subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=NODE_DIR, check=True, timeout=600)
    return str(executable)
