"""The server's metrics (rest/metrics.py): each request counted once under its operation and status, and its
latency observed, as ``/metrics`` shows them (the labelled series the server keeps are the registry's own)."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.rest.app import create_app


def test_requests_are_counted_by_operation_and_status(tmp_path: Path) -> None:
    with TestClient(create_app(DirectoryNamespace(root=str(tmp_path)))) as client:
        assert client.post("/v1/namespace/n/create", json={}).status_code == 200
        for _ in range(3):
            assert client.get("/v1/namespace/n/table/list").status_code == 200
        assert client.post("/v1/table/n$missing/describe", json={}).status_code == 404
        assert client.post("/v1/table/n$missing/describe", json={}).status_code == 404
        assert client.post("/v1/nowhere", json={}).status_code == 404
        metrics = client.get("/metrics").text
    lines = [line.rsplit(" ", 1) for line in metrics.splitlines() if not line.startswith("#")]
    samples = {name: float(value) for name, value in lines}
    assert samples['lance_rest_requests_total{operation="create_namespace",status="200"}'] == 1
    assert samples['lance_rest_requests_total{operation="list_tables",status="200"}'] == 3
    assert samples['lance_rest_requests_total{operation="describe_table",status="404"}'] == 2
    assert samples['lance_rest_requests_total{operation="none",status="404"}'] == 1
    assert samples['lance_rest_request_seconds_count{operation="list_tables"}'] == 3
    assert samples['lance_rest_request_seconds_count{operation="describe_table"}'] == 2
    assert samples['lance_rest_namespace_errors_total{code="4",operation="describe_table"}'] == 2
