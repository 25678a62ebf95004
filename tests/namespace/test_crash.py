"""Crash injection into the managed commit protocol (seed 003, "External Store Commit" / "External Store
Reader"): a spawned child dies with ``os._exit`` at one step of a commit (the engine's classes are patched in
the child only, see ``helpers_versions.install_crash``); a later reader through the namespace finishes the
commit. No commit is lost, none is duplicated, and no batch is half visible through the namespace."""

from __future__ import annotations

from pathlib import Path

import lance
import lance_namespace as ln
import pytest

from airflow_provider_lance.namespace.identifiers import manifest_name
from airflow_provider_lance.staging import entries_from_json, entries_to_json, read_entries
from tests.namespace.helpers_versions import (
    CRASH_EXIT_CODE,
    batch,
    crash_after_staging,
    crash_append,
    crash_batch,
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

pytestmark = pytest.mark.slow  # starts processes of its own

TABLES = (("prod", "a"), ("prod", "b"), ("prod", "c"))


def _setup(root: Path):
    ns = make_ns(root, managed=True)
    ns.create_namespace(ln.CreateNamespaceRequest(id=["prod"]))
    for i, table_id in enumerate(TABLES):
        lance.write_dataset(rows(10 + i), namespace_client=ns, table_id=list(table_id), mode="create")
    return ns


def _dir(root: Path, ns, table_id) -> Path:
    """The table directory from its ``__manifest`` row: unlike describe_table, this finalizes nothing."""
    return root / ns.manifest.get("$".join(table_id)).location


def _finalize_through(ns, reader: str) -> None:
    """The first call after the crash: any engine read touching the table, or the on-demand finalizer, must
    finish the commit."""
    if reader == "finalize_pending_versions":
        finished = ns.finalize_pending_versions()
        assert sorted(tuple(table_id) for table_id, version in finished if version == 2) == sorted(TABLES)
        return
    for table_id in TABLES:
        if reader == "table_exists":
            ns.table_exists(ln.TableExistsRequest(id=list(table_id)))
        elif reader == "count_table_rows":
            ns.count_table_rows(ln.CountTableRowsRequest(id=list(table_id)))
        elif reader == "describe_table_version":
            assert ns.describe_table_version(ln.DescribeTableVersionRequest(id=list(table_id))).version.version == 2
        elif reader == "list_table_versions":
            assert versions(ns, table_id) == [1, 2]
        else:
            assert read(ns, table_id).version == 2


def _assert_committed_once(ns, root: Path) -> None:
    for i, table_id in enumerate(TABLES):
        table_dir = location(ns, table_id)
        assert versions(ns, table_id) == [1, 2]
        assert read(ns, table_id).count_rows() == 15 + i
        assert staged_files(table_dir) == []
        final = table_dir / "_versions" / manifest_name(2, "V2")
        assert final.exists()
        assert lance.dataset(str(table_dir)).version == 2  # a reader without the namespace sees it too
        meta = version_rows(ns)[f"prod${table_id[1]}$2"]
        assert meta["manifest_path"] == str(final).lstrip("/")  # repointed at the final manifest
    assert sum(1 for oid in version_rows(ns) if oid.endswith("$2")) == 3


@pytest.mark.parametrize(
    "reader",
    [
        "describe_table_version",
        "list_table_versions",
        "lance_dataset",
        "table_exists",
        "count_table_rows",
        "finalize_pending_versions",
    ],
)
@pytest.mark.parametrize("point", ["after_row_insert", "after_copy", "before_repoint"])
def test_batch_crash_after_commit_point_is_finished_by_readers(root: Path, point: str, reader: str) -> None:
    ns = _setup(root)
    entries = stage(ns, {t: rows(5, 100) for t in TABLES})
    assert run_child(crash_batch, str(root), entries_to_json(entries), point) == CRASH_EXIT_CODE

    # The rows (the commit point) are there for all three tables; the object store lags behind.
    assert {f"prod${t[1]}$2" for t in TABLES} <= set(version_rows(ns))
    staged_left = [bool(staged_files(_dir(root, ns, t))) for t in TABLES]
    if point == "after_row_insert":
        assert staged_left == [True, True, True]
        for table_id in TABLES:  # not yet finalized: a reader without the namespace is one version behind
            assert lance.dataset(str(_dir(root, ns, table_id))).version == 1
    elif point == "after_copy":
        assert staged_left == [True, True, True]  # the first copy done, its staged file not yet deleted
        assert (_dir(root, ns, TABLES[0]) / "_versions" / manifest_name(2, "V2")).exists()
        assert not (_dir(root, ns, TABLES[1]) / "_versions" / manifest_name(2, "V2")).exists()
    else:
        assert staged_left == [False, False, False]
        assert all(not m["manifest_path"].endswith(manifest_name(2, "V2")) for m in _v2_rows(ns))

    _finalize_through(ns, reader)
    _assert_committed_once(ns, root)
    # A retry of the batch by the crashed committer finds the versions there: nothing is committed twice.
    with pytest.raises(ln.ConcurrentModificationError):
        batch(ns, entries_from_json(entries_to_json(entries)))
    _assert_committed_once(ns, root)
    # The tables keep working.
    lance.write_dataset(rows(1, 900), namespace_client=ns, table_id=["prod", "a"], mode="append")
    assert versions(ns, ["prod", "a"]) == [1, 2, 3]


def _v2_rows(ns) -> list[dict]:
    return [meta for oid, meta in version_rows(ns).items() if oid.endswith("$2")]


def test_crash_after_staging_commits_nothing_and_the_entries_still_commit(root: Path, tmp_path: Path) -> None:
    ns = _setup(root)
    entries_file = tmp_path / "entries.json"
    table_ids = [list(t) for t in TABLES]
    assert run_child(crash_after_staging, str(root), table_ids, str(entries_file)) == CRASH_EXIT_CODE

    for i, table_id in enumerate(TABLES):  # staged only: invisible everywhere, no rows
        assert versions(ns, table_id) == [1]
        assert read(ns, table_id).count_rows() == 10 + i
        assert staged_files(location(ns, table_id))
    assert not any(oid.endswith("$2") for oid in version_rows(ns))

    batch(ns, read_entries(entries_file))  # the staged work is not lost: another process commits it
    _assert_committed_once(ns, root)


@pytest.mark.parametrize("point", ["after_row_insert", "after_copy", "before_repoint"])
def test_pylance_append_crash_is_finished_by_the_next_reader(root: Path, point: str) -> None:
    ns = make_ns(root, managed=True)
    lance.write_dataset(rows(3), namespace_client=ns, table_id=["t"], mode="create")
    assert run_child(crash_append, str(root), ["t"], point) == CRASH_EXIT_CODE

    ds = read(ns, ["t"])
    assert ds.version == 2
    assert sorted(ds.to_table()["id"].to_pylist()) == [0, 1, 2, 999]
    assert versions(ns, ["t"]) == [1, 2]
    assert staged_files(location(ns, ["t"])) == []
    # The next pylance append rebases on the finished version 2, nothing lost or duplicated.
    lance.write_dataset(rows(1, 1000), namespace_client=ns, table_id=["t"], mode="append")
    assert versions(ns, ["t"]) == [1, 2, 3]
    assert read(ns, ["t"]).count_rows() == 5
