"""``__manifest`` maintenance: compaction keeps every row and reduces fragments, clean-up keeps the latest
version and the time window, concurrent readers and writers keep working, and the reference (pylance's Rust
``DirectoryNamespace``) still reads the catalog afterwards."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from pathlib import Path

import lance
import lance_namespace as ln
import pytest
from lance.namespace import DirectoryNamespace as ReferenceNamespace

from airflow_provider_lance.namespace import DirectoryNamespace, maintenance
from airflow_provider_lance.namespace.maintenance import maintain_manifest

NO_AUTO_MAINTENANCE = {"manifest_maintenance_every": "0", "manifest_cleanup_every": "0"}


@pytest.fixture
def no_auto_maintenance() -> dict[str, str]:
    """Properties that let fragments pile up (the automatic trigger would compact them)."""
    return NO_AUTO_MAINTENANCE


@pytest.fixture
def short_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Allow clean-up windows of (under) a second: readers in this process then always list the versions
    instead of trusting "no manifest N+1" (what makes short windows unsafe, see ``REVALIDATE_AFTER``)."""
    monkeypatch.setattr(maintenance, "REVALIDATE_AFTER", timedelta(0))


def _catalog(root: Path, tables: int, **properties: str) -> DirectoryNamespace:
    ns = DirectoryNamespace(root=str(root), **properties)
    ns.create_namespace(ln.CreateNamespaceRequest(id=["prod"], properties={"owner": "data"}))
    for i in range(tables):
        ns.declare_table(ln.DeclareTableRequest(id=["prod", f"t{i}"], properties={"i": str(i)}))
    ns.drop_table(ln.DropTableRequest(id=["prod", "t0"]))  # a deletion for compaction to materialise
    return ns


def _rows(root: Path) -> list[dict]:
    table = lance.dataset(str(root / "__manifest")).to_table()
    return sorted(table.to_pylist(), key=lambda row: row["object_id"])


def _fragments(root: Path) -> int:
    return len(lance.dataset(str(root / "__manifest")).get_fragments())


def test_compaction_keeps_all_rows_and_reduces_fragments(tmp_path: Path, no_auto_maintenance: dict[str, str]) -> None:
    ns = _catalog(tmp_path, 12, **no_auto_maintenance)
    before_rows, before_fragments = _rows(tmp_path), _fragments(tmp_path)
    assert before_fragments > 10

    result = maintain_manifest(ns, cleanup=False)

    assert result["compacted"] is True
    assert result["fragments_before"] == before_fragments
    assert result["fragments_after"] == _fragments(tmp_path) < before_fragments
    assert _rows(tmp_path) == before_rows
    listed = ns.list_tables(ln.ListTablesRequest(id=["prod"])).tables
    assert listed == sorted(f"t{i}" for i in range(1, 12))
    assert ns.describe_table(ln.DescribeTableRequest(id=["prod", "t5"])).properties == {"i": "5"}
    # the catalog stays writable and keeps its format
    ns.declare_table(ln.DeclareTableRequest(id=["prod", "after"]))
    dataset = lance.dataset(str(tmp_path / "__manifest"))
    assert dataset.data_storage_version == "2.2"
    assert dataset.schema.field("object_id").metadata == {b"lance-schema:unenforced-primary-key:position": b"0"}


def test_cleanup_keeps_the_latest_version_and_the_window(
    tmp_path: Path, no_auto_maintenance: dict[str, str], short_windows: None
) -> None:
    ns = _catalog(tmp_path, 5, **no_auto_maintenance)
    versions_dir = tmp_path / "__manifest" / "_versions"
    count = len(list(versions_dir.glob("*.manifest")))

    kept = maintain_manifest(ns, compact=False, older_than=timedelta(hours=1))
    assert kept["versions_removed"] == 0  # everything is inside the window
    assert len(list(versions_dir.glob("*.manifest"))) == count

    result = maintain_manifest(ns, older_than=timedelta(0))
    assert result["versions_removed"] > 0
    assert len(list(versions_dir.glob("*.manifest"))) == 1  # the latest is never removed
    assert ns.list_tables(ln.ListTablesRequest(id=["prod"])).tables == ["t1", "t2", "t3", "t4"]


