"""A long-lived instance never answers from an old ``__manifest`` version, whatever happened outside: other
writers, an outside clean-up of old versions, the catalog deleted and re-created at the same root (issue 12,
point 4). Each case reads through the instance first, so that it holds a cached snapshot."""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path

import lance
import lance_namespace as ln
import pytest

from airflow_provider_lance.namespace import DirectoryNamespace

NO_AUTO_MAINTENANCE = {"manifest_maintenance_every": "0", "manifest_cleanup_every": "0"}


def _namespaces(ns: DirectoryNamespace) -> list[str]:
    return ns.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces


def _create(root: Path, *names: str) -> None:
    writer = DirectoryNamespace(root=str(root), **NO_AUTO_MAINTENANCE)  # another client, as another process
    for name in names:
        writer.create_namespace(ln.CreateNamespaceRequest(id=[name]))


def test_outside_cleanup_of_old_versions(tmp_path: Path) -> None:
    _create(tmp_path, "a")
    ns = DirectoryNamespace(root=str(tmp_path), **NO_AUTO_MAINTENANCE)
    assert _namespaces(ns) == ["a"]
    _create(tmp_path, "b", "c")
    manifest = lance.dataset(str(tmp_path / "__manifest"))
    manifest.cleanup_old_versions(older_than=timedelta(0), error_if_tagged_old_versions=False)
    assert len(list((tmp_path / "__manifest" / "_versions").glob("*.manifest"))) == 1
    assert _namespaces(ns) == ["a", "b", "c"]


@pytest.mark.parametrize("versions_after", ["fewer", "as many", "more"])
def test_catalog_deleted_and_recreated_at_the_same_root(tmp_path: Path, versions_after: str) -> None:
    _create(tmp_path, "old1", "old2")
    ns = DirectoryNamespace(root=str(tmp_path), **NO_AUTO_MAINTENANCE)
    assert _namespaces(ns) == ["old1", "old2"]
    shutil.rmtree(tmp_path / "__manifest")
    new = {"fewer": ["n1"], "as many": ["n1", "n2"], "more": ["n1", "n2", "n3", "n4"]}[versions_after]
    _create(tmp_path, *new)
    assert _namespaces(ns) == new


def test_catalog_deleted(tmp_path: Path) -> None:
    _create(tmp_path, "a")
    ns = DirectoryNamespace(root=str(tmp_path), **NO_AUTO_MAINTENANCE)
    assert _namespaces(ns) == ["a"]
    shutil.rmtree(tmp_path / "__manifest")
    assert _namespaces(ns) == []
    with pytest.raises(ln.NamespaceNotFoundError):
        ns.describe_namespace(ln.DescribeNamespaceRequest(id=["a"]))
