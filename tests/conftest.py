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


# The modules with the longest tests (an Airflow DAG run with Spark, the api-server, spark-submit, moto races and
# fault injection, a wheel install; each 20-120 s on this 2-core machine, `pytest --durations`): collected first,
# so that `make test`'s two workers (pytest -n 2) start them early and the end is filled with short tests instead
# of one worker finishing a long test alone.
SLOW_MODULES_FIRST = (
    "tests/example_dags/test_lance_change_feed.py",
    "tests/example_dags/test_lance_spark_s3.py",
    "tests/example_dags/test_lance_spark_azure.py",
    "tests/plugins/test_lance_plugin.py",
    "tests/example_dags/test_lance_spark_batch_commit.py",
    "tests/spark/test_job_submit.py",
    "tests/example_dags/test_lance_spark_rest_vending.py",
    "tests/s3/test_s3_faults.py",
    "tests/s3/test_s3_expiry_enforced.py",
    "tests/namespace/test_drop_race.py",
    "tests/s3/test_s3_concurrency.py",
    "tests/packaging/test_wheel.py",
    "tests/rest/test_cli.py",
)


# Every test has a tier (pyproject's markers): what it needs beyond this process. A test is marked by what starts
# those things — its module's or its own marks, the fixtures that start them, the folders and modules that hold
# only such tests — and ``unit`` when it needs none of them (``make test-fast``). ``e2e`` (``make test-e2e``, which
# CI runs after ``make test``): whole pipelines through Airflow and spark-submit, and the fault workloads, the
# ~520 s of worker time that kept ``make test`` over its 10 minutes (``--durations``).
TIERS = ("s3", "azure", "spark", "airflow", "browser", "clients", "slow", "e2e")
TIER_FIXTURES = {
    "moto_server": "s3",
    "spark": "spark",
    "spark_environ": "spark",
    "browser": "browser",
    "node": "clients",
}
TIER_PATHS = {
    "tests/s3/": "s3",
    "tests/spark/": "spark",
    "tests/clients/": "clients",
    "tests/packaging/": "slow",
    "tests/example_dags/": "e2e",
    "tests/spark/test_job_submit.py": "e2e",
    "tests/s3/test_s3_faults.py": "e2e",
    "tests/s3/test_s3_operator_faults.py": "e2e",
}


def tiers_of(item: pytest.Item) -> set[str]:
    """The tiers ``item`` belongs to (empty: a unit test)."""
    found = {mark.name for mark in item.iter_markers() if mark.name in TIERS}
    found.update(tier for name, tier in TIER_FIXTURES.items() if name in getattr(item, "fixturenames", ()))
    found.update(tier for path, tier in TIER_PATHS.items() if item.nodeid.startswith(path))
    return found


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with its tiers (``unit`` when none), then put the tests of ``SLOW_MODULES_FIRST`` first, in
    that order (a stable sort: the rest keep theirs)."""
    for item in items:
        for tier in sorted(tiers_of(item)) or ["unit"]:
            item.add_marker(tier)
    rank = {module: position for position, module in enumerate(SLOW_MODULES_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


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
