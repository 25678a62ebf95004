"""Port of lance's python ``python/python/tests/test_namespace_dir.py`` (lance-format/lance @ 16343724).

Upstream runs each test on ``DirectoryNamespace`` and on a python ``CustomNamespace`` wrapper of it, with a
``memory://`` or temporary ``file://`` root; here each runs on ours and on the reference, rooted at
``tmp_path / kind``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import lance
import lance_namespace as ln
import numpy as np
import pyarrow as pa
import pytest
from lance_namespace import LanceNamespace

from tests.upstream.helpers import (
    REFUSED_LOCATIONS,
    create_namespaces,
    create_table,
    ipc,
    people,
    table_exists,
    tables_of,
)


# -- TestCreateTable ----------------------------------------------------------------------------------------
def test_create_table(impl: LanceNamespace) -> None:
    """Ports TestCreateTable.test_create_table (lance-format/lance, test_namespace_dir.py)."""
    create_namespaces(impl, ["workspace"])
    response = create_table(impl, ["workspace", "test_table"])
    assert "test_table" in response.location
    assert response.version == 1


def test_create_table_without_data(impl: LanceNamespace) -> None:
    """Ports TestCreateTable.test_create_table_without_data (lance-format/lance, test_namespace_dir.py)."""
    create_namespaces(impl, ["workspace"])
    with pytest.raises(ln.InvalidInputError) as excinfo:
        impl.create_table(ln.CreateTableRequest(id=["workspace", "test_table"]), b"")
    assert "Arrow IPC" in str(excinfo.value) or "required" in str(excinfo.value)


def test_create_table_with_invalid_id(impl: LanceNamespace) -> None:
    """Ports TestCreateTable.test_create_table_with_invalid_id (lance-format/lance, test_namespace_dir.py)."""
    with pytest.raises(ln.InvalidInputError):
        create_table(impl, [])


def test_create_table_in_child_namespace(impl: LanceNamespace) -> None:
    """Ports TestCreateTable.test_create_table_in_child_namespace (lance-format/lance, test_namespace_dir.py)."""
    create_namespaces(impl, ["test_namespace"])
    response = create_table(impl, ["test_namespace", "table"])
    assert response.location


# -- TestListTables -----------------------------------------------------------------------------------------
def test_list_tables_empty(impl: LanceNamespace) -> None:
    """Ports TestListTables.test_list_tables_empty (lance-format/lance, test_namespace_dir.py)."""
    create_namespaces(impl, ["workspace"])
    assert tables_of(impl, ["workspace"]) == []


def test_list_tables_with_tables(impl: LanceNamespace) -> None:
    """Ports TestListTables.test_list_tables_with_tables (lance-format/lance, test_namespace_dir.py)."""
    create_namespaces(impl, ["workspace"])
    create_table(impl, ["workspace", "table1"])
    create_table(impl, ["workspace", "table2"])
    assert sorted(tables_of(impl, ["workspace"])) == ["table1", "table2"]


def test_list_tables_with_namespace_id(impl: LanceNamespace) -> None:
    """Ports TestListTables.test_list_tables_with_namespace_id (lance-format/lance, test_namespace_dir.py)."""
    create_namespaces(impl, ["test_namespace"])
    assert tables_of(impl, ["test_namespace"]) == []


# -- TestDescribeTable --------------------------------------------------------------------------------------
def test_describe_table(impl: LanceNamespace) -> None:
    """Ports TestDescribeTable.test_describe_table (lance-format/lance, test_namespace_dir.py)."""
    create_namespaces(impl, ["workspace"])
    create_table(impl, ["workspace", "test_table"])
    response = impl.describe_table(ln.DescribeTableRequest(id=["workspace", "test_table"]))
    assert "test_table" in response.location


def test_describe_nonexistent_table(impl: LanceNamespace) -> None:
    """Ports TestDescribeTable.test_describe_nonexistent_table (lance-format/lance, test_namespace_dir.py)."""
    create_namespaces(impl, ["workspace"])
    with pytest.raises(ln.TableNotFoundError):
        impl.describe_table(ln.DescribeTableRequest(id=["workspace", "nonexistent"]))


# -- TestTableOperations ------------------------------------------------------------------------------------
def test_table_exists(impl: LanceNamespace) -> None:
    """Ports TestTableOperations.test_table_exists (lance-format/lance, test_namespace_dir.py)."""
    create_namespaces(impl, ["workspace"])
    create_table(impl, ["workspace", "test_table"])
    assert table_exists(impl, ["workspace", "test_table"])


def test_table_not_exists(impl: LanceNamespace) -> None:
    """Ports TestTableOperations.test_table_not_exists (lance-format/lance, test_namespace_dir.py)."""
    create_namespaces(impl, ["workspace"])
    with pytest.raises(ln.TableNotFoundError):
        impl.table_exists(ln.TableExistsRequest(id=["workspace", "nonexistent"]))


def test_drop_table(impl: LanceNamespace) -> None:
    """Ports TestTableOperations.test_drop_table (lance-format/lance, test_namespace_dir.py)."""
    create_namespaces(impl, ["workspace"])
    create_table(impl, ["workspace", "test_table"])
    assert impl.drop_table(ln.DropTableRequest(id=["workspace", "test_table"])) is not None
    assert not table_exists(impl, ["workspace", "test_table"])


@pytest.mark.not_rest("namespace_id() of a REST client names the server, not the root")
def test_namespace_id_names_root(impl: LanceNamespace, root: Path) -> None:
    """Ports the root extraction of TestTableOperations.test_deregister_table / test_register_table
    (lance-format/lance, test_namespace_dir.py): ``re.search(r'root: "([^"]+)"', namespace_id())``."""
    match = re.search(r'root: "([^"]+)"', impl.namespace_id())
    assert match is not None
    assert match.group(1).removeprefix("file://") == str(root)


def test_deregister_table(impl: LanceNamespace, root: Path) -> None:
    """Ports TestTableOperations.test_deregister_table (lance-format/lance, test_namespace_dir.py); the root
    comes from the fixture, not from ``namespace_id()`` (see test_namespace_id_names_root)."""
    create_namespaces(impl, ["workspace"])
    lance.write_dataset(people(), str(root / "workspace" / "physical_table.lance"))
    impl.register_table(
        ln.RegisterTableRequest(id=["workspace", "test_table"], location="workspace/physical_table.lance")
    )
    response = impl.deregister_table(ln.DeregisterTableRequest(id=["workspace", "test_table"]))
    assert response.location.endswith("/workspace/physical_table.lance")
    assert response.id == ["workspace", "test_table"]


def test_register_table(impl: LanceNamespace, root: Path) -> None:
    """Ports TestTableOperations.test_register_table (lance-format/lance, test_namespace_dir.py)."""
    create_namespaces(impl, ["workspace"])
    lance.write_dataset(people(), str(root / "workspace" / "physical_table.lance"))
    response = impl.register_table(
        ln.RegisterTableRequest(id=["workspace", "registered_table"], location="workspace/physical_table.lance")
    )
    assert response.location == "workspace/physical_table.lance"
    assert table_exists(impl, ["workspace", "registered_table"])
    described = impl.describe_table(ln.DescribeTableRequest(id=["workspace", "registered_table"]))
    assert described.location.endswith("/workspace/physical_table.lance")


@pytest.mark.parametrize(("location", "phrase"), REFUSED_LOCATIONS)
def test_register_table_rejects(impl: LanceNamespace, location: str, phrase: str) -> None:
    """Ports TestTableOperations.test_register_table_rejects_absolute_uri, _absolute_path and
    _path_traversal (lance-format/lance, test_namespace_dir.py)."""
    create_namespaces(impl, ["workspace"])
    with pytest.raises(ln.InvalidInputError) as excinfo:
        impl.register_table(ln.RegisterTableRequest(id=["workspace", "test_table"], location=location))
    assert phrase in str(excinfo.value)


# -- TestTableBranchOperations ------------------------------------------------------------------------------
def test_branch_crud_round_trip(impl: LanceNamespace) -> None:
    """Ports TestTableBranchOperations.test_branch_crud_round_trip (lance-format/lance, test_namespace_dir.py)."""
    create_namespaces(impl, ["workspace"])
    table_id = ["workspace", "branched_table"]
    create_table(impl, table_id)
    impl.create_table_branch(ln.CreateTableBranchRequest(id=table_id, name="dev"))
    branches = impl.list_table_branches(ln.ListTableBranchesRequest(id=table_id)).branches
    assert branches["dev"].parent_version == 1
    impl.create_table_branch(ln.CreateTableBranchRequest(id=table_id, name="dev2"))
    with pytest.raises(ln.TableBranchAlreadyExistsError):
        impl.create_table_branch(ln.CreateTableBranchRequest(id=table_id, name="dev2"))
    impl.delete_table_branch(ln.DeleteTableBranchRequest(id=table_id, name="dev"))
    assert "dev" not in impl.list_table_branches(ln.ListTableBranchesRequest(id=table_id)).branches
    with pytest.raises(ln.TableBranchNotFoundError):
        impl.delete_table_branch(ln.DeleteTableBranchRequest(id=table_id, name="dev"))


def test_create_branch_from_other_branch(impl: LanceNamespace) -> None:
    """Ports TestTableBranchOperations.test_create_branch_from_other_branch (lance-format/lance,
    test_namespace_dir.py)."""
    create_namespaces(impl, ["workspace"])
    table_id = ["workspace", "fork_table"]
    create_table(impl, table_id)
    impl.create_table_branch(ln.CreateTableBranchRequest(id=table_id, name="dev"))
    impl.create_table_branch(ln.CreateTableBranchRequest(id=table_id, name="child", from_branch="dev"))
    branches = impl.list_table_branches(ln.ListTableBranchesRequest(id=table_id)).branches
    assert branches["child"].parent_branch == "dev"


# -- TestChildNamespaceOperations ---------------------------------------------------------------------------
def test_create_tables_in_child_namespace(impl: LanceNamespace) -> None:
    """Ports TestChildNamespaceOperations.test_create_table_in_child_namespace (lance-format/lance,
    test_namespace_dir.py)."""
    create_namespaces(impl, ["test_ns"])
    for i in range(1, 4):
        create_table(impl, ["test_ns", f"table{i}"])
    assert sorted(tables_of(impl, ["test_ns"])) == ["table1", "table2", "table3"]


def test_drop_table_in_child_namespace(impl: LanceNamespace) -> None:
    """Ports TestChildNamespaceOperations.test_drop_table_in_child_namespace (lance-format/lance,
    test_namespace_dir.py)."""
    create_namespaces(impl, ["test_ns"])
    create_table(impl, ["test_ns", "table1"])
    impl.drop_table(ln.DropTableRequest(id=["test_ns", "table1"]))
    assert not table_exists(impl, ["test_ns", "table1"])


def test_declared_table_in_child_namespace(impl: LanceNamespace) -> None:
    """Ports TestChildNamespaceOperations.test_declared_table_in_child_namespace (lance-format/lance,
    test_namespace_dir.py)."""
    create_namespaces(impl, ["test_ns"])
    impl.declare_table(ln.DeclareTableRequest(id=["test_ns", "declared_table"]))
    assert table_exists(impl, ["test_ns", "declared_table"])
    plain = impl.describe_table(ln.DescribeTableRequest(id=["test_ns", "declared_table"]))
    assert plain.is_only_declared is None
    checked = impl.describe_table(ln.DescribeTableRequest(id=["test_ns", "declared_table"], check_declared=True))
    assert checked.is_only_declared is True


# -- TestDeeplyNestedNamespaces, TestNamespaceProperties, TestNamespaceConstraints --------------------------
def test_deeply_nested_namespace(impl: LanceNamespace) -> None:
    """Ports TestDeeplyNestedNamespaces.test_deeply_nested_namespace (lance-format/lance, test_namespace_dir.py)."""
    create_namespaces(impl, ["level1"], ["level1", "level2"], ["level1", "level2", "level3"])
    create_table(impl, ["level1", "level2", "level3", "table1"])
    assert table_exists(impl, ["level1", "level2", "level3", "table1"])


def test_namespace_with_properties(impl: LanceNamespace) -> None:
    """Ports TestNamespaceProperties.test_namespace_with_properties (lance-format/lance, test_namespace_dir.py)."""
    properties = {"owner": "test_user", "description": "Test namespace"}
    impl.create_namespace(ln.CreateNamespaceRequest(id=["test_ns"], properties=properties))
    described = impl.describe_namespace(ln.DescribeNamespaceRequest(id=["test_ns"]))
    assert described.properties is not None
    assert described.properties.get("owner") == "test_user"
    assert described.properties.get("description") == "Test namespace"


def test_cannot_drop_namespace_with_tables(impl: LanceNamespace) -> None:
    """Ports TestNamespaceConstraints.test_cannot_drop_namespace_with_tables (lance-format/lance,
    test_namespace_dir.py)."""
    create_namespaces(impl, ["test_ns"])
    create_table(impl, ["test_ns", "table1"])
    with pytest.raises(ln.NamespaceNotEmptyError):
        impl.drop_namespace(ln.DropNamespaceRequest(id=["test_ns"]))


def test_isolation_between_namespaces(impl: LanceNamespace) -> None:
    """Ports TestNamespaceConstraints.test_isolation_between_namespaces (lance-format/lance,
    test_namespace_dir.py)."""
    create_namespaces(impl, ["ns1"], ["ns2"])
    create_table(impl, ["ns1", "table1"])
    create_table(impl, ["ns2", "table1"])
    assert tables_of(impl, ["ns1"]) == ["table1"]
    assert tables_of(impl, ["ns2"]) == ["table1"]
    impl.drop_table(ln.DropTableRequest(id=["ns1", "table1"]))
    assert tables_of(impl, ["ns1"]) == []
    assert tables_of(impl, ["ns2"]) == ["table1"]


# -- TestBasicNamespaceOperations ---------------------------------------------------------------------------
def test_create_and_describe_namespace(impl: LanceNamespace) -> None:
    """Ports TestBasicNamespaceOperations.test_create_and_describe_namespace (lance-format/lance,
    test_namespace_dir.py)."""
    create_namespaces(impl, ["workspace"])
    assert isinstance(
        impl.describe_namespace(ln.DescribeNamespaceRequest(id=["workspace"])), ln.DescribeNamespaceResponse
    )


def test_namespace_exists(impl: LanceNamespace) -> None:
    """Ports TestBasicNamespaceOperations.test_namespace_exists (lance-format/lance, test_namespace_dir.py):
    upstream asserts only that namespace_exists does not raise."""
    create_namespaces(impl, ["workspace"])
    impl.namespace_exists(ln.NamespaceExistsRequest(id=["workspace"]))


def test_namespace_not_exists(impl: LanceNamespace) -> None:
    """Ports TestBasicNamespaceOperations.test_namespace_not_exists (lance-format/lance, test_namespace_dir.py)."""
    with pytest.raises(ln.NamespaceNotFoundError):
        impl.namespace_exists(ln.NamespaceExistsRequest(id=["nonexistent"]))


def test_drop_empty_namespace(impl: LanceNamespace) -> None:
    """Ports TestBasicNamespaceOperations.test_drop_empty_namespace (lance-format/lance, test_namespace_dir.py)."""
    create_namespaces(impl, ["workspace"])
    assert isinstance(impl.drop_namespace(ln.DropNamespaceRequest(id=["workspace"])), ln.DropNamespaceResponse)


def test_list_namespaces(impl: LanceNamespace) -> None:
    """Ports TestBasicNamespaceOperations.test_list_namespaces (lance-format/lance, test_namespace_dir.py)."""
    create_namespaces(impl, ["parent"], ["parent", "child1"], ["parent", "child2"])
    listed = impl.list_namespaces(ln.ListNamespacesRequest(id=["parent"]))
    assert len(listed.namespaces) >= 2


# -- TestLanceNamespaceConnect ------------------------------------------------------------------------------
def test_connect_with_properties(kind: str, class_path: str, root: Path, impl_class: type[LanceNamespace]) -> None:
    """Ports TestLanceNamespaceConnect.test_connect_with_properties (lance-format/lance, test_namespace_dir.py):
    the reference through the ``dir`` alias, ours through its class path."""
    properties = {
        "root": str(root),
        "manifest_enabled": "true",
        "dir_listing_enabled": "true",
        "dir_listing_to_manifest_migration_enabled": "true",
    }
    ns = ln.connect("dir" if kind == "reference" else class_path, properties)
    assert isinstance(ns, impl_class)
    assert create_table(ns, ["test_table"]) is not None
    assert tables_of(ns, []) == ["test_table"]


def test_connect_with_storage_options(kind: str, class_path: str, root: Path, impl_class: type[LanceNamespace]) -> None:
    """Ports TestLanceNamespaceConnect.test_connect_with_storage_options (lance-format/lance,
    test_namespace_dir.py)."""
    ns = ln.connect("dir" if kind == "reference" else class_path, {"root": str(root), "storage.some_option": "value"})
    assert isinstance(ns, impl_class)
    ns.create_namespace(ln.CreateNamespaceRequest(id=["test_ns"]))
    assert ns.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == ["test_ns"]


# -- managed versioning through pylance ---------------------------------------------------------------------
class Recording(LanceNamespace):
    """Delegates every operation to ``inner`` and counts the calls (upstream counts with the reference's
    ``ops_metrics_enabled`` / ``retrieve_ops_metrics``, which ours does not have)."""

    def __init__(self, inner: LanceNamespace, on_describe: Callable[[Any], None] | None = None) -> None:
        self.inner = inner
        self.calls: Counter[str] = Counter()
        self.on_describe = on_describe

    def namespace_id(self) -> str:
        return f"Recording[{self.inner.namespace_id()}]"


def _delegate(name: str) -> Callable[..., Any]:
    def method(self: Recording, *args: Any, **kwargs: Any) -> Any:
        self.calls[name] += 1
        if name == "describe_table" and self.on_describe is not None:
            self.on_describe(args[0])
        return getattr(self.inner, name)(*args, **kwargs)

    method.__name__ = name
    return method


for _name, _value in vars(LanceNamespace).items():
    if callable(_value) and not _name.startswith("_") and _name != "namespace_id":
        setattr(Recording, _name, _delegate(_name))


def test_external_manifest_store_invokes_namespace_apis(make: Callable[..., LanceNamespace]) -> None:
    """Ports test_external_manifest_store_invokes_namespace_apis (lance-format/lance, test_namespace_dir.py),
    with a counting wrapper in place of ``ops_metrics_enabled``: opening the latest version lists versions
    once, each commit creates one version, opening version 1 describes it once."""
    ns = Recording(make(table_version_tracking_enabled="true", manifest_enabled="true"))
    ns.create_namespace(ln.CreateNamespaceRequest(id=["workspace"]))
    table_id = ["workspace", "test_table"]

    ds = lance.write_dataset(
        pa.Table.from_pylist([{"a": 1, "b": 2}, {"a": 10, "b": 20}]), namespace_client=ns, table_id=table_id
    )
    assert (ds.count_rows(), len(ds.versions())) == (2, 1)
    assert ns.describe_table(ln.DescribeTableRequest(id=table_id)).managed_versioning is True

    before = ns.calls["list_table_versions"]
    opened = lance.dataset(namespace_client=ns, table_id=table_id)
    assert (opened.count_rows(), opened.version) == (2, 1)
    assert ns.calls["list_table_versions"] == before + 1
    assert ns.calls["create_table_version"] == 1

    more = pa.Table.from_pylist([{"a": 100, "b": 200}, {"a": 1000, "b": 2000}])
    ds = lance.write_dataset(more, namespace_client=ns, table_id=table_id, mode="append")
    assert (ds.count_rows(), len(ds.versions())) == (4, 2)
    assert ns.calls["create_table_version"] == 2

    before = ns.calls["list_table_versions"]
    latest = lance.dataset(namespace_client=ns, table_id=table_id)
    assert (latest.count_rows(), latest.version) == (4, 2)
    assert ns.calls["list_table_versions"] == before + 1

    before = ns.calls["describe_table_version"]
    first = lance.dataset(namespace_client=ns, table_id=table_id, version=1)
    assert (first.count_rows(), first.version) == (2, 1)
    assert ns.calls["describe_table_version"] == before + 1


def test_dataset_namespace_open_does_not_pass_version_to_describe_table(impl: LanceNamespace) -> None:
    """Ports test_dataset_namespace_open_does_not_pass_version_to_describe_table (lance-format/lance,
    test_namespace_dir.py): pylance applies a dataset version to the open, never to describe_table."""
    seen: list[int | None] = []
    ns = Recording(impl, on_describe=lambda request: seen.append(request.version))
    table_id = ["test_table"]
    ds = lance.write_dataset(pa.Table.from_pylist([{"a": 1}, {"a": 2}]), namespace_client=ns, table_id=table_id)
    assert (ds.count_rows(), ds.version) == (2, 1)
    ds = lance.write_dataset(pa.Table.from_pylist([{"a": 3}]), namespace_client=ns, table_id=table_id, mode="append")
    assert (ds.count_rows(), ds.version) == (3, 2)
    first = lance.dataset(namespace_client=ns, table_id=table_id, version=1)
    assert (first.count_rows(), first.version) == (2, 1)
    assert seen
    assert all(version is None for version in seen)


# -- TestConcurrentOperations -------------------------------------------------------------------------------
RETRIES = {"commit_retries": "2147483647"}


def _run_all(count: int, work: Callable[[int], None]) -> list[BaseException]:
    """Run ``work(0..count-1)`` on ``count`` threads; the exceptions raised."""
    with ThreadPoolExecutor(max_workers=count) as pool:
        futures = [pool.submit(work, i) for i in range(count)]
    return [error for future in futures if (error := future.exception()) is not None]


def _create(ns: LanceNamespace, table_id: list[str], declared: bool) -> None:
    if declared:
        ns.declare_table(ln.DeclareTableRequest(id=table_id))
    else:
        create_table(ns, table_id)


CONCURRENT_VARIANTS = [
    pytest.param(False, id="create_table"),
    pytest.param(True, id="declare_table"),
]


@pytest.mark.parametrize("declared", CONCURRENT_VARIANTS)
def test_concurrent_create_and_drop_single_instance(make: Callable[..., LanceNamespace], declared: bool) -> None:
    """Ports TestConcurrentOperations.test_concurrent_create_and_drop_single_instance (lance-format/lance,
    test_namespace_dir.py): ten threads on one instance each create then drop a table. The ``declare_table``
    variant is the same scenario on the catalog alone."""
    ns = make(**RETRIES)
    create_namespaces(ns, ["test_ns"])

    def work(i: int) -> None:
        table_id = ["test_ns", f"concurrent_table_{i}"]
        _create(ns, table_id, declared)
        ns.drop_table(ln.DropTableRequest(id=table_id))

    assert _run_all(10, work) == []
    assert tables_of(ns, ["test_ns"]) == []


@pytest.mark.parametrize("declared", CONCURRENT_VARIANTS)
def test_concurrent_create_and_drop_multiple_instances(make: Callable[..., LanceNamespace], declared: bool) -> None:
    """Ports TestConcurrentOperations.test_concurrent_create_and_drop_multiple_instances (lance-format/lance,
    test_namespace_dir.py): ten threads, each with its own instance, create then drop a table."""
    create_namespaces(make(**RETRIES), ["test_ns"])

    def work(i: int) -> None:
        ns = make(**RETRIES)
        table_id = ["test_ns", f"multi_ns_table_{i}"]
        _create(ns, table_id, declared)
        ns.drop_table(ln.DropTableRequest(id=table_id))

    assert _run_all(10, work) == []
    assert tables_of(make(**RETRIES), ["test_ns"]) == []


@pytest.mark.parametrize("declared", CONCURRENT_VARIANTS)
def test_concurrent_create_then_drop_from_different_instance(
    make: Callable[..., LanceNamespace], declared: bool
) -> None:
    """Ports TestConcurrentOperations.test_concurrent_create_then_drop_from_different_instance
    (lance-format/lance, test_namespace_dir.py): ten instances create concurrently, ten new ones drop."""
    create_namespaces(make(**RETRIES), ["test_ns"])
    table_ids = [["test_ns", f"cross_instance_table_{i}"] for i in range(10)]
    assert _run_all(10, lambda i: _create(make(**RETRIES), table_ids[i], declared)) == []
    assert len(tables_of(make(**RETRIES), ["test_ns"])) == 10
    assert _run_all(10, lambda i: make(**RETRIES).drop_table(ln.DropTableRequest(id=table_ids[i]))) == []
    assert tables_of(make(**RETRIES), ["test_ns"]) == []


# -- TestDataManipulation -----------------------------------------------------------------------------------
def _workspace_table(ns: LanceNamespace) -> list[str]:
    create_namespaces(ns, ["workspace"])
    create_table(ns, ["workspace", "test_table"])
    return ["workspace", "test_table"]


def test_count_table_rows(impl: LanceNamespace) -> None:
    """Ports TestDataManipulation.test_count_table_rows (lance-format/lance, test_namespace_dir.py)."""
    table_id = _workspace_table(impl)
    assert impl.count_table_rows(ln.CountTableRowsRequest(id=table_id)).count == 3


def test_count_table_rows_with_filter(impl: LanceNamespace) -> None:
    """Ports TestDataManipulation.test_count_table_rows_with_filter (lance-format/lance, test_namespace_dir.py)."""
    table_id = _workspace_table(impl)
    assert impl.count_table_rows(ln.CountTableRowsRequest(id=table_id, predicate="age > 28")).count == 2


def test_insert_into_table(impl: LanceNamespace) -> None:
    """Ports TestDataManipulation.test_insert_into_table (lance-format/lance, test_namespace_dir.py)."""
    table_id = _workspace_table(impl)
    more = pa.Table.from_pylist([{"id": 4, "name": "David", "age": 40}, {"id": 5, "name": "Eve", "age": 22}])
    response = impl.insert_into_table(ln.InsertIntoTableRequest(id=table_id, mode="append"), ipc(more))
    assert (response.num_inserted_rows, response.version) == (2, 2)
    assert impl.count_table_rows(ln.CountTableRowsRequest(id=table_id)).count == 5


def _query(ns: LanceNamespace, **fields: Any) -> pa.Table:
    data = ns.query_table(ln.QueryTableRequest(k=10, vector={}, **fields)).data
    return pa.ipc.open_file(pa.BufferReader(data)).read_all()


def test_query_table(impl: LanceNamespace) -> None:
    """Ports TestDataManipulation.test_query_table (lance-format/lance, test_namespace_dir.py)."""
    result = _query(impl, id=_workspace_table(impl))
    assert result.num_rows == 3
    assert {"id", "name"} <= set(result.column_names)


def test_query_table_with_filter(impl: LanceNamespace) -> None:
    """Ports TestDataManipulation.test_query_table_with_filter (lance-format/lance, test_namespace_dir.py)."""
    assert _query(impl, id=_workspace_table(impl), filter="age >= 30").num_rows == 2


# -- TestTableVersions --------------------------------------------------------------------------------------
def test_list_table_versions(impl: LanceNamespace) -> None:
    """Ports TestTableVersions.test_list_table_versions (lance-format/lance, test_namespace_dir.py)."""
    table_id = _workspace_table(impl)
    assert len(impl.list_table_versions(ln.ListTableVersionsRequest(id=table_id)).versions) >= 1


def test_describe_table_version(impl: LanceNamespace) -> None:
    """Ports TestTableVersions.test_describe_table_version (lance-format/lance, test_namespace_dir.py), which
    passes the request as a dict."""
    table_id = _workspace_table(impl)
    response = impl.describe_table_version(ln.DescribeTableVersionRequest(id=table_id, version=1).model_dump())
    data = response if isinstance(response, dict) else response.model_dump()
    assert data.get("version") is not None


def test_multiple_versions_via_insert(impl: LanceNamespace) -> None:
    """Ports TestTableVersions.test_multiple_versions_via_insert (lance-format/lance, test_namespace_dir.py)."""
    table_id = _workspace_table(impl)
    more = pa.Table.from_pylist([{"id": 4, "name": "David", "age": 40}])
    impl.insert_into_table(ln.InsertIntoTableRequest(id=table_id, mode="append"), ipc(more))
    assert len(impl.list_table_versions(ln.ListTableVersionsRequest(id=table_id)).versions) >= 2


# -- TestIndexOperations ------------------------------------------------------------------------------------
def _vectors(rows: int, dim: int) -> pa.Table:
    values = pa.array(np.random.default_rng(0).random(rows * dim, dtype=np.float32))
    return pa.table({"id": list(range(rows)), "vector": pa.FixedSizeListArray.from_arrays(values, dim)})


def test_list_indices_empty(impl: LanceNamespace) -> None:
    """Ports TestIndexOperations.test_list_indices_empty (lance-format/lance, test_namespace_dir.py)."""
    create_table(impl, ["vector_table"], _vectors(3, 4))
    assert len(impl.list_table_indices(ln.ListTableIndicesRequest(id=["vector_table"])).indexes) == 0


def test_create_scalar_index(impl: LanceNamespace) -> None:
    """Ports TestIndexOperations.test_create_scalar_index (lance-format/lance, test_namespace_dir.py)."""
    create_table(impl, ["test_table"])
    request = ln.CreateTableIndexRequest(id=["test_table"], column="id", index_type="BTREE", name="id_idx")
    assert impl.create_table_index(request) is not None
    indexes = impl.list_table_indices(ln.ListTableIndicesRequest(id=["test_table"])).indexes
    assert [(index.index_name, index.columns) for index in indexes] == [("id_idx", ["id"])]


def test_create_vector_index(impl: LanceNamespace) -> None:
    """Ports TestIndexOperations.test_create_vector_index (lance-format/lance, test_namespace_dir.py)."""
    create_table(impl, ["vector_table"], _vectors(256, 8))
    request = ln.CreateTableIndexRequest(
        id=["vector_table"], column="vector", index_type="IVF_FLAT", name="vector_idx", distance_type="l2"
    )
    assert impl.create_table_index(request) is not None
    indexes = impl.list_table_indices(ln.ListTableIndicesRequest(id=["vector_table"])).indexes
    assert [(index.index_name, index.columns) for index in indexes] == [("vector_idx", ["vector"])]
