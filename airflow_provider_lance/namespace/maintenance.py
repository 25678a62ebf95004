"""Maintenance of ``__manifest``: compaction and clean-up of old versions.

Every catalog write adds a fragment, often a deletion file, a transaction file and a manifest version; left
alone, reads slow down with the fragments and ``checkout_latest`` lists an ever longer ``_versions/``.

* **Compaction** (:func:`compact`) rewrites fragments as one copy-on-write commit in the writers' turn: readers
  of older versions keep their files, a concurrent writer commits first or retries on the compacted version.
  Large fragments stay, so compaction costs the same at a million tables as at a thousand.
* **Clean-up** (``cleanup_old_versions``) never removes the latest version nor one that was the latest within
  the window (:func:`removable_versions`): a reader that holds a version longer gets a clear "not found",
  never wrong data. Older versions' rows objects (rows_store.py) go at every run.

:func:`maybe_maintain` runs after every commit with the namespace's :class:`MaintenancePolicy` (one writer
commits a given version, so each threshold fires once); :func:`maintain_manifest` runs on demand for the
Airflow layer and reports what it did.
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

from airflow_provider_lance.namespace import fragments, rows_store
from airflow_provider_lance.namespace.config import MaintenancePolicy
from airflow_provider_lance.namespace.identifiers import MANIFEST_DIR, parse_manifest_name, versions_dir
from airflow_provider_lance.namespace.storage import Storage
from airflow_provider_lance.namespace.tuning import (
    COMPACTION_RETRIES,
    DELETED_SHARE,
    LARGE_FRAGMENT_ROWS,
    REVALIDATE_AFTER,
)

if TYPE_CHECKING:
    import lance
    from lance.fragment import FragmentMetadata

log = logging.getLogger(__name__)

DEFAULT_KEEP = MaintenancePolicy.keep  # the property manifest_cleanup_older_than_seconds's default
_LOCK = threading.Lock()
_RUNNING: set[str] = set()  # manifest URIs being maintained by this process


def compact(manifest: _Manifest, retries: int | None = None) -> dict[str, int]:
    """Rewrite the rows of ``__manifest`` into one data file in the writers' turn; returns the fragments before
    and after. ``retries``: of a lost race (default: ``commit_retries``). Every row is rewritten while the table
    has no large fragment or has scalar indices (which an Overwrite drops, as the reference's rewrite does);
    else only the small fragments (at a million tables a whole rewrite took 270 ms on every 8th commit)."""
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
    row: such a commit is that rewrite instead (one commit instead of two; group_commit.InsertGroup)."""
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
    """Versions superseded more than ``keep`` ago: a reader holds the version that was the latest when it
    checked out, so a version goes only once its *successor* is older than the window (Lance's ``older_than``
    looks at the version's own age). The latest version has no successor and is never returned."""
    committed = _commit_times(storage, dataset)
    now = datetime.now(UTC)
    return [current for (current, _), (_, stamp) in itertools.pairwise(committed) if now - stamp > keep]


def _commit_times(storage: Storage, dataset: lance.LanceDataset) -> list[tuple[int, datetime]]:
    """(version, commit time) of every version of ``__manifest``, oldest first, from one listing of
    ``_versions/`` (``dataset.versions()`` reads every manifest: 40 ms for 300 local versions; only the memory
    store, which fsspec cannot list, needs it)."""
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
        result["rows_objects_removed"] = rows_store.prune(storage, version)
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
    """:func:`maintain_manifest` on a ``__manifest`` table; ``retries``: of a compaction that loses a race."""
    # Readers trust "no manifest N+1 => N is the latest" for REVALIDATE_AFTER (snapshots.py): a shorter window
    # could remove N+1 under them.
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
    """The automatic trigger after every ``__manifest`` commit: compaction on every ``check_every``-th version,
    clean-up on every ``cleanup_every``-th, else nothing. Never raises (the write has succeeded)."""
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
    """Compact ``__manifest`` and remove its versions older than ``older_than`` (never the latest); safe while
    other processes read and write.

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
