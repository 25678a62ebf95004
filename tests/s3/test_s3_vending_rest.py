"""Credential vending through the REST server: pylance's ``RestNamespace`` reads and writes across credential
refreshes, and the caller's level travels in the request context.

moto's credentials last at least 900 s and never expire, so the clock is controlled where it matters: the
STS answer's expiry is set to a few seconds ahead (a botocore hook on the vendor's client). pylance then asks
again (DescribeTable with ``vend_credentials=True``) at ``expires_at_millis - refresh_offset_millis``, and the
server's cache renews exactly then."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import lance
import lance_namespace as ln
import pyarrow as pa
import pytest

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.rest import ServerSettings
from tests.rest.servers import ServerProcess, serve_namespace
from tests.s3.conftest import ACCESS_KEY, SECRET_KEY, MotoServer
from tests.s3.test_s3_credential_vending import capture_policies, make_role, vending_properties

pytestmark = pytest.mark.s3

TOKEN = "vend-token-5c1e"
LIFETIME = timedelta(seconds=4)  # with refresh_fraction 0.25: clients come back 1 s before expiry


class RecordingNamespace(DirectoryNamespace):
    """The engine, remembering the table id and ``vend_credentials`` of every DescribeTable that reaches it."""

    def __init__(self, **properties: Any) -> None:
        super().__init__(**properties)
        self.described: list[tuple[list[str], Any]] = []

    def describe_table(self, request: Any) -> Any:
        fields = request if isinstance(request, dict) else request.model_dump()
        self.described.append((list(fields.get("id") or []), fields.get("vend_credentials")))
        return super().describe_table(request)


@pytest.fixture
def engine(moto_server: MotoServer, s3_root: str) -> RecordingNamespace:
    role = make_role(moto_server, f"rest-{s3_root.rsplit('-', 1)[-1]}")
    engine = RecordingNamespace(**vending_properties(moto_server, s3_root, role))

    def short_lived(parsed: dict[str, Any], **_: Any) -> None:
        parsed["Credentials"]["Expiration"] = datetime.now(UTC) + LIFETIME

    engine.catalog.vendor.sts.meta.events.register("after-call.sts.AssumeRole", short_lived)
    return engine


@pytest.fixture
def server(engine: RecordingNamespace) -> Iterator[str]:
    settings = ServerSettings(tokens=frozenset({TOKEN}), vend_credentials=True)
    with serve_namespace(engine, settings) as url:
        yield url


def _client(url: str) -> Any:
    return ln.connect("rest", {"uri": url, "header.Authorization": f"Bearer {TOKEN}"})


def test_pylance_reader_and_writer_live_across_refreshes(engine: RecordingNamespace, server: str) -> None:
    client = _client(server)
    client.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    lance.write_dataset(pa.table({"x": list(range(10))}), namespace_client=client, table_id=["a", "t"], mode="create")
    vendor = engine.catalog.vendor

    # a reader scanning for three lifetimes: pylance comes back for new credentials, each one renewed
    dataset = lance.dataset(namespace_client=client, table_id=["a", "t"])
    seen_keys = {dataset.latest_storage_options()["aws_access_key_id"]}
    calls = vendor.assume_role_calls
    deadline = time.monotonic() + 3 * LIFETIME.total_seconds()
    while time.monotonic() < deadline:
        assert dataset.count_rows() == 10
        assert dataset.to_table().num_rows == 10
        seen_keys.add(dataset.latest_storage_options()["aws_access_key_id"])
        time.sleep(0.25)
    assert len(seen_keys) >= 3, seen_keys  # two refreshes at least, each a new credential
    assert vendor.assume_role_calls - calls >= 2
    assert [asked for _, asked in engine.described].count(True) >= 2  # the refreshes ask for credentials explicitly

    # a writer whose input takes two lifetimes to arrive
    def slow_batches() -> Iterator[pa.RecordBatch]:
        for start in range(10, 50, 5):
            time.sleep(LIFETIME.total_seconds() / 4)
            yield pa.record_batch({"x": list(range(start, start + 5))})

    calls = vendor.assume_role_calls
    reader = pa.RecordBatchReader.from_batches(pa.schema({"x": pa.int64()}), slow_batches())
    written = lance.write_dataset(reader, namespace_client=client, table_id=["a", "t"], mode="append")
    assert written.count_rows() == 50
    assert vendor.assume_role_calls - calls >= 1
    assert lance.dataset(namespace_client=client, table_id=["a", "t"]).count_rows() == 50


def test_the_level_comes_from_the_request_context(engine: RecordingNamespace, server: str) -> None:
    """The contract with the server's grants: the level is ``context["credential_vendor.permission"]`` (the
    server sets it from the caller's grant), else the property (``read``)."""
    client = _client(server)
    client.declare_table(ln.DeclareTableRequest(id=["t"], vend_credentials=False))
    policies = capture_policies(engine.catalog.vendor)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=server, headers=headers, timeout=30) as http:
        for level, actions in (
            (None, {"s3:GetObject", "s3:GetObjectVersion"}),
            ("write", {"s3:GetObject", "s3:GetObjectVersion", "s3:PutObject"}),
            ("admin", {"s3:GetObject", "s3:GetObjectVersion", "s3:PutObject", "s3:DeleteObject"}),
        ):
            body: dict[str, Any] = {"vend_credentials": True}
            if level:
                body["context"] = {"credential_vendor.permission": level}
            answer = http.post("/v1/table/t/describe", json=body)
            assert answer.status_code == 200, answer.text
            options = answer.json()["storage_options"]
            assert options["aws_session_token"] and options["expires_at_millis"] and options["refresh_offset_millis"]
            assert set(policies[-1]["Statement"][-1]["Action"]) == actions
        refused = http.post(
            "/v1/table/t/describe", json={"vend_credentials": True, "context": {"credential_vendor.permission": "root"}}
        )
        assert (refused.status_code, refused.json()["code"]) == (400, 13)
        assert "aws" not in json.dumps(refused.json()).lower()


def test_the_command_line_server_vends_and_refuses_the_namespaces_own_keys(
    moto_server: MotoServer, s3_root: str, tmp_path: Path
) -> None:
    role = make_role(moto_server, f"cli-{s3_root.rsplit('-', 1)[-1]}")
    properties = tmp_path / "props.json"
    own_keys = moto_server.properties(s3_root)  # credential_vending_enabled=true: the namespace's own keys
    properties.write_text(json.dumps(own_keys))
    command = [sys.executable, "-m", "airflow_provider_lance.rest", "--properties-file", str(properties)]
    refused = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0 and "credential_vendor.enabled=true" in refused.stderr
    assert SECRET_KEY not in refused.stderr + refused.stdout

    properties.write_text(json.dumps(vending_properties(moto_server, s3_root, role)))
    with ServerProcess(["--properties-file", str(properties), "--no-page"]) as server:
        client = ln.connect("rest", {"uri": server.url})
        client.declare_table(ln.DeclareTableRequest(id=["t"], vend_credentials=False))
        options = client.describe_table(ln.DescribeTableRequest(id=["t"], vend_credentials=True)).storage_options
        assert options["aws_access_key_id"].startswith("ASIA") and options["aws_session_token"]
        assert options["aws_access_key_id"] != ACCESS_KEY and SECRET_KEY not in json.dumps(options)
        declined = client.describe_table(ln.DescribeTableRequest(id=["t"], vend_credentials=False)).storage_options
        assert "aws_session_token" not in (declined or {})
        assert server.terminate() == 0
    log = "".join(server.stderr_lines)
    assert SECRET_KEY not in log and options["aws_secret_access_key"] not in log
