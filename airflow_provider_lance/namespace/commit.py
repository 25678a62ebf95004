"""Committing table versions: CreateTableVersion and BatchCreateTableVersions (seed 000), with the commit
protocol of seed 003 (the reader side is in external_reader.py).

Without table version management a version is committed by copying its staged manifest to the final name with
put-if-not-exists, table by table. With it: (1) the caller has staged the manifests; (2) one insert of every
entry's ``table_version`` row is the commit point, all or nothing; (3) each staged manifest is copied to its
final name; (4) the rows are repointed. A crash after (2) is finished by the next reader (external_reader.finish).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import lance_namespace as ln

from airflow_provider_lance.namespace import feature_flags
from airflow_provider_lance.namespace import identifiers as ids
from airflow_provider_lance.namespace.catalog import Catalog, Table
from airflow_provider_lance.namespace.concurrency import map_concurrently
from airflow_provider_lance.namespace.external_reader import defer_repoint, finalize, manifests_differ, repoint
from airflow_provider_lance.namespace.manifest import DuplicateObjectError
from airflow_provider_lance.namespace.manifest_rows import TABLE_VERSION, ManifestRow, version_metadata
from airflow_provider_lance.namespace.storage_errors import is_transient_error
from airflow_provider_lance.namespace.version_lines import (
    file_version,
    is_main,
    locate_line,
    naming_scheme,
    table_version_from,
    version_files,
    version_line,
)
from airflow_provider_lance.namespace.versions import commit_names, latest_number

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class VersionEntry:
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


# -- the operations ---------------------------------------------------------------------------------------
def create_table_version(catalog: Catalog, request: ln.CreateTableVersionRequest) -> ln.CreateTableVersionResponse:
    """CreateTableVersion: commit one staged manifest as the next version of a table."""
    table, managed = locate_line(catalog, request.id, request.branch)
    located = [(table, entry_of(request))]
    return ln.CreateTableVersionResponse(version=_create(catalog, located, managed, not is_main(request.branch))[0])


def entry_of(request: ln.CreateTableVersionRequest) -> ln.CreateTableVersionEntry:
    """The batch entry a CreateTableVersion request describes (the same fields but the request's own)."""
    fields = set(ln.CreateTableVersionEntry.model_fields) & set(ln.CreateTableVersionRequest.model_fields)
    return ln.CreateTableVersionEntry(**{name: getattr(request, name) for name in fields})


def batch_create_table_versions(
    catalog: Catalog, request: ln.BatchCreateTableVersionsRequest
) -> ln.BatchCreateTableVersionsResponse:
    """BatchCreateTableVersions: atomic with table version management; without it, entries are committed one
    by one (not atomic, as the spec says)."""
    if not request.entries:
        raise ln.InvalidInputError("BatchCreateTableVersions needs at least one entry")
    # Every entry's table and parent rows in one lookup; the error is the first offending entry's.
    identifiers: list[list[str] | ln.InvalidInputError] = []
    for entry in request.entries:
        try:
            identifiers.append(ids.validate_identifier(entry.id, "table"))
        except ln.InvalidInputError as error:
            identifiers.append(error)
    valid = [parts for parts in identifiers if not isinstance(parts, ln.InvalidInputError)]
    rows = catalog.rows(*(oid for p in valid for oid in (ids.object_id(p[:-1]), ids.object_id(p))))
    located = []
    for parts, entry in zip(identifiers, request.entries, strict=True):
        if isinstance(parts, ln.InvalidInputError):
            raise parts
        if not is_main(entry.branch):
            # one __manifest transaction covers main-line versions only
            raise ln.UnsupportedOperationError(
                f"BatchCreateTableVersions commits main-line versions, not branch '{entry.branch}'"
            )
        located.append((catalog.find_table(parts, rows=rows), entry))
    keys = [(ids.object_id(entry.id), entry.version) for entry in request.entries]
    if len(set(keys)) != len(keys):
        raise ln.InvalidInputError("BatchCreateTableVersions has the same table version twice")
    return ln.BatchCreateTableVersionsResponse(versions=_create(catalog, located, catalog.managed()))


# -- the protocol -----------------------------------------------------------------------------------------
def _create(
    catalog: Catalog, located: Sequence[tuple[Table, ln.CreateTableVersionEntry]], managed: bool, branch: bool = False
) -> list[ln.TableVersion]:
    """Validate every entry (InvalidInput before any write), then commit. One ``_versions/`` listing per
    entry serves the scheme and the version checks. ``branch``: the entries are of a branch (never managed)."""
    remote = catalog.storage.is_remote
    listings = map_concurrently(lambda table: commit_names(catalog, table, managed), [t for t, _ in located], remote)
    entries = [
        validate_entry(catalog, table, entry, names) for (table, entry), names in zip(located, listings, strict=True)
    ]
    if not managed:
        return [_create_unmanaged(catalog, entry, branch) for entry in entries]
    # seed 003 "External Store Commit", steps (2) to (4) for every entry at once
    rows = version_rows_to_insert(catalog, entries, listings)
    mark_table_versions(catalog)
    try:
        # (2) the commit point; a single version's carries the repoints deferred by earlier ones (step 4)
        catalog.manifest.insert(rows, deferred=len(rows) == 1)
    except DuplicateObjectError as error:
        raise version_conflict(error) from None
    return finish_versions(catalog, entries, rows)


def validate_entry(
    catalog: Catalog, table: Table, entry: ln.CreateTableVersionEntry, names: Sequence[str]
) -> VersionEntry:
    """The staged manifest must be inside this table's ``_versions/``, staged (not final), for this version;
    anything else is InvalidInput and changes nothing. ``names``: the table's ``_versions/``."""
    ids.check_version(entry.version, f"version for '{table.object_id}'")
    key = catalog.storage.key_of(entry.manifest_path)
    directory = ids.versions_dir(table.location) + "/"
    name = key[len(directory) :] if key and key.startswith(directory) else None
    parsed = ids.parse_staged_manifest_name(name) if name else None
    if parsed is None or parsed[0] != entry.version:
        raise ln.InvalidInputError(
            f"Invalid manifest_path for '{table.object_id}' v{entry.version}: it must be a staged manifest of "
            f"that version inside the table's {ids.VERSIONS_DIR}/ directory"
        )
    scheme = parsed[1]
    if entry.naming_scheme and entry.naming_scheme.upper() != scheme:
        raise ln.InvalidInputError(f"naming_scheme {entry.naming_scheme!r} does not match '{name}'")
    existing = naming_scheme(names)
    if existing and existing != scheme:
        raise ln.InvalidInputError(f"'{table.object_id}' uses naming scheme {existing}, not {scheme}")
    final_key = ids.manifest_key(table.location, entry.version, scheme)
    return VersionEntry(table, entry.version, scheme, key or "", final_key, entry.metadata)


def _create_unmanaged(catalog: Catalog, entry: VersionEntry, branch: bool = False) -> ln.TableVersion:
    """Seed 000 without management (and a branch's versions with it): staged → final with put-if-not-exists,
    ``version == latest + 1`` (a branch's first version is the version it was created from), idempotent for
    identical bytes, then the staged file is deleted."""
    storage, oid = catalog.storage, entry.table.object_id
    if not storage.exists(entry.staged_key):
        if storage.exists(entry.final_key):  # a retry of a commit that already went through
            return version_files(catalog, entry.table)[entry.version]
        raise ln.InvalidInputError(f"Staged manifest not found for '{oid}' v{entry.version}")
    files = version_files(catalog, entry.table)
    if entry.version in files:
        if manifests_differ(catalog, entry.staged_key, entry.final_key):
            raise ln.ConcurrentModificationError(f"Version {entry.version} of '{oid}' already exists")
    else:
        latest = max(files, default=0)
        if entry.version != latest + 1 and not (branch and not files):
            raise ln.ConcurrentModificationError(
                f"Version {entry.version} of '{oid}' is not the next version (latest is {latest})"
            )
        if not storage.copy_if_not_exists(entry.staged_key, entry.final_key) and manifests_differ(
            catalog, entry.staged_key, entry.final_key
        ):
            raise ln.ConcurrentModificationError(f"Version {entry.version} of '{oid}' was committed concurrently")
    storage.delete(entry.staged_key)
    return file_version(catalog, entry.version, entry.final_key, storage.info(entry.final_key))


def version_rows_to_insert(
    catalog: Catalog, entries: list[VersionEntry], listings: list[list[str]]
) -> list[ManifestRow]:
    """The ``table_version`` rows of validated entries, each checked to be its table's next version (several
    of one table follow each other in entry order) with its staged manifest in place."""
    storage = catalog.storage
    now = int(time.time() * 1000)
    infos = map_concurrently(lambda entry: storage.file_info(entry.staged_key), entries, storage.is_remote)
    latest_of: dict[str, int] = {}
    rows = []
    for entry, names, info in zip(entries, listings, infos, strict=True):
        oid = entry.table.object_id
        # The version check comes first: a retry of a batch that was committed (its staged files are gone
        # by now) must hear "version exists" (14), not "staged manifest not found" (13).
        if oid not in latest_of:
            latest_of[oid] = latest_number(catalog, entry.table, names, version_line(catalog, entry.table))
        if entry.version != latest_of[oid] + 1:
            raise ln.ConcurrentModificationError(
                f"Version {entry.version} of '{oid}' is not the next version (latest is {latest_of[oid]})"
            )
        if info is None:
            raise ln.InvalidInputError(f"Staged manifest not found for '{oid}' v{entry.version}")
        latest_of[oid] = entry.version
        metadata = version_metadata(
            storage.object_path(entry.staged_key), info.size, info.e_tag, entry.scheme, now, entry.metadata
        )
        rows.append(ManifestRow(entry.object_id, TABLE_VERSION, None, metadata))
    return rows


def mark_table_versions(catalog: Catalog) -> None:
    """Older writers must refuse this catalog cleanly once it holds ``table_version`` rows."""
    flag = feature_flags.with_writer_flag(catalog.manifest.metadata(), feature_flags.WRITER_FLAG_TABLE_VERSIONS)
    if flag:
        catalog.manifest.update_metadata(flag)


def version_conflict(error: DuplicateObjectError) -> ln.ConcurrentModificationError:
    """A ``table_version`` row that exists already: another writer committed that version first."""
    table = (error.object_id or "").rpartition(ids.DELIMITER)[0] or "a table in the batch"
    return ln.ConcurrentModificationError(
        f"Version already exists for table '{table}' ({error.object_id}); nothing was committed"
    )


def finish_versions(catalog: Catalog, entries: list[VersionEntry], rows: list[ManifestRow]) -> list[ln.TableVersion]:
    """Steps (3) and (4) after the commit point: copy each staged manifest to its final name, then repoint the
    rows in one commit; the repoint of a single version rides on the next ``__manifest`` insert of this
    instance instead (``external_reader.defer_repoint``: a row pointing at a staged manifest whose copy is there is a
    committed version to every reader), so that a version costs one ``__manifest`` commit, not two. The
    versions are committed whatever happens here, so a store that stops answering does not fail the operation
    (its caller would believe nothing was committed): a version whose copy failed keeps pointing at its staged
    manifest, which the next engine call touching the table finishes."""
    pairs = list(zip(entries, rows, strict=True))
    finalized_metadata = map_concurrently(
        lambda pair: _finalize_committed(catalog, *pair), pairs, catalog.storage.is_remote
    )
    copied = [
        (row, ManifestRow(row.object_id, TABLE_VERSION, None, metadata))
        for row, metadata in zip(rows, finalized_metadata, strict=True)
        if metadata is not row.metadata
    ]
    if len(rows) == 1 and copied:  # one version: its repoint would double the cost of its commit
        defer_repoint(catalog, [copied[0][0]], [copied[0][1]])
    elif copied:  # a batch: one repoint of all its rows, its cost shared by its entries
        try:
            repoint(catalog, [row for _, row in copied])
        except Exception as error:
            if not is_transient_error(error):
                raise
            log.warning("Committed versions left pointing at their copied manifests (finished later): %s", error)
    return [table_version_from(entry.version, meta) for entry, meta in zip(entries, finalized_metadata, strict=True)]


def _finalize_committed(catalog: Catalog, entry: VersionEntry, row: ManifestRow) -> dict[str, Any]:
    """The committed row's metadata after step (3); the row's own (staged) metadata when the store failed."""
    meta = row.metadata or {}
    try:
        return finalize(catalog, entry.staged_key, entry.final_key, meta)
    except Exception as error:
        if not is_transient_error(error):
            raise
        log.warning(
            "Version %s committed; its manifest stays staged until a later call finishes it: %s", row.object_id, error
        )
        return meta
