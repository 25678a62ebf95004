"""Every engine operation on an ``s3://bucket/prefix`` root (moto) and an ``az://container/prefix`` root
(Azurite), the pylance writer/reader path through the namespace, and the reference implementation reading our
catalog on each store."""

from __future__ import annotations

import logging
import uuid

import lance
import lance.namespace
import lance_namespace as ln
import pytest
from lance_namespace_urllib3_client.models.version_range import VersionRange

from airflow_provider_lance.namespace import DirectoryNamespace, azure
from airflow_provider_lance.namespace.s3 import s3fs_arguments
from airflow_provider_lance.namespace.storage import Storage
from tests.fault_storage import count_rows, rows, stage, visible_version
from tests.s3.conftest import ObjectStore


@pytest.fixture
def s3_props(object_store: ObjectStore) -> dict[str, str]:  # every test of this module on each store
    return object_store.properties()


@pytest.mark.s3
def test_storage_options_reach_s3fs_and_pylance(moto_server, s3_root):
    s3_props = moto_server.properties(s3_root)
    ns = DirectoryNamespace(**s3_props)
    options = ns.config.storage_options
    assert options == moto_server.storage_options()
    kwargs = s3fs_arguments(options)
    assert kwargs["key"] == options["aws_access_key_id"]
    assert kwargs["secret"] == options["aws_secret_access_key"]
    assert kwargs["client_kwargs"] == {"endpoint_url": moto_server.endpoint, "region_name": "us-east-1"}
    assert ns.manifest.storage_options == options  # what lance.dataset / write_dataset receive
    assert isinstance(ns.storage, Storage) and ns.storage.scheme == "s3"
    # construction touched nothing: no object under the prefix
    prefix = s3_props["root"].split("/", 3)[3]
    listing = moto_server.client().list_objects_v2(Bucket="lance-ns", Prefix=prefix)
    assert listing.get("KeyCount", 0) == 0


@pytest.mark.azure
def test_storage_options_reach_adlfs_and_pylance(azurite_server):
    """Lance's Azure option names reach adlfs (the account URL of ``azure_storage_endpoint``, the key) and
    pylance unchanged; ``abfs://container@account.dfs.core.windows.net`` names the same container; nothing is
    written by construction."""
    ns = DirectoryNamespace(**azurite_server.properties("az://lance-ns/opts"))
    assert ns.manifest.storage_options == azurite_server.storage_options()
    assert ns.storage.scheme == "az" and ns.storage.bucket == "lance-ns"
    assert azure.service_url(ns.storage.fs).rstrip("/") == azurite_server.endpoint
    assert repr(ns.storage) == "Storage(root='az://lance-ns/opts')" and "Eby8" not in repr(ns.storage.fs)
    gen2 = Storage("abfs://lance-ns@devstoreaccount1.dfs.core.windows.net/opts", azurite_server.storage_options())
    assert gen2.path("k") == ns.storage.path("k") == "lance-ns/opts/k"
    assert gen2.object_path("k") == "opts/k"
    assert azurite_server.keys("opts") == []


def test_namespace_operations(s3_props):
    ns = DirectoryNamespace(**s3_props)
    assert ns.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == []
    ns.create_namespace(ln.CreateNamespaceRequest(id=["prod"], properties={"owner": "a"}))
    ns.create_namespace(ln.CreateNamespaceRequest(id=["prod", "sales"]))
    with pytest.raises(ln.NamespaceAlreadyExistsError):
        ns.create_namespace(ln.CreateNamespaceRequest(id=["prod"]))
    assert ns.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == ["prod"]
    assert ns.list_namespaces(ln.ListNamespacesRequest(id=["prod"])).namespaces == ["sales"]
    assert ns.describe_namespace(ln.DescribeNamespaceRequest(id=["prod"])).properties == {"owner": "a"}
    ns.namespace_exists(ln.NamespaceExistsRequest(id=["prod", "sales"]))
    with pytest.raises(ln.NamespaceNotEmptyError):
        ns.drop_namespace(ln.DropNamespaceRequest(id=["prod"]))
    ns.drop_namespace(ln.DropNamespaceRequest(id=["prod", "sales"]))
    with pytest.raises(ln.NamespaceNotFoundError):
        ns.describe_namespace(ln.DescribeNamespaceRequest(id=["prod", "sales"]))
    # a second engine instance (fresh connection) sees the same catalog
    other = DirectoryNamespace(**s3_props)
    assert other.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == ["prod"]