def test_empty_catalog_is_skipped(tmp_path: Path) -> None:
    result = maintain_manifest(DirectoryNamespace(root=str(tmp_path)))
    assert "skipped" in result
    assert not (tmp_path / "__manifest").exists()  # a read never creates the manifest


def test_automatic_maintenance_bounds_fragments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, short_windows: None
) -> None:
    ns = _catalog(
        tmp_path,
        30,
        manifest_maintenance_every="4",
        manifest_maintenance_fragments="3",
        manifest_cleanup_every="8",
        manifest_cleanup_older_than_seconds="0",
    )
    assert _fragments(tmp_path) <= 3 + 4  # at most threshold + one check interval of new fragments
    assert len(list((tmp_path / "__manifest" / "_versions").glob("*.manifest"))) < 20
    assert len(ns.list_tables(ln.ListTablesRequest(id=["prod"])).tables) == 29


def test_the_commit_due_for_a_rewrite_is_the_rewrite(tmp_path: Path) -> None:
    """With only small fragments, the insert at a compaction version writes every row itself (one Overwrite):
    no second commit, the rows unchanged, and the reference reads them all."""
    ns = DirectoryNamespace(
        root=str(tmp_path),
        manifest_maintenance_every="4",
        manifest_maintenance_fragments="2",
        manifest_cleanup_every="0",
    )
    ns.create_namespace(ln.CreateNamespaceRequest(id=["prod"]))
    names = [f"t{i}" for i in range(13)]
    for name in names:
        ns.declare_table(ln.DeclareTableRequest(id=["prod", name]))
    dataset = lance.dataset(str(tmp_path / "__manifest"))
    operations = {
        version: type(dataset.checkout_version(version).get_transactions(1)[0].operation).__name__
        for version in range(2, dataset.version + 1)
    }
    assert dataset.version == 1 + 1 + len(names)  # the empty table, the namespace, one commit per declare
    assert {version for version, name in operations.items() if name == "Overwrite"} == {4, 8, 12}
    assert len(dataset.get_fragments()) == 1 + 3  # the version-12 rewrite and the three appends since
    listed = ReferenceNamespace(root=str(tmp_path)).list_tables(ln.ListTablesRequest(id=["prod"])).tables
    assert sorted(listed) == sorted(names)


def test_concurrent_readers_and_writers_during_maintenance(
    tmp_path: Path, no_auto_maintenance: dict[str, str], short_windows: None
) -> None:
    ns = _catalog(tmp_path, 20, **no_auto_maintenance)
    errors: list[BaseException] = []
    declared: list[str] = []
    stop = threading.Event()

    def writer() -> None:
        # another client, as another process would be
        own = DirectoryNamespace(root=str(tmp_path), **no_auto_maintenance)
        i = 0
        while not stop.is_set():
            name = f"w{i}"
            try:
                own.declare_table(ln.DeclareTableRequest(id=["prod", name]))
                declared.append(name)
            except BaseException as error:
                errors.append(error)
                return
            i += 1

    def reader() -> None:
        own = DirectoryNamespace(root=str(tmp_path), **no_auto_maintenance)
        reference = ReferenceNamespace(root=str(tmp_path))
        while not stop.is_set():
            try:
                tables = set(own.list_tables(ln.ListTablesRequest(id=["prod"])).tables)
                assert {f"t{i}" for i in range(1, 20)} <= tables
                own.describe_table(ln.DescribeTableRequest(id=["prod", "t7"]))
                reference.table_exists(ln.TableExistsRequest(id=["prod", "t9"]))
            except BaseException as error:
                errors.append(error)
                return

    threads = [threading.Thread(target=writer), threading.Thread(target=reader)]
    for thread in threads:
        thread.start()
    results = []
    deadline = time.monotonic() + 4
    while time.monotonic() < deadline and not errors:
        # a short window: versions superseded more than 0.5 s ago go while the others read and write
        results.append(maintain_manifest(ns, older_than=timedelta(seconds=0.5)))
    stop.set()
    for thread in threads:
        thread.join(timeout=60)

    assert not errors, errors
    assert any(r["compacted"] for r in results)
    assert any(r["versions_removed"] for r in results)
    final = set(DirectoryNamespace(root=str(tmp_path)).list_tables(ln.ListTablesRequest(id=["prod"])).tables)
    assert {f"t{i}" for i in range(1, 20)} | set(declared) == final  # no write was lost
    rows = [row["object_id"] for row in _rows(tmp_path)]
    assert len(rows) == len(set(rows))  # and none duplicated


