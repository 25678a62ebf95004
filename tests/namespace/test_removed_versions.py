"""Versions storage no longer has are never answered (issue 37): after anyone removes manifests (pylance's
clean-up around the namespace, a lifecycle rule), a managed catalog stops listing and describing them, removes
their rows, and goes back to reading versions by point once its rows follow each other again."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import lance
import lance_namespace as ln
import pyarrow as pa
import pytest

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.namespace.storage import Storage
from airflow_provider_lance.page.catalog import CatalogReader
from tests.namespace.conftest import do

TABLE = ["s", "t"]


def _versions(ns: DirectoryNamespace) -> list[int]:
    return [version.version for version in do(ns, "list_table_versions", id=TABLE).versions]


def _rows(ns: DirectoryNamespace) -> list[int]:
    rows = ns.manifest.query("object_type = 'table_version'")
    return sorted(int(row.object_id.rpartition("$")[2]) for row in rows)


@pytest.fixture
def managed(tmp_path: Path) -> Iterator[tuple[DirectoryNamespace, str]]:
    """Our engine, managed, with ``s.t`` at version 6 (one row per version); its location."""
    ns = DirectoryNamespace(root=str(tmp_path), table_version_management="true")
    do(ns, "create_namespace", id=["s"])
    for version in range(1, 7):
        data = pa.table({"x": [version]})
        lance.write_dataset(data, namespace_client=ns, table_id=TABLE, mode="create" if version == 1 else "append")
    yield ns, do(ns, "describe_table", id=TABLE).location


def _listings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The keys of every names-only listing the engine makes from now on."""
    seen: list[str] = []
    original = Storage.list_names

    def counted(self: Storage, key: str = "") -> list[str]:
        seen.append(key)
        return original(self, key)

    monkeypatch.setattr(Storage, "list_names", counted)
    return seen


def test_a_clean_up_around_the_namespace_is_seen_and_its_rows_removed(managed, monkeypatch) -> None:
    ns, location = managed
    assert _versions(ns) == [1, 2, 3, 4, 5, 6] == _rows(ns)
    assert do(ns, "describe_table", id=TABLE, version=2).version == 2  # its schema is remembered
    lance.dataset(location).cleanup_old_versions(older_than=timedelta(0))  # by path: the namespace is not told
    with pytest.raises(ln.TableVersionNotFoundError):
        do(ns, "describe_table", id=TABLE, version=2)
    assert do(ns, "describe_table_version", id=TABLE, version=6).version.version == 6
    with pytest.raises(ln.TableVersionNotFoundError):
        do(ns, "describe_table_version", id=TABLE, version=3)
    assert _versions(ns) == [6] == _rows(ns)  # the stale rows went in the same call
    with pytest.raises(ln.TableVersionNotFoundError):
        do(ns, "table_exists", id=TABLE, version=2)
    with pytest.raises(ln.TableVersionNotFoundError):
        do(ns, "describe_table", id=TABLE, version=2)
    assert do(ns, "describe_table", id=TABLE).version == 6
    # Rows that follow each other again: versions are read by point, with no listing of ``_versions/``.
    listings = _listings(monkeypatch)
    assert _versions(ns) == [6]
    assert do(ns, "describe_table_version", id=TABLE, version=6).version.version == 6
    assert not [key for key in listings if key.endswith("_versions")]
    # The line goes on: a new version through the namespace, and one written round it by path.
    lance.write_dataset(pa.table({"x": [7]}), namespace_client=ns, table_id=TABLE, mode="append")
    lance.write_dataset(pa.table({"x": [8]}), location, mode="append")
    assert _versions(ns) == [6, 7, 8]
    assert _rows(ns) == [6, 7]


def test_a_hole_in_the_line_is_answered_from_what_storage_has(managed) -> None:
    """pylance's clean-up of chosen versions (or one that keeps a tagged version) leaves a hole: those versions
    go from every answer, the others stay, and the page's history shows what storage has."""
    ns, location = managed
    lance.dataset(location).cleanup_old_versions(versions=[2, 4])
    assert do(ns, "describe_table_version", id=TABLE, version=3).version.version == 3
    with pytest.raises(ln.TableVersionNotFoundError):
        do(ns, "describe_table_version", id=TABLE, version=4)
    assert _versions(ns) == [1, 3, 5, 6] == _rows(ns)
    page = do(ns, "list_table_versions", id=TABLE, descending=True, limit=2)
    assert [version.version for version in page.versions] == [6, 5]
    rest = do(ns, "list_table_versions", id=TABLE, descending=True, limit=2, page_token=page.page_token)
    assert [version.version for version in rest.versions] == [3, 1]
    history, _ = CatalogReader(ns).history(TABLE, None)
    assert [row.version for row in history] == [6, 5, 3, 1]
    for version in _versions(ns):
        assert lance.dataset(namespace_client=ns, table_id=TABLE, version=version).count_rows() == version


