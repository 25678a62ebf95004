"""Snapshots of ``__manifest``: which version is the latest, and the state threads share.

A pylance dataset object is not safe to use from one thread while another mutates it (commits,
``checkout_latest``, compaction), so a :class:`Snapshot` holds a dataset nobody mutates once published: readers
share it, and a writer commits on a private copy (``copy.copy``, microseconds) that it publishes next.

Freshness (every operation sees every commit made before it started, by any process):

* S3: one ``LIST MaxKeys=1`` of ``__manifest/_versions/`` names the newest manifest and its e-tag (V2 names
  sort newest first): exact, one request.
* memory: only this instance writes pylance's memory store: the published snapshot is the latest.
* local disk: an unchanged ``_versions/`` (inode and mtime, once settled) means N is still the latest: one
  ``stat``; else no manifest N+1 and manifest N unchanged: two more (a re-created catalog changes N). The one
  miss, an outside clean-up that removes N+1 but keeps a tagged N, is bounded by a full listing at least every
  ``REVALIDATE_AFTER``.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import lance
import lance_namespace as ln
import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_lance.namespace.identifiers import (
    MANIFEST_DIR,
    V2,
    manifest_key,
    parse_manifest_name,
    versions_dir,
)
from airflow_provider_lance.namespace.row_index import RowIndex
from airflow_provider_lance.namespace.rows_store import RowsStore
from airflow_provider_lance.namespace.shared_call import SharedCall
from airflow_provider_lance.namespace.storage import Storage
from airflow_provider_lance.namespace.storage_errors import is_not_found_error
from airflow_provider_lance.namespace.tuning import (
    POINT_READ_ROWS,
    POINT_READS,
    REVALIDATE_AFTER,
    SCAN_BATCH_ROWS,
    SETTLED_NANOS,
    SORT_AFTER,
)

log = logging.getLogger(__name__)

# Every column of ``__manifest``: the held rows are a whole version, which a compaction writes back as is.
COLUMNS = ["object_id", "object_type", "location", "metadata", "base_objects"]


@dataclass(frozen=True)
class Derived:
    """How a commit of this instance changed the rows of the version it went on top of (append, filter)."""

    base: Snapshot
    change: Callable[[RowIndex], RowIndex]


@dataclass
class Snapshot:
    """One version of ``__manifest`` as this process saw it. ``dataset`` is never mutated (take a private
    copy to write) and opened only when needed; the rows are obtained once, on first use, by :meth:`index`.
    ``check``: check mode (property ``manifest_check_rows``, see :meth:`index`)."""

    version: int
    metadata: dict[str, str]  # the table metadata (feature flags, table version management)
    e_tag: str | None  # of the version's manifest file; None until first checked
    versions_stamp: tuple[int, int] | None = None  # local disk: (inode, mtime) of _versions/ when last checked
    verified_at: float = field(default_factory=time.monotonic)
    # The one row state: every row of the version, indexed by object id (row_index.py), once obtained ...
    held: RowIndex | None = None
    # ... and until then, what it will be obtained from: rows stored for it (rows_store.py), how a write of
    # this instance changed an earlier version (Derived), or an earlier version it may extend (Snapshot).
    source: pa.Table | Derived | Snapshot | None = None
    check: bool = False
    # fragment id -> (data files, deletion file) of the version's fragments, once computed
    fragments: dict[int, FragmentKey] | None = None
    opener: Callable[[int], lance.LanceDataset] | None = None  # opens ``version`` when no dataset is held
    stored: bool = False  # the rows are in the rows store's tiers any reader writes
    point_reads: int = 0  # lookups answered by a filtered scan so far (see POINT_READS)
    # id prefix -> an index of the rows below it, read by point (step 2 of ``index``)
    _below: dict[str, RowIndex] = field(default_factory=dict)
    _dataset: lance.LanceDataset | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _rows_lock: threading.Lock = field(default_factory=threading.Lock)  # one thread obtains and indexes the rows

    @classmethod
    def of(cls, dataset: lance.LanceDataset, e_tag: str | None = None, check: bool = False) -> Snapshot:
        return cls(dataset.version, dict(dataset.metadata), e_tag, check=check, _dataset=dataset)

    @property
    def dataset(self) -> lance.LanceDataset:
        with self._lock:
            if self._dataset is None:
                assert self.opener is not None
                self._dataset = self.opener(self.version)
            return self._dataset

    def private(self) -> lance.LanceDataset:
        """A copy of the dataset that the caller may mutate (commit on, check out, compact)."""
        return copy.copy(self.dataset)

    @property
    def rows_known(self) -> bool:
        """Whether the rows are held, handed in or derived from a version whose rows are known (obtained
        without reading the table)."""
        source = self.source
        return (
            self.held is not None
            or isinstance(source, pa.Table)
            or (isinstance(source, Derived) and source.base.rows_known)
        )

    def follows(self, previous: Snapshot, change: Callable[[RowIndex], RowIndex] | None) -> Snapshot:
        """This version was committed on top of ``previous`` by this instance; ``change``: how, when it is
        exactly the next version (its rows are then derived on first use: after the writers' turn)."""
        if not previous.rows_known:
            return self  # nothing known of its rows without reading them
        if change is not None and self.version == previous.version + 1:
            self.source = Derived(previous, change)
        else:
            self.source = previous  # reads only the fragments added since, if that is all that changed
        return self

    def derive(self) -> None:
        """Derive the rows now when they come from this instance's write (step 3 of :meth:`index`: nothing read;
        check mode compares them here), else leave them to the first use."""
        if isinstance(self.source, Derived):
            self.index()

    def table(self) -> pa.Table:
        return self.index().table

    def rows_by_id(self, object_ids: list[str]) -> dict[str, dict[str, Any]]:
        """The rows (as Arrow's Python dicts) of the ids that exist, in the order asked."""
        return self.index(ids=object_ids).rows(object_ids) if object_ids else {}

    def index(self, ordered: bool = False, ids: list[str] | None = None, below: str | None = None) -> RowIndex:
        """The rows of this version indexed by object id: the first step of this chain that applies, cheapest
        first. Each step but point reads (which answer only ``ids``, or the ids that start with ``below``) leaves
        the whole version indexed (``held``), once. Rows read whole are sorted after ``SORT_AFTER`` scans, or now
        when the caller walks ids in order (``ordered``).

        1. **Held**: obtained already by a step below.
        2. **Point reads**, while nothing else is known of a large version (``POINT_READ_ROWS``, its first
           ``POINT_READS`` lookups): a scan filtered on ``ids``, or on the id range of ``below`` (a table's
           ``table_version`` rows, kept for the version: one call asks for them several times). At a million
           tables a new process's first answer 162 -> 41 ms, its VmRSS growth 165 -> 59 MB; at 10,000 tables x
           100 versions its first DescribeTable reads no row whole (docs/engine.md, "Point reads").
        3. **Derived from the write**: this instance's commit of exactly the next version applies its change
           (append, filter) to the version below, reading nothing: a whole read of 2,000,000 rows costs ~100 ms
           where a declare at a million tables takes 6.7 ms (CHANGELOG; the derivation not timed apart).
        4. **Stored rows** (rows_store.py), handed in by a new process's first check: a cold first poke on S3
           2-3 requests instead of 6-7 at 100 tables, 10-11 at 10,000 (docs/engine.md).
        5. **Incremental**: when only fragments were added since a version already held, only those are read
           (docs/benchmarks.md "Writers", item 4).
        6. **Full scan** of every row.

        Check mode (``check``) reads steps 3 and 5 again whole and compares every derived artefact: the rows and
        the staged candidates (``RowIndex.difference``; InternalError on a mismatch)."""
        index = self.held
        if index is not None and not (index.unsorted and (ordered or index.scans >= SORT_AFTER)):
            return index  # 1
        if index is None and (ids or below) and (found := self._read_by_point(ids, below)) is not None:
            return found  # 2
        with self._rows_lock:
            index = self.held
            if index is None:
                source, self.source, step = self.source, None, None
                if isinstance(source, Derived):
                    index, step = source.change(source.base.index()), "derived from the write"  # 3
                elif isinstance(source, pa.Table):
                    index = RowIndex.of(source)  # 4
                else:
                    current = self.dataset.get_fragments()
                    keys = fragment_keys(current)
                    added = self._added_since(source, keys, current) if source is not None else None
                    if added is not None:
                        index, step = source.index(), "read incrementally"  # 5
                        if added:
                            index = index.appended(self.dataset.scanner(columns=COLUMNS, fragments=added).to_table())
                    else:
                        index = self._read_whole()  # 6
                    self.fragments = keys
                if self.check and step is not None:
                    self._compare(index, step)
            if index.unsorted and (ordered or index.scans >= SORT_AFTER):
                index = index.merged()
                pa.default_memory_pool().release_unused()  # the sort's scratch space: as large as the ids
            self.held = index
        return index

    def _read_by_point(self, ids: list[str] | None, below: str | None) -> RowIndex | None:
        """Step 2 of :meth:`index`: one scan filtered on ``ids`` or on the id range of ``below`` (kept), or None
        once this version is no longer read by point."""
        with self._lock:
            found = self._below.get(below) if below else None
        if found is not None or not self._reads_by_point():
            return found
        oid = pc.field("object_id")  # every id that starts with ``below`` sorts before its last character plus one
        where = (oid >= below) & (oid < below[:-1] + chr(ord(below[-1]) + 1)) if below else oid.isin(ids)
        found = RowIndex.of(self.dataset.to_table(columns=COLUMNS, filter=where))
        if below:
            with self._lock:
                self._below[below] = found
        return found

    def _read_whole(self) -> RowIndex:
        return RowIndex.of(self.dataset.to_table(columns=COLUMNS, batch_size=SCAN_BATCH_ROWS))

    @staticmethod
    def _added_since(
        base: Snapshot, keys: dict[int, FragmentKey], current: list[lance.LanceFragment]
    ) -> list[lance.LanceFragment] | None:
        """The fragments added since ``base`` if that is all that changed (every fragment it held unchanged)."""
        known = base.fragment_keys() if base.rows_known else None
        if known is None or any(keys.get(number) != key for number, key in known.items()):
            return None
        return [fragment for fragment in current if fragment.fragment_id not in known]

    def _compare(self, index: RowIndex, step: str) -> None:
        """Check mode: ``index`` holds exactly what a fresh read of this version gives."""
        difference = index.difference(self.dataset.to_table(columns=COLUMNS))
        if difference:
            raise ln.InternalError(
                f"__manifest version {self.version}: the rows {step} differ from a fresh read of that version "
                f"(manifest_check_rows): {difference}"
            )

    def _reads_by_point(self) -> bool:
        """Whether a lookup should scan for its ids (and count it): only while nothing else is known of the
        version, and until the point reads have cost a whole read."""
        if self.source is not None or self.point_reads >= POINT_READS:
            return False
        if self.dataset.count_rows() < POINT_READ_ROWS:  # from the fragments' row counts: no read
            return False
        with self._lock:  # a burst of first lookups (a server starting) makes at most POINT_READS of them
            self.point_reads += 1
            return self.point_reads <= POINT_READS

    def fragment_keys(self) -> dict[int, FragmentKey] | None:
        """The keys of the fragments ``held`` holds (None when unknown without opening the table)."""
        if self.fragments is None and self._dataset is not None:
            self.fragments = fragment_keys(self._dataset.get_fragments())
        return self.fragments


FragmentKey = tuple[tuple[str, ...], int | None]


def fragment_keys(fragments: list[lance.LanceFragment]) -> dict[int, FragmentKey]:
    """What identifies each fragment's rows: its data files (named by UUID) and its deletion file."""
    keys = {}
    for fragment in fragments:
        metadata = fragment.metadata
        deletion = metadata.deletion_file
        keys[fragment.fragment_id] = (tuple(file.path for file in metadata.files), deletion.id if deletion else None)
    return keys


class SnapshotStore:
    """The latest published snapshot of one ``__manifest`` and how to check that it still is the latest;
    ``store``: the catalog's stored rows (rows_store.py), if it has any tier; ``check``: check mode."""

    def __init__(self, storage: Storage, store: RowsStore | None, check: bool) -> None:
        self.uri = storage.uri(MANIFEST_DIR)
        self._storage = storage
        self._storage_options = storage.options or None
        self._store = store
        self.check = check
        self._lock = threading.Lock()
        self._current: Snapshot | None = None
        self._unstored: Snapshot | None = None  # the last commit whose rows are not stored yet
        self._shared_newest = SharedCall(self._list_newest)  # concurrent checks share a listing
        self._shared_first = SharedCall(self._first)  # a burst of first calls shares one open (one read of rows)

    def publish(self, snapshot: Snapshot | None, identify: bool = True) -> Snapshot | None:
        """Make ``snapshot`` the latest. ``identify``: record its manifest file's e-tag now (one request), to
        tell a re-created catalog apart; our own commit skips it on S3 (the next check records it)."""
        if snapshot is not None and (identify or self._storage.local_disk):
            info = self._storage.file_info(manifest_key(MANIFEST_DIR, snapshot.version, V2))
            snapshot.e_tag = info.e_tag if info is not None else None
        with self._lock:
            self._current = snapshot
        return snapshot

    def committed(self, snapshot: Snapshot) -> Snapshot:
        """Publish a commit of this instance; where only a committer stores rows (an S3 object) they are stored
        by the next :meth:`store_rows`."""
        self.publish(snapshot, identify=False)
        held = snapshot.held is not None or snapshot.source is not None
        # only where a committer has a tier of its own (the S3 object)
        if self._store is not None and any(tier.committer_only for tier in self._store.tiers) and held:
            with self._lock:  # only the newest commit's rows: an older one's would never be read
                self._unstored = snapshot
        return snapshot

    def store_rows(self) -> None:
        """Store the rows of the last commit under its manifest file's e-tag (one listing, one PUT; nothing
        when a newer version exists). Called once the writers' turn is released; never raises."""
        with self._lock:
            snapshot, self._unstored = self._unstored, None
        if snapshot is None or self._store is None:
            return
        try:
            newest = self._list_newest()  # not shared: a listing under way may predate the commit
            if newest is None or newest[0] != snapshot.version or not newest[1]:
                return  # a newer version already: this one's rows would never be read
            snapshot.e_tag = newest[1]
            rows = snapshot.table()  # held, or the fragments other writers added since the last read
            self._store.save(snapshot.version, newest[1], (rows, snapshot.metadata), committed=True)
            snapshot.stored = True
        except Exception as error:  # optional: a failure only costs the next new process a table open
            log.warning("Rows of __manifest version %s not stored: %s", snapshot.version, error)

    def latest(self) -> Snapshot | None:
        """The latest snapshot, checked against storage now; None when the catalog has no ``__manifest``."""
        with self._lock:
            current = self._current
        return self._shared_first() if current is None else self._checked(current)

    def _first(self) -> Snapshot | None:
        """The first snapshot of this instance, or the one an earlier first call published (checked: it may have
        started before a caller waiting on it arrived)."""
        with self._lock:
            current = self._current
        if current is not None:
            return self._checked(current)
        if self._store is not None:
            return self._cold()
        return self.publish(self._open(None))

    def _checked(self, current: Snapshot) -> Snapshot | None:
        """``current`` if it still is the latest version, else the latest opened from it."""
        if self._is_latest(current):
            if self._store is not None and not current.stored and current.held is not None and current.e_tag:
                entry = (current.held.table, current.metadata)
                self._store.save(current.version, current.e_tag, entry, committed=False)
                current.stored = True
            return current
        return self.publish(self._open(current))

    def _cold(self) -> Snapshot | None:
        """The first check of a process on remote storage: the newest manifest file and its e-tag (one
        listing), answered from the rows stored for that very file, else by opening that version."""
        assert self._store is not None
        newest = self._shared_newest()
        if newest is None or not newest[1]:
            return self.publish(self._open(None))
        version, e_tag = newest
        found = self._store.load(version, e_tag, COLUMNS)
        if found is None:
            try:  # the listing named the version: pylance needs no listing of its own, nor a HEAD
                return self.publish(Snapshot.of(self._open_version(version), e_tag, self.check), identify=False)
            except (ValueError, OSError):
                return self.publish(self._open(None))  # gone since (an outside clean-up): open the latest
        rows, metadata = found
        snapshot = Snapshot(
            version, metadata, e_tag, source=rows, check=self.check, opener=self._open_version, stored=True
        )
        return self.publish(snapshot, identify=False)

    def _list_newest(self) -> tuple[int, str | None] | None:
        """The newest V2 manifest's version and e-tag (one ``LIST MaxKeys=1`` on S3), None when there is none."""
        head = self._storage.first_entry(versions_dir(MANIFEST_DIR))
        parsed = parse_manifest_name(head[0]) if head else None
        return (parsed[0], head[1]) if head and parsed and parsed[1] == V2 else None

    def _open_version(self, version: int) -> lance.LanceDataset:
        return lance.dataset(self.uri, version=version, storage_options=self._storage_options)

    def _is_latest(self, snapshot: Snapshot) -> bool:
        if self._storage.private:
            return True  # pylance's memory store is private to the objects of this instance: only we write
        if self._storage.lists_newest_first:
            newest = self._shared_newest()
            return newest is not None and newest[0] == snapshot.version and _same_file(snapshot, newest[1])
        now = time.monotonic()
        if now - snapshot.verified_at > REVALIDATE_AFTER.total_seconds():
            return False
        stamp = self._storage.directory_stamp(versions_dir(MANIFEST_DIR))  # taken before the checks
        if stamp is not None and stamp == snapshot.versions_stamp:
            return True  # nothing added to or removed from _versions/ since the last full check
        if self._storage.file_info(manifest_key(MANIFEST_DIR, snapshot.version + 1, V2)) is not None:
            return False
        info = self._storage.file_info(manifest_key(MANIFEST_DIR, snapshot.version, V2))
        if info is None or not _same_file(snapshot, info.e_tag):
            return False
        if stamp is not None and time.time_ns() - stamp[1] > SETTLED_NANOS:
            snapshot.versions_stamp = stamp  # trusted only once settled: mtimes have a coarse resolution
        return True

    def _open(self, previous: Snapshot | None) -> Snapshot | None:
        """Open the latest version: from the previous snapshot's copy (pylance's cache) when the table only moved
        forward, else from scratch (a re-created catalog must not be read from the cache)."""
        try:
            if previous is not None and self._storage.file_info(manifest_key(MANIFEST_DIR, previous.version, V2)):
                dataset = previous.private()
                dataset.checkout_latest()
                if dataset.version > previous.version:
                    return Snapshot.of(dataset, check=self.check).follows(previous, None)
            dataset = lance.dataset(self.uri, storage_options=self._storage_options)
        except (ValueError, OSError) as error:
            # a 403 ("...Access Key Id you provided does not exist...") is a failure, never "no catalog"
            if is_not_found_error(error):
                return None
            raise
        return Snapshot.of(dataset, check=self.check)


def _same_file(snapshot: Snapshot, e_tag: str | None) -> bool:
    """Whether the version's manifest file is the one the snapshot was made from (the first check records it)."""
    if snapshot.e_tag is None:
        snapshot.e_tag = e_tag
        return True
    return snapshot.e_tag == e_tag
