"""Port of the Rust tests of lance's ``rust/lance-namespace-impls/src/dir/manifest.rs`` (lancedb/lance @ d2039d75).

Upstream runs each test with ``inline_optimization_enabled`` on and off (rstest cases); so does the port, as the
construction property (ours accepts and ignores it).
"""

from __future__ import annotations

from collections.abc import Callable

import lance_namespace as ln
import pytest
from lance_namespace import LanceNamespace

from tests.upstream.helpers import create_namespaces, create_table, id_name, namespace_exists, table_exists, tables_of


@pytest.fixture(params=["true", "false"], ids=["with_optimization", "without_optimization"])
def build(request: pytest.FixtureRequest, make: Callable[..., LanceNamespace]) -> Callable[..., LanceNamespace]:
    """``make`` with upstream's ``inline_optimization_enabled`` case."""
    return lambda **properties: make(inline_optimization_enabled=request.param, **properties)


@pytest.fixture
def ns(build: Callable[..., LanceNamespace]) -> LanceNamespace:
    return build()


def test_manifest_namespace_basic_create_and_list(ns: LanceNamespace) -> None:
    """Ports test_manifest_namespace_basic_create_and_list (lancedb/lance,
    rust/lance-namespace-impls/src/dir/manifest.rs)."""
    assert tables_of(ns, []) == []
    create_table(ns, ["test_table"], id_name())
    assert tables_of(ns, []) == ["test_table"]


def test_manifest_namespace_table_exists(ns: LanceNamespace) -> None:
    """Ports test_manifest_namespace_table_exists (lancedb/lance, rust/lance-namespace-impls/src/dir/manifest.rs)."""
    assert not table_exists(ns, ["nonexistent"])
    create_table(ns, ["test_table"], id_name())
    assert table_exists(ns, ["test_table"])


def test_manifest_namespace_describe_table(ns: LanceNamespace) -> None:
    """Ports test_manifest_namespace_describe_table (lancedb/lance, rust/lance-namespace-impls/src/dir/manifest.rs)."""
    with pytest.raises(ln.TableNotFoundError):
        ns.describe_table(ln.DescribeTableRequest(id=["nonexistent"]))
    create_table(ns, ["test_table"], id_name())
    assert "test_table" in ns.describe_table(ln.DescribeTableRequest(id=["test_table"])).location


def test_manifest_namespace_drop_table(ns: LanceNamespace) -> None:
    """Ports test_manifest_namespace_drop_table (lancedb/lance, rust/lance-namespace-impls/src/dir/manifest.rs)."""
    create_table(ns, ["test_table"], id_name())
    assert tables_of(ns, []) == ["test_table"]
    ns.drop_table(ln.DropTableRequest(id=["test_table"]))
    assert tables_of(ns, []) == []


def test_manifest_namespace_multiple_tables(ns: LanceNamespace) -> None:
    """Ports test_manifest_namespace_multiple_tables (lancedb/lance, rust/lance-namespace-impls/src/dir/manifest.rs)."""
    for i in range(1, 4):
        create_table(ns, [f"table{i}"], id_name())
    assert sorted(tables_of(ns, [])) == ["table1", "table2", "table3"]


@pytest.mark.parametrize(
    ("manifest", "listing"),
    [("false", None), ("true", "true"), ("true", "false")],
    ids=["test_directory_only_mode", "test_dual_mode_merge", "test_manifest_only_mode"],
)
def test_modes(build: Callable[..., LanceNamespace], manifest: str, listing: str | None) -> None:
    """Ports test_directory_only_mode, test_dual_mode_merge and test_manifest_only_mode (lancedb/lance,
    rust/lance-namespace-impls/src/dir/manifest.rs): each mode lists the one table it created."""
    properties = {"manifest_enabled": manifest} | ({"dir_listing_enabled": listing} if listing else {})
    ns = build(**properties)
    assert tables_of(ns, []) == []
    create_table(ns, ["test_table"], id_name())
    assert tables_of(ns, []) == ["test_table"]


