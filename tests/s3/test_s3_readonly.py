"""Read-only use: listing and describing need no write permission and create nothing (not even
``__manifest``). Local disk, with every write path of the engine replaced by one that records the attempt and
raises PermissionError (tests run as root, so file modes would not stop a write); pylance's own reads do not
go through fsspec, so the whole tree is also compared byte for byte before and after."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import lance
import lance_namespace as ln
import pytest

from airflow_provider_lance.namespace import DirectoryNamespace
from tests.fault_storage import MANIFEST_WRITES, STORAGE_WRITES, rows

FS_WRITES = ("pipe_file", "rm_file", "rm", "makedirs", "mkdir", "touch", "mv", "cp_file", "put_file")


def _tree(root: Path) -> dict[str, tuple[int, str]]:
    found = {}
    for directory, _, files in os.walk(root):
        for name in files:
            path = Path(directory, name)
            found[str(path.relative_to(root))] = (path.stat().st_mtime_ns, hashlib.sha1(path.read_bytes()).hexdigest())
        found.setdefault(str(Path(directory).relative_to(root)) + "/", (0, ""))
    return found


def _read_only(ns: DirectoryNamespace, attempts: list[str], monkeypatch: pytest.MonkeyPatch) -> DirectoryNamespace:
    """Refuse every write of ``ns``. The local fsspec filesystem is a process-wide instance, hence monkeypatch
    (undone after the test)."""

    def refuse(label: str):
        def call(*args, **kwargs):
            attempts.append(label)
            raise PermissionError(f"read-only credentials: {label}")

        return call

    for name in STORAGE_WRITES:
        setattr(ns.storage, name, refuse(f"storage.{name}"))
    for name in MANIFEST_WRITES:
        setattr(ns.manifest, name, refuse(f"manifest.{name}"))
    for name in FS_WRITES:
        if hasattr(ns.storage.fs, name):
            monkeypatch.setattr(ns.storage.fs, name, refuse(f"fs.{name}"))
    return ns


@pytest.mark.parametrize("properties", [{}, {"table_version_management": "true"}], ids=["default", "managed"])
def test_reads_need_no_write(tmp_path: Path, properties: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "root"
    writer = DirectoryNamespace(root=str(root), **properties)
    writer.create_namespace(ln.CreateNamespaceRequest(id=["db"], properties={"a": "b"}))
    lance.write_dataset(rows(3), namespace_client=writer, table_id=["db", "t"], mode="create")
    lance.write_dataset(rows(2, 3), namespace_client=writer, table_id=["db", "t"], mode="append")
    lance.write_dataset(rows(1), namespace_client=writer, table_id=["root_t"], mode="create")
    writer.declare_table(ln.DeclareTableRequest(id=["db", "declared"]))
    writer.finalize_pending_versions()  # the last version's deferred repoint, which a reader would finish
    before = _tree(root)

    attempts: list[str] = []
    ns = _read_only(DirectoryNamespace(root=str(root), **properties), attempts, monkeypatch)
    assert ns.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == ["db"]
    assert ns.describe_namespace(ln.DescribeNamespaceRequest(id=["db"])).properties == {"a": "b"}
    ns.namespace_exists(ln.NamespaceExistsRequest(id=["db"]))
    assert ns.list_tables(ln.ListTablesRequest(id=["db"])).tables == ["declared", "t"]
    assert ns.list_tables(ln.ListTablesRequest(id=[])).tables == ["root_t"]
    ns.table_exists(ln.TableExistsRequest(id=["db", "t"]))
    assert ns.describe_table(ln.DescribeTableRequest(id=["db", "t"])).version == 2
    assert ns.describe_table(ln.DescribeTableRequest(id=["db", "declared"], check_declared=True)).is_only_declared
    assert [v.version for v in ns.list_table_versions(ln.ListTableVersionsRequest(id=["db", "t"])).versions] == [1, 2]
    assert ns.describe_table_version(ln.DescribeTableVersionRequest(id=["db", "t"])).version.version == 2
    assert ns.describe_table_version(ln.DescribeTableVersionRequest(id=["db", "t"], version=1)).version.version == 1
    assert lance.dataset(namespace_client=ns, table_id=["db", "t"]).count_rows() == 5
    assert lance.dataset(namespace_client=ns, table_id=["root_t"]).count_rows() == 1
    assert attempts == []
    assert _tree(root) == before

    # a write through the same credentials fails cleanly, with the permission code, and changes nothing
    with pytest.raises(ln.PermissionDeniedError):
        ns.create_namespace(ln.CreateNamespaceRequest(id=["other"]))
    assert _tree(root) == before


def test_empty_root_reads_create_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "empty"
    root.mkdir()
    attempts: list[str] = []
    ns = _read_only(DirectoryNamespace(root=str(root), table_version_management="true"), attempts, monkeypatch)
    assert ns.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == []
    assert ns.list_tables(ln.ListTablesRequest(id=[])).tables == []
    with pytest.raises(ln.TableNotFoundError):
        ns.describe_table(ln.DescribeTableRequest(id=["t"]))
    with pytest.raises(ln.NamespaceNotFoundError):
        ns.describe_namespace(ln.DescribeNamespaceRequest(id=["db"]))
    assert attempts == []
    assert list(root.iterdir()) == [], "a read created files (e.g. __manifest)"
    missing = tmp_path / "missing"
    DirectoryNamespace(root=str(missing)).list_tables(ln.ListTablesRequest(id=[]))
    assert not missing.exists(), "constructing and listing created the root"
