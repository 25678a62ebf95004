"""Authentication, request bounds and secrets of the REST server."""

from __future__ import annotations

import logging
import socket
import time
from pathlib import Path
from urllib.parse import urlparse

import httpx
import lance_namespace as ln
import pyarrow as pa
import pytest

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.rest import ServerSettings
from tests.rest.servers import serve_namespace

TOKEN = "tok-8f3a9c1d2e"
SECRET = "sk-ThisMustNeverLeak-42"


def test_every_route_but_health_needs_a_bearer_token(root: Path) -> None:
    engine = DirectoryNamespace(root=str(root))
    with (
        serve_namespace(engine, ServerSettings(tokens=frozenset({TOKEN, "second"}))) as url,
        httpx.Client(base_url=url) as http,
    ):
        assert http.get("/health").status_code == 200
        for path in ("/v1/namespace/$/list", "/metrics", "/ready", "/"):
            response = http.get(path)
            assert response.status_code == 401, path
            assert response.headers["www-authenticate"] == "Bearer"
        for header in ("Bearer wrong", f"Basic {TOKEN}", TOKEN, f"Bearer {TOKEN}x"):
            response = http.post("/v1/namespace/a/create", json={}, headers={"Authorization": header})
            assert (response.status_code, response.json()["code"]) == (401, 16)
        assert not (root / "__manifest").exists()
        for token in (TOKEN, "second"):
            ok = http.get("/v1/namespace/$/list", headers={"Authorization": f"Bearer {token}"})
            assert ok.status_code == 200

        # pylance's Rust client sends the token as a header property
        client = ln.connect("rest", {"uri": url, "header.Authorization": f"Bearer {TOKEN}"})
        client.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
        assert client.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == ["a"]
        with pytest.raises(ln.UnauthenticatedError):
            ln.connect("rest", {"uri": url}).list_namespaces(ln.ListNamespacesRequest(id=[]))


def test_oversized_body_gets_413_before_it_is_read(root: Path) -> None:
    settings = ServerSettings(max_body_bytes=1024)
    with serve_namespace(DirectoryNamespace(root=str(root)), settings) as url, httpx.Client(base_url=url) as http:
        declared = http.post("/v1/table/t/declare", content=b"{" + b" " * 2000 + b"}")
        assert (declared.status_code, declared.json()["code"]) == (413, 13)

        def chunks():  # no Content-Length: the limit holds while streaming
            for _ in range(10):
                yield b" " * 512

        streamed = http.post("/v1/table/t/declare", content=chunks())
        assert streamed.status_code == 413
    assert not (root / "__manifest").exists()


def test_a_slow_client_times_out_with_408(root: Path) -> None:
    settings = ServerSettings(body_timeout=0.5)
    with serve_namespace(DirectoryNamespace(root=str(root)), settings) as url:
        address = urlparse(url)
        with socket.create_connection((address.hostname, address.port), timeout=10) as sock:
            sock.sendall(
                b"POST /v1/namespace/a/create HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 100\r\n\r\n{"
            )
            started = time.monotonic()
            answer = sock.recv(4096)
            assert time.monotonic() - started < 5
        assert answer.startswith(b"HTTP/1.1 408")
    assert not (root / "a").exists()


def test_no_credential_in_responses_logs_or_metrics(root: Path, caplog: pytest.LogCaptureFixture) -> None:
    engine = DirectoryNamespace(
        root=str(root),
        table_version_management="true",
        **{"storage.aws_access_key_id": "AKIA-NOT-SHOWN", "storage.aws_secret_access_key": SECRET},
    )
    data = pa.table({"x": [1, 2]})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, data.schema) as writer:
        writer.write_table(data)
    caplog.set_level(logging.DEBUG)
    texts: list[str] = []
    with serve_namespace(engine) as url, httpx.Client(base_url=url) as http:
        calls = [
            http.post("/v1/namespace/a/create", json={}),
            http.post("/v1/table/a$t/declare", json={}),
            http.post("/v1/table/a$t/describe", json={}),
            http.post("/v1/table/a$c/create", content=sink.getvalue().to_pybytes(), headers={"content-type": "x"}),
            http.post("/v1/table/a$c/describe", json={"vend_credentials": True}),
            http.post("/v1/table/a$nope/describe", json={}),
            http.get("/metrics"),
        ]
        texts += [f"{c.status_code} {c.headers} {c.text}" for c in calls]
        assert [c.status_code for c in calls] == [200, 200, 200, 200, 200, 404, 200]
    texts += [record.getMessage() for record in caplog.records]
    leaked = [text for text in texts if SECRET in text or "AKIA-NOT-SHOWN" in text]
    assert leaked == []


