"""lancedb's Node client (``@lancedb/lancedb``, pinned in ``node/package-lock.json``) against our server: the
scenarios of ``node/scenarios.mjs`` (namespaces, a table from rows with vectors, add, vector search, a filter
query, update, delete, versions and the checkout of an older one, list, drop) with a bearer token, on local
disk and on moto S3 (temporary table-scoped credentials vended by the server through moto's STS), with table
version management on and off. One server per configuration (module scope)."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lance_namespace as ln
import pytest

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.rest import ServerSettings
from tests.clients.conftest import NODE_DIR
from tests.rest.servers import serve_namespace
from tests.s3.conftest import BUCKET, MotoServer, moto_server  # noqa: F401  (fixture)
from tests.s3.test_s3_credential_vending import make_role, vending_properties

TOKEN = "node-client-token"
#: the server's URL and its engine
Server = tuple[str, DirectoryNamespace]

#: scenario → what the Node client must read back (scenarios.mjs returns these values)
EXPECTED: dict[str, Any] = {
    "create_namespace": ["team"],
    "create_table_from_rows": {"rows": 3, "version": 1},
    "list_tables": ["items"],
    "add": {"rows": 5, "version": 2},
    "vector_search": [4, 5],
    "filter_query": [3, 4, 5],
    "update": ["two"],
    "delete": {"rows": 4, "version": 4},
    "list_versions": [1, 2, 3, 4],
    "checkout_older_version": {"old": [1, 2, 3], "latest": [2, 3, 4, 5]},
    "drop_table": [],
    "drop_namespace": [],
}


def run_scenarios(node: str, uri: str, token: str, namespace: str = "team") -> dict[str, dict[str, Any]]:
    """Run scenarios.mjs against ``uri``; each scenario's outcome by name."""
    config = json.dumps({"uri": uri, "token": token, "namespace": namespace})
    finished = subprocess.run(
        [node, "scenarios.mjs", config], cwd=NODE_DIR, capture_output=True, text=True, timeout=300, check=False
    )
    assert finished.returncode == 0, finished.stderr
    outcomes = [json.loads(line) for line in finished.stdout.splitlines() if line.startswith("{")]
    return {outcome.pop("scenario"): outcome for outcome in outcomes}


@pytest.fixture(
    scope="module",
    params=[("disk", "true"), ("disk", "false"), ("s3", "true"), ("s3", "false")],
    ids=["disk-versions", "disk", "s3-versions", "s3"],
)
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Our server with a token over our engine, on local disk or moto S3, table version management on/off."""
    storage, versions = request.param
    if storage == "s3":
        # the Node client gets temporary credentials scoped to each table from the server (moto's STS)
        moto: MotoServer = request.getfixturevalue("moto_server")
        suffix = uuid.uuid4().hex[:12]
        properties = vending_properties(moto, f"s3://{BUCKET}/node-{suffix}", make_role(moto, f"node-{suffix}"))
    else:
        properties = {"root": str(tmp_path_factory.mktemp("node-root"))}
    engine = DirectoryNamespace(**properties, table_version_management=versions)
    with serve_namespace(engine, ServerSettings(tokens=frozenset({TOKEN}), vend_credentials=True)) as url:
        yield url, engine


def test_every_scenario_reads_back_what_it_wrote(node: str, server: Server) -> None:
    url, engine = server
    outcomes = run_scenarios(node, url, TOKEN)
    failed = {name: outcome for name, outcome in outcomes.items() if not outcome["ok"]}
    assert failed == {}
    assert {name: outcome["value"] for name, outcome in outcomes.items()} == EXPECTED
    assert engine.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == []  # dropped through the server


def test_a_wrong_token_is_refused(node: str, server: Server) -> None:
    url, engine = server
    outcomes = run_scenarios(node, url, "not-the-token", namespace="intruder")
    assert not any(outcome["ok"] for outcome in outcomes.values())
    assert "401" in outcomes["create_namespace"]["error"] or "nauthenticated" in outcomes["create_namespace"]["error"]
    assert "intruder" not in engine.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces


def test_the_client_is_the_pinned_one() -> None:
    lock = json.loads((NODE_DIR / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/@lancedb/lancedb"]["version"] == "0.31.0"
    assert json.loads((NODE_DIR / "package.json").read_text())["dependencies"]["@lancedb/lancedb"] == "0.31.0"


def test_node_modules_are_not_committed() -> None:
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", str(NODE_DIR / "node_modules")], cwd=Path(__file__).parent, check=False
    )
    assert ignored.returncode == 0
