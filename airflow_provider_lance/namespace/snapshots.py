"""Snapshots of ``__manifest``: which version is the latest, and the state threads share.

One namespace instance is shared by many threads (Airflow's triggerer, lancedb, Ray). A pylance dataset object
is not safe to use from one thread while another mutates it ("Already mutably borrowed"), and commits,
``checkout_latest`` and compaction all mutate. So a :class:`Snapshot` holds a dataset object that nobody
mutates once it is published: readers share it, and a writer commits on a private copy (``copy.copy``, a
few microseconds) which it then publishes as the next snapshot.

Freshness (every operation sees every commit made before it started, by any process):

* S3: one ``LIST`` with ``MaxKeys=1`` of ``__manifest/_versions/`` returns the newest manifest (V2 names
  ``u64::MAX - version`` sort newest first) and its e-tag: exact, one request, whatever the history.
* memory: pylance's memory store is not fsspec's and only this instance writes it: the published snapshot is
  the latest.
* local disk: an unchanged ``_versions/`` directory (inode and mtime, once settled) means N is still the
  latest: one ``stat``. Otherwise no manifest N+1 and manifest N unchanged (same inode, mtime, size): two
  more. A catalog deleted and re-created at the same root changes manifest N. The
  one case this misses, an outside clean-up that removes N+1 but keeps N (only possible for a tagged N), is
  bounded: a full listing at least every ``REVALIDATE_AFTER``.
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
import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_lance.namespace.identifiers import (
    MANIFEST_DIR,
    V2,
    manifest_key,
    parse_manifest_name,
    versions_dir,
)
from airflow_provider_lance.namespace.row_index import SORT_AFTER, RowIndex
from airflow_provider_lance.namespace.rows_cache import RowsCache
from airflow_provider_lance.namespace.rows_object import RowsObjects
from airflow_provider_lance.namespace.shared_call import SharedCall
from airflow_provider_lance.namespace.storage import Storage, is_not_found_error

log = logging.getLogger(__name__)

# Local and memory stores: the longest a "no manifest N+1" answer is trusted without a full listing.
REVALIDATE_AFTER_SECONDS = 120.0
# A directory mtime is trusted as a "nothing changed" stamp only once it is this old: file system timestamps
# have a coarse resolution, so a change within the same tick could leave the same mtime.
_SETTLED_NANOS = 2_000_000_000
# Rows per batch of a full read: few chunks, so that deriving the next version's rows stays cheap (every derived
# table lists every chunk), and no slower to read than Lance's default (8,192).
_SCAN_BATCH_ROWS = 1 << 17
# Every column of ``__manifest``: the cached rows are a whole version, which a compaction writes back as is.
COLUMNS = ["object_id", "object_type", "location", "metadata", "base_objects"]
# A version of at least this many rows that nobody read yet answers its first lookups by id with a filtered
# pylance scan (the ids column, then only the matching rows: ~25 ms at 2,000,000 rows, where a whole read
# costs ~100 ms and holds ~100 MB): a process that asks a few questions (a sensor's poke, a task) never
# reads the catalog whole. Smaller versions are read whole at once (a few milliseconds).
POINT_READ_ROWS = 1 << 16
# Point reads before the version is read whole: the whole read costs about as much as four of them.
POINT_READS = 4


@dataclass
class Snapshot:
    """One version of ``__manifest`` as this process saw it. ``dataset`` is never mutated (take a private
    copy to write); a snapshot answered from the rows cache opens it only when something needs it (a write, a
    filtered query). Its rows are read and indexed once, on first use (:meth:`index`)."""

    version: int
    metadata: dict[str, str]  # the table metadata (feature flags, table version management)
    e_tag: str | None  # of the version's manifest file; None until first checked
    versions_stamp: tuple[int, int] | None = None  # local disk: (inode, mtime) of _versions/ when last checked
    verified_at: float = field(default_factory=time.monotonic)
    rows: pa.Table | None = None  # every row (in no particular order), once read or when handed in
    row_index: RowIndex | None = None  # the rows indexed by object id (``rows`` is its table)
    # fragment id -> (data files, deletion file) of the version's fragments, once computed
    fragments: dict[int, FragmentKey] | None = None
    base: Snapshot | None = None  # an earlier version whose rows this one may extend (dropped once read)
    opener: Callable[[int], lance.LanceDataset] | None = None  # opens ``version`` when no dataset is held
    cached: bool = False  # the rows are in the rows cache
    point_reads: int = 0  # lookups answered by a filtered scan so far (see POINT_READS)
    _dataset: lance.LanceDataset | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _rows_lock: threading.Lock = field(default_factory=threading.Lock)  # one thread reads and indexes the rows

    @classmethod
    def of(cls, dataset: lance.LanceDataset, e_tag: str | None = None) -> Snapshot:
        return cls(dataset.version, dict(dataset.metadata), e_tag, _dataset=dataset)

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

    def table(self) -> pa.Table:
        """Every row (read once per version)."""
        return self.index().table

    def index(self, ordered: bool = False) -> RowIndex:
        """Every row indexed by object id (row_index.py), read once per version. Rows read whole are sorted
        once they have been scanned ``SORT_AFTER`` times, or now when the caller walks ids in order
        (``ordered``: a listing)."""
        index = self.row_index
        if index is None or (index.unsorted and (ordered or index.scans >= SORT_AFTER)):
            with self._rows_lock:
                index = self._read() if self.row_index is None else self.row_index
                if index.unsorted and (ordered or index.scans >= SORT_AFTER):
                    index = index.merged()
                    pa.default_memory_pool().release_unused()  # the sort's scratch space: as large as the ids
                self.set_index(index)
        return index

    def rows_by_id(self, object_ids: list[str]) -> dict[str, dict[str, Any]]:
        """The rows (as Arrow's Python dicts) of the ids that exist, in the order asked: from the index, or by a
        point read while the version is large and unread (``POINT_READ_ROWS``, ``POINT_READS``)."""
        if not object_ids:
            return {}
        if self.row_index is None and self._reads_by_point():
            table = self.dataset.to_table(columns=COLUMNS, filter=pc.field("object_id").isin(object_ids))
            found = {row["object_id"]: row for row in table.to_pylist()}
            return {oid: found[oid] for oid in object_ids if oid in found}
        return self.index().rows(object_ids)

    def _reads_by_point(self) -> bool:
        """Whether a lookup should scan for its ids instead of reading every row (and count it): not when the
        rows were handed in or extend a version already read (cheap), nor once the point reads have cost a
        whole read."""
        if self.rows is not None or self.base is not None or self.point_reads >= POINT_READS:
            return False
        if self.dataset.count_rows() < POINT_READ_ROWS:  # from the fragments' row counts: no read
            return False
        with self._lock:  # a burst of first lookups (a server starting) makes at most POINT_READS of them
            self.point_reads += 1
            return self.point_reads <= POINT_READS

    def set_index(self, index: RowIndex) -> None:
        """Publish the rows (index first: a thread that sees ``rows`` finds them indexed)."""
        self.row_index = index
        self.rows = index.table

    def _read(self) -> RowIndex:
        """The rows handed in, else only the fragments added since the base version when that is all that
        changed (the usual step between versions: other writers' inserts), else one full scan."""
        if self.rows is not None:
            return RowIndex.of(self.rows)
        base, self.base = self.base, None
        current = self.dataset.get_fragments()
        keys = fragment_keys(current)
        known = base.fragment_keys() if base is not None and base.rows is not None else None
        if base is not None and known is not None and all(keys.get(number) == key for number, key in known.items()):
            added = [fragment for fragment in current if fragment.fragment_id not in known]
            index = base.index()
            if added:
                index = index.appended(self.dataset.scanner(columns=COLUMNS, fragments=added).to_table())
        else:
            index = RowIndex.of(self.dataset.to_table(columns=COLUMNS, batch_size=_SCAN_BATCH_ROWS))
        self.fragments = keys
        return index

    def fragment_keys(self) -> dict[int, FragmentKey] | None:
        """The keys of the fragments ``rows`` hold (None when unknown without opening the table)."""
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
    """The latest published snapshot of one ``__manifest`` and how to check that it still is the latest.

    :param storage: the namespace storage.
    :param storage_options: what pylance opens the table with.
    :param cache: this machine's rows cache (remote catalogs).
    :param objects: the rows objects next to the manifest versions (S3).
    """

    def __init__(
        self,
        storage: Storage,
        storage_options: dict[str, str],
        cache: RowsCache | None = None,
        objects: RowsObjects | None = None,
    ) -> None:
        self.uri = storage.uri(MANIFEST_DIR)
        self._storage = storage
        self._storage_options = storage_options or None
        self._cache = cache
        self._objects = objects
        self._lock = threading.Lock()
        self._current: Snapshot | None = None
        self._unstored: Snapshot | None = None  # the last commit whose rows are not stored yet
        self._shared_newest = SharedCall(self._list_newest)  # concurrent checks share a listing
        self._shared_first = SharedCall(self._first)  # a burst of first calls shares one open (one read of rows)

    def publish(self, snapshot: Snapshot | None, identify: bool = True) -> Snapshot | None:
        """Make ``snapshot`` the latest. ``identify``: record its manifest file's e-tag now (one stat or HEAD),
        so that a catalog re-created with as many versions is told apart; a commit of our own skips the HEAD
        on S3 (the next check records it)."""
        if snapshot is not None and (identify or self._storage.local_disk):
            info = self._storage.file_info(manifest_key(MANIFEST_DIR, snapshot.version, V2))
            snapshot.e_tag = info.e_tag if info is not None else None
        with self._lock:
            self._current = snapshot
        return snapshot

    def committed(self, snapshot: Snapshot) -> Snapshot:
        """Publish a commit of this instance; on S3 its rows are stored by the next :meth:`store_rows`."""
        self.publish(snapshot, identify=False)
        if self._objects is not None and (snapshot.rows is not None or snapshot.base is not None):
            with self._lock:  # only the newest commit's rows: an older one's object would never be read
                self._unstored = snapshot
        return snapshot

    def store_rows(self) -> None:
        """Store the rows of the last commit where a new process looks first: the rows object next to its
        manifest and this machine's cache, under the manifest file's e-tag (one ``LIST MaxKeys=1``, then one PUT;
        nothing when the listing names a newer version). Called once the writers' turn is released (two
        requests that other writers need not wait for). Never raises: the commit has landed."""
        with self._lock:
            snapshot, self._unstored = self._unstored, None
        if snapshot is None or self._objects is None:
            return
        try:
            newest = self._list_newest()  # not shared: a listing under way may predate the commit
            if newest is None or newest[0] != snapshot.version or not newest[1]:
                return  # a newer version already: this one's object would never be read
            snapshot.e_tag = newest[1]
            rows = snapshot.table()  # in memory, or the fragments other writers added since the last read
            self._objects.save(snapshot.version, newest[1], rows, snapshot.metadata)
            if self._cache is not None:
                self._cache.save(snapshot.version, newest[1], rows, snapshot.metadata)
                snapshot.cached = True
        except Exception as error:  # an optional object: a failure only costs the next new process a table open
            log.warning("Rows object of __manifest version %s not written: %s", snapshot.version, error)

    def latest(self) -> Snapshot | None:
        """The latest snapshot, checked against storage now; None when the catalog has no ``__manifest``."""
        with self._lock:
            current = self._current
        return self._shared_first() if current is None else self._checked(current)

    def _first(self) -> Snapshot | None:
        """The first snapshot of this instance, or the one a first call that started earlier published (checked:
        that call may have started before a caller waiting on it arrived)."""
        with self._lock:
            current = self._current
        if current is not None:
            return self._checked(current)
        if self._cache is not None or self._objects is not None:
            return self._cold()
        return self.publish(self._open(None))

    def _checked(self, current: Snapshot) -> Snapshot | None:
        """``current`` if it still is the latest version, else the latest opened from it."""
        if self._is_latest(current):
            if self._cache is not None and not current.cached and current.rows is not None and current.e_tag:
                self._cache.save(current.version, current.e_tag, current.rows, current.metadata)
                current.cached = True
            return current
        return self.publish(self._open(current))

    def _cold(self) -> Snapshot | None:
        """The first check of a process on remote storage: the newest manifest file and its e-tag (one
        listing), answered from this machine's rows cache when an earlier process read that very file, else
        from that file's rows object (one GET), else by opening the table at that version."""
        newest = self._newest()
        if newest is None or not newest[1]:
            return self.publish(self._open(None))
        version, e_tag = newest
        found = self._cache.load(version, e_tag, COLUMNS) if self._cache is not None else None
        cached = found is not None
        if found is None and self._objects is not None:
            found = self._objects.load(version, e_tag, COLUMNS)
            if found is not None and self._cache is not None:
                self._cache.save(version, e_tag, *found)
                cached = True
        if found is None:
            try:  # the listing named the version: pylance needs no listing of its own, nor a HEAD
                return self.publish(Snapshot.of(self._open_version(version), e_tag), identify=False)
            except (ValueError, OSError):
                return self.publish(self._open(None))  # gone since (an outside clean-up): open the latest
        rows, metadata = found
        snapshot = Snapshot(version, metadata, e_tag, rows=rows, opener=self._open_version, cached=cached)
        return self.publish(snapshot, identify=False)

    def _newest(self) -> tuple[int, str | None] | None:
        """The newest V2 manifest's version and e-tag, from one ``LIST MaxKeys=1`` on S3 (V2 names sort newest
        first; one listing shared by the threads that ask at the same time); None when there is none."""
        return self._shared_newest()

    def _list_newest(self) -> tuple[int, str | None] | None:
        head = self._storage.first_entry(versions_dir(MANIFEST_DIR))
        parsed = parse_manifest_name(head[0]) if head else None
        return (parsed[0], head[1]) if head and parsed and parsed[1] == V2 else None

    def _open_version(self, version: int) -> lance.LanceDataset:
        return lance.dataset(self.uri, version=version, storage_options=self._storage_options)

    def _is_latest(self, snapshot: Snapshot) -> bool:
        if self._storage.private:
            return True  # pylance's memory store is private to the objects of this instance: only we write
        if self._storage.lists_newest_first:
            newest = self._newest()
            return newest is not None and newest[0] == snapshot.version and _same_file(snapshot, newest[1])
        now = time.monotonic()
        if now - snapshot.verified_at > REVALIDATE_AFTER_SECONDS:
            return False
        stamp = self._storage.directory_stamp(versions_dir(MANIFEST_DIR))  # taken before the checks
        if stamp is not None and stamp == snapshot.versions_stamp:
            return True  # nothing added to or removed from _versions/ since the last full check
        if self._storage.file_info(manifest_key(MANIFEST_DIR, snapshot.version + 1, V2)) is not None:
            return False
        info = self._storage.file_info(manifest_key(MANIFEST_DIR, snapshot.version, V2))
        if info is None or not _same_file(snapshot, info.e_tag):
            return False
        if stamp is not None and time.time_ns() - stamp[1] > _SETTLED_NANOS:
            snapshot.versions_stamp = stamp  # trusted only once settled: mtimes have a coarse resolution
        return True

    def _open(self, previous: Snapshot | None) -> Snapshot | None:
        """Open the latest version: from the previous snapshot's copy (reusing pylance's cache) when the table
        only moved forward, else from scratch (a re-created catalog must not be read from the cache)."""
        try:
            if previous is not None and self._storage.file_info(manifest_key(MANIFEST_DIR, previous.version, V2)):
                dataset = previous.private()
                dataset.checkout_latest()
                if dataset.version > previous.version:
                    forward = Snapshot.of(dataset)
                    forward.base = previous if previous.rows is not None else None
                    return forward
            dataset = lance.dataset(self.uri, storage_options=self._storage_options)
        except (ValueError, OSError) as error:
            # a 403 ("...Access Key Id you provided does not exist...") is a failure, never "no catalog"
            if is_not_found_error(error):
                return None
            raise
        return Snapshot.of(dataset)


def _same_file(snapshot: Snapshot, e_tag: str | None) -> bool:
    """Whether the version's manifest file is the one the snapshot was made from (the first check records
    it)."""
    if snapshot.e_tag is None:
        snapshot.e_tag = e_tag
        return True
    return snapshot.e_tag == e_tag
