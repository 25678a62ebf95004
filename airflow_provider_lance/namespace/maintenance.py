"""Maintenance of ``__manifest``: compaction and clean-up of old versions.

Every catalog write is one Lance commit that adds a fragment (a data file), often a deletion file, a
transaction file and a manifest version. Left alone, reads slow down with the number of fragments and every
``checkout_latest`` lists an ever longer ``_versions/``. Two Lance operations undo that:

* **compaction** (``ManifestTable.compact``) rewrites every row into one data file and materialises
  deletions, as one copy-on-write commit taken in turn with the instance's writers: readers of older versions
  keep reading the files those versions name, and a concurrent writer of another process either commits first
  (the compaction retries on its version) or retries on the compacted one. A large catalog keeps its large
  fragments (``LARGE_FRAGMENT_ROWS``) and rewrites only the small ones since, so that compaction costs the
  same at a million tables as at a thousand;
* **clean-up** (``cleanup_old_versions``) deletes manifests, transactions and data files that only old
  versions use. It never removes the latest version, nor any version that was still the latest within the
  time window (``DEFAULT_KEEP``, 10 minutes; see :func:`removable_versions`), so a running reader keeps the
  version it checked out: an operation of this engine holds one for milliseconds, and a pylance reader
  that holds an old version longer than the window is told so by a clear "not found" error, never by
  wrong data. The rows objects of older versions (rows_object.py, S3) go at every maintenance run: only
  the newest version's is ever read, and a reader that misses one opens the table instead.

Both run automatically: :func:`maybe_maintain` is called by ``ManifestTable`` after every commit (one cheap
check on the in-memory manifest: the new version number) with the namespace's :class:`MaintenancePolicy`
(properties ``manifest_maintenance_every``, ``manifest_maintenance_fragments``, ``manifest_cleanup_every``).
Exactly one writer, whichever process, commits a given version, so each threshold fires once.
:func:`maintain_manifest` does the same on demand for the Airflow layer (an operator or a maintenance DAG)
and reports what it did.
"""

from __future__ import annotations

import copy
import itertools
import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from airflow_provider_lance.namespace import fragments, rows_object
from airflow_provider_lance.namespace.config import MaintenancePolicy
from airflow_provider_lance.namespace.identifiers import MANIFEST_DIR, parse_manifest_name, versions_dir
from airflow_provider_lance.namespace.snapshots import REVALIDATE_AFTER_SECONDS
from airflow_provider_lance.namespace.storage import Storage

if TYPE_CHECKING:
    import lance
    from lance.fragment import FragmentMetadata

log = logging.getLogger(__name__)

DEFAULT_KEEP = timedelta(minutes=10)
# Readers (snapshots.py) trust "no manifest N+1 => N is the latest" only for this long after they last saw N
# as the latest; a clean-up window shorter than this could remove N+1 under them, so none is accepted.
REVALIDATE_AFTER = timedelta(seconds=REVALIDATE_AFTER_SECONDS)
COMPACTION_RETRIES = 2
# Compaction rewrites fragments below this many rows (and those with DELETED_SHARE of their rows deleted); a
# fragment this large holds rows of many commits already, and rewriting it on every few commits costs more
# than the reads of one more fragment save.
LARGE_FRAGMENT_ROWS = 65_536
DELETED_SHARE = 0.1
_LOCK = threading.Lock()
_RUNNING: set[str] = set()  # manifest URIs being maintained by this process


def compact(manifest: _Manifest, retries: int | None = None) -> dict[str, int]:
    """Rewrite the rows of ``__manifest`` into one data file, as one commit taken in turn with the instance's
    writers; returns the fragments before and after. ``retries``: how often a lost race is retried (default:
    the namespace's ``commit_retries``).

    Every row is rewritten (``fragments.commit_rewrite``) while the table has no large fragment or has scalar
    indices (the reference builds them; an Overwrite drops them, as the reference's own rewrite does). Else the
    large fragments stay as they are and only the others are rewritten (``fragments.commit_compaction``): at a
    million tables a rewrite of every row took 270 ms on every 8th commit."""
    options = manifest.storage_options or None
    attempts: list[list[FragmentMetadata]] = []

    def write(snapshot: Any, dataset: lance.LanceDataset) -> tuple[lance.LanceDataset, dict[str, int]]:
        present = dataset.get_fragments()
        if attempts and fragments.holds(dataset, attempts[-1]):
            # the last attempt landed though its commit reported a conflict
            return dataset, _counts(len(present), 0, 0)
        kept: list[lance.LanceFragment] = []
        small: list[lance.LanceFragment] = []
        for fragment in present:
            (kept if _settled(fragment) else small).append(fragment)
        if not kept or dataset.describe_indices():
            # the version's rows are in memory (read incrementally): no scan, so the race window is one write
            attempts.append(fragments.write_rows(dataset, snapshot.table().cast(dataset.schema), options))
            committed = fragments.commit_rewrite(dataset, attempts[-1], options)
            return committed, _counts(len(present), len(present), len(attempts[-1]))
        if len(small) < 2:
            return dataset, _counts(len(present), 0, 0)  # nothing to merge: no commit
        # the small fragments hold the rows of the commits since the last compaction: a short read
        attempts.append(fragments.write_rows(dataset, dataset.scanner(fragments=small).to_table(), options))
        old = [fragment.metadata for fragment in small]
        committed = fragments.commit_compaction(dataset, old, attempts[-1], options)
        return committed, _counts(len(present), len(small), len(attempts[-1]))

    try:
        return manifest.commit(write, lambda index: index, maintain=False, retries=retries)
    finally:
        for refused in attempts[:-1]:  # each lost to a conflict (the next attempt did not find it landed)
            fragments.delete_files(manifest.storage, MANIFEST_DIR, refused)


