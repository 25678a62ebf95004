"""Port of the Rust tests of lance's ``rust/lance-namespace-impls/src/dir.rs`` (lancedb/lance @ d2039d75).

Upstream builds the namespace with ``DirectoryNamespaceBuilder`` and writes an empty ``id int32 / name utf8``
IPC stream (three rows here, see ``rows``); here builder options are construction properties and both
implementations run each test.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import lance
import lance_namespace as ln
import pyarrow as pa
import pytest
from lance_namespace import LanceNamespace

from tests.upstream.helpers import (
    REFUSED_LOCATIONS,
    create_namespaces,
    create_table,
    id_name,
    namespace_exists,
    table_exists,
    tables_of,
)


def rows() -> pa.Table:
    """Upstream's ``create_test_ipc_data`` schema (id int32, name utf8). Upstream writes no rows; pylance
    14.0.2 refuses a create_table stream without rows ("No data provided for table creation"), so three."""
    return id_name()


# -- create / list / describe / exists / drop at the root ---------------------------------------------------
def test_create_table(impl: LanceNamespace) -> None:
    """Ports test_create_table (lancedb/lance, rust/lance-namespace-impls/src/dir.rs)."""
    response = create_table(impl, ["test_table"], rows())
    assert response.location.endswith("test_table.lance")
    assert response.version == 1


def test_create_table_without_data(impl: LanceNamespace) -> None:
    """Ports test_create_table_without_data (lancedb/lance, rust/lance-namespace-impls/src/dir.rs)."""
    with pytest.raises(ln.LanceNamespaceError, match=r"Arrow IPC stream\) is required"):
        impl.create_table(ln.CreateTableRequest(id=["test_table"]), b"")


def test_create_table_with_invalid_id(impl: LanceNamespace) -> None:
    """Ports test_create_table_with_invalid_id (lancedb/lance, rust/lance-namespace-impls/src/dir.rs)."""
    with pytest.raises(ln.LanceNamespaceError):
        create_table(impl, [], rows())
    create_namespaces(impl, ["test_namespace"])
    assert create_table(impl, ["test_namespace", "table"], rows()).location


def test_create_table_with_wrong_location(impl: LanceNamespace, root: Path) -> None:
    """Ports test_create_table_with_wrong_location (lancedb/lance, rust/lance-namespace-impls/src/dir.rs). In
    lance-namespace 0.13 ``CreateTableRequest`` has no ``location`` (pydantic drops it): the operation that
    takes a new table's location is DeclareTable, which both implementations answer with where the table
    must be."""
    request = ln.DeclareTableRequest(id=["test_table"], location="/wrong/path/table.lance")
    with pytest.raises(ln.InvalidInputError, match="must be at location") as raised:
        impl.declare_table(request)
    assert "test_table.lance" in str(raised.value)
    assert not table_exists(impl, ["test_table"])
    assert [path.name for path in root.iterdir() if path.name != "__manifest"] == []


def test_list_tables(impl: LanceNamespace) -> None:
    """Ports test_list_tables (lancedb/lance, rust/lance-namespace-impls/src/dir.rs)."""
    assert tables_of(impl, []) == []
    create_table(impl, ["table1"], rows())
    create_table(impl, ["table2"], rows())
    assert sorted(tables_of(impl, [])) == ["table1", "table2"]


def test_list_tables_with_namespace_id(impl: LanceNamespace) -> None:
    """Ports test_list_tables_with_namespace_id (lancedb/lance, rust/lance-namespace-impls/src/dir.rs)."""
    create_namespaces(impl, ["test_namespace"])
    assert tables_of(impl, ["test_namespace"]) == []


def test_describe_table(impl: LanceNamespace) -> None:
    """Ports test_describe_table (lancedb/lance, rust/lance-namespace-impls/src/dir.rs)."""
    create_table(impl, ["test_table"], rows())
    assert impl.describe_table(ln.DescribeTableRequest(id=["test_table"])).location.endswith("test_table.lance")


def test_describe_nonexistent_table(impl: LanceNamespace) -> None:
    """Ports test_describe_nonexistent_table (lancedb/lance, rust/lance-namespace-impls/src/dir.rs). Upstream
    matches the phrase "Table does not exist", which pylance 14.0.2 no longer uses ("Table not found: table id
    'nonexistent'"); the port asserts the error type and that it names the table."""
    with pytest.raises(ln.TableNotFoundError, match="nonexistent"):
        impl.describe_table(ln.DescribeTableRequest(id=["nonexistent"]))


def test_table_exists(impl: LanceNamespace) -> None:
    """Ports test_table_exists (lancedb/lance, rust/lance-namespace-impls/src/dir.rs); the message check is
    relaxed as in test_describe_nonexistent_table."""
    create_table(impl, ["existing_table"], rows())
    assert table_exists(impl, ["existing_table"])
    with pytest.raises(ln.TableNotFoundError, match="nonexistent"):
        impl.table_exists(ln.TableExistsRequest(id=["nonexistent"]))


def test_drop_table(impl: LanceNamespace) -> None:
    """Ports test_drop_table (lancedb/lance, rust/lance-namespace-impls/src/dir.rs)."""
    create_table(impl, ["table_to_drop"], rows())
    assert table_exists(impl, ["table_to_drop"])
    assert impl.drop_table(ln.DropTableRequest(id=["table_to_drop"])).location
    assert not table_exists(impl, ["table_to_drop"])


# -- namespaces ---------------------------------------------------------------------------------------------
def test_root_namespace_operations(impl: LanceNamespace) -> None:
    """Ports test_root_namespace_operations (lancedb/lance, rust/lance-namespace-impls/src/dir.rs)."""
    assert impl.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == []
    assert isinstance(impl.describe_namespace(ln.DescribeNamespaceRequest(id=[])), ln.DescribeNamespaceResponse)
    assert namespace_exists(impl, [])
    with pytest.raises(ln.LanceNamespaceError, match="cannot be dropped"):
        impl.drop_namespace(ln.DropNamespaceRequest(id=[]))
    with pytest.raises(ln.LanceNamespaceError, match="already exists"):
        impl.create_namespace(ln.CreateNamespaceRequest(id=[]))


def test_non_root_namespace_operations(impl: LanceNamespace) -> None:
    """Ports test_non_root_namespace_operations (lancedb/lance, rust/lance-namespace-impls/src/dir.rs)."""
    create_namespaces(impl, ["child"])
    assert namespace_exists(impl, ["child"])
    impl.drop_namespace(ln.DropNamespaceRequest(id=["child"]))
    assert not namespace_exists(impl, ["child"])


def test_child_namespace_create_and_list(impl: LanceNamespace) -> None:
    """Ports test_child_namespace_create_and_list (lancedb/lance, rust/lance-namespace-impls/src/dir.rs)."""
    create_namespaces(impl, ["ns1"], ["ns2"], ["ns3"])
    assert sorted(impl.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces) == ["ns1", "ns2", "ns3"]


def test_nested_namespace_hierarchy(impl: LanceNamespace) -> None:
    """Ports test_nested_namespace_hierarchy (lancedb/lance, rust/lance-namespace-impls/src/dir.rs)."""
    create_namespaces(impl, ["parent"], ["parent", "child1"], ["parent", "child2"])
    children = impl.list_namespaces(ln.ListNamespacesRequest(id=["parent"])).namespaces
    assert sorted(children) == ["child1", "child2"]
    assert impl.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == ["parent"]


def test_namespace_with_properties(impl: LanceNamespace) -> None:
    """Ports test_namespace_with_properties (lancedb/lance, rust/lance-namespace-impls/src/dir.rs)."""
    properties = {"owner": "test_user", "description": "Test namespace"}
    impl.create_namespace(ln.CreateNamespaceRequest(id=["test_ns"], properties=properties))
    described = impl.describe_namespace(ln.DescribeNamespaceRequest(id=["test_ns"]))
    assert described.properties is not None
    assert {key: described.properties.get(key) for key in properties} == properties


# -- configuration ------------------------------------------------------------------------------------------
def test_config_custom_root(impl_class: type[LanceNamespace], root: Path) -> None:
    """Ports test_config_custom_root (lancedb/lance, rust/lance-namespace-impls/src/dir.rs)."""
    (root / "custom").mkdir()
    ns = impl_class(root=str(root / "custom"))
    assert "custom" in create_table(ns, ["test_table"], rows()).location


def test_config_storage_options(make: Callable[..., LanceNamespace]) -> None:
    """Ports test_config_storage_options (lancedb/lance, rust/lance-namespace-impls/src/dir.rs): builder
    ``storage_option(k, v)`` is the ``storage.k`` property."""
    ns = make(**{"storage.option1": "value1", "storage.option2": "value2"})
    storage_options = create_table(ns, ["test_table"], rows()).storage_options
    assert storage_options["option1"] == "value1"
    assert storage_options["option2"] == "value2"


@pytest.mark.parametrize(
    ("manifest", "listing"), [("true", "false"), ("false", "true")], ids=["manifest_enabled", "dir_listing_enabled"]
)
def test_from_properties(make: Callable[..., LanceNamespace], manifest: str, listing: str) -> None:
    """Ports test_from_properties_manifest_enabled and test_from_properties_dir_listing_enabled (lancedb/lance,
    rust/lance-namespace-impls/src/dir.rs): either mode alone creates a table."""
    ns = make(manifest_enabled=manifest, dir_listing_enabled=listing)
    assert create_table(ns, ["test_table"], rows()).location


def test_various_arrow_types(impl: LanceNamespace) -> None:
    """Ports test_various_arrow_types (lancedb/lance, rust/lance-namespace-impls/src/dir.rs), with one row (see
    ``rows``)."""
    schema = pa.schema(
        [("bool_col", pa.bool_()), ("int8_col", pa.int8()), ("float64_col", pa.float64()), ("binary_col", pa.binary())]
    )
    one_row = pa.table({"bool_col": [True], "int8_col": [1], "float64_col": [1.5], "binary_col": [b"x"]}, schema=schema)
    assert create_table(impl, ["complex_table"], one_row).location


def test_connect_dir(impl: LanceNamespace) -> None:
    """Ports test_connect_dir (lancedb/lance, rust/lance-namespace-impls/src/dir.rs)."""
    assert tables_of(impl, []) == []


def test_create_table_with_ipc_data(impl: LanceNamespace) -> None:
    """Ports test_create_table_with_ipc_data (lancedb/lance, rust/lance-namespace-impls/src/dir.rs)."""
    rows = pa.table({"id": pa.array([1, 2, 3], pa.int32()), "name": ["Alice", "Bob", "Charlie"]})
    response = create_table(impl, ["test_table_with_data"], rows)
    assert response.version == 1
    assert "test_table_with_data.lance" in response.location
    assert table_exists(impl, ["test_table_with_data"])


# -- tables in child namespaces -----------------------------------------------------------------------------
def test_table_in_child_namespace(impl: LanceNamespace) -> None:
    """Ports test_table_in_child_namespace (lancedb/lance, rust/lance-namespace-impls/src/dir.rs)."""
    create_namespaces(impl, ["test_ns"])
    create_table(impl, ["test_ns", "table1"], rows())
    assert tables_of(impl, ["test_ns"]) == ["table1"]
    assert table_exists(impl, ["test_ns", "table1"])
    assert impl.describe_table(ln.DescribeTableRequest(id=["test_ns", "table1"])).location


def test_multiple_tables_in_child_namespace(impl: LanceNamespace) -> None:
    """Ports test_multiple_tables_in_child_namespace (lancedb/lance, rust/lance-namespace-impls/src/dir.rs)."""
    create_namespaces(impl, ["test_ns"])
    for i in range(1, 4):
        create_table(impl, ["test_ns", f"table{i}"], rows())
    assert sorted(tables_of(impl, ["test_ns"])) == ["table1", "table2", "table3"]


def test_drop_table_in_child_namespace(impl: LanceNamespace) -> None:
    """Ports test_drop_table_in_child_namespace (lancedb/lance, rust/lance-namespace-impls/src/dir.rs)."""
    create_namespaces(impl, ["test_ns"])
    create_table(impl, ["test_ns", "table1"], rows())
    impl.drop_table(ln.DropTableRequest(id=["test_ns", "table1"]))
    assert not table_exists(impl, ["test_ns", "table1"])


def test_deeply_nested_namespace(impl: LanceNamespace) -> None:
    """Ports test_deeply_nested_namespace (lancedb/lance, rust/lance-namespace-impls/src/dir.rs)."""
    create_namespaces(impl, ["level1"], ["level1", "level2"], ["level1", "level2", "level3"])
    create_table(impl, ["level1", "level2", "level3", "table1"], rows())
    assert table_exists(impl, ["level1", "level2", "level3", "table1"])


def test_cannot_drop_namespace_with_tables(impl: LanceNamespace) -> None:
    """Ports test_cannot_drop_namespace_with_tables (lancedb/lance, rust/lance-namespace-impls/src/dir.rs)."""
    create_namespaces(impl, ["test_ns"])
    create_table(impl, ["test_ns", "table1"], rows())
    with pytest.raises(ln.LanceNamespaceError):
        impl.drop_namespace(ln.DropNamespaceRequest(id=["test_ns"]))
    assert namespace_exists(impl, ["test_ns"])


def test_isolation_between_namespaces(impl: LanceNamespace) -> None:
    """Ports test_isolation_between_namespaces (lancedb/lance, rust/lance-namespace-impls/src/dir.rs)."""
    create_namespaces(impl, ["ns1"], ["ns2"])
    create_table(impl, ["ns1", "table1"], rows())
    create_table(impl, ["ns2", "table1"], rows())
    assert tables_of(impl, ["ns1"]) == tables_of(impl, ["ns2"]) == ["table1"]
    impl.drop_table(ln.DropTableRequest(id=["ns1", "table1"]))
    assert not table_exists(impl, ["ns1", "table1"])
    assert table_exists(impl, ["ns2", "table1"])


# -- register / deregister ----------------------------------------------------------------------------------
@pytest.mark.reference_lacks(
    "pylance 14.0.2: table_exists is false for a root-level table registered at a location other than <name>.lance"
)
def test_register_table(impl: LanceNamespace, root: Path) -> None:
    """Ports test_register_table (lancedb/lance, rust/lance-namespace-impls/src/dir.rs)."""
    lance.write_dataset(rows(), str(root / "external_table.lance"))
    response = impl.register_table(ln.RegisterTableRequest(id=["registered_table"], location="external_table.lance"))
    assert response.location == "external_table.lance"
    assert table_exists(impl, ["registered_table"])
    assert "registered_table" in tables_of(impl, [])


def test_register_table_duplicate_fails(impl: LanceNamespace) -> None:
    """Ports test_register_table_duplicate_fails (lancedb/lance, rust/lance-namespace-impls/src/dir.rs): upstream
    registers ``test_table.lance`` where no dataset exists, then expects the second registration to fail."""
    request = ln.RegisterTableRequest(id=["test_table"], location="test_table.lance")
    impl.register_table(request)
    with pytest.raises(ln.LanceNamespaceError, match="already exists"):
        impl.register_table(request)


def _assert_deregistered(impl: LanceNamespace, root: Path, table_id: list[str]) -> str:
    location = impl.deregister_table(ln.DeregisterTableRequest(id=table_id))
    assert location.location.startswith(root.as_uri())
    assert all(part in location.location for part in table_id)
    assert location.id == table_id
    assert not table_exists(impl, table_id)
    return str(location.location)


def test_deregister_table(make: Callable[..., LanceNamespace], root: Path) -> None:
    """Ports test_deregister_table (lancedb/lance, rust/lance-namespace-impls/src/dir.rs): the location is a URL
    under the root and the data stays readable there."""
    ns = make(manifest_enabled="true", dir_listing_enabled="false")
    create_table(ns, ["test_table"], rows())
    assert lance.dataset(_assert_deregistered(ns, root, ["test_table"])).count_rows() == 3


def test_deregister_table_in_child_namespace(impl: LanceNamespace, root: Path) -> None:
    """Ports test_deregister_table_in_child_namespace (lancedb/lance, rust/lance-namespace-impls/src/dir.rs)."""
    create_namespaces(impl, ["test_ns"])
    create_table(impl, ["test_ns", "test_table"], rows())
    _assert_deregistered(impl, root, ["test_ns", "test_table"])


@pytest.mark.ours_by_spec(
    "seed 000 (DeregisterTable): a deregistered V1 table is re-registered with RegisterTable; the reference "
    "refuses RegisterTable without the manifest"
)
def test_register_without_manifest_fails(make: Callable[..., LanceNamespace]) -> None:
    """Ports the register half of test_register_deregister_without_manifest_fails (lancedb/lance,
    rust/lance-namespace-impls/src/dir.rs). The deregister half is left out: pylance 14.0.2 and ours both answer
    it with TableNotFoundError, not with the manifest-mode message."""
    ns = make(manifest_enabled="false")
    with pytest.raises(ln.LanceNamespaceError, match="manifest mode is enabled"):
        ns.register_table(ln.RegisterTableRequest(id=["test_table"], location="test_table.lance"))


@pytest.mark.parametrize(("location", "phrase"), REFUSED_LOCATIONS)
def test_register_table_rejects(impl: LanceNamespace, location: str, phrase: str) -> None:
    """Ports test_register_table_rejects_absolute_uri, _absolute_path and _path_traversal (lancedb/lance,
    rust/lance-namespace-impls/src/dir.rs): a root-level table id, InvalidInput with the phrase."""
    with pytest.raises(ln.InvalidInputError, match=phrase):
        impl.register_table(ln.RegisterTableRequest(id=["test_table"], location=location))
    assert not table_exists(impl, ["test_table"])