def test_table_operations(s3_props, object_store):
    ns = DirectoryNamespace(**s3_props)
    ns.create_namespace(ln.CreateNamespaceRequest(id=["db"]))
    declared = ns.declare_table(ln.DeclareTableRequest(id=["db", "t"], properties={"k": "v"}))
    assert declared.location.startswith(s3_props["root"] + "/")
    with pytest.raises(ln.TableAlreadyExistsError):
        ns.declare_table(ln.DeclareTableRequest(id=["db", "t"]))
    ns.declare_table(ln.DeclareTableRequest(id=["root_t"]))  # root table: <name>.lance
    assert ns.list_tables(ln.ListTablesRequest(id=["db"])).tables == ["t"]
    assert ns.list_tables(ln.ListTablesRequest(id=[])).tables == ["root_t"]
    ns.table_exists(ln.TableExistsRequest(id=["db", "t"]))
    described = ns.describe_table(ln.DescribeTableRequest(id=["db", "t"], check_declared=True))
    assert described.is_only_declared and described.properties == {"k": "v"}

    # write data with pylance through the namespace, then deregister / register / drop
    lance.write_dataset(rows(5), namespace_client=ns, table_id=["db", "data"], mode="create")
    location = ns.describe_table(ln.DescribeTableRequest(id=["db", "data"])).location
    relative = location[len(s3_props["root"]) + 1 :]
    ns.deregister_table(ln.DeregisterTableRequest(id=["db", "data"]))
    with pytest.raises(ln.TableNotFoundError):
        ns.describe_table(ln.DescribeTableRequest(id=["db", "data"]))
    ns.register_table(ln.RegisterTableRequest(id=["db", "again"], location=relative))
    assert count_rows(ns, ["db", "again"]) == 5
    ns.drop_table(ln.DropTableRequest(id=["db", "again"]))
    with pytest.raises(ln.TableNotFoundError):
        ns.table_exists(ln.TableExistsRequest(id=["db", "again"]))
    prefix = s3_props["root"].split("/", 3)[3] + "/" + relative + "/"
    assert object_store.server.keys(prefix) == [], "drop_table left objects behind"
    ns.drop_table(ln.DropTableRequest(id=["db", "t"]))
    assert ns.list_tables(ln.ListTablesRequest(id=["db"])).tables == []


def test_pylance_writer_and_versions_unmanaged(s3_props):
    ns = DirectoryNamespace(**s3_props)
    ns.create_namespace(ln.CreateNamespaceRequest(id=["db"]))
    lance.write_dataset(rows(3), namespace_client=ns, table_id=["db", "t"], mode="create")
    lance.write_dataset(rows(2, 3), namespace_client=ns, table_id=["db", "t"], mode="append")
    assert count_rows(ns, ["db", "t"]) == 5
    entry = stage(ns, ["db", "t"], rows(4, 5))
    assert entry.manifest_path.split("/")[-1].startswith(("18446744073709551612.manifest-", "3.manifest-"))
    assert visible_version(ns, ["db", "t"]) == 2  # staged, not visible
    created = ns.create_table_version(ln.CreateTableVersionRequest(**entry.model_dump(exclude_none=True)))
    assert created.version.version == 3
    assert count_rows(ns, ["db", "t"]) == 9
    versions = ns.list_table_versions(ln.ListTableVersionsRequest(id=["db", "t"])).versions
    assert [v.version for v in versions] == [1, 2, 3]
    assert all(v.e_tag and v.manifest_size for v in versions)
    described = ns.describe_table_version(ln.DescribeTableVersionRequest(id=["db", "t"], version=2)).version
    assert described.version == 2
    deleted = ns.batch_delete_table_versions(
        ln.BatchDeleteTableVersionsRequest(id=["db", "t"], ranges=[VersionRange(start_version=1, end_version=3)])
    )
    assert deleted.deleted_count == 2
    assert [v.version for v in ns.list_table_versions(ln.ListTableVersionsRequest(id=["db", "t"])).versions] == [3]
    assert lance.dataset(namespace_client=ns, table_id=["db", "t"]).version == 3