def test_reference_reads_the_catalog_after_maintenance(
    tmp_path: Path, no_auto_maintenance: dict[str, str], short_windows: None
) -> None:
    ns = _catalog(tmp_path, 10, **no_auto_maintenance)
    maintain_manifest(ns, older_than=timedelta(0))
    assert _fragments(tmp_path) == 1

    reference = ReferenceNamespace(root=str(tmp_path))
    assert reference.list_tables(ln.ListTablesRequest(id=["prod"])).tables == [f"t{i}" for i in range(1, 10)]
    assert reference.describe_namespace(ln.DescribeNamespaceRequest(id=["prod"])).properties == {"owner": "data"}
    reference.table_exists(ln.TableExistsRequest(id=["prod", "t3"]))
    # and it can still write to it (no table_version rows, so no writer flag)
    reference.declare_table(ln.DeclareTableRequest(id=["prod", "by_reference"]))
    assert "by_reference" in ns.list_tables(ln.ListTablesRequest(id=["prod"])).tables


@pytest.mark.slow  # starts processes of its own
def test_cached_reads_see_other_processes_at_once(tmp_path: Path, no_auto_maintenance: dict[str, str]) -> None:
    """The per-version row cache and the next-manifest freshness check never serve a stale answer: a
    write by another process (declare, compaction, clean-up, drop) is visible to the very next call."""
    ns = _catalog(tmp_path, 3, **no_auto_maintenance)
    assert ns.list_tables(ln.ListTablesRequest(id=["prod"])).tables == ["t1", "t2"]  # rows now cached
    script = (
        "import sys, lance_namespace as ln\n"
        "from airflow_provider_lance.namespace import DirectoryNamespace\n"
        "from airflow_provider_lance.namespace.maintenance import maintain_manifest\n"
        "ns = DirectoryNamespace(root=sys.argv[1])\n"
        "if sys.argv[2] == 'declare': ns.declare_table(ln.DeclareTableRequest(id=['prod', 'other']))\n"
        "elif sys.argv[2] == 'maintain': maintain_manifest(ns)\n"
        "else: ns.drop_table(ln.DropTableRequest(id=['prod', 't1']))\n"
    )
    import subprocess
    import sys

    def other_process(action: str) -> None:
        subprocess.run([sys.executable, "-c", script, str(tmp_path), action], check=True, timeout=120)

    other_process("declare")
    assert ns.list_tables(ln.ListTablesRequest(id=["prod"])).tables == ["other", "t1", "t2"]
    ns.table_exists(ln.TableExistsRequest(id=["prod", "other"]))
    other_process("maintain")
    assert ns.list_tables(ln.ListTablesRequest(id=["prod"])).tables == ["other", "t1", "t2"]
    other_process("drop")
    with pytest.raises(ln.TableNotFoundError):
        ns.table_exists(ln.TableExistsRequest(id=["prod", "t1"]))
    assert ns.list_tables(ln.ListTablesRequest(id=["prod"])).tables == ["other", "t2"]


def test_cleanup_refuses_a_window_shorter_than_readers_trust(tmp_path: Path) -> None:
    ns = _catalog(tmp_path, 2)
    with pytest.raises(ValueError, match="at least"):
        maintain_manifest(ns, older_than=maintenance.REVALIDATE_AFTER - timedelta(seconds=1))
    assert maintain_manifest(ns, cleanup=False, older_than=timedelta(0))["compacted"] is True


