"""Fixtures for the Spark tests: one local[2] session for the whole run, a reference namespace per test."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import lance_namespace as ln
import pytest

from airflow_provider_lance import staging as st
from airflow_provider_lance.namespace import DirectoryNamespace

VENV_BIN = str(Path(sys.executable).parent)
REPO = str(Path(__file__).resolve().parents[2])


def spark_env() -> dict[str, str]:
    """Environment that Spark (driver, workers and spark-submit) needs here."""
    path = os.environ.get("PATH", "")
    return {
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PATH": path if path.startswith(VENV_BIN + os.pathsep) else VENV_BIN + os.pathsep + path,
        # This checkout's provider for spark-submit children (the venv may hold another checkout's install).
        "PYTHONPATH": os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH", "")) if p),
    }


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    os.environ.update(spark_env())
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("airflow-provider-lance-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    yield session
    session.stop()


@pytest.fixture
def namespace(root: Path) -> ln.LanceNamespace:
    """The provider's engine with table version management, so a batch commit is atomic."""
    return DirectoryNamespace(root=str(root), table_version_management="true")


@pytest.fixture
def commit() -> Callable[[ln.LanceNamespace, list[ln.CreateTableVersionEntry]], None]:
    """Return a function committing staged entries to a namespace in one BatchCreateTableVersions."""
    return st.commit_entries


@pytest.fixture
def spark_environ() -> dict[str, str]:
    """The process environment for a spark-submit child."""
    return {**os.environ, **spark_env()}