def test_responses_of_another_implementation_lose_their_credentials(root: Path) -> None:
    """An implementation that returns its storage options (the reference does) still shows none of its
    credentials through our server."""
    from lance.namespace import DirectoryNamespace as Reference

    reference = Reference(root=str(root), **{"storage.aws_secret_access_key": SECRET, "storage.region": "x"})
    with serve_namespace(reference) as url, httpx.Client(base_url=url) as http:
        http.post("/v1/namespace/a/create", json={})
        declared = http.post("/v1/table/a$t/declare", json={})
        described = http.post("/v1/table/a$t/describe", json={})
    assert declared.status_code == described.status_code == 200
    assert SECRET not in declared.text + described.text


def test_no_token_or_api_key_in_responses_logs_metrics_or_errors(
    root: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Principals' bearer tokens and API keys (valid, wrong, refused for lack of a grant) never reach a
    response, a log record (DEBUG, every logger), ``/metrics`` or an exception a client raises."""
    import json
    import traceback

    from airflow_provider_lance.rest.principals import PrincipalStore, hash_secret

    token, api_key = "tok-Principal-NeverShown-77", "key-Principal-NeverShown-88"
    stored = [hash_secret(token), hash_secret(api_key)]
    principals = {
        "principals": [
            {"name": "etl", "tokens": [stored[0]], "grants": [{"namespace": "a", "level": "write"}]},
            {"name": "bi", "api_keys": [stored[1]], "grants": [{"namespace": "a", "level": "read"}]},
        ]
    }
    path = tmp_path / "principals.json"
    path.write_text(json.dumps(principals))
    engine = DirectoryNamespace(root=str(root), table_version_management="true")
    engine.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    caplog.set_level(logging.DEBUG)
    texts: list[str] = []
    settings = ServerSettings(principals=PrincipalStore(str(path)))
    with serve_namespace(engine, settings) as url, httpx.Client(base_url=url) as http:
        bearer, key = {"Authorization": f"Bearer {token}"}, {"x-api-key": api_key}
        calls = [
            http.post("/v1/table/a$t/declare", json={}, headers=bearer),
            http.post("/v1/table/a$t/drop", json={}, headers=bearer),  # 403: write is not admin
            http.post("/v1/table/b$t/describe", json={}, headers=key),  # 403: outside the grant
            http.post("/v1/table/a$t/describe", json={}, headers=key),
            http.post("/v1/table/a$t/declare", json={}, headers={"Authorization": f"Bearer {token}x"}),  # 401
            http.post("/v1/table/a$t/declare", json={}, headers={"x-api-key": api_key[:-1]}),  # 401
            http.get("/metrics", headers=key),
        ]
        assert [c.status_code for c in calls] == [200, 403, 403, 200, 401, 401, 200]
        texts += [f"{c.status_code} {c.headers} {c.text}" for c in calls]
        for client, call in (
            (ln.connect("rest", {"uri": url, "header.x-api-key": api_key}), "declare"),
            (ln.connect("rest", {"uri": url, "header.Authorization": f"Bearer {token}"}), "drop"),
            (ln.connect("rest", {"uri": url, "header.Authorization": f"Bearer {token}0"}), "declare"),
        ):
            with pytest.raises(ln.LanceNamespaceError) as caught:
                if call == "declare":
                    client.declare_table(ln.DeclareTableRequest(id=["a", "u"]))
                else:
                    client.drop_table(ln.DropTableRequest(id=["a", "t"]))
            texts.append("".join(traceback.format_exception(caught.value)) + repr(caught.value))
    texts += [record.getMessage() for record in caplog.records]
    assert any("declare_table" in text and "etl" in text for text in texts)  # the audit line is there
    leaked = [text for text in texts if token[:-1] in text or api_key[:-1] in text or any(s in text for s in stored)]
    assert leaked == []
