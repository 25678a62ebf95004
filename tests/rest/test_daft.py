"""Daft end to end against our server: ``daft_lance.write_lance`` / ``read_lance`` with ``namespace_impl="rest"``
(Daft's Lance namespace support; ``daft.read_lance`` itself takes only a URI in daft 0.7.26), behind a bearer
token, with and without table version management. What Daft writes is read by pylance through the server and by
the reference directly from storage; what pylance writes through the server is read by Daft."""

from __future__ import annotations

import re
from pathlib import Path

import daft
import daft_lance
import httpx
import lance
import lance_namespace as ln
import pyarrow as pa
import pytest
from lance.namespace import DirectoryNamespace as Reference

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.rest import ServerSettings
from tests.rest.servers import serve_namespace

TOKEN = "daft-token"


def _rows(frame: daft.DataFrame) -> list[tuple[int, str]]:
    data = frame.to_pydict()
    return sorted(zip(data["id"], data["name"], strict=True))


@pytest.mark.parametrize("managed", ["false", "true"])
def test_daft_writes_and_reads_through_rest(root: Path, managed: str) -> None:
    engine = DirectoryNamespace(root=str(root), table_version_management=managed)
    with serve_namespace(engine, ServerSettings(tokens=frozenset({TOKEN}))) as url:
        properties = {"uri": url, "header.Authorization": f"Bearer {TOKEN}"}
        table = {"namespace_impl": "rest", "namespace_properties": properties, "table_id": ["d", "events"]}
        client = ln.connect("rest", properties)
        client.create_namespace(ln.CreateNamespaceRequest(id=["d"]))

        first = daft_lance.write_lance(daft.from_pydict({"id": [1, 2], "name": ["a", "b"]}), mode="create", **table)
        assert first.to_pydict()["version"] == [1]
        daft_lance.write_lance(daft.from_pydict({"id": [3], "name": ["c"]}), mode="append", **table).collect()
        assert _rows(daft_lance.read_lance(**table)) == [(1, "a"), (2, "b"), (3, "c")]
        assert _rows(daft_lance.read_lance(**table).where(daft.col("id") > 1)) == [(2, "b"), (3, "c")]

        # with version management, Daft's two commits were the server's CreateTableVersion; pylance sees both
        metrics = httpx.get(f"{url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).text
        commits = re.search(r'requests_total\{operation="create_table_version",status="200"\} (\S+)', metrics)
        assert (float(commits.group(1)) if commits else 0) == (2 if managed == "true" else 0)
        dataset = lance.dataset(namespace_client=client, table_id=["d", "events"])
        assert (dataset.version, dataset.count_rows()) == (2, 3)
        versions = client.list_table_versions(ln.ListTableVersionsRequest(id=["d", "events"])).versions
        assert [v.version for v in versions] == [1, 2]

        # a table pylance writes through the server, read by Daft
        written = pa.table({"id": [7, 8], "name": ["x", "y"]})
        lance.write_dataset(written, namespace_client=client, table_id=["d", "other"], mode="create")
        other = {**table, "table_id": ["d", "other"]}
        assert _rows(daft_lance.read_lance(**other)) == [(7, "x"), (8, "y")]

        daft_lance.write_lance(daft.from_pydict({"id": [9], "name": ["z"]}), mode="overwrite", **table).collect()
        assert _rows(daft_lance.read_lance(**table)) == [(9, "z")]
        with pytest.raises(Exception, match=r"(?i)already exists"):
            daft_lance.write_lance(daft.from_pydict({"id": [0], "name": ["n"]}), mode="create", **table).collect()

    reference = Reference(root=str(root), table_version_tracking_enabled=managed)
    assert sorted(reference.list_tables(ln.ListTablesRequest(id=["d"])).tables) == ["events", "other"]
    location = reference.describe_table(ln.DescribeTableRequest(id=["d", "events"])).location
    assert lance.dataset(location).to_table().to_pydict() == {"id": [9], "name": ["z"]}
