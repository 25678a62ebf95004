"""Clients nobody here wrote, end to end against our server: lancedb's ``connect_namespace("rest", ...)`` and
pylance's ``lance.write_dataset`` / ``lance.dataset`` with a ``RestNamespace`` (Rust) client, with and without
table version management; what they write is read by the reference directly from storage."""

from __future__ import annotations

from pathlib import Path

import lance
import lance_namespace as ln
import lancedb
import pyarrow as pa
import pytest
from lance.namespace import DirectoryNamespace as Reference

from airflow_provider_lance.namespace import DirectoryNamespace
from tests.rest.servers import serve_namespace

SCHEMA = pa.schema([("id", pa.int64()), ("vec", pa.list_(pa.float32(), 2))])


def _rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": ids, "vec": [[i / 10, i / 10 + 0.1] for i in ids]}, schema=SCHEMA)


@pytest.mark.parametrize("managed", ["false", "true"])
def test_lancedb_through_rest(root: Path, managed: str) -> None:
    with serve_namespace(DirectoryNamespace(root=str(root), table_version_management=managed)) as url:
        db = lancedb.connect_namespace("rest", {"uri": url})
        table = db.create_table("t", _rows([1, 2, 3]))
        table.add(_rows([4]))
        table.create_scalar_index("id")
        assert table.count_rows() == 4
        assert table.search([0.1, 0.2]).limit(2).to_arrow()["id"].to_pylist() == [1, 2]
        table.update(where="id = 1", values={"id": 10})
        table.delete("id = 2")
        assert sorted(table.to_arrow()["id"].to_pylist()) == [3, 4, 10]
        assert list(db.table_names()) == ["t"]
        location = Reference(root=str(root)).describe_table(ln.DescribeTableRequest(id=["t"])).location
        assert sorted(lance.dataset(location).to_table()["id"].to_pylist()) == [3, 4, 10]
        db.drop_table("t")
        assert list(db.table_names()) == []


@pytest.mark.parametrize("managed", ["false", "true"])
def test_pylance_writes_and_reads_through_rest(root: Path, managed: str) -> None:
    engine = DirectoryNamespace(root=str(root), table_version_management=managed)
    with serve_namespace(engine) as url:
        client = ln.connect("rest", {"uri": url})
        client.create_namespace(ln.CreateNamespaceRequest(id=["p"]))
        lance.write_dataset(_rows([1, 2]), namespace_client=client, table_id=["p", "t"], mode="create")
        lance.write_dataset(_rows([3]), namespace_client=client, table_id=["p", "t"], mode="append")
        dataset = lance.dataset(namespace_client=client, table_id=["p", "t"])
        assert (dataset.version, dataset.count_rows()) == (2, 3)
        versions = client.list_table_versions(ln.ListTableVersionsRequest(id=["p", "t"])).versions
        assert [v.version for v in versions] == [1, 2]
    # the engine's own view and the reference's agree with what the clients saw
    assert lance.dataset(namespace_client=engine, table_id=["p", "t"]).count_rows() == 3
    reference = Reference(root=str(root), table_version_tracking_enabled=managed)
    assert reference.list_tables(ln.ListTablesRequest(id=["p"])).tables == ["t"]
