"""The ``__manifest`` table (seed 000, V2): a Lance table with one row per namespace, table and table version.

Reads scan the latest version. Inserts check their ids against the version they commit on top of and commit
as exactly its next version (fragments.py): of concurrent inserts of one id, one wins and the others find it on
their retry. Replacements are pylance merge-inserts keyed on ``object_id``; deletes are pylance deletes.
Inserts, upserts and deletes that threads make at the same time are committed together (group_commit.py). The
table is created on the first write, never by a read, so read-only credentials can list and describe.
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import lance
from lance.commit import CommitConflictError
from lance_namespace import ConcurrentModificationError

from airflow_provider_lance.namespace import feature_flags, maintenance
from airflow_provider_lance.namespace.config import MaintenancePolicy
from airflow_provider_lance.namespace.group_commit import DELETE, INSERT, UPSERT, DuplicateObjectError, commit_group
from airflow_provider_lance.namespace.identifiers import MANIFEST_DIR
from airflow_provider_lance.namespace.manifest_rows import (
    NO_VERSIONS,
    SCHEMA,
    ManifestRow,
    RowSelection,
    VersionLine,
    rows_table,
)
from airflow_provider_lance.namespace.row_index import RowIndex
from airflow_provider_lance.namespace.snapshots import COLUMNS, Snapshot, SnapshotStore
from airflow_provider_lance.namespace.storage import Storage, is_lost_response
from airflow_provider_lance.namespace.tuning import COMMIT_BACKOFF_SECONDS, MERGE_INSERT_RETRIES
from airflow_provider_lance.namespace.writers_turn import Request, WritersTurn

_CONFLICT_MARKERS = ("commit conflict", "incompatible with concurrent", "too many concurrent writers")
_T = TypeVar("_T")
_MATCHED_ROW = re.compile(r'found matching row with key values: object_id = "((?:[^"\\]|\\.)*)"')


class ManifestTable:
    """Reads and writes of ``<root>/__manifest``, safe for many threads on one instance.

    Every operation works on one snapshot (see snapshots.py), checked out at its first read. A write commits
    on a private copy of the dataset and publishes the result. A commit that conflicts with another writer's
    (pylance rebases what it can; an Overwrite by the reference's copy-on-write rewrite it cannot) is retried
    on the new latest version up to ``commit_retries`` times: the write's intent is re-applied there, so a
    true conflict (the same object id) still fails as a duplicate, and only contention that outlasts the
    retries becomes ConcurrentModification.

    :param storage: the namespace storage (for the table URI and storage options).
    :param commit_retries: how often a conflicting commit is retried.
    :param maintenance_policy: when a commit triggers compaction and clean-up.
    :param snapshots: the published snapshots, with where a new process finds rows (remote catalogs).
    """

    def __init__(
        self,
        storage: Storage,
        commit_retries: int,
        maintenance_policy: MaintenancePolicy | None = None,
        snapshots: SnapshotStore | None = None,
    ) -> None:
        self.uri = storage.uri(MANIFEST_DIR)
        self.storage_options = storage.options
        self.storage = storage
        self.commit_retries = commit_retries
        self.maintenance_policy = maintenance_policy or MaintenancePolicy()
        self._snapshots = snapshots or SnapshotStore(storage, storage.options)
        self._scope = threading.local()  # per thread: the operation's snapshot
        self._last_published: Snapshot | None = None  # by a commit of this instance
        # writer processes of this machine take turns too (memory:// is private to this instance); the rows of
        # a commit are stored once the turn is released
        machine_key = None if storage.private else storage.catalog_key
        self._writers = WritersTurn(self._commit_group, machine_key, self._snapshots.store_rows)

    @contextmanager
    def operation(self) -> Iterator[None]:
        """One namespace operation: the latest version is checked out once, at its first read (not at every
        read of the operation); its own writes move it forward."""
        depth = getattr(self._scope, "depth", 0)
        self._scope.depth = depth + 1
        if depth == 0:
            self._scope.snapshot = None
        try:
            yield
        finally:
            self._scope.depth = depth

    # -- opening ----------------------------------------------------------------------------------------
    def _snapshot(self) -> Snapshot | None:
        """The operation's snapshot (checked out now when the operation has none yet). Refuses catalogs with
        reader features this engine does not know."""
        in_operation = getattr(self._scope, "depth", 0) > 0
        snapshot = getattr(self._scope, "snapshot", None) if in_operation else None
        if snapshot is None:
            snapshot = self._snapshots.latest()
            if in_operation:
                self._scope.snapshot = snapshot
        if snapshot is not None:
            feature_flags.check_readable(snapshot.metadata)
        return snapshot

    def latest(self) -> lance.LanceDataset | None:
        """The latest version's dataset (read-only: never mutate it), or None if the catalog has no
        ``__manifest`` yet."""
        snapshot = self._snapshot()
        return snapshot.dataset if snapshot is not None else None

    def _create(self) -> Snapshot:
        """Create the empty table as version 1, exclusively. ``write_dataset(mode="create")`` is not: a
        creator that loses the race for version 1 retries as an *Overwrite* at the next version, which would
        erase rows committed in between (measured: two "successful" creates of one table). A commit with no
        retries either writes version 1 or fails, and a failure whose table now exists means another writer
        created it first. (pylance 14 commits an empty Overwrite as data storage version 2.2.)"""
        try:
            dataset = lance.LanceDataset.commit(
                self.uri,
                lance.LanceOperation.Overwrite(SCHEMA, []),
                max_retries=0,
                enable_v2_manifest_paths=True,
                storage_options=self.storage_options or None,
            )
        except (ValueError, OSError):
            snapshot = self._snapshots.latest()  # a concurrent writer created it first
            if snapshot is None:
                raise
            return snapshot
        return self._publish(Snapshot.of(dataset, check=self._snapshots.check))

    def _publish(self, snapshot: Snapshot) -> Snapshot:
        self._snapshots.committed(snapshot)
        self._scope.published = self._last_published = snapshot
        if getattr(self._scope, "depth", 0):
            self._scope.snapshot = snapshot
        return snapshot

    # -- reads ------------------------------------------------------------------------------------------
    def metadata(self) -> dict[str, str]:
        snapshot = self._snapshot()
        return dict(snapshot.metadata) if snapshot is not None else {}

    def _index(self, ordered: bool = False) -> RowIndex | None:
        """Every row of the operation's snapshot, indexed by object id (read once per version); ``ordered``:
        the caller walks ids in order."""
        snapshot = self._snapshot()
        return snapshot.index(ordered) if snapshot is not None else None

    def query(self, where: str | None = None) -> list[ManifestRow]:
        """Rows matching a Lance SQL filter (all rows without one)."""
        dataset = self.latest()
        if dataset is None:
            return []
        table = dataset.to_table(columns=COLUMNS, filter=where)
        return [ManifestRow.from_arrow(row) for row in table.to_pylist()]

    def get(self, object_id: str) -> ManifestRow | None:
        return self.get_many([object_id]).get(object_id)

    def get_many(self, object_ids: Iterable[str]) -> dict[str, ManifestRow]:
        snapshot = self._snapshot()
        found = snapshot.rows_by_id(list(dict.fromkeys(object_ids))) if snapshot is not None else {}
        return {oid: ManifestRow.from_arrow(row) for oid, row in found.items()}

    def children(self, prefix: str, object_type: str | None = None) -> list[ManifestRow]:
        """Rows whose object id starts with ``prefix`` (all descendants, not only direct children)."""
        index = self._index()
        rows = index.descendants(prefix, object_type).to_pylist() if index is not None else []
        return [ManifestRow.from_arrow(row) for row in rows]

    def has_children(self, prefix: str) -> bool:
        """Whether any object id starts with ``prefix``."""
        index = self._index()
        return index is not None and index.has_descendants(prefix)

    def child_names(self, prefix: str, object_type: str, after: str | None = None) -> Iterator[str]:
        """Names of the ``object_type`` rows one level below ``prefix``, in byte order, after ``after``
        (lazy: see ``RowIndex.child_names``)."""
        index = self._index(ordered=True)
        return index.child_names(prefix, object_type, after) if index is not None else iter(())

    def location_overlap(self, location: str) -> tuple[str, str] | None:
        """A table whose location is ``location``, lies around or inside it: (its location, its object id)."""
        index = self._index()
        return index.location_overlap(location) if index is not None else None

    def children_of(self, parents: Iterable[str], object_type: str) -> dict[str, list[ManifestRow]]:
        """For each parent id, its rows of ``object_type`` one level below (``<parent>$<name>``)."""
        index = self._index()
        found = index.children_of(parents, object_type) if index is not None else {parent: [] for parent in parents}
        return {parent: [ManifestRow.from_arrow(row) for row in rows] for parent, rows in found.items()}

    def version_line(self, table_oid: str) -> VersionLine:
        """The ``table_version`` rows of one table (``RowIndex.version_line``)."""
        index = self._index()
        return index.version_line(table_oid) if index is not None else NO_VERSIONS

    def has_staged(self, table_oid: str) -> bool:
        """Whether a ``table_version`` row of the table may still point at a staged manifest
        (``RowIndex.has_staged``)."""
        index = self._index()
        return index is not None and index.has_staged(table_oid)

    def child_ids(self, prefix: str, object_type: str | None = None) -> list[str]:
        """The object ids of :meth:`children` (no row objects: cheap for long listings)."""
        index = self._index()
        return index.descendants(prefix, object_type)["object_id"].to_pylist() if index is not None else []

    # -- writes -----------------------------------------------------------------------------------------
    def insert(self, rows: list[ManifestRow], replacing: str | None = None) -> None:
        """Insert all rows in one commit; DuplicateObjectError (nothing written) if any id exists.
        ``replacing``: a filter of rows deleted in the same commit (a rename, BatchCommitTables).

        A plain insert joins the group commit of this instance (group_commit.py): it lands together with the
        inserts other threads make at the same time, as one guarded append, and still fails alone if one of
        its ids exists. An insert that also deletes is a pylance merge-insert keyed on ``object_id``, committed
        on its own."""
        data = rows_table(rows)
        ids = data["object_id"].to_pylist()
        duplicate = next((oid for oid, count in Counter(ids).items() if count > 1), None)
        if duplicate is not None:
            raise DuplicateObjectError(duplicate)
        if replacing is None:
            self._submit(Request(INSERT, rows=data))
            return

        def write(snapshot: Snapshot, dataset: lance.LanceDataset) -> tuple[lance.LanceDataset, None]:
            builder = dataset.merge_insert("object_id").when_matched_fail().when_not_matched_insert_all()
            builder.when_not_matched_by_source_delete(replacing).conflict_retries(MERGE_INSERT_RETRIES).execute(data)
            return dataset, None

        try:
            self.commit(write)
        except OSError as error:
            match = _MATCHED_ROW.search(str(error))
            if match:
                raise DuplicateObjectError(match.group(1)) from None
            raise

    def insert_each(self, rows: list[ManifestRow]) -> list[BaseException | None]:
        """Each row as an insert of its own, all queued at once so that they share a group commit (what many
        threads' :meth:`insert` calls do, from one thread); each one's error (None: inserted)."""
        requests = [Request(INSERT, rows=rows_table([row])) for row in rows]
        self._answer(requests)
        return [request.error for request in requests]

    def _submit(self, request: Request) -> Any:
        """A write through the group commit: its own answer."""
        self._answer([request])
        if request.error is not None:
            raise request.error
        return request.result

    def _answer(self, requests: list[Request]) -> None:
        """Queue ``requests`` in the group commit until each is answered; the operation goes on at the version
        that answered the last (its own writes included)."""
        self._writers.group.submit_many(requests)
        if requests and requests[-1].snapshot is not None and getattr(self._scope, "depth", 0):
            self._scope.snapshot = requests[-1].snapshot

    def _commit_group(self, group: list[Request]) -> None:
        """Commit a group of inserts, upserts or deletes (group_commit.py) as one ``__manifest`` commit."""
        self._scope.published = None
        snapshot = self._snapshot() if group[0].kind == INSERT else None
        seen = commit_group(group, self.commit, self.storage, self.commit_retries, snapshot, self.maintenance_policy)
        for request in group:  # the version that answered them: the commit's, or the one found to hold a duplicate
            request.snapshot = getattr(self._scope, "published", None) or seen

    def replace_table(self, table_oid: str, rows: list[ManifestRow]) -> None:
        """Insert ``rows`` and delete the table's row and ``table_version`` rows in one commit (a rename);
        DuplicateObjectError (nothing written) if any new id exists."""
        self.insert(rows, replacing=RowSelection.table_and_versions(table_oid).sql())

    def upsert(self, rows: list[ManifestRow]) -> None:
        """Replace rows by id (used to repoint ``table_version`` rows at finalized manifests), in the group
        commit of this instance."""
        self._submit(Request(UPSERT, rows=rows_table(rows)))

    def delete(self, selection: RowSelection | str) -> int:
        """Delete the selected rows in one commit; returns how many were deleted. A :class:`RowSelection` joins
        the group commit of this instance (group_commit.py) and counts only the rows no earlier delete of its
        group removed; a Lance SQL filter is committed alone."""
        if self._snapshot() is None:
            return 0
        if isinstance(selection, RowSelection):
            return int(self._submit(Request(DELETE, selection=selection)))

        def write(snapshot: Snapshot, dataset: lance.LanceDataset) -> tuple[lance.LanceDataset, Any]:
            return dataset, dataset.delete(selection, conflict_retries=self.commit_retries)

        result = self.commit(write)
        return int(result.get("num_deleted_rows", 0)) if isinstance(result, dict) else 0

    def delete_object(self, object_id: str, object_type: str) -> int:
        """Delete one object's row; returns 1, or 0 when it was not there."""
        return self.delete(RowSelection((object_id,), object_type=object_type))

    def delete_table(self, table_oid: str) -> int:
        """Delete a table row and all of its ``table_version`` rows in one commit; returns how many."""
        return self.delete(RowSelection.table_and_versions(table_oid))

    def delete_table_versions(self, table_oid: str, versions: Iterable[int] | None = None) -> int:
        """Delete ``table_version`` rows of a table (all of them when ``versions`` is None) in one commit."""
        selection = RowSelection.versions(table_oid, None if versions is None else tuple(versions))
        return 0 if versions is not None and not selection.ids else self.delete(selection)

    def update_metadata(self, values: dict[str, str]) -> None:
        """Merge keys into the table metadata (feature flags, table version management)."""
        self.commit(lambda snapshot, dataset: (dataset, dataset.update_metadata(values)), lambda index: index)

    def commit(
        self,
        write: Callable[[Snapshot, lance.LanceDataset], tuple[lance.LanceDataset, _T]],
        change: Callable[[RowIndex], RowIndex] | None = None,
        maintain: bool = True,
        retries: int | None = None,
    ) -> _T:
        """The one place every ``__manifest`` write passes: ``write`` commits on a private copy of the latest
        snapshot and returns the committed dataset (and its result), which is published. A conflicting commit
        is retried on the new latest version.
        ``change``: how the commit changed the rows, applied to the indexed rows when the commit is exactly the
        next version (no other writer in between) instead of scanning and indexing the table again. Maintenance
        (compaction, clean-up of old versions) runs when a commit crosses its threshold, unless ``maintain`` is
        false; ``retries``: how often a conflict is retried (default: ``commit_retries``).

        Threads of this instance take turns (they would only conflict with each other); a thread starts from
        the snapshot this instance published last when that is newer than the one its operation checked out,
        and from the latest version after another process of the machine held the turn."""
        with self._writers.hold() as another_process:
            mine, last = getattr(self._scope, "snapshot", None), self._last_published
            if another_process:
                self._scope.snapshot = None
            elif _newer(last, mine):
                self._scope.snapshot = last
            return self._commit_attempts(write, change, maintain, retries)

    def _commit_attempts(
        self,
        write: Callable[[Snapshot, lance.LanceDataset], tuple[lance.LanceDataset, _T]],
        change: Callable[[RowIndex], RowIndex] | None,
        maintain: bool,
        retries: int | None,
    ) -> _T:
        retries = self.commit_retries if retries is None else retries
        for attempt in range(retries + 1):
            snapshot = self._snapshot() or self._create()
            feature_flags.check_writable(snapshot.metadata)
            try:
                dataset, result = write(snapshot, snapshot.private())
            except (OSError, ValueError, RuntimeError) as error:
                self._scope.snapshot = None  # the next read must see the winning writer's rows
                if not _is_commit_conflict(error):
                    raise
                if attempt == retries:
                    raise ConcurrentModificationError(
                        f"__manifest commit still conflicting after {retries} retries: {error}"
                    ) from error
                if attempt:
                    # back off, de-synchronised
                    time.sleep(random.uniform(0, COMMIT_BACKOFF_SECONDS * 2 ** min(attempt, 5)))
                continue
            published = Snapshot.of(dataset, check=self._snapshots.check).follows(snapshot, change)
            self._publish(published)
            if maintain:
                maintenance.maybe_maintain(self, published.version, self.maintenance_policy)
            return result
        raise AssertionError("unreachable")


def _newer(last: Snapshot | None, mine: Snapshot | None) -> bool:
    """Whether this instance's last commit is newer than the operation's snapshot: a higher version, published
    after that snapshot was read (a catalog re-created since then restarts its versions)."""
    return (
        mine is not None and last is not None and last.version > mine.version and last.verified_at >= mine.verified_at
    )


def _is_commit_conflict(error: BaseException) -> bool:
    """Whether a Lance commit failed only because another writer committed first, or its response was lost (the
    next attempt finds it landed, as ``write`` recognises its own, or not): safe to re-apply."""
    if isinstance(error, CommitConflictError) or is_lost_response(error):
        return True
    text = str(error).lower()
    return any(marker in text for marker in _CONFLICT_MARKERS)
