"""Our REST server in front of the engine on an Azure catalog (Azurite), reached by pylance's own
``RestNamespace``: tables written and read through it, no account key in any answer (the server vends no
Azure credentials: clients bring their own access, docs/rest.md "Credential vending")."""

from __future__ import annotations

import httpx
import lance
import lance.namespace
import lance_namespace as ln
import pyarrow as pa
import pytest

from airflow_provider_lance.namespace import DirectoryNamespace
from tests.azurite import AzuriteServer
from tests.rest.servers import serve_namespace
from tests.s3.conftest import ObjectStore

pytestmark = pytest.mark.azure


def test_pylance_through_our_rest_server_on_azurite(azurite_server: AzuriteServer, object_store_azure: ObjectStore):
    """pylance's RestNamespace creates, appends and reads; the reference reads the same table."""
    properties = object_store_azure.properties(table_version_management="true")
    properties.pop("credential_vending_enabled")
    engine = DirectoryNamespace(**properties)
    options = azurite_server.storage_options()
    with serve_namespace(engine) as url:
        client = lance.namespace.RestNamespace(uri=url)
        client.create_namespace(ln.CreateNamespaceRequest(id=["db"]))
        table = pa.table({"x": list(range(5))})
        for mode in ("create", "append"):
            lance.write_dataset(
                table, namespace_client=client, table_id=["db", "t"], mode=mode, storage_options=options
            )
        dataset = lance.dataset(namespace_client=client, table_id=["db", "t"], storage_options=options)
        assert dataset.count_rows() == 10 and dataset.version == 2
        answer = httpx.post(f"{url}/v1/table/db$t/describe", json={"vend_credentials": True}).text
    assert options["account_key"] not in answer and "account_key" not in answer
    versions = engine.list_table_versions(ln.ListTableVersionsRequest(id=["db", "t"])).versions
    assert [v.version for v in versions] == [1, 2]  # committed through the engine's table version management
    reference = lance.namespace.DirectoryNamespace(**properties)
    assert lance.dataset(namespace_client=reference, table_id=["db", "t"], storage_options=options).count_rows() == 10
