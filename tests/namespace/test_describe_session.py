"""DescribeTable opens table versions in one pylance session per instance (``Catalog.schema_session``): its
answers are those of a fresh open, whatever happened to the table outside, from any thread."""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import lance
import lance_namespace as ln
import pyarrow as pa
import pytest

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.namespace import catalog as catalog_module


def _names(ns: DirectoryNamespace, table: str, version: int | None = None) -> list[str]:
    response = ns.describe_table(ln.DescribeTableRequest(id=[table], version=version))
    assert response.var_schema is not None
    return [field.name for field in response.var_schema.fields]


def _located(ns: DirectoryNamespace, table: str, data: pa.Table) -> str:
    """Create ``table`` through the namespace with ``data``; its directory."""
    location = ns.declare_table(ln.DeclareTableRequest(id=[table])).location
    assert location is not None
    lance.write_dataset(data, location)
    return location.removeprefix("file://")


def test_a_table_rewritten_outside_at_the_same_location_is_described_afresh(tmp_path: Path) -> None:
    ns = DirectoryNamespace(root=str(tmp_path / "catalog"))
    location = _located(ns, "t", pa.table({"a": [1]}))
    assert _names(ns, "t") == _names(ns, "t", version=1) == ["a"]
    shutil.rmtree(location)  # re-created outside: version 1 again, another manifest of the same name
    lance.write_dataset(pa.table({"b": [2]}), location)
    assert _names(ns, "t") == _names(ns, "t", version=1) == ["b"]
    lance.write_dataset(pa.table({"c": ["x"], "d": [1.0]}), location, mode="overwrite")  # version 2, outside
    assert _names(ns, "t") == _names(ns, "t", version=2) == ["c", "d"]
    assert _names(ns, "t", version=1) == ["b"]


def test_threads_describe_through_one_session(tmp_path: Path) -> None:
    ns = DirectoryNamespace(root=str(tmp_path / "catalog"))
    tables = {f"t{n}": [f"column{n}_{k}" for k in range(n + 1)] for n in range(8)}
    for table, names in tables.items():
        _located(ns, table, pa.table({name: [1] for name in names}))
    asked = [table for _ in range(10) for table in tables]
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda table: _names(ns, table), asked))
    assert answers == [tables[table] for table in asked]


def test_a_forked_child_opens_in_a_session_of_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ns = DirectoryNamespace(root=str(tmp_path / "catalog"))
    session = ns.catalog.schema_session
    assert ns.catalog.schema_session is session  # one per instance
    monkeypatch.setattr(catalog_module.os, "getpid", lambda: -1)  # as in a child the instance was forked into
    assert ns.catalog.schema_session is not session
