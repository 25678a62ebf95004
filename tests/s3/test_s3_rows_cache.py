"""The rows cache of remote catalogs (rows_store.py, local tier): a new instance answers from the rows an earlier
one read, but only for the very manifest file storage lists as the newest, and writes still work from there."""

from __future__ import annotations

from pathlib import Path

import lance_namespace as ln
import pyarrow as pa

from airflow_provider_lance.namespace import DirectoryNamespace
from tests.s3.conftest import BUCKET, MotoServer


def _namespaces(ns: DirectoryNamespace) -> list[str]:
    return ns.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces


def _opened(ns: DirectoryNamespace) -> bool:
    """Whether the instance opened ``__manifest`` with pylance."""
    current = ns.manifest._snapshots._current
    return current is not None and current._dataset is not None


def _props(moto_server: MotoServer, s3_root: str, cache: Path) -> dict[str, str]:
    """The machine's cache alone: no rows objects next to the manifest (those: test_s3_rows_object.py)."""
    return moto_server.properties(s3_root, manifest_cache_dir=str(cache), manifest_rows_object_max_rows="0")


def _warm(props: dict[str, str]) -> None:
    """An earlier process: reads the catalog twice (the rows are cached once their e-tag is known)."""
    reader = DirectoryNamespace(**props)
    _namespaces(reader)
    _namespaces(reader)


def test_a_new_instance_answers_from_the_cache(moto_server: MotoServer, s3_root: str, tmp_path: Path) -> None:
    props = _props(moto_server, s3_root, tmp_path / "cache")
    writer = DirectoryNamespace(**props)
    writer.create_namespace(ln.CreateNamespaceRequest(id=["a"], properties={"owner": "x"}))
    writer.declare_table(ln.DeclareTableRequest(id=["a", "t"]))
    _warm(props)
    assert list((tmp_path / "cache").rglob("*.arrow"))

    cold = DirectoryNamespace(**props)
    assert _namespaces(cold) == ["a"]
    assert cold.describe_namespace(ln.DescribeNamespaceRequest(id=["a"])).properties == {"owner": "x"}
    cold.table_exists(ln.TableExistsRequest(id=["a", "t"]))
    assert not _opened(cold)

    cold.create_namespace(ln.CreateNamespaceRequest(id=["b"]))  # a write opens the dataset of that version
    assert _namespaces(DirectoryNamespace(**props)) == ["a", "b"]
    assert _namespaces(writer) == ["a", "b"]


def test_a_newer_version_is_never_answered_from_an_older_entry(
    moto_server: MotoServer, s3_root: str, tmp_path: Path
) -> None:
    props = _props(moto_server, s3_root, tmp_path / "cache")
    writer = DirectoryNamespace(**props)
    writer.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    _warm(props)
    writer.create_namespace(ln.CreateNamespaceRequest(id=["b"]))  # after the cached version

    cold = DirectoryNamespace(**props)
    assert _namespaces(cold) == ["a", "b"]
    assert _opened(cold)


def test_a_recreated_catalog_is_not_answered_from_the_old_one(
    moto_server: MotoServer, s3_root: str, tmp_path: Path
) -> None:
    props = _props(moto_server, s3_root, tmp_path / "cache")
    DirectoryNamespace(**props).create_namespace(ln.CreateNamespaceRequest(id=["old"]))
    _warm(props)
    client = moto_server.client()  # deleted and re-created with as many versions
    prefix = s3_root.removeprefix(f"s3://{BUCKET}/") + "/"
    for item in client.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", []):
        client.delete_object(Bucket=BUCKET, Key=item["Key"])
    DirectoryNamespace(**props).create_namespace(ln.CreateNamespaceRequest(id=["new"]))

    assert _namespaces(DirectoryNamespace(**props)) == ["new"]


def test_a_broken_entry_falls_back_to_the_table(moto_server: MotoServer, s3_root: str, tmp_path: Path) -> None:
    props = _props(moto_server, s3_root, tmp_path / "cache")
    DirectoryNamespace(**props).create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    _warm(props)
    for entry in (tmp_path / "cache").rglob("*.arrow"):
        entry.write_bytes(b"not arrow")

    cold = DirectoryNamespace(**props)
    assert _namespaces(cold) == ["a"]
    assert _opened(cold)


def test_an_entry_with_other_columns_is_a_miss(moto_server: MotoServer, s3_root: str, tmp_path: Path) -> None:
    props = _props(moto_server, s3_root, tmp_path / "cache")
    DirectoryNamespace(**props).create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    _warm(props)
    for entry in (tmp_path / "cache").rglob("*.arrow"):  # as another release of the engine would have cached it
        with pa.memory_map(str(entry)) as source:
            older = pa.ipc.open_file(source).read_all().drop_columns(["base_objects"])
        with pa.OSFile(str(entry), "wb") as sink, pa.ipc.new_file(sink, older.schema) as writer:
            writer.write_table(older)

    cold = DirectoryNamespace(**props)
    assert _namespaces(cold) == ["a"]
    cold.create_namespace(ln.CreateNamespaceRequest(id=["b"]))
    assert _namespaces(DirectoryNamespace(**props)) == ["a", "b"]


def test_an_empty_cache_dir_turns_the_cache_off(moto_server: MotoServer, s3_root: str, tmp_path: Path) -> None:
    props = moto_server.properties(s3_root, manifest_cache_dir="")
    DirectoryNamespace(**props).create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    _warm(props)
    store = DirectoryNamespace(**props).manifest._snapshots._store
    assert store is not None and all(tier.committer_only for tier in store.tiers)  # the S3 object only
    assert not list(tmp_path.rglob("*.arrow"))


def test_cache_entries_are_private_and_bounded(moto_server: MotoServer, s3_root: str, tmp_path: Path) -> None:
    props = _props(moto_server, s3_root, tmp_path / "cache")
    writer = DirectoryNamespace(**props)
    reader = DirectoryNamespace(**props)
    for i in range(8):
        writer.create_namespace(ln.CreateNamespaceRequest(id=[f"n{i}"]))
        _namespaces(reader)
        _namespaces(reader)

    (catalog,) = (tmp_path / "cache").iterdir()
    assert catalog.stat().st_mode & 0o777 == 0o700
    assert 1 <= len(list(catalog.glob("*.arrow"))) <= 4
