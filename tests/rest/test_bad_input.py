"""Bad requests get the protocol's error body with the right status and code, and leave storage as it was."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

ARROW = {"content-type": "application/vnd.apache.arrow.stream"}
BIG = "9" * 33  # beyond int64


@pytest.fixture
def catalog(http: httpx.Client) -> None:
    """A namespace ``a`` with a declared table ``t``."""
    assert http.post("/v1/namespace/a/create", json={}).status_code == 200
    assert http.post("/v1/table/a$t/declare", json={}).status_code == 200


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status", "code"),
    [
        (
            "POST",
            "/v1/namespace/b/create",
            {"content": b"{oops", "headers": {"content-type": "application/json"}},
            400,
            13,
        ),
        ("POST", "/v1/namespace/b/create", {"content": b"\xff\xfe", "headers": {}}, 400, 13),
        ("POST", "/v1/namespace/b/create", {"json": ["not", "an", "object"]}, 400, 13),
        ("POST", "/v1/namespace/b/create", {"json": {"properties": "not a map"}}, 400, 13),
        ("POST", "/v1/namespace/b/create", {"json": {"mode": 7}}, 400, 13),
        ("POST", "/v1/namespace/b/create", {"json": {"no_such_field": 1}}, 400, 13),
        ("POST", "/v1/namespace/b/create?surprise=1", {"json": {}}, 400, 13),
        ("POST", "/v1/namespace/b/create?delimiter=", {"json": {}}, 400, 13),
        ("GET", "/v1/namespace/a/table/list?limit=-x", {}, 400, 13),
        ("GET", "/v1/namespace/a/table/list?include_declared=maybe", {}, 400, 13),
        ("POST", "/v1/table/a$t/version/list?descending=yes", {}, 400, 13),
        ("POST", "/v1/table/a$$t/declare", {"json": {}}, 400, 13),
        ("POST", "/v1/table/a$%ZZ/declare", {"json": {}}, 400, 13),
        ("POST", "/v1/table/a$t2/create", {"content": b"not arrow", "headers": ARROW}, 400, 13),
        ("POST", "/v1/table/a$t2/create", {"content": b"", "headers": ARROW}, 400, 13),
        ("POST", "/v1/table/a$t/insert", {"content": b"\x00" * 64, "headers": ARROW}, 400, 13),
        ("POST", "/v1/table/a$t2/create?mode=sideways", {"content": b"", "headers": ARROW}, 400, 13),
        ("POST", "/v1/table/version/batch-create", {"json": {"entries": "none"}}, 400, 13),
        ("POST", "/v1/table/a$t/version/create", {"json": {"version": "two"}}, 400, 13),
        ("POST", "/v1/table/a$t/version/delete", {"json": {"ranges": [{"start_version": "x"}]}}, 400, 13),
        ("POST", "/v1/table/a$t3/declare", {"json": {"id": ["a", "other"]}}, 400, 13),
        # issue 43: once a 500 (islice's stop argument, pylance's "Ref cannot be empty", an IndexError in pylance)
        ("GET", f"/v1/table?limit={BIG}", {}, 400, 13),
        ("GET", f"/v1/namespace/a/table/list?limit={BIG}", {}, 400, 13),
        ("GET", f"/v1/namespace/$/list?limit={BIG}", {}, 400, 13),
        ("GET", f"/v1/namespace/a/list?limit=-{BIG}", {}, 400, 13),
        ("POST", f"/v1/table/a$t/version/list?limit={BIG}", {}, 400, 13),
        ("POST", f"/v1/table/a$t/tags/list?limit={BIG}", {}, 400, 13),
        ("POST", f"/v1/table/a$t/branches/list?limit={BIG}", {}, 400, 13),
        ("POST", "/v1/table/a$t/version/list", {"content": f'{{"limit": {BIG}}}'.encode()}, 400, 13),
        ("POST", "/v1/table/a$t/tags/create", {"content": f'{{"tag": "x", "version": {BIG}}}'.encode()}, 400, 13),
        ("POST", "/v1/table/a$t/query", {"content": b'{"k": 1, "vector": {"single_vector": [NaN, 1.0]}}'}, 400, 13),
        ("POST", "/v1/table/a$t/query", {"content": b'{"k": 1, "vector": {"single_vector": [1e400, 1.0]}}'}, 400, 13),
        ("POST", "/v1/table/a$t/tags/create", {"json": {"tag": "", "version": 1}}, 400, 13),
        ("POST", "/v1/table/a$t/tags/create", {"json": {"tag": "x\x01y", "version": 1}}, 400, 13),
        ("POST", "/v1/table/a$t/tags/create", {"json": {"tag": "x\ny", "version": 1}}, 400, 13),
        ("POST", "/v1/table/a$t/analyze_plan", {"json": {"k": 1, "vector": {"multi_vector": [[]]}}}, 400, 13),
        (
            "POST",
            "/v1/table/a$t/explain_plan",
            {"json": {"query": {"k": 1, "vector": {"multi_vector": [[]]}}}},
            400,
            13,
        ),
        ("POST", "/v1/table/a$t/query", {"json": {"k": 1, "vector": {"multi_vector": [[1.0, 1.0], [1.0]]}}}, 400, 13),
        ("POST", "/v1/nowhere", {"json": {}}, 404, 0),
        ("GET", "/v1/table/a$t/describe", {}, 405, 0),
        ("DELETE", "/v1/namespace/a/drop", {}, 405, 0),
        ("POST", "/DescribeNothing", {"json": {}}, 404, 0),
    ],
)
def test_bad_request_is_refused_and_changes_nothing(
    catalog: None,
    http: httpx.Client,
    root: Path,
    snapshot: Callable[[Path], dict[str, bytes]],
    method: str,
    path: str,
    kwargs: dict,
    status: int,
    code: int,
) -> None:
    before = snapshot(root)
    response = http.request(method, path, **kwargs)
    assert response.status_code == status, response.text
    body = response.json()
    assert body["code"] == code
    assert isinstance(body["error"], str) and body["error"]
    assert "Traceback" not in response.text
    assert snapshot(root) == before


def test_wrong_method_names_the_allowed_one(http: httpx.Client) -> None:
    response = http.get("/v1/table/a$t/declare")
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"


def test_an_unexpected_failure_is_a_generic_internal_error(http: httpx.Client, engine, monkeypatch) -> None:
    """A bug (any exception that is not a namespace error) answers code 18 with the request id, never the
    exception's text or a traceback; the traceback goes to the server log."""

    def broken(request: object) -> None:
        raise RuntimeError("secret-internal-detail /very/private/path")

    monkeypatch.setattr(engine, "list_namespaces", broken)
    response = http.get("/v1/namespace/$/list", headers={"x-request-id": "req-4711"})
    assert response.status_code == 500
    assert response.json() == {"error": "Internal error in list_namespaces; request id req-4711", "code": 18}
    assert response.headers["x-request-id"] == "req-4711"
