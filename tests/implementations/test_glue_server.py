"""``lance-namespace-server --impl glue`` on moto: pylance and lancedb write and read through the server, a
missing table is 404/4 (Glue raises a plain RuntimeError), what Glue cannot serve is answered as the reference
``RestAdapter`` answers an operation its backend lacks, and the catalog page shows the Glue catalog."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import lance
import lance_namespace as ln
import lancedb
import pyarrow as pa
import pytest

from tests.implementations.conftest import glue_properties
from tests.rest.servers import ServerProcess
from tests.s3.conftest import MotoServer

TOKEN = "glue-token"


@pytest.fixture
def glue_server(tmp_path: Path, moto_server: MotoServer, glue_root: str) -> Iterator[str]:
    """The command over Glue: credentials in a properties file (never argv) and a bearer token. The server
    hands out no keys (the secrets of Glue's storage options are dropped from responses): clients bring
    their own storage options."""
    properties = tmp_path / "glue.json"
    properties.write_text(json.dumps(glue_properties(moto_server, glue_root)))
    tokens = tmp_path / "tokens"
    tokens.write_text(f"{TOKEN}\n")
    with ServerProcess(["--impl", "glue", "--properties-file", str(properties), "--token-file", str(tokens)]) as server:
        yield server.url
        assert server.terminate() == 0


def test_pylance_and_lancedb_through_the_server_over_glue(
    glue_server: str, glue_root: str, database: str, moto_server: MotoServer
) -> None:
    options = moto_server.storage_options()
    client = ln.connect("rest", {"uri": glue_server, "header.Authorization": f"Bearer {TOKEN}"})
    client.create_namespace(ln.CreateNamespaceRequest(id=[database]))
    rows = pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]})
    table_id = [database, "events"]
    lance.write_dataset(rows, namespace_client=client, table_id=table_id, mode="create", storage_options=options)
    described = client.describe_table(ln.DescribeTableRequest(id=table_id))
    assert described.location == f"{glue_root}/{database}/events.lance"
    assert "aws_secret_access_key" not in (described.storage_options or {})  # the server's keys stay there
    assert lance.dataset(namespace_client=client, table_id=table_id, storage_options=options).count_rows() == 3

    properties = {"uri": glue_server, "header.Authorization": f"Bearer {TOKEN}"}
    db = lancedb.connect_namespace("rest", properties, storage_options=options)
    table = db.open_table("events", namespace_path=[database], storage_options=options)
    assert table.count_rows("id > 1") == 2
    table.add(pa.table({"id": [4], "name": ["d"]}))
    assert lance.dataset(namespace_client=client, table_id=table_id, storage_options=options).count_rows() == 4
    assert db.list_tables(namespace_path=[database]).tables == ["events"]

    # the page: Glue keeps no versions, the page reads the table's own (two: the write and lancedb's add)
    with httpx.Client(base_url=glue_server, timeout=30, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        page = http.get("/table/versions", params=[("id", database), ("id", "events")])
    assert page.status_code == 200
    assert "Overwrite" in page.text and "Append" in page.text


def test_errors_of_the_server_over_glue(glue_server: str, database: str) -> None:
    with httpx.Client(base_url=glue_server, timeout=30, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        assert http.post(f"/v1/namespace/{database}/create", json={}).status_code == 200
        missing = http.post(f"/v1/table/{database}$missing/describe", json={})
        assert (missing.status_code, missing.json()["code"]) == (404, 4)
        assert http.post(f"/v1/table/{database}$missing/exists", json={}).status_code == 404
        again = http.post(f"/v1/namespace/{database}/create", json={})
        assert (again.status_code, again.json()["code"]) == (409, 2)
        versions = http.post(f"/v1/table/{database}$missing/version/list", json={})
        assert (versions.status_code, versions.json()["code"]) == (400, 0)  # Unsupported; the spec lists no 406 here
        assert "not implemented by GlueNamespace" in versions.json()["error"]
        operations = http.post("/ListOperations").json()["operations"]
        assert {"DeclareTable", "DescribeTable", "TableExists"} <= set(operations)
        assert "CreateTableVersion" not in operations
        page = http.get("/")
        assert page.status_code == 200 and database in page.text
        assert http.get("/v1/namespace/$/list").status_code == 200
