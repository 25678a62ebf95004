"""The ``__manifest`` table (seed 000, V2): a Lance table with one row per namespace, table and table version.

Inserts check their ids against the version they commit on top of and commit as exactly its next version
(fragments.py): of concurrent inserts of one id, one wins and the others find it on their retry. Replacements
are merge-inserts keyed on ``object_id``. The table is created on the first write, never by a read, so
read-only credentials can list and describe.
"""

from __future__ import annotations

import atexit
import logging
import random
import re
import threading
import time
import weakref
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar, cast

import lance
import lance_namespace as ln
import pyarrow as pa
from lance.commit import CommitConflictError
from lance.fragment import FragmentMetadata

from airflow_provider_lance.namespace import feature_flags, fragments, maintenance
from airflow_provider_lance.namespace.config import MaintenancePolicy
from airflow_provider_lance.namespace.group_commit import (
    DELETE,
    INSERT,
    DuplicateObjectError,
    InsertGroup,
    commit_group,
)
from airflow_provider_lance.namespace.identifiers import DELIMITER, MANIFEST_DIR
from airflow_provider_lance.namespace.manifest_rows import (
    SCHEMA,
    ManifestRow,
    RowSelection,
    rows_table,
)
from airflow_provider_lance.namespace.row_index import RowIndex
from airflow_provider_lance.namespace.snapshots import COLUMNS, Snapshot, SnapshotStore
from airflow_provider_lance.namespace.storage import Storage
from airflow_provider_lance.namespace.storage_errors import is_lost_response
from airflow_provider_lance.namespace.tuning import COMMIT_BACKOFF_SECONDS, MERGE_INSERT_RETRIES, SMALL_FRAGMENT_ROWS
from airflow_provider_lance.namespace.writers_turn import Request, WritersTurn

log = logging.getLogger(__name__)

#: Instances holding deferred repoints, flushed when the process exits normally (a process killed leaves its
#: last versions pending, as after a crash before the repoint: every reader finishes them).
_DEFERRING: weakref.WeakSet[ManifestTable] = weakref.WeakSet()
_EXIT_HOOK = threading.Lock()  # held once the exit flush is registered


def flush_deferred_repoints() -> None:
    """Make the deferred repoints of every instance of this process now (what a normal exit does): for a
    process about to lose its store, a test session stopping its object-store server for one."""
    for table in list(_DEFERRING):
        try:
            table.flush_repoints()
        except Exception as error:  # the versions are committed; a reader finishes them
            log.warning("Deferred repoints of %s left to readers: %s", table.storage.root, error)


def _register_exit_flush() -> None:
    """Register :func:`flush_deferred_repoints` once, twice over: with ``threading``'s exit hooks, which a normal
    exit runs first, newest first (so before the thread pools s3fs and Lance use stop, and before ``atexit``
    closes the stores' clients, adlfs's; CPython has ``threading._register_atexit`` since 3.9, what
    ``concurrent.futures`` uses), and with ``atexit``, which Airflow's task process runs before its ``os._exit``
    (the functions registered after its fork). The second flush finds nothing left.
    tests/s3/test_s3_exit_flush.py fails loudly when the flush no longer runs in time."""
    if not _EXIT_HOOK.acquire(blocking=False):
        return
    getattr(threading, "_register_atexit", atexit.register)(flush_deferred_repoints)
    atexit.register(flush_deferred_repoints)


_CONFLICT_MARKERS = ("commit conflict", "incompatible with concurrent", "too many concurrent writers")
_T = TypeVar("_T")
_MATCHED_ROW = re.compile(r'found matching row with key values: object_id = "((?:[^"\\]|\\.)*)"')


