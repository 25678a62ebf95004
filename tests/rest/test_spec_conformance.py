"""The server answers what the Lance REST Namespace spec allows (issue 43's cases; its bad-input cases are in
test_bad_input.py): the spec's media types, response bodies and statuses, the largest int64 as a limit, and
``branch`` of ``""`` or ``"main"`` as the main line. The route table's statuses are checked against the pinned
OpenAPI document itself."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest
import yaml
from lance_namespace import (
    ConcurrentModificationError,
    InternalError,
    LanceNamespaceError,
    NamespaceNotFoundError,
    TableIndexAlreadyExistsError,
    ThrottlingError,
    UnsupportedOperationError,
)

from airflow_provider_lance.rest.responses import exception_response, result_response
from airflow_provider_lance.rest.routes import ROUTES
from tests.rest.spec_fuzz import ARROW_STREAM, SPEC, arrow_stream, rows, seed_catalog

ARROW = {"content-type": ARROW_STREAM}


@pytest.fixture
def catalog(server: str) -> None:
    """The fuzz test's catalog: namespace ``a``, table ``a$t`` (8 rows, tag ``v1``, index ``id_idx``), ``a$d``
    declared."""
    seed_catalog(server)


@cache
def _spec_operations() -> dict[str, tuple[str, str, dict[str, Any]]]:
    """operationId → (method, path, responses) of the pinned document."""
    spec = yaml.safe_load(SPEC.read_text())
    return {
        operation["operationId"]: (method.upper(), path, operation["responses"])
        for path, item in spec["paths"].items()
        for method, operation in item.items()
        if isinstance(operation, dict) and "operationId" in operation
    }


@pytest.mark.parametrize(
    "route", [r for r in ROUTES if r.operation_id in _spec_operations()], ids=lambda route: route.operation
)
def test_route_statuses_are_the_specs(route: Any) -> None:
    """Each route's path, success status and error statuses are those the document gives its operation."""
    method, path, responses = _spec_operations()[route.operation_id]
    assert (path, method in route.methods) == (route.path, True)
    assert [int(status) for status in responses if str(status).startswith("2")] == [route.status]
    assert route.errors == {int(status) for status in responses if str(status)[0] in "45" and str(status) != "5XX"}


def test_every_spec_operation_has_a_route() -> None:
    assert set(_spec_operations()) <= {route.operation_id for route in ROUTES}


def test_the_largest_int64_limit_lists_everything(catalog: None, http: httpx.Client) -> None:
    response = http.get(f"/v1/namespace/a/table/list?limit={2**63 - 1}")
    assert response.status_code == 200, response.text
    assert response.json()["tables"] == ["d", "t"]


def test_query_answers_an_arrow_file_labelled_as_one(catalog: None, http: httpx.Client) -> None:
    """The spec's (and the reference's) media type; ``k`` of ``3.0`` is an integer to JSON Schema: taken."""
    response = http.post("/v1/table/a$t/query", content=b'{"k": 3.0, "vector": {}, "filter": "id < 5"}')
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/vnd.apache.arrow.file"
    assert pa.ipc.open_file(pa.BufferReader(response.content)).read_all()["id"].to_pylist() == [0, 1, 2]


@pytest.mark.parametrize("metadata", [{"k": "v"}, {"metadata": "m", "branch": "b"}, {}])
def test_schema_metadata_update_takes_and_answers_the_bare_map(
    catalog: None, http: httpx.Client, metadata: dict[str, str]
) -> None:
    """The spec's REST form: the body and the answer are the string map itself (even one with a key named
    ``metadata`` or ``branch``)."""
    response = http.post("/v1/table/a$t/schema_metadata/update", json=metadata)
    assert response.status_code == 200, response.text
    assert response.json() == metadata
    described = http.post("/v1/table/a$t/describe", json={"load_detailed_metadata": True}).json()
    assert {key: described["schema"]["metadata"][key] for key in metadata} == metadata


