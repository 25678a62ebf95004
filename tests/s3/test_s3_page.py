"""The catalog page over a catalog on S3 (moto) and Azure (Azurite): it opens the tables with the namespace's
storage options (vended or the engine's own) and shows none of them, nor the credentials, on any page."""

from __future__ import annotations

import lance
import lance_namespace as ln
import pyarrow as pa
import pytest
from starlette.testclient import TestClient

from airflow_provider_lance import staging
from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.namespace.storage import SECRET_OPTIONS
from airflow_provider_lance.page import create_page_app
from tests.s3.conftest import ObjectStore

PAGES = (
    "/namespace?id=demo",
    "/table?id=demo&id=t",
    "/table/versions?id=demo&id=t",
    "/diff?id=demo&id=t&from=1&to=2",
    "/run?run=dag/run2&ns=demo",
)


@pytest.mark.parametrize("vending", ["true", "false"])
def test_page_shows_no_secret(object_store: ObjectStore, vending: str) -> None:
    props = object_store.properties(table_version_management="true")
    writer = DirectoryNamespace(**props)
    writer.create_namespace(ln.CreateNamespaceRequest(id=["demo"]))
    lance.write_dataset(pa.table({"x": [1, 2]}), namespace_client=writer, table_id=["demo", "t"], mode="create")
    entry = staging.stage_data(writer, ["demo", "t"], pa.table({"x": [3]}))
    run = {staging.runs.RUN_ID_METADATA: "dag/run2", staging.runs.RUN_KEY_METADATA: "dag/run2/commit/-1"}
    staging.commit_entries(writer, [entry.model_copy(update={"metadata": run})])
    staging.stage_data(writer, ["demo", "t"], pa.table({"x": [4]}))  # staged, never committed

    reader = DirectoryNamespace(**{**props, "credential_vending_enabled": vending})
    client = TestClient(create_page_app(reader))
    texts = {}
    for path in PAGES:
        response = client.get(path)
        assert response.status_code == 200, (path, response.text)
        texts[path] = response.text
    history = texts["/table/versions?id=demo&id=t"]
    assert 'data-version="3"' in history and "staged" in history  # listed on S3 with the storage options
    assert "run2" in history and '<td class="num">3</td>' in history  # version 2: 3 rows, committed by run2
    assert "demo.t v2" in texts["/run?run=dag/run2&ns=demo"]
    options = object_store.server.storage_options()
    secrets = [object_store.server.endpoint, *(v for k, v in options.items() if k in SECRET_OPTIONS)]
    secrets += [name for name in options if name in SECRET_OPTIONS]
    assert len(secrets) >= 3
    for path, text in texts.items():
        for secret in secrets:
            assert secret not in text, (path, secret)
