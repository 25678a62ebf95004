"""What the lancedb tests share: vector rows and one round trip through a lancedb connection (create, add,
index, search, update, delete), whatever implementation the connection reaches."""

from __future__ import annotations

import lancedb
import pyarrow as pa
from lancedb.index import BTree

SCHEMA = pa.schema([("id", pa.int64()), ("vec", pa.list_(pa.float32(), 2))])


def vector_rows(ids: list[int]) -> pa.Table:
    """Rows ``id`` with a 2-dimensional vector each."""
    return pa.table({"id": ids, "vec": [[i / 10, i / 10 + 0.1] for i in ids]}, schema=SCHEMA)


def round_trip(db: lancedb.DBConnection) -> None:
    """Create table ``t`` with ids 1-3, add 4, index and search it, update 1 to 10 and delete 2; the table stays
    (ids 3, 4 and 10) for the caller's own checks."""
    table = db.create_table("t", vector_rows([1, 2, 3]))
    table.add(vector_rows([4]))
    table.create_index("id", config=BTree())
    assert table.count_rows() == 4
    assert table.search([0.1, 0.2]).limit(2).to_arrow()["id"].to_pylist() == [1, 2]
    table.update(where="id = 1", values={"id": 10})
    table.delete("id = 2")
    assert sorted(table.to_arrow()["id"].to_pylist()) == [3, 4, 10]
    assert db.list_tables().tables == ["t"]
