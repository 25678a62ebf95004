"""The change feed (namespace/changes.py): every ``__manifest`` commit after a cursor, once, in commit order."""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path

import lance_namespace as ln
import pytest
from lance.namespace import DirectoryNamespace as ReferenceNamespace

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.namespace import changes as feed
from airflow_provider_lance.namespace.changes import CursorExpiredError, Run
from airflow_provider_lance.namespace.maintenance import maintain_manifest
from tests.namespace.helpers_versions import batch, make_ns, rows, stage

RUN = {"airflow_run_id": "etl/manual__1", "airflow_run_key": "etl/manual__1/commit/-1"}


def _kinds(page: feed.ChangesPage) -> list[list[tuple[str, str, int | None]]]:
    return [[(e.kind, "$".join(e.id), e.version) for e in change.events] for change in page.changes]


def _commit(ns: DirectoryNamespace, tables: dict[tuple[str, ...], int], metadata: dict[str, str] | None = None) -> None:
    entries = stage(ns, {table: rows(n) for table, n in tables.items()})
    for entry in entries:
        entry.metadata = metadata
    batch(ns, entries)


def test_every_kind_of_change_once_in_commit_order(tmp_path: Path) -> None:
    ns = make_ns(tmp_path, managed=True)
    start = ns.changes()
    assert start.changes == [] and ns.changes(since=start.cursor).changes == []
    follower = DirectoryNamespace(root=str(tmp_path))  # polls after every commit (another process)
    followed: list[feed.Change] = []
    cursor = start.cursor

    def follow() -> None:
        nonlocal cursor
        page = follower.changes(since=cursor)
        followed.extend(page.changes)
        cursor = page.cursor

    operations = [
        lambda: ns.create_namespace(ln.CreateNamespaceRequest(id=["a"])),
        lambda: ns.declare_table(ln.DeclareTableRequest(id=["a", "t"])),
        lambda: ns.declare_table(ln.DeclareTableRequest(id=["a", "u"])),
        lambda: _commit(ns, {("a", "t"): 3, ("a", "u"): 2}, RUN),  # one batch: one change
        lambda: ns.rename_table(ln.RenameTableRequest(id=["a", "u"], new_table_name="v")),
        lambda: _commit(ns, {("a", "t"): 1}),
        lambda: ns.batch_delete_table_versions(  # ranges are half-open: version 1
            ln.BatchDeleteTableVersionsRequest(id=["a", "t"], ranges=[{"start_version": 1, "end_version": 2}])
        ),
        lambda: ns.deregister_table(ln.DeregisterTableRequest(id=["a", "v"])),
        lambda: ns.create_namespace(ln.CreateNamespaceRequest(id=["b"])),
        lambda: ns.drop_namespace(ln.DropNamespaceRequest(id=["b"])),
        lambda: ns.drop_table(ln.DropTableRequest(id=["a", "t"])),
    ]
    for operation in operations:
        operation()
        follow()
    expected = [
        [("namespace_created", "a", None)],
        [("table_declared", "a$t", None)],
        [("table_declared", "a$u", None)],
        [("version_created", "a$t", 1), ("version_created", "a$u", 1)],
        [("table_renamed", "a$v", None)],
        [("version_created", "a$t", 2)],
        [("version_deleted", "a$t", 1)],
        [("table_deregistered", "a$v", None)],
        [("namespace_created", "b", None)],
        [("namespace_dropped", "b", None)],
        [("table_dropped", "a$t", None)],
    ]
    assert _kinds(feed.ChangesPage(followed, cursor)) == expected
    # a consumer reading it all later sees the same commits; a table dropped since was declared or registered
    page = ns.changes(since=start.cursor)
    expected[1] = [("table_created", "a$t", None)]
    assert _kinds(page) == expected
    assert [c.to_dict() for c in page.changes[2:]] == [c.to_dict() for c in followed[2:]]
    batch_change = page.changes[3]
    assert batch_change.run == Run("etl", "manual__1", "commit")
    assert batch_change.tables() == [["a", "t"], ["a", "u"]]
    assert batch_change.events[0].metadata == RUN
    assert page.changes[4].events[0].previous_id == ["a", "u"]
    versions = [c.manifest_version for c in page.changes]
    assert versions == sorted(versions) and not page.more
    assert page.cursor == page.changes[-1].cursor
    assert ns.changes(since=page.cursor).changes == []  # nothing twice


def test_a_cursor_resumes_exactly_after_its_change_and_limit_pages(tmp_path: Path) -> None:
    ns = make_ns(tmp_path, managed=True)
    start = ns.changes().cursor
    for i in range(5):
        ns.create_namespace(ln.CreateNamespaceRequest(id=[f"n{i}"]))
    first = ns.changes(since=start, limit=2)
    assert _kinds(first) == [[("namespace_created", "n0", None)], [("namespace_created", "n1", None)]]
    assert first.more
    rest = ns.changes(since=first.cursor)
    assert [c.events[0].id for c in rest.changes] == [["n2"], ["n3"], ["n4"]]
    # another instance (another process) resumes from the same cursor: the cursor is the whole state
    other = DirectoryNamespace(root=str(tmp_path))
    assert [c.events[0].id for c in other.changes(since=first.changes[0].cursor).changes] == [
        [f"n{i}"] for i in (1, 2, 3, 4)
    ]


def test_a_cursor_before_the_first_commit_sees_the_catalog_created(tmp_path: Path) -> None:
    ns = make_ns(tmp_path, managed=False)
    start = ns.changes().cursor  # no __manifest yet
    ns.create_namespace(ln.CreateNamespaceRequest(id=["x"]))
    assert _kinds(ns.changes(since=start)) == [[("namespace_created", "x", None)]]