def rewrite_due(dataset: lance.LanceDataset, policy: MaintenancePolicy) -> bool:
    """Whether an append on top of ``dataset`` would be followed at once by a compaction that rewrites every
    row (:func:`maybe_maintain` at its version, :func:`compact` without large fragments or with indices). Such
    a commit writes every row itself, as one Overwrite, instead of an append and then a rewrite: one commit
    instead of two, on the path every catalog write takes (group_commit.InsertGroup)."""
    version = dataset.version + 1
    if policy.check_every <= 0 or version % policy.check_every:
        return False
    present = dataset.get_fragments()
    if len(present) + 1 < max(policy.fragment_threshold + 1, 2):
        return False
    return not any(_settled(fragment) for fragment in present) or bool(dataset.describe_indices())


def _counts(before: int, removed: int, added: int) -> dict[str, int]:
    return {
        "fragments_before": before,
        "fragments_after": before - removed + added,
        "fragments_removed": removed,
        "fragments_added": added,
    }


def _settled(fragment: lance.LanceFragment) -> bool:
    """A fragment compaction leaves alone: large, and with fewer than ``DELETED_SHARE`` of its rows deleted."""
    physical = fragment.metadata.physical_rows or 0
    if physical < LARGE_FRAGMENT_ROWS:
        return False
    deletion = fragment.metadata.deletion_file
    if deletion is None:
        return True
    # the manifest records the count (no read of the deletion file); older writers may not have
    deleted = deletion.num_deleted_rows
    if deleted is None:
        deleted = physical - fragment.count_rows()
    return deleted < DELETED_SHARE * physical


def _compact(manifest: _Manifest, result: dict[str, Any], retries: int | None) -> None:
    try:
        outcome = compact(manifest, retries)
    except Exception as error:  # lost every race with writers: skip, retried at the next threshold
        result["compaction_skipped"] = f"{type(error).__name__}: {error}"
        log.info("__manifest compaction skipped: %s", error)
        return
    result.update(outcome)
    result["compacted"] = outcome["fragments_before"] > outcome["fragments_after"]


def removable_versions(storage: Storage, dataset: lance.LanceDataset, keep: timedelta) -> list[int]:
    """Versions superseded more than ``keep`` ago. A reader holds the version that was the latest when it
    checked out, so a version is safe to remove only once its *successor* is older than the window (Lance's
    own ``older_than`` looks at the version's own age, which can remove a version that was the latest a
    moment ago). The latest version has no successor and is never returned."""
    committed = _commit_times(storage, dataset)
    now = datetime.now(UTC)
    return [current for (current, _), (_, stamp) in itertools.pairwise(committed) if now - stamp > keep]


def _commit_times(storage: Storage, dataset: lance.LanceDataset) -> list[tuple[int, datetime]]:
    """(version, commit time) of every version of ``__manifest``, oldest first: one listing of ``_versions/``
    with each manifest's modification time. ``dataset.versions()`` reads every manifest for its timestamp (one
    read per version, 40 ms for 300 local versions); only pylance's memory store, which fsspec cannot list,
    needs it."""
    if storage.private:
        listed = [(int(item["version"]), item["timestamp"]) for item in dataset.versions()]
        return sorted((version, stamp.astimezone(UTC)) for version, stamp in listed)
    times = []
    for name, info in storage.list_dir(versions_dir(MANIFEST_DIR)).items():
        parsed = parse_manifest_name(name)
        if parsed is not None and info is not None and info.timestamp_millis is not None:
            times.append((parsed[0], datetime.fromtimestamp(info.timestamp_millis / 1000, UTC)))
    return sorted(times)


def _cleanup(storage: Storage, dataset: lance.LanceDataset, keep: timedelta, result: dict[str, Any]) -> None:
    try:
        removable = removable_versions(storage, dataset, keep)
        if not removable:
            return
        stats = dataset.cleanup_old_versions(
            versions=removable, delete_unverified=False, error_if_tagged_old_versions=False
        )
    except (OSError, ValueError, RuntimeError) as error:
        result["cleanup_skipped"] = f"{type(error).__name__}: {error}"
        log.info("__manifest clean-up skipped: %s", error)
        return
    result["versions_removed"] = stats.old_versions
    result["bytes_removed"] = stats.bytes_removed


