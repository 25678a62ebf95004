"""The ``__manifest`` table (seed 000, V2): a Lance table with one row per namespace, table and table version.

Reads scan the latest version; writes are pylance merge-inserts keyed on ``object_id`` (primary-key dedup
makes concurrent inserts of one id fail for all but one writer). The table is created on the first write,
never by a read, so read-only credentials can list and describe.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import lance
import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_lance.namespace import feature_flags, maintenance
from airflow_provider_lance.namespace.config import MaintenancePolicy
from airflow_provider_lance.namespace.identifiers import DELIMITER, MANIFEST_DIR, V1, V2, manifest_key
from airflow_provider_lance.namespace.storage import Storage, is_not_found_error

NAMESPACE = "namespace"
TABLE = "table"
TABLE_VERSION = "table_version"

PRIMARY_KEY_METADATA = {b"lance-schema:unenforced-primary-key:position": b"0"}
SCHEMA = pa.schema(
    [
        pa.field("object_id", pa.string(), nullable=False, metadata=PRIMARY_KEY_METADATA),
        pa.field("object_type", pa.string(), nullable=False),
        pa.field("location", pa.string()),
        pa.field("metadata", pa.string()),
        pa.field("base_objects", pa.list_(pa.field("object_id", pa.string()))),
    ]
)

# Table metadata key by which the spec turns table version management on for a catalog.
TABLE_VERSION_MANAGEMENT_KEY = "table_version_management"

_COLUMNS = ["object_id", "object_type", "location", "metadata"]
_MATCHED_ROW = re.compile(r'found matching row with key values: object_id = "((?:[^"\\]|\\.)*)"')


class DuplicateObjectError(Exception):
    """A merge-insert found a row with the same ``object_id``."""

    def __init__(self, object_id: str | None) -> None:
        super().__init__(object_id)
        self.object_id = object_id


@dataclass(frozen=True)
class ManifestRow:
    object_id: str
    object_type: str
    location: str | None = None
    metadata: dict[str, Any] | None = None

    def to_arrow(self) -> dict[str, Any]:
        return {
            "object_id": self.object_id,
            "object_type": self.object_type,
            "location": self.location,
            # compact JSON like the reference; null when there is nothing
            "metadata": json.dumps(self.metadata, separators=(",", ":")) if self.metadata else None,
            "base_objects": None,
        }

    @classmethod
    def from_arrow(cls, row: Mapping[str, Any]) -> ManifestRow:
        raw = row.get("metadata")
        return cls(row["object_id"], row["object_type"], row.get("location"), json.loads(raw) if raw else None)


def sql_string(value: str) -> str:
    """A SQL string literal for a Lance filter."""
    return "'" + value.replace("'", "''") + "'"


def _table_and_versions_filter(table_oid: str) -> str:
    """The row of a table and every ``table_version`` row of it."""
    return (
        f"(object_id = {sql_string(table_oid)} AND object_type = '{TABLE}') OR "
        f"(starts_with(object_id, {sql_string(table_oid + DELIMITER)}) AND object_type = '{TABLE_VERSION}')"
    )


class ManifestTable:
    """Reads and writes of ``<root>/__manifest``.

    :param storage: the namespace storage (for the table URI and storage options).
    :param commit_retries: how often a conflicting pylance commit is retried.
    :param maintenance_policy: when a commit triggers compaction and clean-up.
    """

    def __init__(
        self, storage: Storage, commit_retries: int, maintenance_policy: MaintenancePolicy | None = None
    ) -> None:
        self.uri = storage.uri(MANIFEST_DIR)
        self.storage_options = storage.options
        self.commit_retries = commit_retries
        self.maintenance_policy = maintenance_policy or MaintenancePolicy()
        self._storage = storage
        self._dataset: lance.LanceDataset | None = None
        self._naming: str | None = None  # manifest naming scheme of __manifest ("V1"/"V2"), None if unknown
        self._verified_at = float("-inf")  # monotonic time at which the cached version was last the latest
        # All rows of one manifest version (reads filter it in memory); keyed by that version, so a commit
        # by any process (a new latest version) makes the next read load the table again.
        self._snapshot: tuple[int, pa.Table] | None = None
        self._index: tuple[pa.Table, dict[str, int]] | None = None  # see _positions
        self._scope = threading.local()  # per thread: inside an operation, has latest() been checked out?

    @contextmanager
    def operation(self) -> Iterator[None]:
        """One namespace operation: the latest version is checked out once, at its first read (not at every
        read of the operation); a write in the operation makes the next read check out again."""
        depth = getattr(self._scope, "depth", 0)
        self._scope.depth = depth + 1
        if depth == 0:
            self._scope.fresh = False
        try:
            yield
        finally:
            self._scope.depth = depth

    # -- opening ----------------------------------------------------------------------------------------
    def latest(self) -> lance.LanceDataset | None:
        """The latest version (another process's commit is visible to the next call), or None if the
        catalog has no manifest yet. Refuses catalogs with reader features this engine does not know."""
        if self._dataset is None:
            try:
                started = time.monotonic()
                self._dataset = lance.dataset(self.uri, storage_options=self.storage_options or None)
                self._verified_at = started
            except (ValueError, OSError) as error:
                # a 403 ("...Access Key Id you provided does not exist...") is a failure, never "no catalog"
                if is_not_found_error(error):
                    return None
                raise
            self._naming = self._detect_naming(self._dataset.version)
        elif not (getattr(self._scope, "depth", 0) and getattr(self._scope, "fresh", False)):
            self._refresh(self._dataset)
        self._scope.fresh = True
        feature_flags.check_readable(self._dataset.metadata)
        return self._dataset

    def _refresh(self, dataset: lance.LanceDataset) -> None:
        """Move ``dataset`` to the latest version. Lance commits version N+1 with an atomic create of its
        manifest, so "no manifest N+1" means N is the latest: one existence check (one request, whatever
        the number of versions; the reference checks the same way) instead of ``checkout_latest``, which
        lists all of ``_versions/``. That holds only while N+1 cannot have been cleaned up already: clean-up
        removes a version only once its successor is older than the keep window, so the shortcut is taken
        only when N was verified as the latest less than ``maintenance.REVALIDATE_AFTER`` ago (clean-up
        refuses windows shorter than that). Otherwise, on a newer version or an unknown naming scheme,
        ``checkout_latest`` as before."""
        started = time.monotonic()
        following = manifest_key(MANIFEST_DIR, dataset.version + 1, self._naming) if self._naming else None
        recent = started - self._verified_at < maintenance.REVALIDATE_AFTER.total_seconds()
        if following is None or not recent or self._storage.file_exists(following):
            dataset.checkout_latest()
        self._verified_at = started

    def _detect_naming(self, version: int) -> str | None:
        for naming in (V2, V1):
            if self._storage.file_exists(manifest_key(MANIFEST_DIR, version, naming)):
                return naming
        return None

    def _for_write(self) -> lance.LanceDataset:
        dataset = self.latest() or self._create()
        feature_flags.check_writable(dataset.metadata)
        return dataset

    def _create(self) -> lance.LanceDataset:
        """Create the empty table as version 1, exclusively. ``write_dataset(mode="create")`` is not: a
        creator that loses the race for version 1 retries as an *Overwrite* at the next version, which would
        erase rows committed in between (measured: two "successful" creates of one table). A commit with no
        retries either writes version 1 or fails, and a failure whose table now exists means another writer
        created it first. (pylance 14 commits an empty Overwrite as data storage version 2.2.)"""
        try:
            self._dataset = lance.LanceDataset.commit(
                self.uri,
                lance.LanceOperation.Overwrite(SCHEMA, []),
                max_retries=0,
                enable_v2_manifest_paths=True,
                storage_options=self.storage_options or None,
            )
            self._naming = V2
        except (ValueError, OSError):
            dataset = self.latest()  # a concurrent writer created it first
            if dataset is None:
                raise
            return dataset
        return self._dataset

    # -- reads ------------------------------------------------------------------------------------------
    def metadata(self) -> dict[str, str]:
        dataset = self.latest()
        return dict(dataset.metadata) if dataset is not None else {}

    def _rows(self) -> pa.Table | None:
        """Every row of the latest version (one scan per version; a full scan of the four columns costs less
        than a filtered one, which reads the same columns and evaluates the SQL filter)."""
        dataset = self.latest()
        if dataset is None:
            return None
        version = dataset.version
        if self._snapshot is None or self._snapshot[0] != version:
            self._snapshot = (version, dataset.to_table(columns=_COLUMNS))
        return self._snapshot[1]

    def _select(self, mask: Any) -> list[ManifestRow]:
        table = self._rows()
        if table is None:
            return []
        return [ManifestRow.from_arrow(row) for row in table.filter(mask(table)).to_pylist()]

    def query(self, where: str | None = None) -> list[ManifestRow]:
        """Rows matching a Lance SQL filter (all rows without one)."""
        dataset = self.latest()
        if dataset is None:
            return []
        table = dataset.to_table(columns=["object_id", "object_type", "location", "metadata"], filter=where)
        return [ManifestRow.from_arrow(row) for row in table.to_pylist()]

    def _positions(self) -> tuple[pa.Table, dict[str, int]] | None:
        """The cached rows and ``object_id`` → row position, built once per manifest version: lookups by id
        (every table and namespace operation makes one) are then dictionary hits, not column scans."""
        table = self._rows()
        if table is None:
            return None
        if self._index is None or self._index[0] is not table:
            self._index = (table, {oid: position for position, oid in enumerate(table["object_id"].to_pylist())})
        return table, self._index[1]

    def get(self, object_id: str) -> ManifestRow | None:
        return self.get_many([object_id]).get(object_id)

    def get_many(self, object_ids: Iterable[str]) -> dict[str, ManifestRow]:
        indexed = self._positions()
        if indexed is None:
            return {}
        table, positions = indexed
        found = {}
        for oid in object_ids:
            position = positions.get(oid)
            if position is not None:
                found[oid] = ManifestRow.from_arrow(table.slice(position, 1).to_pylist()[0])
        return found

    def children(self, prefix: str, object_type: str | None = None) -> list[ManifestRow]:
        """Rows whose object id starts with ``prefix`` (all descendants, not only direct children)."""
        return self._select(lambda table: _descendants(table, prefix, object_type))

    def children_of(self, parents: Iterable[str], object_type: str, delimiter: str) -> dict[str, list[ManifestRow]]:
        """For each parent id, its rows of ``object_type`` one level below (``<parent><delimiter><name>``,
        ``name`` without the delimiter), from the cached rows in one pass whatever the number of parents
        (:meth:`children` is one pass per parent: 100 tables of a batch would filter the rows 100 times)."""
        wanted = list(dict.fromkeys(parents))
        found: dict[str, list[ManifestRow]] = {parent: [] for parent in wanted}
        table = self._rows()
        if table is None or not wanted:
            return found
        typed = table.filter(pc.equal(table["object_type"], object_type))
        last = re.escape(delimiter)
        parent_ids = pc.replace_substring_regex(typed["object_id"], pattern=f"{last}[^{last}]*$", replacement="")
        mask = pc.and_(
            pc.is_in(parent_ids, value_set=pa.array(wanted, pa.string())),
            pc.not_equal(parent_ids, typed["object_id"]),  # an id without the delimiter has no parent
        )
        selected = typed.filter(mask)
        for parent, row in zip(parent_ids.filter(mask).to_pylist(), selected.to_pylist(), strict=True):
            found[parent].append(ManifestRow.from_arrow(row))
        return found

    def child_ids(self, prefix: str, object_type: str | None = None) -> list[str]:
        """The object ids of :meth:`children` (no row objects: cheap for long listings)."""
        table = self._rows()
        if table is None:
            return []
        return table["object_id"].filter(_descendants(table, prefix, object_type)).to_pylist()

    # -- writes -----------------------------------------------------------------------------------------
    def insert(self, rows: list[ManifestRow]) -> None:
        """Insert all rows in one commit; DuplicateObjectError (nothing written) if any id exists."""
        dataset = self._for_write()
        data = pa.Table.from_pylist([row.to_arrow() for row in rows], schema=SCHEMA)
        before = dataset.version
        try:
            (
                dataset.merge_insert("object_id")
                .when_matched_fail()
                .when_not_matched_insert_all()
                .conflict_retries(self.commit_retries)
                .execute(data)
            )
        except OSError as error:
            self._after_write(dataset, committed=False)
            match = _MATCHED_ROW.search(str(error))
            if match:
                raise DuplicateObjectError(match.group(1)) from None
            raise
        self._after_write(dataset, change=(before, lambda table: _concat(table, data)))

    def upsert(self, rows: list[ManifestRow]) -> None:
        """Replace rows by id (used to repoint ``table_version`` rows at finalized manifests)."""
        dataset = self._for_write()
        data = pa.Table.from_pylist([row.to_arrow() for row in rows], schema=SCHEMA)
        before = dataset.version
        replaced = data["object_id"].combine_chunks()
        try:
            (
                dataset.merge_insert("object_id")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .conflict_retries(self.commit_retries)
                .execute(data)
            )
        except BaseException:
            self._after_write(dataset, committed=False)
            raise
        self._after_write(
            dataset,
            change=(
                before,
                lambda table: _concat(table.filter(pc.invert(pc.is_in(table["object_id"], replaced))), data),
            ),
        )

    def delete(self, where: str) -> int:
        """Delete matching rows in one commit; returns how many were deleted."""
        dataset = self.latest()
        if dataset is None:
            return 0
        dataset = self._for_write()
        try:
            result = dataset.delete(where, conflict_retries=self.commit_retries)
        except BaseException:
            self._after_write(dataset, committed=False)
            raise
        self._after_write(dataset)
        return int(result.get("num_deleted_rows", 0)) if isinstance(result, dict) else 0

    def delete_object(self, object_id: str, object_type: str) -> int:
        """Delete one object's row; returns 1, or 0 when it was not there."""
        return self.delete(f"object_id = {sql_string(object_id)} AND object_type = '{object_type}'")

    def delete_table(self, table_oid: str) -> int:
        """Delete a table row and all of its ``table_version`` rows in one commit; returns how many."""
        return self.delete(_table_and_versions_filter(table_oid))

    def delete_table_versions(self, table_oid: str, versions: Iterable[int] | None = None) -> int:
        """Delete ``table_version`` rows of a table (all of them when ``versions`` is None) in one commit."""
        if versions is None:
            prefix = sql_string(table_oid + DELIMITER)
            return self.delete(f"starts_with(object_id, {prefix}) AND object_type = '{TABLE_VERSION}'")
        ids = ", ".join(sql_string(f"{table_oid}{DELIMITER}{version}") for version in versions)
        return self.delete(f"object_type = '{TABLE_VERSION}' AND object_id IN ({ids})") if ids else 0

    def update_metadata(self, values: dict[str, str]) -> None:
        """Merge keys into the table metadata (feature flags, table version management)."""
        dataset = self._for_write()
        before = dataset.version
        try:
            dataset.update_metadata(values)
        except BaseException:
            self._after_write(dataset, committed=False)
            raise
        self._after_write(dataset, change=(before, lambda table: table))

    def _after_write(
        self,
        dataset: lance.LanceDataset,
        committed: bool = True,
        change: tuple[int, Callable[[pa.Table], pa.Table]] | None = None,
    ) -> None:
        """The one place every ``__manifest`` write passes. A commit leaves the dataset at the version it
        created (at least as new as the operation's check-out, so the operation's later reads may use it);
        a failed write makes the next read check out again (it must see the winning writer's rows).
        ``change`` = (version written on, how the commit changed the rows): when the commit is exactly the
        next version after the cached rows (no other writer in between), the cache moves to the new version
        by applying the change instead of scanning the table again.
        Maintenance (compaction, clean-up of old versions) runs when a commit crosses its threshold."""
        if not committed:
            self._scope.fresh = False
            return
        if change is not None and self._snapshot is not None:
            before, apply = change
            if self._snapshot[0] == before and dataset.version == before + 1:
                self._snapshot = (dataset.version, apply(self._snapshot[1]))
        maintenance.maybe_maintain(dataset, self.maintenance_policy)


def _concat(table: pa.Table, rows: pa.Table) -> pa.Table:
    """``table`` (cached rows) with ``rows`` (new rows in :data:`SCHEMA`) appended (in one chunk per 64
    appends, so that the in-memory filters stay vectorised)."""
    combined = pa.concat_tables([table, rows.select(_COLUMNS).cast(table.schema)])
    return combined.combine_chunks() if combined.column(0).num_chunks > 64 else combined


def _descendants(table: pa.Table, prefix: str, object_type: str | None) -> Any:
    """A mask of the rows whose object id starts with ``prefix`` (and whose type is ``object_type``)."""
    mask = pc.starts_with(table["object_id"], prefix) if prefix else pc.is_valid(table["object_id"])
    if object_type:
        mask = pc.and_(mask, pc.equal(table["object_type"], object_type))
    return mask

