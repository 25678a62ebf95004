"""Table versions (seed 000 CreateTableVersion … BatchDeleteTableVersions, seed 003 external manifest store):
pylance writers and readers through the engine, the reference reading our catalogs, staged batches,
manifest_path validation, listing, describing and deleting versions. Real pylance, no mocks."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

import lance
import lance.namespace
import lance_namespace as ln
import pyarrow as pa
import pytest
from lance_namespace_urllib3_client.models import VersionRange

from airflow_provider_lance.namespace import versions as versions_module
from airflow_provider_lance.namespace.feature_flags import WRITER_FLAG_TABLE_VERSIONS, WRITER_FLAGS_KEY
from airflow_provider_lance.namespace.identifiers import manifest_name
from tests.namespace.helpers_versions import (
    VERSION_METADATA_KEYS,
    append_and_exit,
    batch,
    location,
    make_ns,
    read,
    rows,
    run_child,
    stage,
    staged_files,
    version_rows,
    versions,
)

Snapshot = Callable[[Path], dict[str, bytes]]


def code_of(excinfo: pytest.ExceptionInfo) -> int:
    return excinfo.value.code


# -- 1. pylance writers and readers through the engine ------------------------------------------------------
@pytest.mark.parametrize("managed", [True, False], ids=["managed", "unmanaged"])
def test_pylance_writers_round_trip(root: Path, managed: bool) -> None:
    ns = make_ns(root, managed)
    ns.create_namespace(ln.CreateNamespaceRequest(id=["prod"]))
    table_id = ["prod", "events"]

    ds = lance.write_dataset(rows(3), namespace_client=ns, table_id=table_id, mode="create")
    assert ds.version == 1
    ds = lance.write_dataset(rows(2, 3), namespace_client=ns, table_id=table_id, mode="append")
    assert ds.version == 2
    ds = read(ns, table_id)
    ds.insert(rows(1, 5))
    ds.delete("id = 0")
    ds = read(ns, table_id)
    assert ds.version == 4
    assert sorted(ds.to_table()["id"].to_pylist()) == [1, 2, 3, 4, 5]
    ds = lance.write_dataset(rows(2, 10), namespace_client=ns, table_id=table_id, mode="overwrite")
    assert ds.version == 5
    # Every version reads back as it was written.
    expected = {1: [0, 1, 2], 2: [0, 1, 2, 3, 4], 3: [0, 1, 2, 3, 4, 5], 4: [1, 2, 3, 4, 5], 5: [10, 11]}
    for version, ids in expected.items():
        assert sorted(read(ns, table_id, version).to_table()["id"].to_pylist()) == ids
    assert read(ns, table_id).version == 5
    assert versions(ns, table_id) == [1, 2, 3, 4, 5]
    table_dir = location(ns, table_id)
    assert staged_files(table_dir) == []
    # A plain pylance reader (no namespace) sees the same latest version: everything was finalized.
    assert lance.dataset(str(table_dir)).version == 5

    vrows = version_rows(ns)
    if not managed:
        assert vrows == {}
        assert int(ns.manifest.metadata().get(WRITER_FLAGS_KEY, "0")) & WRITER_FLAG_TABLE_VERSIONS == 0
        return
    assert set(vrows) == {f"prod$events${v}" for v in range(1, 6)}
    for version in range(1, 6):
        meta = vrows[f"prod$events${version}"]
        assert set(meta) >= VERSION_METADATA_KEYS
        assert meta["naming_scheme"] == "V2"
        final = table_dir / "_versions" / manifest_name(version, "V2")
        if version < 5:  # the latest version's repoint rides on the next insert (answered final meanwhile)
            assert meta["manifest_path"] == str(final).lstrip("/")  # repointed at the final manifest
        assert meta["manifest_size"] == final.stat().st_size
        assert isinstance(meta["timestamp_millis"], int) and meta["e_tag"]
    assert int(ns.manifest.metadata()[WRITER_FLAGS_KEY]) & WRITER_FLAG_TABLE_VERSIONS == WRITER_FLAG_TABLE_VERSIONS
    assert ns.manifest.metadata()["table_version_management"] == "true"
    # The persisted flag keeps management on for every later client, even one constructed with "false"
    # (committing without rows would hide versions from managed readers).
    from airflow_provider_lance.namespace import DirectoryNamespace

    assert DirectoryNamespace(root=str(root)).catalog.managed() is True
    assert make_ns(root, managed=False).catalog.managed() is True


def test_reference_reads_managed_catalog_and_refuses_writes(root: Path, snapshot: Snapshot) -> None:
    ns = make_ns(root, managed=True)
    ns.create_namespace(ln.CreateNamespaceRequest(id=["prod"]))
    lance.write_dataset(rows(3), namespace_client=ns, table_id=["prod", "t"], mode="create")
    lance.write_dataset(rows(2, 3), namespace_client=ns, table_id=["prod", "t"], mode="append")
    ref = lance.namespace.DirectoryNamespace(root=str(root))

    assert ref.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == ["prod"]
    assert ref.list_tables(ln.ListTablesRequest(id=["prod"])).tables == ["t"]
    assert ref.describe_table(ln.DescribeTableRequest(id=["prod", "t"])).location.endswith("_prod$t")
    assert [v.version for v in ref.list_table_versions(ln.ListTableVersionsRequest(id=["prod", "t"])).versions] == [
        1,
        2,
    ]
    assert lance.dataset(namespace_client=ref, table_id=["prod", "t"]).count_rows() == 5

    before = snapshot(root)
    with pytest.raises(ln.UnsupportedOperationError) as excinfo:
        ref.declare_table(ln.DeclareTableRequest(id=["prod", "u"]))
    assert code_of(excinfo) == 0 and f"writer feature flags {WRITER_FLAG_TABLE_VERSIONS}" in str(excinfo.value)
    with pytest.raises(ln.UnsupportedOperationError):
        ref.create_namespace(ln.CreateNamespaceRequest(id=["other"]))
    assert snapshot(root) == before  # refused cleanly, no trace


def test_reference_reads_and_writes_unmanaged_catalog(root: Path) -> None:
    ns = make_ns(root, managed=False)
    ns.create_namespace(ln.CreateNamespaceRequest(id=["prod"]))
    lance.write_dataset(rows(3), namespace_client=ns, table_id=["prod", "t"], mode="create")
    ref = lance.namespace.DirectoryNamespace(root=str(root))

    assert lance.dataset(namespace_client=ref, table_id=["prod", "t"]).count_rows() == 3
    lance.write_dataset(rows(2, 3), namespace_client=ref, table_id=["prod", "t"], mode="append")
    ref.create_namespace(ln.CreateNamespaceRequest(id=["ref"]))
    lance.write_dataset(rows(4), namespace_client=ref, table_id=["ref", "made"], mode="create")

    assert versions(ns, ["prod", "t"]) == [1, 2]
    assert read(ns, ["prod", "t"]).count_rows() == 5
    assert ns.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == ["prod", "ref"]
    assert read(ns, ["ref", "made"]).count_rows() == 4
    # ... and we keep writing after the reference did.
    lance.write_dataset(rows(1, 9), namespace_client=ns, table_id=["ref", "made"], mode="append")
    assert lance.dataset(namespace_client=ref, table_id=["ref", "made"]).count_rows() == 5


# -- 2. BatchCreateTableVersions --------------------------------------------------------------------------
TABLES = (("prod", "a"), ("prod", "b"), ("prod", "c"))


def _three_tables(root: Path, managed: bool = True):
    ns = make_ns(root, managed)
    ns.create_namespace(ln.CreateNamespaceRequest(id=["prod"]))
    for i, table_id in enumerate(TABLES):
        lance.write_dataset(rows(10 + i), namespace_client=ns, table_id=list(table_id), mode="create")
    return ns


def test_batch_commits_three_tables_atomically(root: Path) -> None:
    ns = _three_tables(root)
    entries = stage(ns, {t: rows(5, 100) for t in TABLES})
    assert [e.version for e in entries] == [2, 2, 2]
    # Staged, not visible: through the namespace and directly.
    for i, table_id in enumerate(TABLES):
        assert read(ns, table_id).count_rows() == 10 + i
        assert lance.dataset(str(location(ns, table_id))).version == 1
        assert versions(ns, table_id) == [1]

    committed = batch(ns, entries)
    assert [v.version for v in committed] == [2, 2, 2]
    for i, table_id in enumerate(TABLES):
        assert read(ns, table_id).count_rows() == 15 + i
        assert lance.dataset(str(location(ns, table_id))).version == 2
        assert staged_files(location(ns, table_id)) == []
    assert {f"prod${t[1]}$2" for t in TABLES} <= set(version_rows(ns))
    # Committing the same batch again: every row exists, nothing happens.
    with pytest.raises(ln.ConcurrentModificationError):
        batch(ns, entries)


@pytest.mark.parametrize("stale", ["row_exists", "version_gap"])
def test_batch_with_a_stale_entry_commits_nothing(root: Path, snapshot: Snapshot, stale: str) -> None:
    ns = _three_tables(root)
    if stale == "row_exists":
        entries = stage(ns, {t: rows(5, 100) for t in TABLES})
        # Another writer commits prod$b v2 first: the staged prod$b v2 is now stale.
        lance.write_dataset(rows(1, 500), namespace_client=ns, table_id=["prod", "b"], mode="append")
    else:
        # prod$b's entry claims v3 while the latest is v1 (a staged file of version 3, version != latest + 1).
        entries = stage(ns, {t: rows(5, 100) for t in TABLES})
        staged = Path("/" + entries[1].manifest_path.lstrip("/"))
        gap = staged.with_name(f"{manifest_name(3, 'V2')}-{uuid.uuid4()}")
        shutil.copyfile(staged, gap)
        entries[1] = entries[1].model_copy(update={"version": 3, "manifest_path": str(gap)})
    counts = {t: read(ns, t).count_rows() for t in TABLES}
    rows_before = version_rows(ns)
    before = snapshot(root)

    with pytest.raises(ln.ConcurrentModificationError) as excinfo:
        batch(ns, entries)
    assert code_of(excinfo) == 14
    assert "prod$b" in str(excinfo.value)
    assert snapshot(root) == before  # staged manifests of a and c still there, nothing finalized
    assert version_rows(ns) == rows_before
    for table_id in TABLES:  # readers see none of the batch
        assert read(ns, table_id).count_rows() == counts[table_id]
    assert staged_files(location(ns, ["prod", "a"])) and staged_files(location(ns, ["prod", "c"]))

    # The valid entries still commit once the stale one is left out.
    batch(ns, [entries[0], entries[2]])
    assert read(ns, ["prod", "a"]).count_rows() == counts[("prod", "a")] + 5
    assert read(ns, ["prod", "c"]).count_rows() == counts[("prod", "c")] + 5


def test_batch_with_a_missing_table_commits_nothing(root: Path, snapshot: Snapshot) -> None:
    ns = _three_tables(root)
    entries = stage(ns, {t: rows(5, 100) for t in TABLES[:2]})
    missing = entries[1].model_copy(update={"id": ["prod", "nope"]})
    before = snapshot(root)
    with pytest.raises(ln.TableNotFoundError) as excinfo:
        batch(ns, [entries[0], missing])
    assert code_of(excinfo) == 4
    assert snapshot(root) == before
    assert read(ns, ["prod", "a"]).count_rows() == 10


def test_unmanaged_batch_iterates_and_is_not_atomic(root: Path) -> None:
    """Without table version management the spec lets a batch iterate: earlier entries stay committed when a
    later one fails (documented, not atomic)."""
    ns = _three_tables(root, managed=False)
    entries = stage(ns, {t: rows(5, 100) for t in TABLES})
    lance.write_dataset(rows(1, 500), namespace_client=ns, table_id=["prod", "b"], mode="append")
    with pytest.raises(ln.ConcurrentModificationError) as excinfo:
        batch(ns, entries)
    assert code_of(excinfo) == 14
    assert versions(ns, ["prod", "a"]) == [1, 2]  # committed before the failure
    assert versions(ns, ["prod", "b"]) == [1, 2]  # the other writer's v2
    assert versions(ns, ["prod", "c"]) == [1]
    assert version_rows(ns) == {}
    committed = batch(ns, [entries[2]])
    assert [v.version for v in committed] == [2]
    assert read(ns, ["prod", "c"]).count_rows() == 17


# -- 3. manifest_path validation ------------------------------------------------------------------------------
@pytest.mark.parametrize("managed", [True, False], ids=["managed", "unmanaged"])
@pytest.mark.parametrize("case", ["other_table", "outside_root", "final_manifest", "dotdot", "wrong_version"])
def test_manifest_path_validation(root: Path, tmp_path: Path, snapshot: Snapshot, managed: bool, case: str) -> None:
    ns = _three_tables(root, managed)
    entries = stage(ns, {("prod", "a"): rows(5, 100), ("prod", "b"): rows(5, 100)})
    own = Path("/" + entries[0].manifest_path.lstrip("/"))
    other = Path("/" + entries[1].manifest_path.lstrip("/"))
    if case == "other_table":
        path = str(other)  # a genuine staged manifest of v2, but of prod$b
    elif case == "outside_root":
        outside = tmp_path / "elsewhere" / "_versions" / own.name
        outside.parent.mkdir(parents=True)
        shutil.copyfile(own, outside)
        path = str(outside)
    elif case == "final_manifest":
        path = str(own.parent / manifest_name(1, "V2"))  # the committed v1, not a staged v2
    elif case == "dotdot":
        path = str(own.parent / ".." / "_versions" / own.name)
    else:
        path = str(own.parent / f"{manifest_name(1, 'V2')}-{own.name.split('-', 1)[1]}")
    before = snapshot(root)
    with pytest.raises(ln.InvalidInputError) as excinfo:
        ns.create_table_version(ln.CreateTableVersionRequest(id=["prod", "a"], version=2, manifest_path=path))
    assert code_of(excinfo) == 13
    with pytest.raises(ln.InvalidInputError):
        batch(ns, [entries[0].model_copy(update={"manifest_path": path})])
    assert snapshot(root) == before
    assert versions(ns, ["prod", "a"]) == [1]
    ns.create_table_version(entries[0].model_dump(exclude_none=True))  # the right path still commits
    assert versions(ns, ["prod", "a"]) == [1, 2]


# -- 4. ListTableVersions, DescribeTableVersion, BatchDeleteTableVersions -----------------------------------
def _table_with_versions(root: Path, managed: bool, count: int = 7):
    ns = make_ns(root, managed)
    table_id = ["t"]
    lance.write_dataset(rows(1), namespace_client=ns, table_id=table_id, mode="create")
    for i in range(1, count):
        lance.write_dataset(rows(1, i), namespace_client=ns, table_id=table_id, mode="append")
    return ns, table_id


@pytest.mark.parametrize("managed", [True, False], ids=["managed", "unmanaged"])
def test_list_and_describe_table_versions(root: Path, managed: bool) -> None:
    ns, table_id = _table_with_versions(root, managed)
    assert versions(ns, table_id) == [1, 2, 3, 4, 5, 6, 7]
    assert versions(ns, table_id, descending=True) == [7, 6, 5, 4, 3, 2, 1]
    for descending, expected in ((False, [[1, 2, 3], [4, 5, 6], [7]]), (True, [[7, 6, 5], [4, 3, 2], [1]])):
        pages, token = [], None
        while True:
            response = ns.list_table_versions(
                ln.ListTableVersionsRequest(id=table_id, limit=3, page_token=token, descending=descending)
            )
            pages.append([v.version for v in response.versions])
            token = response.page_token
            if token is None:
                break
        assert pages == expected
    assert ns.list_table_versions(ln.ListTableVersionsRequest(id=table_id, limit=0)).versions == []
    assert ns.list_table_versions(ln.ListTableVersionsRequest(id=table_id, limit=7)).page_token is None
    with pytest.raises(ln.InvalidInputError):
        ns.list_table_versions(ln.ListTableVersionsRequest(id=table_id, page_token="x"))

    listed = {v.version: v for v in ns.list_table_versions(ln.ListTableVersionsRequest(id=table_id)).versions}
    latest = ns.describe_table_version(ln.DescribeTableVersionRequest(id=table_id)).version
    assert latest.version == 7 and latest.manifest_path == listed[7].manifest_path
    assert latest.manifest_path.endswith(manifest_name(7, "V2"))
    third = ns.describe_table_version(ln.DescribeTableVersionRequest(id=table_id, version=3)).version
    assert third.version == 3 and third.manifest_size == listed[3].manifest_size
    with pytest.raises(ln.TableVersionNotFoundError) as excinfo:
        ns.describe_table_version(ln.DescribeTableVersionRequest(id=table_id, version=8))
    assert code_of(excinfo) == 11
    with pytest.raises(ln.TableNotFoundError) as excinfo:
        ns.describe_table_version(ln.DescribeTableVersionRequest(id=["nope"]))
    assert code_of(excinfo) == 4
    with pytest.raises(ln.TableNotFoundError):
        ns.list_table_versions(ln.ListTableVersionsRequest(id=["nope"]))
    # A declared table has no versions.
    ns.declare_table(ln.DeclareTableRequest(id=["declared"]))
    assert versions(ns, ["declared"]) == []
    with pytest.raises(ln.TableVersionNotFoundError):
        ns.describe_table_version(ln.DescribeTableVersionRequest(id=["declared"]))


def _delete(ns, table_id, ranges, ignore_missing: bool = False) -> int:
    request = ln.BatchDeleteTableVersionsRequest(
        id=table_id,
        ranges=[VersionRange(start_version=s, end_version=e) for s, e in ranges],
        context={"ignore_missing": "true"} if ignore_missing else None,
    )
    return ns.batch_delete_table_versions(request).deleted_count


@pytest.mark.parametrize("managed", [True, False], ids=["managed", "unmanaged"])
def test_batch_delete_table_versions(root: Path, snapshot: Snapshot, managed: bool) -> None:
    ns, table_id = _table_with_versions(root, managed, count=9)
    table_dir = location(ns, table_id)

    def manifests() -> list[int]:
        return sorted(v for v in range(1, 12) if (table_dir / "_versions" / manifest_name(v, "V2")).exists())

    def rowed() -> list[int]:
        return sorted(int(oid.rsplit("$", 1)[1]) for oid in version_rows(ns))

    # Start inclusive, end exclusive.
    assert _delete(ns, table_id, [(2, 4)]) == 2
    assert versions(ns, table_id) == [1, 4, 5, 6, 7, 8, 9]
    assert manifests() == [1, 4, 5, 6, 7, 8, 9]
    assert rowed() == ([1, 4, 5, 6, 7, 8, 9] if managed else [])

    # Missing versions: TableVersionNotFound and nothing deleted, unless ignore_missing.
    before = snapshot(root)
    with pytest.raises(ln.TableVersionNotFoundError) as excinfo:
        _delete(ns, table_id, [(3, 6)])
    assert code_of(excinfo) == 11
    assert snapshot(root) == before
    assert _delete(ns, table_id, [(3, 6)], ignore_missing=True) == 2
    assert versions(ns, table_id) == [1, 6, 7, 8, 9]

    # A negative end reaches through the latest version; several ranges in one call.
    assert _delete(ns, table_id, [(1, 2), (8, -1)]) == 3
    assert versions(ns, table_id) == [6, 7]
    assert manifests() == [6, 7]
    assert rowed() == ([6, 7] if managed else [])
    assert read(ns, table_id).version == 7
    assert read(ns, table_id).count_rows() == 7
    assert _delete(ns, table_id, [(100, 200)], ignore_missing=True) == 0
    with pytest.raises(ln.TableNotFoundError):
        _delete(ns, ["nope"], [(1, 2)])


def test_legacy_v1_named_table_managed_then_dropped_and_recreated(root: Path) -> None:
    """A root table written before the catalog (V1 manifest names, no table row) gets managed commits in
    its own naming scheme; dropping it removes its table_version rows, so a re-created table starts at v1."""
    lance.write_dataset(rows(1), str(root / "old.lance"), enable_v2_manifest_paths=False)
    ns = make_ns(root, managed=True)
    ns.create_namespace(ln.CreateNamespaceRequest(id=["prod"]))
    lance.write_dataset(rows(1, 1), namespace_client=ns, table_id=["old"], mode="append")
    assert sorted(p.name for p in (root / "old.lance" / "_versions").glob("*.manifest")) == [
        "1.manifest",
        "2.manifest",
    ]
    assert version_rows(ns)["old$2"]["naming_scheme"] == "V1"
    assert versions(ns, ["old"]) == [1, 2]
    assert read(ns, ["old"]).count_rows() == 2

    ns.drop_table(ln.DropTableRequest(id=["old"]))
    assert version_rows(ns) == {}
    lance.write_dataset(rows(3, 10), namespace_client=ns, table_id=["old"], mode="create")
    assert versions(ns, ["old"]) == [1]
    assert read(ns, ["old"]).count_rows() == 3


def test_a_catalog_flagged_by_release_0_1_moves_to_the_new_bit(tmp_path) -> None:
    """0.1.0 marked catalogs with table_version rows by writer bit 1; this release understands that bit and
    replaces it with its own at the next commit of a version."""
    ns = make_ns(tmp_path, managed=True)
    ns.create_namespace(ln.CreateNamespaceRequest(id=["p"]))
    ns.manifest.update_metadata({WRITER_FLAGS_KEY: "1"})
    lance.write_dataset(rows(3), namespace_client=ns, table_id=["p", "t"], mode="create")
    assert int(ns.manifest.metadata()[WRITER_FLAGS_KEY]) == WRITER_FLAG_TABLE_VERSIONS


# -- 4. what a managed commit costs, and what a describe remembers --------------------------------------------
def test_a_commit_through_the_namespace_is_one_manifest_commit_that_repoints_the_previous_version(
    root: Path,
) -> None:
    """A pylance append through the namespace: one ``__manifest`` commit, the commit point (the row, pointing at
    the staged manifest), which carries the repoint of the version this instance committed before (a Lance
    Update replacing that row's one-row fragment, not a merge-insert joining against every row). The new row
    points at its staged manifest until the next insert, and is answered final all the same, by this process
    and by another one (which finishes it: seed 003's reader); nothing else changed."""
    ns, table_id = _table_with_versions(root, managed=True, count=3)
    manifest = lance.dataset(str(root / "__manifest"))
    before, rows_before = manifest.version, manifest.count_rows()
    lance.write_dataset(rows(1, 50), namespace_client=ns, table_id=table_id, mode="append")
    manifest = lance.dataset(str(root / "__manifest"))
    assert manifest.version == before + 1
    assert type(manifest.read_transaction(before + 1).operation).__name__ == "Update"
    assert manifest.count_rows() == rows_before + 1
    pending = [oid for oid, meta in version_rows(ns).items() if ".manifest-" in meta["manifest_path"]]
    assert pending == ["t$4"]  # only the new version's repoint waits (for the next insert)
    assert staged_files(location(ns, table_id)) == []
    final = location(ns, table_id) / "_versions" / manifest_name(4, "V2")
    for reader in (ns, make_ns(root, managed=True)):  # this process knows the copy; a new instance finds it
        latest = reader.describe_table_version(ln.DescribeTableVersionRequest(id=table_id)).version
        assert latest.version == 4 and latest.manifest_path == str(final).lstrip("/")
        assert latest.manifest_size == final.stat().st_size
    assert versions(ns, table_id) == [1, 2, 3, 4]
    assert lance.dataset(str(location(ns, table_id))).version == 4  # path-based readers: the copy is there


def test_a_process_that_exits_repoints_its_last_version(root: Path) -> None:
    """The deferred repoint of a process's last version is made when the process exits normally, so short-lived
    writers (a task, an executor) leave no pending row for readers of other processes to finish."""
    ns, table_id = _table_with_versions(root, managed=True, count=2)
    ns.finalize_pending_versions()
    assert run_child(append_and_exit, str(root), table_id) == 0
    assert {oid: ".manifest-" in meta["manifest_path"] for oid, meta in version_rows(make_ns(root, True)).items()} == {
        "t$1": False,
        "t$2": False,
        "t$3": False,
    }


def test_a_reader_that_may_not_write_answers_a_pending_version_and_tries_once(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another instance reads the writer's pending version (its repoint deferred): it finishes it; when it may
    not write (read-only credentials) it answers the final manifest all the same and does not try again."""
    _writer, table_id = _table_with_versions(root, managed=True, count=2)  # alive: its repoint stays deferred
    reader = make_ns(root, managed=True)
    tried: list[int] = []

    def refuse(rows: list, inserting: object = None) -> None:
        tried.append(len(rows))
        raise PermissionError("read-only credentials")

    monkeypatch.setattr(reader.manifest, "repoint", refuse)
    final = location(reader, table_id) / "_versions" / manifest_name(2, "V2")
    for _ in range(3):
        latest = reader.describe_table_version(ln.DescribeTableVersionRequest(id=table_id)).version
        assert (latest.version, latest.manifest_path) == (2, str(final).lstrip("/"))
    assert tried == [1]


def test_rows_in_large_fragments_are_repointed_with_a_deletion_vector(root: Path, monkeypatch) -> None:
    """A row whose fragment is too large to rewrite (a compaction merged it in) is taken out of it (a deletion
    vector, or the fragment removed when it held only that row) and written again: still one Lance Update."""
    from airflow_provider_lance.namespace import manifest as manifest_module

    monkeypatch.setattr(manifest_module, "SMALL_FRAGMENT_ROWS", 0)
    ns, table_id = _table_with_versions(root, managed=True, count=3)
    ns.finalize_pending_versions()  # the latest version's deferred repoint, made now
    manifest = lance.dataset(str(root / "__manifest"))
    assert type(manifest.read_transaction(manifest.version).operation).__name__ == "Update"
    assert versions(ns, table_id) == [1, 2, 3]
    assert all(".manifest-" not in meta["manifest_path"] for meta in version_rows(ns).values())
    assert sorted(version_rows(ns)) == ["t$1", "t$2", "t$3"]  # each row once
    assert lance.dataset(str(location(ns, table_id))).version == 3


def test_describe_answers_the_schema_of_the_version_its_row_names(root: Path) -> None:
    """DescribeTable remembers a managed version's schema by its row: a version deleted and committed again
    with other columns is described with the new ones, in the same process and in a new one."""
    ns, table_id = _table_with_versions(root, managed=True, count=2)
    describe = ln.DescribeTableRequest(id=table_id)
    assert [f.name for f in ns.describe_table(describe).var_schema.fields] == ["id", "name"]
    assert [f.name for f in ns.describe_table(describe).var_schema.fields] == ["id", "name"]  # remembered
    assert _delete(ns, table_id, [(2, 3)]) == 1
    other = pa.table({"other": pa.array([1, 2], pa.int32())})
    assert lance.write_dataset(other, namespace_client=ns, table_id=table_id, mode="overwrite").version == 2
    for namespace in (ns, make_ns(root, managed=True)):
        described = namespace.describe_table(describe)
        assert described.version == 2
        assert [f.name for f in described.var_schema.fields] == ["other"]


def test_a_page_of_file_versions_and_managed_rows_describes_rows_from_their_rows(root: Path) -> None:
    """Versions from before management (files only) and managed commits (rows) on one page: the rows win, with
    the metadata their commits gave (a page with several file-only versions reads one detailed listing)."""
    _, table_id = _table_with_versions(root, managed=False, count=3)  # versions 1-3: files only
    managed = make_ns(root, managed=True)
    for version in (4, 5):
        entry = stage(managed, {tuple(table_id): rows(1, 10 * version)})[0]
        entry.metadata = {"run": f"r{version}"}
        batch(managed, [entry])
    listed = managed.list_table_versions(ln.ListTableVersionsRequest(id=table_id, limit=4, descending=True)).versions
    assert [v.version for v in listed] == [5, 4, 3, 2]
    assert [v.metadata for v in listed] == [{"run": "r5"}, {"run": "r4"}, None, None]
    assert all(v.manifest_path.endswith(manifest_name(v.version, "V2")) and v.manifest_size for v in listed)


@pytest.mark.parametrize("outside", [2, versions_module.NEWER_PROBES + 3], ids=["a-few", "more-than-probed"])
def test_versions_written_round_the_namespace_after_complete_rows_are_listed(root: Path, outside: int) -> None:
    """Rows for every version from 1 to 3 (managed commits): files written after them by pylance going round the
    namespace are found (one stat each, a listing past NEWER_PROBES), in pages, the latest and DescribeTable."""
    ns, table_id = _table_with_versions(root, managed=True, count=3)
    for i in range(outside):
        lance.write_dataset(rows(1, 100 + i), str(location(ns, table_id)), mode="append")
    latest = 3 + outside
    assert versions(ns, table_id, descending=True)[:4] == list(range(latest, latest - 4, -1))
    page = ns.list_table_versions(ln.ListTableVersionsRequest(id=table_id, limit=2, page_token=str(latest)))
    assert page.versions == [] and page.page_token is None
    page = ns.list_table_versions(ln.ListTableVersionsRequest(id=table_id, descending=True, limit=2, page_token="4"))
    assert [v.version for v in page.versions] == [3, 2] and page.page_token == "2"
    described = ns.describe_table_version(ln.DescribeTableVersionRequest(id=table_id)).version
    assert described.version == latest and described.manifest_path.endswith(manifest_name(latest, "V2"))
    assert ns.describe_table(ln.DescribeTableRequest(id=table_id)).version == latest