def _prune_rows_objects(storage: Storage, version: int, result: dict[str, Any]) -> None:
    try:
        result["rows_objects_removed"] = rows_object.prune(storage, version)
    except (OSError, ValueError) as error:
        log.info("__manifest rows objects not pruned: %s", error)


def run(
    manifest: _Manifest,
    *,
    compact: bool = True,
    cleanup: bool = True,
    keep: timedelta = DEFAULT_KEEP,
    min_fragments: int = 2,
    retries: int | None = None,
) -> dict[str, Any]:
    """Compact (when the table has at least ``min_fragments`` fragments) and clean up versions older than
    ``keep`` on ``manifest``'s latest version; returns what was done. ``retries``: of a compaction that loses
    a race with writers (default: the namespace's ``commit_retries``)."""
    if cleanup and keep < REVALIDATE_AFTER:
        raise ValueError(
            f"The clean-up window must be at least {REVALIDATE_AFTER} (readers rely on recent versions staying "
            "in place)"
        )
    started = time.perf_counter()
    dataset = manifest.latest()
    if dataset is None:
        return {"skipped": "the catalog has no __manifest yet", "compacted": False, "versions_removed": 0}
    result: dict[str, Any] = {"version_before": dataset.version, "compacted": False, "versions_removed": 0}
    fragments = len(dataset.get_fragments())
    if compact and fragments >= max(min_fragments, 2):
        _compact(manifest, result, retries)
    elif compact:
        result["fragments_before"] = result["fragments_after"] = fragments
    dataset = manifest.latest() if result["compacted"] else dataset  # the compaction's version
    if cleanup:
        # a private copy: the published dataset is never mutated
        _cleanup(manifest.storage, copy.copy(dataset), keep, result)
    if manifest.storage.lists_newest_first:  # rows objects exist only there
        _prune_rows_objects(manifest.storage, dataset.version, result)
    result["version_after"] = dataset.version
    result["seconds"] = round(time.perf_counter() - started, 4)
    return result


def maybe_maintain(manifest: _Manifest, version: int, policy: MaintenancePolicy) -> dict[str, Any] | None:
    """The automatic trigger, called after every ``__manifest`` commit. Compaction is checked on every
    ``policy.check_every``-th version (every commit lists every fragment, and a full read reads each); clean-up
    runs on every ``policy.cleanup_every``-th (``checkout_latest`` lists ``_versions/``,
    so its cost grows with the versions). Costs one in-memory version check otherwise; never raises (a write
    has succeeded)."""
    try:
        compact = policy.check_every > 0 and version % policy.check_every == 0
        cleanup = policy.cleanup_every > 0 and version % policy.cleanup_every == 0
        if not (compact or cleanup):
            return None
        uri = manifest.uri
        with _LOCK:
            if uri in _RUNNING:
                return None
            _RUNNING.add(uri)
        try:
            # optional work: after two lost races it waits for the next threshold instead of holding up writers
            result = run(
                manifest,
                compact=compact,
                cleanup=cleanup,
                keep=policy.keep,
                min_fragments=policy.fragment_threshold + 1,
                retries=COMPACTION_RETRIES,
            )
        finally:
            with _LOCK:
                _RUNNING.discard(uri)
        log.debug("__manifest maintenance at version %s: %s", version, result)
        return result
    except Exception as error:  # maintenance must never fail the write that triggered it
        log.warning("__manifest maintenance failed (the write itself succeeded): %s", error)
        return None


class _ManifestOwner(Protocol):
    """What :func:`maintain_manifest` needs of a namespace: its ``__manifest`` table."""

    @property
    def manifest(self) -> _Manifest: ...


class _Manifest(Protocol):
    uri: str
    storage: Storage
    storage_options: dict[str, str]

    def latest(self) -> lance.LanceDataset | None: ...

    def commit(
        self, write: Callable[..., Any], change: Callable[..., Any] | None, *, maintain: bool, retries: int | None
    ) -> Any: ...


def maintain_manifest(
    namespace: _ManifestOwner,
    *,
    compact: bool = True,
    cleanup: bool = True,
    older_than: timedelta = DEFAULT_KEEP,
    min_fragments: int = 2,
) -> dict[str, Any]:
    """Compact ``__manifest`` and remove its versions older than ``older_than`` (never the latest, never one
    inside the window that running readers may use). Safe while other processes read and write.

    :param namespace: an ``airflow_provider_lance.namespace.DirectoryNamespace``.
    :param compact: rewrite small fragments into one (when there are at least ``min_fragments``).
    :param cleanup: delete the files of versions older than ``older_than``.
    :param older_than: the window of versions kept for running readers (default 10 minutes, at least
        ``REVALIDATE_AFTER``).
    :return: a JSON-able dict: ``compacted``, ``fragments_before/after``, ``versions_removed``,
        ``bytes_removed``, ``rows_objects_removed`` (S3), ``version_before/after``, ``seconds``, and ``*_skipped``
        reasons; ``{"skipped": ...}`` when the catalog has no ``__manifest`` yet.
    """
    return run(namespace.manifest, compact=compact, cleanup=cleanup, keep=older_than, min_fragments=min_fragments)
