"""Helpers of the data-plane tests: Arrow IPC bodies, a small table, and a namespace with a table in it."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from lance_namespace import CreateNamespaceRequest, CreateTableRequest, LanceNamespace, LanceNamespaceError

TABLE = ["w", "t"]


def ipc(table: pa.Table) -> bytes:
    """An Arrow IPC stream body."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def rows(count: int = 10, start: int = 0) -> pa.Table:
    """``count`` rows: an id, a name and a 4-dimensional vector."""
    ids = list(range(start, start + count))
    values = pa.array([float(i % 7) for i in ids for _ in range(4)], pa.float32())
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": [f"n{i}" for i in ids],
            "vec": pa.FixedSizeListArray.from_arrays(values, 4),
        }
    )


def with_table(namespace: LanceNamespace, data: pa.Table | None = None) -> LanceNamespace:
    """The namespace with ``w`` and the table ``w.t`` created from ``data`` (10 rows by default)."""
    namespace.create_namespace(CreateNamespaceRequest(id=["w"]))
    namespace.create_table(CreateTableRequest(id=TABLE), ipc(data if data is not None else rows()))
    return namespace


def outcome(function: Any, *args: Any) -> tuple[str, Any]:
    """('ok', response) or ('error', code) of one call."""
    try:
        return "ok", function(*args)
    except LanceNamespaceError as error:
        return "error", int(error.code)


def read_ipc_file(data: bytes) -> pa.Table:
    """The rows of a QueryTable answer (an Arrow IPC file)."""
    return pa.ipc.open_file(pa.BufferReader(data)).read_all()