@pytest.mark.parametrize("branch", ["", "main"])
def test_the_main_branch_is_the_main_line(catalog: None, http: httpx.Client, branch: str) -> None:
    """With table version management, ``branch`` of ``""`` or ``"main"`` writes the main line (once 406)."""
    writes = [
        ("/v1/table/a$t/add_columns", {"json": {"new_columns": [{"name": "c", "expression": "id"}], "branch": branch}}),
        ("/v1/table/a$t/schema_metadata/update", {"json": {"k": "v"}, "params": {"branch": branch}}),
        (
            "/v1/table/a$t/insert",
            {
                "content": arrow_stream(rows(range(100, 101)).append_column("c", pa.array([100], pa.int64()))),
                "headers": ARROW,
                "params": {"branch": branch},
            },
        ),
        ("/v1/table/a$t/restore", {"json": {"version": 1, "branch": branch}}),
    ]
    for path, kwargs in writes:
        response = http.post(path, **kwargs)
        assert response.status_code == 200, (path, response.text)
    versions = http.post("/v1/table/a$t/version/list", json={}).json()["versions"]
    assert max(version["version"] for version in versions) == 2 + len(writes)  # after the seed's create and index


def test_a_write_to_a_missing_branch_is_404(
    catalog: None, http: httpx.Client, root: Path, snapshot: Callable[[Path], dict[str, bytes]]
) -> None:
    """Branches work on a managed catalog (issue 37): a write to a branch that does not exist is
    TableBranchNotFound (404, code 22), and nothing changes."""
    before = snapshot(root)
    body = {"new_columns": [{"name": "c", "expression": "id"}], "branch": "dev"}
    response = http.post("/v1/table/a$t/add_columns", json=body)
    assert (response.status_code, response.json()["code"]) == (404, 22), response.text
    assert snapshot(root) == before


@pytest.mark.parametrize(
    ("path", "body"),
    [
        (
            "/v1/table/batch-commit",
            {
                "operations": [
                    {"create_table_version": {"id": ["a", "t"], "version": 9, "manifest_path": "m", "branch": "dev"}}
                ]
            },
        ),
        (
            "/v1/table/a$t/alter_columns",
            {
                "alterations": [
                    {
                        "path": "id",
                        "virtual_column": {
                            "input_columns": ["id"],
                            "image": "i",
                            "udf": "u",
                            "udf_name": "n",
                            "udf_version": "1",
                        },
                    }
                ]
            },
        ),
    ],
)
def test_unsupported_is_400_where_the_spec_has_no_406(
    catalog: None, http: httpx.Client, root: Path, snapshot: Callable[[Path], dict[str, bytes]], path: str, body: dict
) -> None:
    """A BatchCommitTables operation on a branch, a virtual column: the spec lists no 406 for these operations, so
    Unsupported (code 0) comes with 400, and nothing changes."""
    before = snapshot(root)
    response = http.post(path, json=body)
    assert (response.status_code, response.json()["code"]) == (400, 0), response.text
    assert snapshot(root) == before


@pytest.mark.parametrize(
    ("error", "operation", "status"),
    [
        (UnsupportedOperationError("no"), "list_tables", 406),
        (UnsupportedOperationError("no"), "create_namespace", 406),
        (UnsupportedOperationError("no"), "create_table_branch", 400),
        (UnsupportedOperationError("no"), "drop_namespace", 400),
        (TableIndexAlreadyExistsError("no"), "create_table_index", 400),
        (ConcurrentModificationError("no"), "insert_into_table", 400),
        (ConcurrentModificationError("no"), "create_table_version", 409),
        (NamespaceNotFoundError("no"), "list_all_tables", 400),
        (NamespaceNotFoundError("no"), "list_tables", 404),
        (ThrottlingError("no"), "describe_table", 503),
        (InternalError("no"), "describe_table", 500),
    ],
)
def test_error_status_is_one_the_spec_lists(error: LanceNamespaceError, operation: str, status: int) -> None:
    """An error's status where the spec lists it for the operation, 400 (429: 503) where not; the code stays."""
    response = exception_response(error, operation, "r")
    assert (response.status_code, json.loads(response.body)) == (status, {"error": str(error), "code": error.code})


@pytest.mark.parametrize(
    ("operation", "status"),
    [
        ("alter_table_backfill_columns", 202),
        ("refresh_materialized_view", 202),
        ("create_materialized_view", 201),
        ("describe_table", 200),
    ],
)
def test_success_status_is_the_specs(operation: str, status: int) -> None:
    assert result_response(operation, {"id": "x"}, vend_credentials=False).status_code == status