def test_a_reader_without_write_access_ignores_the_removed_versions(managed, monkeypatch) -> None:
    """When the rows cannot be removed (read-only credentials), the versions are still not answered."""
    ns, location = managed
    lance.dataset(location).cleanup_old_versions(versions=[3])

    def refuse(*args: object, **kwargs: object) -> int:
        raise PermissionError("read-only credentials")

    monkeypatch.setattr(type(ns.manifest), "delete_versions", refuse)
    assert _versions(ns) == [1, 2, 4, 5, 6]
    assert _rows(ns) == [1, 2, 3, 4, 5, 6]
    with pytest.raises(ln.TableVersionNotFoundError):
        do(ns, "describe_table_version", id=TABLE, version=3)
    monkeypatch.undo()
    assert _versions(ns) == [1, 2, 4, 5, 6] == _rows(ns)


def test_batch_delete_after_a_clean_up_skips_what_the_clean_up_removed(managed) -> None:
    """Versions below the oldest one storage has were cleaned up: a range over them deletes what is left (an
    earlier attempt that failed part-way is retried the same way); a hole above the oldest is still missing."""
    ns, location = managed
    lance.dataset(location).cleanup_old_versions(versions=[1, 2, 4])
    ranges = [{"start_version": 1, "end_version": 4}]
    assert do(ns, "batch_delete_table_versions", id=TABLE, ranges=ranges).deleted_count == 1  # version 3
    assert _versions(ns) == [5, 6] == _rows(ns)
    lance.write_dataset(pa.table({"x": [7]}), namespace_client=ns, table_id=TABLE, mode="append")
    lance.dataset(location).cleanup_old_versions(versions=[6])
    with pytest.raises(ln.TableVersionNotFoundError):
        do(ns, "batch_delete_table_versions", id=TABLE, ranges=[{"start_version": 5, "end_version": 7}])
    assert _versions(ns) == [5, 7]


def test_clean_ups_and_reads_during_commits_lose_no_version(tmp_path: Path) -> None:
    """Commits through one instance while pylance cleans the table up by path and another instance reads (and
    forgets removed versions): no committed version loses its row, every listed version opens, the rows are
    exactly the versions storage has."""
    import threading

    writer = DirectoryNamespace(root=str(tmp_path), table_version_management="true")
    reader = DirectoryNamespace(root=str(tmp_path), table_version_management="true")
    do(writer, "create_namespace", id=["s"])
    lance.write_dataset(pa.table({"x": [0]}), namespace_client=writer, table_id=TABLE, mode="create")
    location = do(writer, "describe_table", id=TABLE).location
    done = threading.Event()
    errors: list[BaseException] = []

    def commits() -> None:
        try:
            for i in range(1, 16):
                lance.write_dataset(pa.table({"x": [i]}), namespace_client=writer, table_id=TABLE, mode="append")
        except BaseException as error:
            errors.append(error)
        finally:
            done.set()

    thread = threading.Thread(target=commits)
    thread.start()
    while not done.is_set():
        lance.dataset(location).cleanup_old_versions(older_than=timedelta(0))
        for version in _versions(reader):
            with contextlib.suppress(ln.TableVersionNotFoundError):  # cleaned up since the listing
                do(reader, "describe_table_version", id=TABLE, version=version)
    thread.join()
    assert not errors
    fresh = DirectoryNamespace(root=str(tmp_path), table_version_management="true")
    listed = _versions(fresh)
    assert listed[-1] == 16 and _rows(fresh) == listed
    for version in listed:
        assert lance.dataset(namespace_client=fresh, table_id=TABLE, version=version).count_rows() == version
    assert lance.dataset(location).version == 16


def test_a_branch_read_finishes_a_pending_main_line_commit_in_the_main_line(managed, monkeypatch) -> None:
    """A main-line commit that stopped after its row is finished by a DescribeTable of a branch too, into the
    main line's ``_versions/`` (never the branch's)."""
    from airflow_provider_lance.namespace import commit
    from airflow_provider_lance.namespace.version_lines import table_version_from

    ns, location = managed
    lance.dataset(namespace_client=ns, table_id=TABLE).create_branch("dev")
    stopped = lambda catalog, entries, rows: [  # noqa: E731 - the committer stops after the commit point
        table_version_from(entry.version, row.metadata or {}) for entry, row in zip(entries, rows, strict=True)
    ]
    monkeypatch.setattr(commit, "finish_versions", stopped)
    lance.write_dataset(pa.table({"x": [7]}), namespace_client=ns, table_id=TABLE, mode="append")
    monkeypatch.undo()
    branch_files = sorted(
        path.name for path in (Path(location.removeprefix("file://")) / "tree/dev/_versions").iterdir()
    )
    assert do(ns, "describe_table", id=TABLE, branch="dev").version == 6
    after = sorted(path.name for path in (Path(location.removeprefix("file://")) / "tree/dev/_versions").iterdir())
    assert after == branch_files
    assert lance.dataset(location).version == 7  # finished in the main line
