"""The server as an adapter (``--impl``): any ``lance_namespace.LanceNamespace`` behind the same route table,
security, metrics and error mapping.

The differential test serves pylance's own ``DirectoryNamespace`` (``--impl dir``) through our server and
sends the same requests to the reference ``RestAdapter("dir")``: every status and error code must agree,
including the version operations pylance wants as dicts, but for the operations its backend lacks: Unsupported
(406, code 0) as the spec says, where the reference answers Internal (500, code 18).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest

from airflow_provider_lance.implementations import connect
from tests.resource_warnings import resource_warnings
from tests.rest.servers import ServerProcess, reference_server, serve_namespace
from tests.rest.test_differential import REFERENCE_UNSUPPORTED, compare, unsupported
from tests.rest.test_differential import REQUESTS as CATALOG_REQUESTS


def _ipc(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


_ROWS = _ipc(pa.table({"id": pa.array([1, 2, 3], pa.int32()), "name": ["a", "b", "c"]}))

# after the catalog requests of test_differential (which end with an empty catalog): versions, data, and
# the operations the reference's backend lacks
REQUESTS: list[tuple[str, str, Any]] = [
    *CATALOG_REQUESTS,
    ("POST", "/v1/namespace/v/create", {}),
    ("POST", "/v1/table/v$t/create", _ROWS),
    ("POST", "/v1/table/v$t/version/list", {}),
    ("POST", "/v1/table/v$t/version/describe", {"version": 1}),
    ("POST", "/v1/table/v$t/version/describe", {"version": 99}),
    ("POST", "/v1/table/v$nope/version/create", {"version": 2, "manifest_path": "x"}),
    ("POST", "/v1/table/v$t/version/create", {"version": 2, "manifest_path": "missing.manifest"}),
    ("POST", "/v1/table/v$nope/version/delete", {"ranges": [{"start_version": 1, "end_version": 1}]}),
    ("POST", "/v1/table/v$t/count_rows", {}),
    ("POST", "/v1/table/v$t/insert", _ROWS),
    ("POST", "/v1/table/v$t/update_field_metadata", {"updates": []}),
    ("POST", "/v1/table/v$t/backfill_column", {"column": "x"}),
    ("POST", "/v1/materialized_view/v$t/refresh", {}),
    ("POST", "/v1/table/version/batch-create", {"entries": []}),
    ("POST", "/v1/table/batch-commit", {"operations": []}),
    ("POST", "/v1/table/v$t/rename", {"new_table_name": "u"}),
    ("POST", "/v1/table/v$t/drop", None),
    ("POST", "/v1/namespace/v/drop", {}),
]


@pytest.fixture
def adapters(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """Our server over pylance's DirectoryNamespace, and the reference RestAdapter over the same kind."""
    (tmp_path / "ours").mkdir()
    (tmp_path / "reference").mkdir()
    with (
        serve_namespace(connect("dir", {"root": str(tmp_path / "ours")})) as ours,
        reference_server(str(tmp_path / "reference")) as reference,
    ):
        yield ours, reference


def test_impl_dir_answers_as_the_reference_adapter(adapters: tuple[str, str]) -> None:
    differences, ours = compare(REQUESTS, *adapters)
    assert differences == []
    assert (404, 4) in ours and any(code == 0 for _, code in ours)  # a version op on a missing table; one it lacks
    assert REFERENCE_UNSUPPORTED not in ours


def test_an_operation_the_implementation_lacks_names_it_without_a_traceback(adapters: tuple[str, str]) -> None:
    with httpx.Client(base_url=adapters[0], timeout=30) as client:
        answer = client.post("/v1/table/version/batch-create", json={"entries": []})
        assert (answer.status_code, answer.json()["code"]) == unsupported("batch_create_table_versions")  # ref: 500/18
        message = answer.json()["error"]
        assert message.startswith("Not supported: batch_create_table_versions is not implemented by DirectoryNamespace")
        assert "table_version_management=true" in message  # what would serve
        refresh = client.post("/v1/materialized_view/x/refresh", json={}).json()["error"]
        assert "Traceback" not in refresh and "/home/runner" not in refresh and "request id" not in refresh
        operations = client.post("/ListOperations").json()["operations"]
        assert "CreateTableVersion" in operations and "BatchCreateTableVersions" not in operations
        metrics = client.get("/metrics").text
        assert 'lance_rest_namespace_errors_total{code="0",operation="batch_create_table_versions"} 1.0' in metrics


@pytest.mark.slow  # starts processes of its own
def test_the_command_serves_another_implementation_behind_the_same_security(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("s3cret\n")
    (tmp_path / "root").mkdir()
    with ServerProcess(["--impl", "dir", "--root", str(tmp_path / "root"), "--token-file", str(tokens)]) as server:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            assert client.post("/v1/namespace/a/create", json={}).status_code == 401
            headers = {"Authorization": "Bearer s3cret"}
            assert client.post("/v1/namespace/a/create", json={}, headers=headers).status_code == 200
            assert client.get("/v1/namespace/$/list", headers=headers).json()["namespaces"] == ["a"]
            assert client.get("/ready", headers=headers).status_code == 200
        assert server.terminate() == 0
    # pylance's DirectoryNamespace wrote the catalog: its __manifest, read back by the reference
    import lance_namespace as ln
    from lance.namespace import DirectoryNamespace

    reference = DirectoryNamespace(root=str(tmp_path / "root"))
    assert reference.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == ["a"]


@pytest.mark.slow  # starts processes of its own
def test_an_implementation_that_cannot_be_built_stops_the_command_with_its_reason(tmp_path: Path) -> None:
    """The command stops with the reason, not the secret; the server that did not start is reaped and its pipes
    closed (left to the garbage collector, they were ResourceWarnings of a later test of the same worker)."""
    with resource_warnings() as leaked:
        with pytest.raises(RuntimeError, match="did not start") as raised:
            ServerProcess(["--impl", "no_such.Namespace", "--property", "secret_key=hunter2-secret"])
        message = str(raised.value)
        del raised  # its traceback holds the ServerProcess that failed
    assert "Cannot serve --impl no_such.Namespace" in message
    assert "hunter2-secret" not in message
    assert leaked == []
