"""Our server and the reference ``RestAdapter`` (pylance's Rust server over its directory namespace) answer the
same requests with the same HTTP status and the same error code.

Where we differ on purpose, a test below says so: unknown fields are refused instead of ignored, the seed's
``POST /<OperationId>`` form and ``/health`` exist, and the operations the reference does not implement
(BatchCreateTableVersions, rename) work; the engine's own spec checks (a table's parent namespace must
exist) reach the client; and an operation the implementation lacks is Unsupported (406, code 0, the spec's
answer) where the reference answers Internal (500, code 18).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.rest.routes import BY_OPERATION
from tests.rest.servers import reference_server, serve_namespace

# (method, path, JSON body or raw bytes); run in order on a fresh catalog of each server
REQUESTS: list[tuple[str, str, Any]] = [
    ("POST", "/v1/namespace/a/create", {}),
    ("POST", "/v1/namespace/a/create", {}),
    ("POST", "/v1/namespace/a$b/create", {}),
    ("POST", "/v1/namespace/zz$b/create", {}),
    ("POST", "/v1/namespace/zz/describe", {}),
    ("POST", "/v1/namespace/zz/exists", {}),
    ("POST", "/v1/namespace/a/exists", {}),
    ("POST", "/v1/namespace/a/describe", {}),
    ("GET", "/v1/namespace/$/list", None),
    ("GET", "/v1/namespace/a/list", None),
    ("POST", "/v1/table/a$t/declare", {}),
    ("POST", "/v1/table/a$t/declare", {}),
    ("GET", "/v1/namespace/a/table/list", None),
    ("GET", "/v1/namespace/a/table/list?limit=abc", None),
    ("GET", "/v1/namespace/a/table/list?limit=1", None),
    ("POST", "/v1/namespace/a/drop", {}),
    ("POST", "/v1/namespace/zz/drop", {}),
    ("POST", "/v1/table/a$nope/describe", {}),
    ("POST", "/v1/table/a$nope/exists", {}),
    ("POST", "/v1/table/a$t/exists", {}),
    ("POST", "/v1/table/a$t/describe", {}),
    ("POST", "/v1/table/a$nope/version/describe", {"version": 5}),
    ("POST", "/v1/table/a$nope/version/list", None),
    ("POST", "/v1/table/a$r/register", {"location": "/absolute/path"}),
    ("POST", "/v1/table/a$r/register", {"location": "../outside"}),
    ("POST", "/v1/table/a$r/register", {"location": "s3://bucket/x"}),
    ("POST", "/v1/table/a$nope/drop", None),
    ("POST", "/v1/table/a$nope/deregister", {}),
    ("POST", "/v1/table/a$t/describe", b"{not json"),
    ("POST", "/v1/table/a$t/describe", {"id": 5}),
    ("POST", "/v1/table/a$t/describe", [1, 2]),
    ("POST", "/v1/namespace/$/list", None),
    ("POST", "/v1/no/such/route", {}),
    ("POST", "/v1/table/a$t/drop", None),
    ("POST", "/v1/table/a$t/describe", {}),
    ("POST", "/v1/namespace/a$b/drop", {}),
    ("POST", "/v1/namespace/a/drop", {}),
    ("GET", "/v1/namespace/$/list", None),
]


def _outcome(response: httpx.Response) -> tuple[int, int | None]:
    """The status and, for an error with the protocol's body, its code."""
    try:
        body = response.json()
    except ValueError:
        body = None
    code = body.get("code") if isinstance(body, dict) and response.status_code >= 400 else None
    return response.status_code, code


def client(url: str) -> httpx.Client:
    """A client that opens a connection per request: the reference's server may close a kept-alive connection
    after an error answer while the next request is already on its way (a lost answer under load, not a
    difference between the servers)."""
    return httpx.Client(base_url=url, timeout=30, limits=httpx.Limits(max_keepalive_connections=0))


def run_requests(url: str, requests: list[tuple[str, str, Any]]) -> list[tuple[int, int | None]]:
    """Send ``requests`` in order (bytes bodies as they are, others as JSON); each status and error code."""
    outcomes = []
    with client(url) as session:
        for method, path, body in requests:
            if isinstance(body, bytes):
                response = session.request(method, path, content=body, headers={"content-type": "application/json"})
            else:
                response = session.request(method, path, json=body)
            outcomes.append(_outcome(response))
    return outcomes


#: The reference's answer where we differ on purpose (docs/rest.md, "Where we differ"): an operation the
#: implementation lacks is Internal (500, 18) there, Unsupported (code 0) here (:func:`unsupported`).
REFERENCE_UNSUPPORTED = (500, 18)