class ManifestTable:
    """Reads and writes of ``<root>/__manifest``, safe for many threads on one instance. Every operation works
    on one snapshot (snapshots.py), checked out at its first read. A conflicting commit is retried on the new
    latest version up to ``commit_retries`` times with its intent re-applied, so a true conflict (the same
    object id) still fails as a duplicate and only contention that outlasts the retries is
    ConcurrentModification. ``maintenance_policy``: when a commit triggers compaction and clean-up.
    """

    def __init__(
        self, storage: Storage, commit_retries: int, maintenance_policy: MaintenancePolicy, snapshots: SnapshotStore
    ) -> None:
        self.uri = storage.uri(MANIFEST_DIR)
        self.storage_options = storage.options
        self.storage = storage
        self.commit_retries = commit_retries
        self.maintenance_policy = maintenance_policy
        self._snapshots = snapshots
        self._scope = threading.local()  # per thread: the operation's snapshot
        self._last_published: Snapshot | None = None  # by a commit of this instance
        # committed ``table_version`` rows whose manifests were copied to their final names, not yet repointed
        # (seed 003 step 4, folded into the next insert of this instance: :meth:`defer_repoint`)
        self._repoints: dict[str, tuple[dict[str, Any] | None, ManifestRow]] = {}  # id -> (staged meta, final row)
        self._repoints_lock = threading.Lock()
        # committed rows this instance finished reading but could not repoint: id -> (row's metadata, final
        # metadata); answered without a request while the row stays the same (:meth:`remember_copy`)
        self._copies: dict[str, tuple[dict[str, Any] | None, dict[str, Any]]] = {}
        # the data file the last repoint of this instance wrote -> its rows (the next repoint takes its row out
        # of that file without reading it: fragments.small_fragment_rows); written in the writers' turn
        self._written_rows: dict[str, pa.Table] = {}
        # writer processes of this machine take turns too (memory:// is private to this instance); the rows of
        # a commit are stored once the turn is released
        machine_key = None if storage.private else storage.catalog_key
        self._writers = WritersTurn(self._commit_group, machine_key, self._snapshots.store_rows)

    @contextmanager
    def operation(self) -> Iterator[None]:
        """One namespace operation: the latest version is checked out once, at its first read; its own writes
        move it forward."""
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
        """The operation's snapshot (checked out now if it has none). Refuses unknown reader features."""
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
        """Create the empty table as version 1, exclusively: ``write_dataset(mode="create")`` is not (a creator
        that loses the race retries as an *Overwrite*, erasing rows committed in between: measured, two
        "successful" creates of one table). A commit with no retries writes version 1 or fails."""
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

    def index(self, ordered: bool = False) -> RowIndex:
        """Every row of the operation's snapshot, indexed by object id (none without ``__manifest``);
        ``ordered``: the caller walks ids in order (``RowIndex.child_names``)."""
        snapshot = self._snapshot()
        return snapshot.index(ordered) if snapshot is not None else RowIndex.of(rows_table([]))

    def table_index(self, table_oid: str) -> RowIndex:
        """An index holding a table's ``table_version`` rows: the whole index, or while a new process reads a
        large ``__manifest`` version by point, the table's own rows (``Snapshot.index`` with ``below``)."""
        snapshot = self._snapshot()
        return snapshot.index(below=table_oid + DELIMITER) if snapshot is not None else RowIndex.of(rows_table([]))

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
        return [ManifestRow.from_arrow(row) for row in self.index().descendants(prefix, object_type).to_pylist()]

    # -- writes -----------------------------------------------------------------------------------------
    def insert(self, rows: list[ManifestRow], replacing: str | None = None, deferred: bool = False) -> None:
        """Insert all rows in one commit; DuplicateObjectError (nothing written) if any id exists. A plain insert
        joins the group commit of this instance (group_commit.py); ``replacing``, a filter of rows deleted in
        the same commit (a rename, BatchCommitTables), makes it a merge-insert committed on its own."""
        data = rows_table(rows)
        ids = data["object_id"].to_pylist()
        duplicate = next((oid for oid, count in Counter(ids).items() if count > 1), None)
        if duplicate is not None:
            raise DuplicateObjectError(duplicate)
        if replacing is None:
            with self._repoints_lock:
                riders = [row for _, row in self._repoints.values()] if deferred else []
            if riders:  # the deferred repoints ride on this commit (one commit, not two)
                self.repoint(riders, inserting=data)
                return
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

    def insert_each(self, rows: list[ManifestRow], parents: list[str]) -> list[BaseException | None]:
        """Each row as an insert of its own, queued at once to share a group commit; each one's error (None:
        inserted). ``parents``: each row's parent id ("" for the root), which its commit must find
        (MissingParentError)."""
        requests = [
            Request(INSERT, rows=rows_table([row]), parents=(parent,) if parent else ())
            for row, parent in zip(rows, parents, strict=True)
        ]
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
        that answered the last."""
        self._writers.group.submit_many(requests)
        if requests and requests[-1].snapshot is not None and getattr(self._scope, "depth", 0):
            self._scope.snapshot = requests[-1].snapshot

    def _commit_group(self, group: list[Request]) -> None:
        """Commit a group of inserts, upserts or deletes (group_commit.py) as one ``__manifest`` commit."""
        self._scope.published = None
        seen = commit_group(
            group, self.commit, self.storage, self.commit_retries, self.maintenance_policy, self._writers.offers
        )
        for request in group:  # the version that answered them: the commit's, or the one found to hold a duplicate
            request.snapshot = getattr(self._scope, "published", None) or seen

    def upsert(self, rows: list[ManifestRow]) -> None:
        """Replace rows by id in one merge-insert (a namespace's new properties; a repoint whose row is gone)."""
        data = rows_table(rows)

        def write(snapshot: Snapshot, dataset: lance.LanceDataset) -> tuple[lance.LanceDataset, None]:
            builder = dataset.merge_insert("object_id").when_matched_update_all().when_not_matched_insert_all()
            builder.conflict_retries(self.commit_retries).execute(data)
            return dataset, None

        self.commit(write, lambda index: index.replaced(data))

    def defer_repoint(self, staged: list[ManifestRow], rows: list[ManifestRow]) -> None:
        """Seed 003 step (4) of committed versions whose manifests are at their final names: their rows (as
        committed: ``staged``) are replaced by ``rows`` in the next insert that takes them (:meth:`insert`), or by
        :meth:`flush_repoints` (on demand, or when the process exits). Until then they point at their staged
        manifests, which every reader treats as
        committed (``external_reader.finish``): this instance answers :meth:`copied`, another one finds the copies."""
        with self._repoints_lock:
            self._repoints.update((row.object_id, (old.metadata, row)) for old, row in zip(staged, rows, strict=True))
        _DEFERRING.add(self)
        _register_exit_flush()

    def copied(self, row: ManifestRow) -> dict[str, Any] | None:
        """The final metadata of a committed row whose repoint this instance deferred, or which it finished but
        could not repoint (the same row: the same staged metadata, commit time included), None for any other."""
        with self._repoints_lock:
            entry = self._repoints.get(row.object_id)
            if entry is not None and entry[0] == row.metadata:
                return entry[1].metadata
            known = self._copies.get(row.object_id)
        return known[1] if known is not None and known[0] == row.metadata else None

    def remember_copy(self, row: ManifestRow, metadata: dict[str, Any]) -> None:
        """Remember the final metadata of a committed row this instance copied but could not repoint (read-only
        credentials): :meth:`copied` answers it while ``__manifest`` holds the same row."""
        with self._repoints_lock:
            self._copies[row.object_id] = (row.metadata, metadata)

    def flush_repoints(self) -> None:
        """Make the deferred repoints of this instance now, in one commit (on demand: the maintenance hook)."""
        with self._repoints_lock:
            riders = [row for _, row in self._repoints.values()]
        if riders:
            self.repoint(riders)

    def repoint(self, rows: list[ManifestRow], inserting: pa.Table | None = None) -> None:
        """Replace ``table_version`` rows by ``rows`` (pointing at their final manifests) and insert the rows
        ``inserting`` (DuplicateObjectError, nothing written, when one exists) in one Lance Update
        (``fragments.fragments_holding``): as cheap as an insert, where pylance's merge-insert joins against
        every row (4-7 ms against 11-18 ms at 1,000 rows, docs/benchmarks.md "Table version management"). A row
        deleted or repointed meanwhile is left as it is; without ``inserting``, a row gone goes through the
        merge-insert upsert. The Update fails on any concurrent guarded append or insert (``commit_update``'s
        ``inserting``), so the insert stays guarded."""
        data = rows_table(rows)
        wanted = data["object_id"].to_pylist()
        metadata = dict(zip(wanted, data["metadata"].to_pylist(), strict=True))
        options = self.storage_options or None
        applied: list[str] = []
        attempts: list[list[FragmentMetadata]] = []  # the data files each attempt wrote

        def write(snapshot: Snapshot, dataset: lance.LanceDataset) -> tuple[lance.LanceDataset, None]:
            if attempts and fragments.holds(dataset, attempts[-1]):
                return dataset, None  # the last attempt landed though it reported a conflict (a lost response)
            if inserting is not None:
                present = snapshot.rows_by_id(inserting["object_id"].to_pylist())
                if present:
                    raise DuplicateObjectError(next(iter(present)))
            current = snapshot.rows_by_id(sorted(wanted))
            applied[:] = [oid for oid in wanted if oid in current and current[oid].get("metadata") != metadata[oid]]
            if inserting is None and any(oid not in current for oid in wanted):
                raise _RowsGone
            plan = (
                fragments.fragments_holding(
                    dataset, set(applied), SMALL_FRAGMENT_ROWS, self._written_rows, self._snapshots.check
                )
                if applied
                else None
            )
            if plan is None or plan[2].schema.names != data.schema.names:
                if inserting is None:
                    raise _RowsGone if applied else _AlreadyRepointed
                applied.clear()
                plan = [], [], dataset.schema.empty_table()
            removed, updated, kept = plan
            new_rows = [kept, _applied(data, wanted, applied).cast(kept.schema)]
            if inserting is not None:
                new_rows.append(inserting.cast(kept.schema))
            table = pa.concat_tables(new_rows).combine_chunks()  # one batch: written as one, kept as one
            written = fragments.write_rows(dataset, table, options)
            attempts.append(written)
            paths = fragments.data_file_paths(written)
            self._written_rows = {paths[0]: table} if len(paths) == 1 else {}
            try:
                inserts = inserting is not None
                return fragments.commit_update(dataset, removed, updated, written, options, inserts), None
            except BaseException as error:
                if not is_lost_response(error):  # no version holds them (a lost response's commit may)
                    fragments.delete_files(self.storage, MANIFEST_DIR, written)
                raise

        def change(index: RowIndex) -> RowIndex:
            # one derivation: the repointed rows replaced, the inserted ones added after them (none exists)
            changed = _applied(data, wanted, applied)
            return index.replaced(changed if inserting is None else pa.concat_tables([changed, inserting]))

        try:
            self.commit(write, change)
        except _RowsGone:
            self.upsert(rows)
        except _AlreadyRepointed:
            pass
        with self._repoints_lock:  # done (or no longer needed); a row deferred again meanwhile stays
            for row in rows:
                if self._repoints.get(row.object_id, (None, None))[1] is row:
                    del self._repoints[row.object_id]

    def delete(self, selection: RowSelection) -> int:
        """Delete the selected rows in the group commit of this instance (group_commit.py); returns how many
        rows no earlier delete of its group removed."""
        if self._snapshot() is None:
            return 0
        return int(self._submit(Request(DELETE, selection=selection)))

    def delete_object(self, object_id: str, object_type: str) -> int:
        """Delete one object's row; returns 1, or 0 when it was not there."""
        return self.delete(RowSelection((object_id,), object_type=object_type))

    def delete_table(self, table_oid: str) -> int:
        """Delete a table row and all of its ``table_version`` rows in one commit; returns how many."""
        return self.delete(RowSelection.table_and_versions(table_oid))

    def delete_table_versions(self, table_oid: str) -> int:
        """Delete every ``table_version`` row of a table in one commit."""
        return self.delete(RowSelection.versions(table_oid))

    def delete_versions(self, versions: Mapping[str, Iterable[int]]) -> int:
        """Delete ``table_version`` rows of several tables (table object id -> version numbers) in one commit."""
        selection = RowSelection.versions_of(versions)
        return self.delete(selection) if selection.ids else 0

    def update_metadata(self, values: dict[str, str]) -> None:
        """Merge keys into the table metadata (feature flags, table version management)."""
        self.commit(lambda snapshot, dataset: (dataset, dataset.update_metadata(values)), lambda index: index)

    def commit(
        self,
        write: Callable[[Snapshot, lance.LanceDataset], tuple[lance.LanceDataset, _T]],
        change: Callable[[RowIndex], RowIndex] | None = None,
        maintain: bool = True,
        retries: int | None = None,
        share: InsertGroup | None = None,
    ) -> _T:
        """The one place every ``__manifest`` write passes, in the writers' turn: ``write`` commits on a private
        copy of the latest snapshot and returns the committed dataset (and its result), which is published.
        ``change``: how the commit changed the rows (they are derived, not read again: ``Snapshot._rows``).
        ``maintain``: run maintenance when a threshold is crossed; ``retries``: default ``commit_retries``;
        ``share``: inserts offered to another process while it holds the machine turn (offers.py), whose
        ``write`` returns None: None is returned when that process committed them.
        A thread starts from this instance's last commit when it is newer than its operation's snapshot, and
        from the latest version after another process held the machine turn. The committed version's rows are
        derived after the turn."""
        retries = self.commit_retries if retries is None else retries
        with self._writers.hold(share.offer if share is not None else None) as another_process:
            try:
                if share is not None and share.settled():
                    self._scope.snapshot = None  # the operation goes on at the latest version
                    return cast(_T, None)
                published, result = self._commit(write, change, maintain, retries, another_process)
            finally:
                if share is not None:
                    share.close()
        published.derive()  # once the turn is released: the other writers need not wait for it
        return result

    def _commit(
        self,
        write: Callable[[Snapshot, lance.LanceDataset], tuple[lance.LanceDataset, _T]],
        change: Callable[[RowIndex], RowIndex] | None,
        maintain: bool,
        retries: int,
        another_process: bool,
    ) -> tuple[Snapshot, _T]:
        """:meth:`commit` in the writers' turn: the attempts, the committed version published."""
        mine, last = getattr(self._scope, "snapshot", None), self._last_published
        if another_process:
            self._scope.snapshot = None
        elif mine and last and last.version > mine.version and last.verified_at >= mine.verified_at:
            self._scope.snapshot = last  # published after mine was read (a re-created catalog starts over)
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
                    raise ln.ConcurrentModificationError(
                        f"__manifest commit still conflicting after {retries} retries: {error}"
                    ) from error
                if attempt:  # back off, de-synchronised
                    time.sleep(random.uniform(0, COMMIT_BACKOFF_SECONDS * 2 ** min(attempt, 5)))
                continue
            published = Snapshot.of(dataset, check=self._snapshots.check).follows(snapshot, change)
            self._publish(published)
            if maintain:
                maintenance.maybe_maintain(self, published.version, self.maintenance_policy)
            return published, result
        raise AssertionError("unreachable")


def _applied(data: pa.Table, wanted: list[str], applied: list[str]) -> pa.Table:
    """The rows of ``data`` (whose ids are ``wanted``) that a repoint applies: usually all of them (no filter)."""
    if len(applied) == len(wanted):
        return data
    return data.filter(pa.array([oid in applied for oid in wanted]))


class _RowsGone(Exception):
    """A row to repoint is no longer in ``__manifest`` (see :meth:`ManifestTable.repoint`)."""


class _AlreadyRepointed(Exception):
    """Another thread or process repointed the rows first (see :meth:`ManifestTable.repoint`)."""


def _is_commit_conflict(error: BaseException) -> bool:
    """Whether a Lance commit failed only because another writer committed first, or its response was lost
    (``write`` recognises its own landed commit): safe to re-apply."""
    if isinstance(error, CommitConflictError) or is_lost_response(error):
        return True
    text = str(error).lower()
    return any(marker in text for marker in _CONFLICT_MARKERS)