def test_compaction_keeps_the_table_metadata(tmp_path: Path, no_auto_maintenance: dict[str, str]) -> None:
    ns = _catalog(tmp_path, 6, table_version_management="true", **no_auto_maintenance)
    before = dict(lance.dataset(str(tmp_path / "__manifest")).metadata)
    assert before.get("table_version_management") == "true"

    assert maintain_manifest(ns, cleanup=False)["compacted"]

    assert _fragments(tmp_path) == 1
    assert dict(lance.dataset(str(tmp_path / "__manifest")).metadata) == before  # flags and management kept
    assert DirectoryNamespace(root=str(tmp_path)).catalog.managed()


def _data_files(root: Path) -> list[set[str]]:
    """Each fragment's data files, in fragment order."""
    dataset = lance.dataset(str(root / "__manifest"))
    return [{data_file.path for data_file in fragment.metadata.files} for fragment in dataset.get_fragments()]


def test_a_large_catalog_compacts_only_its_small_fragments(
    tmp_path: Path, no_auto_maintenance: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ``LARGE_FRAGMENT_ROWS`` a fragment stays as it is: compaction reads and rewrites only the fragments
    of the commits since (at a million tables a rewrite of every row cost 270 ms on every 8th commit)."""
    monkeypatch.setattr(maintenance, "LARGE_FRAGMENT_ROWS", 10)
    ns = _catalog(tmp_path, 12, **no_auto_maintenance)
    assert maintain_manifest(ns, cleanup=False)["fragments_after"] == 1  # no large fragment yet: every row
    [large] = _data_files(tmp_path)
    for i in range(12, 18):
        ns.declare_table(ln.DeclareTableRequest(id=["prod", f"t{i}"], properties={"i": str(i)}))
    ns.drop_table(ln.DropTableRequest(id=["prod", "t1"]))  # one deleted row of 12: the large one stays
    before_rows, before_fragments = _rows(tmp_path), _fragments(tmp_path)

    result = maintain_manifest(ns, cleanup=False)

    assert result["compacted"] is True
    assert (result["fragments_before"], result["fragments_removed"], result["fragments_added"]) == (
        before_fragments,
        before_fragments - 1,
        1,
    )
    files = _data_files(tmp_path)
    assert len(files) == 2 and files[0] == large  # the large fragment's file, unread and unwritten
    assert _rows(tmp_path) == before_rows
    fresh = DirectoryNamespace(root=str(tmp_path))
    assert fresh.list_tables(ln.ListTablesRequest(id=["prod"])).tables == sorted(f"t{i}" for i in range(2, 18))
    assert fresh.describe_table(ln.DescribeTableRequest(id=["prod", "t15"])).properties == {"i": "15"}
    reference = ReferenceNamespace(root=str(tmp_path))
    assert reference.list_tables(ln.ListTablesRequest(id=["prod"])).tables == sorted(f"t{i}" for i in range(2, 18))
    # a large fragment that lost a tenth of its rows is rewritten with the rest
    for i in range(2, 5):
        ns.drop_table(ln.DropTableRequest(id=["prod", f"t{i}"]))
    assert maintain_manifest(ns, cleanup=False)["fragments_after"] == 1
    assert ns.list_tables(ln.ListTablesRequest(id=["prod"])).tables == sorted(f"t{i}" for i in range(5, 18))


def test_a_manifest_with_scalar_indices_is_rewritten_whole(
    tmp_path: Path, no_auto_maintenance: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reference builds scalar indices on ``__manifest``; a partial rewrite would leave them naming
    fragments that are gone, so such a table is rewritten whole (the Overwrite drops them, as the reference's
    own rewrite does)."""
    monkeypatch.setattr(maintenance, "LARGE_FRAGMENT_ROWS", 10)
    ns = _catalog(tmp_path, 12, **no_auto_maintenance)
    maintain_manifest(ns, cleanup=False)
    for i in range(12, 15):
        ns.declare_table(ln.DeclareTableRequest(id=["prod", f"t{i}"]))
    lance.dataset(str(tmp_path / "__manifest")).create_scalar_index("object_id", "BTREE")
    before_rows = _rows(tmp_path)

    assert maintain_manifest(ns, cleanup=False)["fragments_after"] == 1

    assert _rows(tmp_path) == before_rows
    ReferenceNamespace(root=str(tmp_path)).table_exists(ln.TableExistsRequest(id=["prod", "t13"]))  # raises if not
