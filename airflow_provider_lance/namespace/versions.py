"""Table versions (seed 000 CreateTableVersion … BatchDeleteTableVersions, seed 003 commit protocol).

Without table version management, ``_versions/`` is the truth: a version is committed by copying its staged
manifest to the final name with put-if-not-exists. With it, ``__manifest`` is an external manifest store:
a ``table_version`` row (``<table object id>$<version>``) is the commit point, the copy to the final name and
the repointing of the row follow, and any reader that finds a row still pointing at a staged manifest
finishes that work (seed 003, "External Store Reader").
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from lance_namespace import (
    ConcurrentModificationError,
    CreateTableVersionEntry,
    InvalidInputError,
    TableVersion,
    TableVersionNotFoundError,
)

from airflow_provider_lance.namespace import identifiers as ids
from airflow_provider_lance.namespace.manifest import (
    TABLE_VERSION,
    WRITER_FLAG_TABLE_VERSIONS,
    WRITER_FLAGS_KEY,
    DuplicateObjectError,
    ManifestRow,
    ManifestTable,
    sql_string,
)
from airflow_provider_lance.namespace.storage import FileInfo, Storage

if TYPE_CHECKING:
    from airflow_provider_lance.namespace.namespace import Table

VERSIONS_DIR = "_versions"
U64_MAX = 2**64 - 1
V1, V2 = "V1", "V2"
_FINAL = re.compile(r"^(\d+)\.manifest$")
_STAGED = re.compile(r"^(\d+)\.manifest-([A-Za-z0-9_.-]+)$")
# Per-entry file requests of a batch run concurrently on remote stores (each waits on the network with the
# GIL released); on local disk and in memory a request takes microseconds, less than a hand-off to a thread.
IO_WORKERS = 16
_LOCAL_SCHEMES = frozenset({"file", "memory"})
_POOL_LOCK = threading.Lock()
_POOL: tuple[int, ThreadPoolExecutor] | None = None  # (pid, pool): a forked child makes its own

_T = TypeVar("_T")
_R = TypeVar("_R")


# -- naming (seed 003, "Manifest Naming Schemes") ------------------------------------------------------------
def manifest_name(version: int, scheme: str) -> str:
    return f"{U64_MAX - version:020d}.manifest" if scheme == V2 else f"{version}.manifest"


def parse_manifest_name(name: str) -> tuple[int, str] | None:
    """(version, scheme) of a final manifest name; V2 names have 20 digits."""
    match = _FINAL.match(name)
    if not match:
        return None
    digits = match.group(1)
    return (U64_MAX - int(digits), V2) if len(digits) == 20 else (int(digits), V1)


@dataclass(frozen=True)
class _Entry:
    """A validated version to commit."""

    table: Table
    version: int
    scheme: str
    staged_key: str
    final_key: str
    metadata: dict[str, str] | None

    @property
    def object_id(self) -> str:
        return ids.version_object_id(self.table.parts, self.version)


class TableVersions:
    """Version operations over one namespace's storage and manifest table."""

    def __init__(self, storage: Storage, manifest: ManifestTable) -> None:
        self.storage = storage
        self.manifest = manifest

    # -- reading what exists ------------------------------------------------------------------------------
    def _names(self, table: Table) -> list[str]:
        """The names in the table's ``_versions/`` (one listing, without the per-file ``stat`` of a detailed
        local listing)."""
        return self.storage.list_names(f"{table.location}/{VERSIONS_DIR}")

    def _files(self, table: Table) -> dict[int, TableVersion]:
        """Final manifests in ``_versions/`` (one listing)."""
        found: dict[int, TableVersion] = {}
        for name, info in self.storage.list_dir(f"{table.location}/{VERSIONS_DIR}").items():
            parsed = parse_manifest_name(name)
            if parsed is None or info is None:
                continue
            key = f"{table.location}/{VERSIONS_DIR}/{name}"
            found[parsed[0]] = TableVersion(
                version=parsed[0],
                manifest_path=self.storage.object_path(key),
                manifest_size=info.size,
                e_tag=info.e_tag,
                timestamp_millis=info.timestamp_millis,
            )
        return found

    def _rows(self, table: Table) -> dict[int, ManifestRow]:
        return self._rows_of([table])[0]

    def _rows_of(self, tables: Sequence[Table]) -> list[dict[int, ManifestRow]]:
        """Each table's ``table_version`` rows by version, from the manifest's cached rows of the operation's
        version (one in-memory pass for all tables; no Lance scan)."""
        oids = [ids.object_id(table.parts) for table in tables]
        by_parent = self.manifest.children_of(oids, TABLE_VERSION, ids.DELIMITER)
        found: list[dict[int, ManifestRow]] = []
        for oid in oids:
            rows = {}
            for row in by_parent[oid]:
                suffix = row.object_id[len(oid) + len(ids.DELIMITER) :]
                if suffix.isdigit():
                    rows[int(suffix)] = row
            found.append(rows)
        return found

    def _all(self, table: Table, managed: bool) -> dict[int, TableVersion]:
        """Every version: final files, and with management the rows (which win, after synchronisation)."""
        versions = self._files(table)
        if managed:
            for version, row in self._rows(table).items():
                versions[version] = self._synchronize(table, version, row)
        return versions

    def _latest_number(self, table: Table, names: Collection[str], rows: dict[int, ManifestRow]) -> int:
        """The latest version number (0 if none) from the ``_versions/`` names and the table's rows, after
        finishing any row still pointing at a staged manifest (as :meth:`latest` does, without the
        per-file details that only a description needs)."""
        versions = {parsed[0] for name in names if (parsed := parse_manifest_name(name))}
        for version, row in rows.items():
            self._finish(table, version, row)
            versions.add(version)
        return max(versions, default=0)

    def has_manifests(self, table: Table) -> bool:
        """Whether ``_versions/`` holds a final manifest (one listing): a table without is only declared."""
        return any(parse_manifest_name(name) for name in self._names(table))

    def latest(self, table: Table, managed: bool = True) -> TableVersion | None:
        versions = self._all(table, managed)
        return versions[max(versions)] if versions else None

    def _scheme(self, table: Table, names: Collection[str] | None = None) -> str | None:
        """The table's naming scheme, from its existing manifests (a table never mixes schemes)."""
        for name in self._names(table) if names is None else names:
            parsed = parse_manifest_name(name)
            if parsed:
                return parsed[1]
        return None

    # -- seed 003 "External Store Reader": finish a commit that stopped after the row ----------------------
    def _synchronize(self, table: Table, version: int, row: ManifestRow) -> TableVersion:
        return _version_from(version, self._finish(table, version, row))

    def _finish(self, table: Table, version: int, row: ManifestRow) -> dict[str, Any]:
        """The row's metadata, after finishing its commit (copy to the final name, repoint the row) when
        it still points at a staged manifest."""
        meta = row.metadata or {}
        scheme = meta.get("naming_scheme", V2)
        final_key = f"{table.location}/{VERSIONS_DIR}/{manifest_name(version, scheme)}"
        staged_path = meta.get("manifest_path", "")
        if self.storage.key_of(staged_path) != final_key:
            staged_key = self.storage.key_of(staged_path)
            if staged_key is None:
                raise InvalidInputError(f"Corrupt table_version row '{row.object_id}': bad manifest_path")
            meta = self._finalize(staged_key, final_key, meta)
            self.manifest.upsert([ManifestRow(row.object_id, TABLE_VERSION, None, meta)])
        return meta

    def _finalize(self, staged_key: str, final_key: str, meta: dict[str, Any]) -> dict[str, Any]:
        """Copy staged → final (put-if-not-exists; idempotent), remove the staged file, and return the row
        metadata pointing at the final manifest (its path, size and e-tag).

        Several processes may finalize the same version at once (the committer and any reader that found the
        row still staged); the staged file can vanish between the check and the read, when another finalizer
        has already copied it, so a missing staged file falls back to the final one."""
        try:
            created: bool | None = self.storage.copy_if_not_exists(staged_key, final_key)
        except FileNotFoundError:
            created = None  # the staged file is gone: another finalizer has copied it already
        if created is False and self._differs(staged_key, final_key):
            raise ConcurrentModificationError(f"Another manifest already exists at '{final_key}'")
        if created is not None:
            self.storage.delete(staged_key)
        try:
            info = self.storage.info(final_key)
        except FileNotFoundError:
            raise TableVersionNotFoundError(
                f"Neither the staged nor the final manifest exists: '{final_key}'"
            ) from None
        return {
            **meta,
            "manifest_path": self.storage.object_path(final_key),
            "manifest_size": info.size,
            "e_tag": info.e_tag,
        }

    def _differs(self, staged_key: str, final_key: str) -> bool:
        """Whether the final manifest holds other bytes than the staged one (a vanished staged file was
        copied by another finalizer: not a difference)."""
        try:
            return self.storage.read(staged_key) != self.storage.read(final_key)
        except FileNotFoundError:
            return False

    # -- CreateTableVersion / BatchCreateTableVersions --------------------------------------------------------
    def _validate(self, table: Table, entry: CreateTableVersionEntry, names: Collection[str]) -> _Entry:
        """The staged manifest must be inside this table's ``_versions/``, staged (not final), for this
        version; anything else is InvalidInput and changes nothing. ``names``: the table's ``_versions/``."""
        if entry.version < 1:
            raise InvalidInputError(f"Invalid version {entry.version} for '{ids.object_id(table.parts)}'")
        key = self.storage.key_of(entry.manifest_path)
        directory = f"{table.location}/{VERSIONS_DIR}/"
        name = key[len(directory) :] if key and key.startswith(directory) else None
        match = _STAGED.match(name) if name else None
        parsed = parse_manifest_name(f"{match.group(1)}.manifest") if match else None
        if parsed is None or parsed[0] != entry.version:
            raise InvalidInputError(
                f"Invalid manifest_path for '{ids.object_id(table.parts)}' v{entry.version}: it must be a "
                f"staged manifest of that version inside the table's {VERSIONS_DIR}/ directory"
            )
        scheme = parsed[1]
        if entry.naming_scheme and entry.naming_scheme.upper() != scheme:
            raise InvalidInputError(f"naming_scheme {entry.naming_scheme!r} does not match '{name}'")
        existing = self._scheme(table, names)
        if existing and existing != scheme:
            raise InvalidInputError(f"'{ids.object_id(table.parts)}' uses naming scheme {existing}, not {scheme}")
        final_key = directory + manifest_name(entry.version, scheme)
        return _Entry(table, entry.version, scheme, key, final_key, entry.metadata)

    def _each(self, function: Callable[[_T], _R], items: Sequence[_T]) -> list[_R]:
        """``[function(item) for item in items]``, with the calls in a thread pool on a remote store when
        there are several (each call is a few requests that wait on the network). Every call finishes before
        the first failure (in item order) is raised, so no request of the operation outlives it. The calls
        must only touch storage (never the manifest, whose per-operation state is per thread)."""
        if len(items) < 2 or self.storage.scheme in _LOCAL_SCHEMES:
            return [function(item) for item in items]
        futures = [_pool().submit(function, item) for item in items]
        errors = [future.exception() for future in futures]  # waits for all
        for error in errors:
            if error is not None:
                raise error
        return [future.result() for future in futures]

    def create(self, located: Sequence[tuple[Table, CreateTableVersionEntry]], managed: bool) -> list[TableVersion]:
        """Validate every entry (InvalidInput before any write), then commit. One ``_versions/`` listing per
        entry serves both the scheme check and the version check."""
        listings = self._each(self._names, [table for table, _ in located])
        entries = [self._validate(table, entry, names) for (table, entry), names in zip(located, listings, strict=True)]
        if not managed:
            return [self._create_unmanaged(entry) for entry in entries]
        return self._create_managed(entries, listings)

    def _create_unmanaged(self, entry: _Entry) -> TableVersion:
        """Seed 000 without management: staged → final with put-if-not-exists, ``version == latest + 1``,
        idempotent for identical bytes, then the staged file is deleted."""
        oid = ids.object_id(entry.table.parts)
        if not self.storage.exists(entry.staged_key):
            if self.storage.exists(entry.final_key):  # a retry of a commit that already went through
                return self._files(entry.table)[entry.version]
            raise InvalidInputError(f"Staged manifest not found for '{oid}' v{entry.version}")
        files = self._files(entry.table)
        if entry.version in files:
            if self._differs(entry.staged_key, entry.final_key):
                raise ConcurrentModificationError(f"Version {entry.version} of '{oid}' already exists")
        else:
            latest = max(files, default=0)
            if entry.version != latest + 1:
                raise ConcurrentModificationError(
                    f"Version {entry.version} of '{oid}' is not the next version (latest is {latest})"
                )
            if not self.storage.copy_if_not_exists(entry.staged_key, entry.final_key) and self._differs(
                entry.staged_key, entry.final_key
            ):
                raise ConcurrentModificationError(f"Version {entry.version} of '{oid}' was committed concurrently")
        self.storage.delete(entry.staged_key)
        info = self.storage.info(entry.final_key)
        return TableVersion(
            version=entry.version,
            manifest_path=self.storage.object_path(entry.final_key),
            manifest_size=info.size,
            e_tag=info.e_tag,
            timestamp_millis=info.timestamp_millis,
        )

    def _create_managed(self, entries: list[_Entry], listings: list[list[str]]) -> list[TableVersion]:
        """Seed 000/003 with management: (1) the manifests are staged by the caller; (2) all rows in one
        merge-insert, the commit point; (3) copy each staged manifest to its final name; (4) repoint rows
        (one upsert for all). The per-entry file requests of (1) and (3) run concurrently on remote stores."""
        now = int(time.time() * 1000)
        infos = self._each(self._staged_info, entries)  # reads only; checked below in entry order
        all_rows = self._rows_of([entry.table for entry in entries])
        rows = []
        for entry, names, table_rows, info in zip(entries, listings, all_rows, infos, strict=True):
            oid = ids.object_id(entry.table.parts)
            # The version check comes first: a retry of a batch that was committed (its staged files are
            # gone by now) must hear "version exists" (14), not "staged manifest not found" (13).
            latest_version = self._latest_number(entry.table, names, table_rows)
            if entry.version != latest_version + 1:
                raise ConcurrentModificationError(
                    f"Version {entry.version} of '{oid}' is not the next version (latest is {latest_version})"
                )
            if info is None:
                raise InvalidInputError(f"Staged manifest not found for '{oid}' v{entry.version}")
            metadata = {
                "manifest_path": self.storage.object_path(entry.staged_key),
                "manifest_size": info.size,
                "e_tag": info.e_tag,
                "naming_scheme": entry.scheme,
                "timestamp_millis": now,
            }
            if entry.metadata:
                metadata["metadata"] = dict(entry.metadata)
            rows.append(ManifestRow(entry.object_id, TABLE_VERSION, None, metadata))
        self._mark_writer_flag()
        try:
            self.manifest.insert(rows)
        except DuplicateObjectError as error:
            table = (error.object_id or "").rpartition(ids.DELIMITER)[0] or "a table in the batch"
            raise ConcurrentModificationError(
                f"Version already exists for table '{table}' ({error.object_id}); nothing was committed"
            ) from None
        finalized_metadata = self._each(
            lambda pair: self._finalize(pair[0].staged_key, pair[0].final_key, pair[1].metadata or {}),
            list(zip(entries, rows, strict=True)),
        )
        finalized = [
            ManifestRow(row.object_id, TABLE_VERSION, None, metadata)
            for row, metadata in zip(rows, finalized_metadata, strict=True)
        ]
        self.manifest.upsert(finalized)
        return [_version_from(entry.version, row.metadata or {}) for entry, row in zip(entries, finalized, strict=True)]

    def _staged_info(self, entry: _Entry) -> FileInfo | None:
        """The staged manifest's size and e-tag (one head request), None when it does not exist."""
        try:
            return self.storage.info(entry.staged_key)
        except FileNotFoundError:
            return None

    def _mark_writer_flag(self) -> None:
        """Set writer bit 1 before the first ``table_version`` row, so older writers refuse cleanly."""
        metadata = self.manifest.metadata()
        flags = int(metadata.get(WRITER_FLAGS_KEY, "0") or "0")
        if not flags & WRITER_FLAG_TABLE_VERSIONS:
            self.manifest.update_metadata({WRITER_FLAGS_KEY: str(flags | WRITER_FLAG_TABLE_VERSIONS)})

    # -- ListTableVersions / DescribeTableVersion ------------------------------------------------------------
    def list(
        self, table: Table, managed: bool, descending: bool, page_token: str | None, limit: int | None
    ) -> tuple[list[TableVersion], str | None]:
        if limit is not None and limit < 0:
            raise InvalidInputError(f"Invalid limit {limit}: it must not be negative")
        if page_token is not None and not page_token.isdigit():
            raise InvalidInputError(f"Invalid page_token {page_token!r}: expected a version number")
        versions = self._all(table, managed)
        ordered = sorted(versions, reverse=descending)
        if page_token is not None:
            after = int(page_token)
            ordered = [v for v in ordered if (v < after if descending else v > after)]
        if limit is not None and len(ordered) > limit:
            ordered = ordered[:limit]
            token = str(ordered[-1]) if ordered else None
        else:
            token = None
        return [versions[v] for v in ordered], token

    def describe(self, table: Table, version: int | None, managed: bool) -> TableVersion:
        oid = ids.object_id(table.parts)
        if managed:
            row = None
            if version is not None:
                row = self.manifest.get(ids.version_object_id(table.parts, version))
            if row is not None:
                return self._synchronize(table, version, row)
        versions = self._all(table, managed) if version is None or managed else self._files(table)
        if version is None:
            if not versions:
                raise TableVersionNotFoundError(f"Table '{oid}' has no versions")
            return versions[max(versions)]
        if version not in versions:
            raise TableVersionNotFoundError(f"Table version not found: '{oid}' v{version}")
        return versions[version]

    # -- BatchDeleteTableVersions -----------------------------------------------------------------------------
    def delete(self, table: Table, ranges: Sequence[tuple[int, int]], managed: bool, ignore_missing: bool) -> int:
        """Delete the manifests of every version in the ranges (start inclusive, end exclusive, a negative
        end = through the latest), then their rows. Missing versions: TableVersionNotFound unless ignored."""
        files = self._files(table)
        rows = self._rows(table) if managed else {}
        existing = set(files) | set(rows)
        latest = max(existing, default=0)
        wanted: set[int] = set()
        for start, end in ranges:
            if start < 0:
                raise InvalidInputError(f"Invalid version range start {start}")
            wanted.update(range(start, latest + 1 if end < 0 else end))
        missing = wanted - existing
        if missing and not ignore_missing:
            raise TableVersionNotFoundError(
                f"Table versions not found for '{ids.object_id(table.parts)}': {sorted(missing)[:10]}"
            )
        targets = sorted(wanted & existing)
        scheme = self._scheme(table) or V2
        for version in targets:
            self.storage.delete(f"{table.location}/{VERSIONS_DIR}/{manifest_name(version, scheme)}")
        doomed = [ids.version_object_id(table.parts, v) for v in targets if v in rows]
        if doomed:
            self.manifest.delete(
                f"object_type = '{TABLE_VERSION}' AND object_id IN ({', '.join(sql_string(o) for o in doomed)})"
            )
        return len(targets)


def _pool() -> ThreadPoolExecutor:
    """The process's pool for concurrent file requests (a fresh one after a fork: a forked child has none of
    its parent's threads)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL[0] != os.getpid():
            _POOL = (os.getpid(), ThreadPoolExecutor(max_workers=IO_WORKERS, thread_name_prefix="lance-namespace-io"))
        return _POOL[1]


def _version_from(version: int, meta: dict) -> TableVersion:
    return TableVersion(
        version=version,
        manifest_path=meta["manifest_path"],
        manifest_size=meta.get("manifest_size"),
        e_tag=meta.get("e_tag"),
        timestamp_millis=meta.get("timestamp_millis"),
        metadata=meta.get("metadata"),
    )