def test_managed_versions_and_batch_create(s3_props):
    ns = DirectoryNamespace(**s3_props, table_version_management="true")
    ns.create_namespace(ln.CreateNamespaceRequest(id=["db"]))
    tables = [["db", "a"], ["db", "b"], ["db", "c"]]
    for table in tables:
        lance.write_dataset(rows(2), namespace_client=ns, table_id=table, mode="create")
    assert [visible_version(ns, t) for t in tables] == [1, 1, 1]
    single = stage(ns, tables[0], rows(1, 100))
    ns.create_table_version(ln.CreateTableVersionRequest(**single.model_dump(exclude_none=True)))
    assert visible_version(ns, tables[0]) == 2
    entries = [stage(ns, t, rows(3, 10)) for t in tables]
    assert [visible_version(ns, t) for t in tables] == [2, 1, 1]
    response = ns.batch_create_table_versions(ln.BatchCreateTableVersionsRequest(entries=entries))
    assert [v.version for v in response.versions] == [3, 2, 2]
    assert [count_rows(ns, t) for t in tables] == [6, 5, 5]
    # the same batch again: nothing committed, nothing changed
    with pytest.raises(ln.ConcurrentModificationError):
        ns.batch_create_table_versions(ln.BatchCreateTableVersionsRequest(entries=entries))
    listed = ns.list_table_versions(ln.ListTableVersionsRequest(id=tables[0], descending=True)).versions
    assert [v.version for v in listed] == [3, 2, 1]
    assert not any("manifest-" in v.manifest_path for v in listed), "rows still point at staged manifests"
    ns.batch_delete_table_versions(
        ln.BatchDeleteTableVersionsRequest(id=tables[0], ranges=[VersionRange(start_version=1, end_version=2)])
    )
    assert [v.version for v in ns.list_table_versions(ln.ListTableVersionsRequest(id=tables[0])).versions] == [2, 3]
    assert count_rows(ns, tables[0]) == 6
    # the pylance writer path in managed mode commits through create_table_version
    lance.write_dataset(rows(1, 50), namespace_client=ns, table_id=tables[1], mode="append")
    assert visible_version(ns, tables[1]) == 3 and count_rows(ns, tables[1]) == 6
    ns.drop_table(ln.DropTableRequest(id=tables[2]))
    assert ns.list_tables(ln.ListTablesRequest(id=["db"])).tables == ["a", "b"]


def test_reference_reads_our_catalog(s3_props, object_store):
    ours = DirectoryNamespace(**s3_props)
    ours.create_namespace(ln.CreateNamespaceRequest(id=["db"], properties={"team": "x"}))
    lance.write_dataset(rows(7), namespace_client=ours, table_id=["db", "t"], mode="create")
    lance.write_dataset(rows(3), namespace_client=ours, table_id=["root_t"], mode="create")
    reference = lance.namespace.DirectoryNamespace(**s3_props)
    assert reference.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == ["db"]
    assert reference.describe_namespace(ln.DescribeNamespaceRequest(id=["db"])).properties == {"team": "x"}
    assert reference.list_tables(ln.ListTablesRequest(id=["db"])).tables == ["t"]
    assert "root_t" in reference.list_tables(ln.ListTablesRequest(id=[])).tables
    ours_location = ours.describe_table(ln.DescribeTableRequest(id=["db", "t"])).location
    assert reference.describe_table(ln.DescribeTableRequest(id=["db", "t"])).location == ours_location
    # the reference vends no storage options, so the reader passes them itself
    options = object_store.server.storage_options()
    dataset = lance.dataset(namespace_client=reference, table_id=["db", "t"], storage_options=options)
    assert dataset.count_rows() == 7
    versions = reference.list_table_versions(ln.ListTableVersionsRequest(id=["db", "t"])).versions
    assert [v.version for v in versions] == [1]
    # and we read what the reference writes
    reference.create_namespace(ln.CreateNamespaceRequest(id=["other"]))
    reference.declare_table(ln.DeclareTableRequest(id=["other", "r"]))
    assert ours.list_tables(ln.ListTablesRequest(id=["other"])).tables == ["r"]


