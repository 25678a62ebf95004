"""Fixtures shared by every test package."""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
# The engine's rows cache of remote catalogs (and anything else under the cache home) stays out of the user's
# home: one directory per test session, inherited by the processes the tests start.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="lance-provider-tests-cache-")
# Check mode for every catalog of the suite and of the processes it starts (property manifest_check_rows):
# rows derived from a write or read incrementally are compared with a fresh read of the same version.
os.environ["AIRFLOW_PROVIDER_LANCE_CHECK_ROWS"] = "true"
# py4j logs at INFO from __del__ while the interpreter shuts down, after pytest has closed its streams.
logging.getLogger("py4j").setLevel(logging.WARNING)


def tree_snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes (directories included as empty markers)."""
    snapshot: dict[str, bytes] = {}
    if not root.exists():
        return snapshot
    for path in sorted(root.rglob("*")):
        relative = str(path.relative_to(root))
        snapshot[relative + ("/" if path.is_dir() else "")] = b"" if path.is_dir() else path.read_bytes()
    return snapshot


@pytest.fixture
def snapshot() -> Callable[[Path], dict[str, bytes]]:
    return tree_snapshot


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """An empty directory for a namespace root."""
    path = tmp_path / "root"
    path.mkdir()
    return path