def unsupported(operation: str) -> tuple[int, int]:
    """Our answer to ``operation`` when the implementation lacks it: Unsupported (code 0), with 406 where the
    spec lists it for the operation's route and 400 elsewhere (rest/routes.py ``Route.errors``).

    :param operation: the operation's name (``list_table_versions``).
    """
    return (406 if 406 in BY_OPERATION[operation].errors else 400, 0)


def compare(
    requests: list[tuple[str, str, Any]], ours_url: str, reference_url: str
) -> tuple[list[tuple[Any, ...]], list[tuple[int, int | None]]]:
    """The requests ours and the reference answer differently (status or code) but for the deliberate
    Unsupported, and our outcomes."""
    ours, reference = run_requests(ours_url, requests), run_requests(reference_url, requests)
    differences = [
        (method, path, body, mine, theirs)
        for (method, path, body), mine, theirs in zip(requests, ours, reference, strict=True)
        # the reference answers an unknown route and a wrong method without a body; ours with the protocol's
        if (mine if theirs[1] is not None or mine[0] not in (404, 405) else (mine[0], None)) != theirs
        and not (mine[1] == 0 and theirs == REFERENCE_UNSUPPORTED)
    ]
    return differences, ours


@pytest.fixture
def both(tmp_path: Path) -> Iterator[tuple[str, str]]:
    (tmp_path / "ours").mkdir()
    (tmp_path / "reference").mkdir()
    with (
        serve_namespace(DirectoryNamespace(root=str(tmp_path / "ours"))) as ours,
        reference_server(str(tmp_path / "reference")) as reference,
    ):
        yield ours, reference


def test_same_status_and_error_code_as_the_reference(both: tuple[str, str]) -> None:
    differences, ours = compare(REQUESTS, *both)
    assert differences == []
    assert {status for status, _ in ours} >= {200, 400, 404, 405, 409}


def test_deliberate_differences(both: tuple[str, str]) -> None:
    """Unknown fields: the reference ignores them, we refuse them (a misspelt field must not be dropped
    silently). The seed's operation-id form and /health: only ours. Batch commits: only ours."""
    ours, reference = (client(url) for url in both)
    with ours, reference:
        for session in (ours, reference):
            assert session.post("/v1/namespace/a/create", json={}).status_code == 200
        assert reference.post("/v1/namespace/a/describe", json={"propertes": {}}).status_code == 200
        refused = ours.post("/v1/namespace/a/describe", json={"propertes": {}})
        assert (refused.status_code, refused.json()["code"]) == (400, 13)
        assert "propertes" in refused.json()["error"]

        assert reference.post("/ListNamespaces", json={"id": []}).status_code == 404
        assert ours.post("/ListNamespaces", json={"id": []}).json() == {"namespaces": ["a"]}
        operations = ours.post("/ListOperations").json()["operations"]
        assert {"BatchCreateTableVersions", "DeclareTable", "ListNamespaces"} <= set(operations)
        assert "UpdateFieldMetadata" not in operations  # the engine leaves it to the base class: not supported
        assert reference.get("/health").status_code == 404
        assert ours.get("/health").status_code == 200

        # the spec's parent check: the reference lists and declares in a namespace that does not exist
        assert reference.get("/v1/namespace/zz/table/list").status_code == 200
        assert ours.get("/v1/namespace/zz/table/list").json()["code"] == 1
        assert reference.post("/v1/table/zz$t/declare", json={}).status_code == 200
        assert ours.post("/v1/table/zz$t/declare", json={}).json()["code"] == 1

        batch = {"entries": []}
        assert reference.post("/v1/table/version/batch-create", json=batch).json()["code"] == 18
        assert ours.post("/v1/table/version/batch-create", json=batch).status_code in (200, 400)

        # an operation the implementation lacks: Unsupported (the spec), not the reference's Internal
        lacking = ("/v1/table/a$t/update_field_metadata", {"updates": []})
        assert ours.post("/v1/table/a$t/declare", json={}).status_code == 200
        assert reference.post("/v1/table/a$t/declare", json={}).status_code == 200
        answer = ours.post(lacking[0], json=lacking[1])
        assert (answer.status_code, answer.json()["code"]) == unsupported("update_field_metadata"), answer.text
        answer = reference.post(lacking[0], json=lacking[1])
        assert (answer.status_code, answer.json()["code"]) == REFERENCE_UNSUPPORTED, answer.text
