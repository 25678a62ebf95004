"""Shared helpers of the ported upstream tests: upstream's test data and small request wrappers."""

from __future__ import annotations

import io
from typing import Any

import lance_namespace as ln
import pyarrow as pa
import pytest
from lance_namespace import LanceNamespace


def people() -> pa.Table:
    """Upstream's three-row test table (python ``create_test_data``)."""
    return pa.Table.from_pylist(
        [
            {"id": 1, "name": "Alice", "age": 30},
            {"id": 2, "name": "Bob", "age": 25},
            {"id": 3, "name": "Charlie", "age": 35},
        ]
    )


def id_name() -> pa.Table:
    """Upstream's Rust test table: ``id`` int32 not null, ``name`` utf8, three rows."""
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("name", pa.utf8())])
    return pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]}, schema=schema)


def ipc(table: pa.Table) -> bytes:
    """An Arrow IPC stream of ``table`` (the request body of create_table / insert_into_table)."""
    sink = io.BytesIO()
    with pa.ipc.RecordBatchStreamWriter(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def create_table(ns: LanceNamespace, table_id: list[str], table: pa.Table | None = None, **fields: Any) -> Any:
    """``create_table`` with an Arrow IPC body (upstream's default data when ``table`` is None)."""
    return ns.create_table(ln.CreateTableRequest(id=table_id, **fields), ipc(people() if table is None else table))


def create_namespaces(ns: LanceNamespace, *ids: list[str]) -> None:
    for namespace_id in ids:
        ns.create_namespace(ln.CreateNamespaceRequest(id=namespace_id))


def tables_of(ns: LanceNamespace, namespace_id: list[str]) -> list[str]:
    return list(ns.list_tables(ln.ListTablesRequest(id=namespace_id)).tables)


def table_exists(ns: LanceNamespace, table_id: list[str]) -> bool:
    """``table_exists`` as a bool: True when it returns, False on TableNotFoundError."""
    try:
        ns.table_exists(ln.TableExistsRequest(id=table_id))
    except ln.TableNotFoundError:
        return False
    return True


def namespace_exists(ns: LanceNamespace, namespace_id: list[str]) -> bool:
    try:
        ns.namespace_exists(ln.NamespaceExistsRequest(id=namespace_id))
    except ln.NamespaceNotFoundError:
        return False
    return True


# RegisterTable locations both implementations refuse, with the reference's phrase for each.
REFUSED_LOCATIONS = [
    pytest.param("s3://bucket/table.lance", "Absolute URIs are not allowed", id="absolute_uri"),
    pytest.param("/tmp/table.lance", "Absolute paths are not allowed", id="absolute_path"),
    pytest.param("../outside/table.lance", "Path traversal is not allowed", id="path_traversal"),
]
