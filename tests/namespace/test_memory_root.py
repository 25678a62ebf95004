"""A ``memory://`` root serves catalog-only use (markers through fsspec's memory filesystem)."""

from __future__ import annotations

import uuid

import pytest
from lance_namespace import NamespaceNotEmptyError, TableAlreadyExistsError, TableNotFoundError

from airflow_provider_lance.namespace import DirectoryNamespace


def test_catalog_operations_on_a_memory_root() -> None:
    root = f"memory://catalog-{uuid.uuid4().hex}"
    ns = DirectoryNamespace(root=root)
    ns.create_namespace({"id": ["team"], "properties": {"owner": "me"}})
    declared = ns.declare_table({"id": ["team", "t"]})
    assert declared.location.startswith(root + "/") and declared.location.endswith("_team$t")
    assert ns.declare_table({"id": ["r"]}).location == f"{root}/r.lance"
    assert ns.storage.exists("r.lance/.lance-reserved")
    with pytest.raises(TableAlreadyExistsError):
        ns.declare_table({"id": ["r"]})
    assert ns.list_tables({"id": ["team"]}).tables == ["t"]
    assert ns.list_tables({"id": []}).tables == ["r"]
    assert ns.describe_namespace({"id": ["team"]}).properties == {"owner": "me"}
    with pytest.raises(NamespaceNotEmptyError):
        ns.drop_namespace({"id": ["team"]})
    ns.drop_table({"id": ["team", "t"]})
    ns.drop_table({"id": ["r"]})
    with pytest.raises(TableNotFoundError):
        ns.describe_table({"id": ["r"]})
    assert not ns.storage.exists("r.lance")
    ns.drop_namespace({"id": ["team"]})
    assert ns.list_namespaces({"id": []}).namespaces == []