def test_compaction_and_repoints_are_no_change(tmp_path: Path) -> None:
    ns = make_ns(tmp_path, managed=True)
    ns.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    ns.declare_table(ln.DeclareTableRequest(id=["a", "t"]))
    start = ns.changes().cursor
    _commit(ns, {("a", "t"): 1})
    result = maintain_manifest(ns, cleanup=False)
    assert result.get("compacted")
    page = ns.changes(since=start)
    assert _kinds(page) == [[("version_created", "a$t", 1)]]  # the repoint and the compaction yield nothing
    assert page.cursor != page.changes[-1].cursor  # ... but the cursor moved past them


def test_a_cursor_older_than_the_kept_history_must_resynchronise(tmp_path: Path, monkeypatch) -> None:
    ns = make_ns(tmp_path, managed=False)
    ns.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    old = ns.changes().cursor
    for name in ("b", "c"):
        ns.create_namespace(ln.CreateNamespaceRequest(id=[name]))
    monkeypatch.setattr("airflow_provider_lance.namespace.maintenance.REVALIDATE_AFTER", timedelta(0))
    maintain_manifest(ns, compact=False, older_than=timedelta(0))
    with pytest.raises(CursorExpiredError, match="resynchronise") as raised:
        DirectoryNamespace(root=str(tmp_path)).changes(since=old)
    assert raised.value.code == ln.InvalidInputError("").code  # InvalidInput, marked ``resync``


def test_a_recreated_catalog_must_resynchronise(tmp_path: Path) -> None:
    ns = make_ns(tmp_path, managed=False)
    ns.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    ns.create_namespace(ln.CreateNamespaceRequest(id=["b"]))
    cursor = ns.changes().cursor
    shutil.rmtree(tmp_path / "__manifest")
    again = DirectoryNamespace(root=str(tmp_path))
    for name in ("x", "y", "z"):
        again.create_namespace(ln.CreateNamespaceRequest(id=[name]))
    with pytest.raises(CursorExpiredError):
        DirectoryNamespace(root=str(tmp_path)).changes(since=cursor)


@pytest.mark.parametrize("cursor", ["", "nonsense", "c1.!!!", "c1.bm90YW51bWJlcg"])
def test_a_cursor_not_from_the_feed_is_invalid_input(tmp_path: Path, cursor: str) -> None:
    with pytest.raises(ln.InvalidInputError, match="Invalid change cursor"):
        make_ns(tmp_path, managed=False).changes(since=cursor)


def test_the_feed_needs_the_manifest(tmp_path: Path) -> None:
    ns = DirectoryNamespace(root=str(tmp_path), manifest_enabled="false")
    with pytest.raises(ln.UnsupportedOperationError, match="manifest"):
        ns.changes()


def test_commits_of_the_reference_are_in_the_feed(tmp_path: Path) -> None:
    ours = make_ns(tmp_path, managed=False)
    ours.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    start = ours.changes().cursor
    reference = ReferenceNamespace(root=str(tmp_path))
    reference.create_namespace(ln.CreateNamespaceRequest(id=["ref"]))
    reference.declare_table(ln.DeclareTableRequest(id=["ref", "t"]))
    assert _kinds(ours.changes(since=start)) == [
        [("namespace_created", "ref", None)],
        [("table_declared", "ref$t", None)],
    ]


def test_back_answers_the_latest_changes_kept(tmp_path: Path, monkeypatch) -> None:
    ns = make_ns(tmp_path, managed=False)
    for name in ("a", "b", "c"):
        ns.create_namespace(ln.CreateNamespaceRequest(id=[name]))
    assert [c.events[0].id for c in ns.changes(back=2).changes] == [["b"], ["c"]]
    assert [c.events[0].id for c in ns.changes(back=100).changes] == [["a"], ["b"], ["c"]]
    monkeypatch.setattr("airflow_provider_lance.namespace.maintenance.REVALIDATE_AFTER", timedelta(0))
    maintain_manifest(ns, compact=False, older_than=timedelta(0))  # only the newest version is kept
    ns.create_namespace(ln.CreateNamespaceRequest(id=["d"]))
    fresh = DirectoryNamespace(root=str(tmp_path))
    assert [c.events[0].id for c in fresh.changes(back=100).changes] == [["d"]]
    with pytest.raises(ln.InvalidInputError, match="not both"):
        ns.changes(since=ns.changes().cursor, back=1)


def test_back_over_a_single_kept_version_answers_its_cursor(tmp_path: Path, monkeypatch) -> None:
    ns = make_ns(tmp_path, managed=False)
    ns.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    monkeypatch.setattr("airflow_provider_lance.namespace.maintenance.REVALIDATE_AFTER", timedelta(0))
    maintain_manifest(ns, compact=False, older_than=timedelta(0))
    page = DirectoryNamespace(root=str(tmp_path)).changes(back=5)
    assert page.changes == [] and page.cursor == ns.changes().cursor


def test_a_writers_temporary_file_in_the_versions_directory_is_no_version(tmp_path: Path) -> None:
    """A manifest being written (a temporary file that sorts before every V2 name) is not the newest version: an
    idle poll then must not take the catalog for empty (it answered resynchronise once, in the Airflow test)."""
    ns = make_ns(tmp_path, managed=False)
    ns.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    cursor = ns.changes().cursor
    (tmp_path / "__manifest" / "_versions" / ".tmp_manifest_being_written").write_bytes(b"")
    assert ns.changes(since=cursor).changes == []
    ns.create_namespace(ln.CreateNamespaceRequest(id=["b"]))
    assert _kinds(ns.changes(since=cursor)) == [[("namespace_created", "b", None)]]