def test_drop_nonexistent_table(ns: LanceNamespace) -> None:
    """Ports test_drop_nonexistent_table (lancedb/lance, rust/lance-namespace-impls/src/dir/manifest.rs)."""
    with pytest.raises(ln.LanceNamespaceError):
        ns.drop_table(ln.DropTableRequest(id=["nonexistent"]))


def test_create_duplicate_table_fails(ns: LanceNamespace) -> None:
    """Ports test_create_duplicate_table_fails (lancedb/lance, rust/lance-namespace-impls/src/dir/manifest.rs)."""
    create_table(ns, ["test_table"], id_name())
    with pytest.raises(ln.LanceNamespaceError):
        create_table(ns, ["test_table"], id_name())
    assert tables_of(ns, []) == ["test_table"]


def test_create_child_namespace(ns: LanceNamespace) -> None:
    """Ports test_create_child_namespace (lancedb/lance, rust/lance-namespace-impls/src/dir/manifest.rs)."""
    create_namespaces(ns, ["ns1"])
    assert namespace_exists(ns, ["ns1"])
    assert ns.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == ["ns1"]


def test_create_nested_namespace(ns: LanceNamespace) -> None:
    """Ports test_create_nested_namespace (lancedb/lance, rust/lance-namespace-impls/src/dir/manifest.rs)."""
    create_namespaces(ns, ["parent"], ["parent", "child"])
    assert namespace_exists(ns, ["parent", "child"])
    assert ns.list_namespaces(ln.ListNamespacesRequest(id=["parent"])).namespaces == ["child"]


def test_create_namespace_without_parent_fails(ns: LanceNamespace) -> None:
    """Ports test_create_namespace_without_parent_fails (lancedb/lance,
    rust/lance-namespace-impls/src/dir/manifest.rs)."""
    with pytest.raises(ln.LanceNamespaceError):
        ns.create_namespace(ln.CreateNamespaceRequest(id=["nonexistent_parent", "child"]))
    assert not namespace_exists(ns, ["nonexistent_parent", "child"])


def test_drop_child_namespace(ns: LanceNamespace) -> None:
    """Ports test_drop_child_namespace (lancedb/lance, rust/lance-namespace-impls/src/dir/manifest.rs)."""
    create_namespaces(ns, ["ns1"])
    ns.drop_namespace(ln.DropNamespaceRequest(id=["ns1"]))
    assert not namespace_exists(ns, ["ns1"])


def test_drop_namespace_with_children_fails(ns: LanceNamespace) -> None:
    """Ports test_drop_namespace_with_children_fails (lancedb/lance, rust/lance-namespace-impls/src/dir/manifest.rs)."""
    create_namespaces(ns, ["parent"], ["parent", "child"])
    with pytest.raises(ln.LanceNamespaceError):
        ns.drop_namespace(ln.DropNamespaceRequest(id=["parent"]))
    assert namespace_exists(ns, ["parent", "child"])


def test_create_table_in_child_namespace(ns: LanceNamespace) -> None:
    """Ports test_create_table_in_child_namespace (lancedb/lance, rust/lance-namespace-impls/src/dir/manifest.rs)."""
    create_namespaces(ns, ["ns1"])
    create_table(ns, ["ns1", "table1"], id_name())
    assert tables_of(ns, ["ns1"]) == ["table1"]


def test_describe_child_namespace(ns: LanceNamespace) -> None:
    """Ports test_describe_child_namespace (lancedb/lance, rust/lance-namespace-impls/src/dir/manifest.rs)."""
    ns.create_namespace(ln.CreateNamespaceRequest(id=["ns1"], properties={"key1": "value1"}))
    described = ns.describe_namespace(ln.DescribeNamespaceRequest(id=["ns1"]))
    assert described.properties is not None
    assert described.properties.get("key1") == "value1"