def test_root_check(object_store):
    """``Storage.check_root`` (the connection test, the REST readiness route) on S3 and Azure: a bucket
    (container) that exists is usable and the write probe leaves nothing behind; a missing one is named."""
    options = object_store.server.storage_options()
    assert Storage(object_store.root, options).check_root() is None
    assert Storage(object_store.root, options).check_root(probe_write=False) is None
    assert object_store.server.keys(object_store.prefix) == []
    scheme = object_store.root.partition(":")[0]
    problem = Storage(f"{scheme}://no-such-bucket-h28/catalog", options).check_root()
    assert problem is not None and "bucket no-such-bucket-h28" in problem and "does not exist" in problem


@pytest.mark.azure
def test_azure_credentials_stay_out_of_responses_and_logs(azurite_server, caplog):
    """The account key never reaches a response (without credential vending), a ``repr`` or a log record at
    DEBUG (azure-core logs request headers with ``Authorization`` redacted); the signed header is redacted."""
    properties = azurite_server.properties(f"az://lance-ns/secrets-{uuid.uuid4().hex[:8]}")
    properties.pop("credential_vending_enabled")
    key = properties["storage.account_key"]
    with caplog.at_level(logging.DEBUG):
        ns = DirectoryNamespace(**properties)
        ns.create_namespace(ln.CreateNamespaceRequest(id=["db"]))
        lance.write_dataset(
            rows(3), namespace_client=ns, table_id=["db", "t"], mode="create", storage_options=ns.config.storage_options
        )
        described = ns.describe_table(ln.DescribeTableRequest(id=["db", "t"]))
        declared = ns.declare_table(ln.DeclareTableRequest(id=["db", "d"]))
    for options in (described.storage_options, declared.storage_options):
        assert options is not None and "account_key" not in options and options["account_name"] == "devstoreaccount1"
    shown = [repr(ns), str(ns), repr(ns.storage), repr(ns.config), repr(ns.manifest), caplog.text]
    assert not [text for text in shown if key in text]
    assert "SharedKey devstoreaccount1:" not in caplog.text
    assert any(record.name.startswith("azure") for record in caplog.records)  # the client did log its requests


@pytest.mark.azure
def test_the_emulator_flag_reaches_the_same_store_as_pylance(azurite_server, monkeypatch):
    """``azure_storage_use_emulator=true``: both clients take the account URL from ``AZURITE_BLOB_STORAGE_URL``
    (object_store's rule; an ``endpoint`` option is ignored then), so the engine's requests and pylance's land
    on one store."""
    monkeypatch.setenv(azure.EMULATOR_URL_VARIABLE, azurite_server.url)
    options = {"account_name": "devstoreaccount1", "account_key": azurite_server.storage_options()["account_key"]}
    options.update(azure_storage_use_emulator="true", allow_http="true", endpoint="http://127.0.0.1:9/ignored")
    root = f"az://lance-ns/emulator-{uuid.uuid4().hex[:8]}"
    ns = DirectoryNamespace(root=root, **{f"storage.{k}": v for k, v in options.items()})
    assert azure.service_url(ns.storage.fs).rstrip("/") == azurite_server.endpoint
    lance.write_dataset(rows(4), namespace_client=ns, table_id=["t"], mode="create", storage_options=options)
    assert count_rows(ns, ["t"]) == 4
    keys = azurite_server.keys(root.removeprefix("az://lance-ns/"))
    assert any("/__manifest/_versions/" in key for key in keys) and any("/data/" in key for key in keys)
