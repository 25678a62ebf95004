"""Clients nobody here wrote, end to end against our server: lancedb's ``connect_namespace("rest", ...)`` and
pylance's ``lance.write_dataset`` / ``lance.dataset`` with a ``RestNamespace`` (Rust) client, with and without
table version management; what they write is read by the reference directly from storage."""

from __future__ import annotations

from pathlib import Path

import lance
import lance_namespace as ln
import lancedb
import pytest
from lance.namespace import DirectoryNamespace as Reference

from airflow_provider_lance.namespace import DirectoryNamespace
from tests.lancedb_round_trip import round_trip, vector_rows
from tests.rest.servers import serve_namespace


@pytest.mark.parametrize("managed", ["false", "true"])
def test_lancedb_through_rest(root: Path, managed: str) -> None:
    with serve_namespace(DirectoryNamespace(root=str(root), table_version_management=managed)) as url:
        db = lancedb.connect_namespace("rest", {"uri": url})
        round_trip(db)
        location = Reference(root=str(root)).describe_table(ln.DescribeTableRequest(id=["t"])).location
        assert sorted(lance.dataset(location).to_table()["id"].to_pylist()) == [3, 4, 10]
        db.drop_table("t")
        assert db.list_tables().tables == []


@pytest.mark.parametrize("managed", ["false", "true"])
def test_pylance_writes_and_reads_through_rest(root: Path, managed: str) -> None:
    engine = DirectoryNamespace(root=str(root), table_version_management=managed)
    with serve_namespace(engine) as url:
        client = ln.connect("rest", {"uri": url})
        client.create_namespace(ln.CreateNamespaceRequest(id=["p"]))
        lance.write_dataset(vector_rows([1, 2]), namespace_client=client, table_id=["p", "t"], mode="create")
        lance.write_dataset(vector_rows([3]), namespace_client=client, table_id=["p", "t"], mode="append")
        dataset = lance.dataset(namespace_client=client, table_id=["p", "t"])
        assert (dataset.version, dataset.count_rows()) == (2, 3)
        versions = client.list_table_versions(ln.ListTableVersionsRequest(id=["p", "t"])).versions
        assert [v.version for v in versions] == [1, 2]
    # the engine's own view and the reference's agree with what the clients saw
    assert lance.dataset(namespace_client=engine, table_id=["p", "t"]).count_rows() == 3
    reference = Reference(root=str(root), table_version_tracking_enabled=managed)
    assert reference.list_tables(ln.ListTablesRequest(id=["p"])).tables == ["t"]
