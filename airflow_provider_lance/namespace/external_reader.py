"""Seed 003's "External Store Reader": finishing a managed commit that stopped after its ``table_version`` row
(the commit point). A row that still points at a staged manifest is a committed version: any reader copies the
manifest to its final name (put-if-not-exists) and repoints the row before answering. The writer side of the
protocol is commit.py; every engine read, list and commit that touches a table finishes its pending commits first
(:func:`finish_pending`), the maintenance hook finishes a whole catalog's (:func:`finish_all_pending`).
"""

from __future__ import annotations

import logging
from typing import Any

from lance_namespace import ConcurrentModificationError, InvalidInputError, TableVersionNotFoundError

from airflow_provider_lance.namespace import identifiers as ids
from airflow_provider_lance.namespace.catalog import Catalog, Table
from airflow_provider_lance.namespace.manifest_rows import TABLE_VERSION, ManifestRow
from airflow_provider_lance.namespace.version_lines import version_line, version_row

log = logging.getLogger(__name__)


def finish(catalog: Catalog, table: Table, version: int, row: ManifestRow) -> dict[str, Any]:
    """The row's metadata, pointing at the final manifest. A row that still points at a staged manifest is a
    committed version (seed 003: the commit is complete after the row): copied by this process, its final
    metadata is known (no request); else its commit is finished (copy to the final name, unless done, and the
    repoint of the row; a reader that may not write answers all the same once the copy is there)."""
    meta = row.metadata or {}
    final_key = ids.manifest_key(table.location, version, meta.get("naming_scheme", ids.V2))
    staged_key = catalog.storage.key_of(meta.get("manifest_path", ""))
    if staged_key != final_key:
        if staged_key is None:
            raise InvalidInputError(f"Corrupt table_version row '{row.object_id}': bad manifest_path")
        copied = catalog.manifest.copied(row)
        if copied is not None:
            return copied
        meta = finalize(catalog, staged_key, final_key, meta)
        try:
            repoint(catalog, [ManifestRow(row.object_id, TABLE_VERSION, None, meta)])
        except Exception as error:  # the copy is there: the version is committed, the repoint can wait
            log.warning("Version %s finished; its row is repointed later: %s", row.object_id, error)
            catalog.manifest.remember_copy(row, meta)  # not tried again by this instance (read-only credentials)
    return meta


def repoint(catalog: Catalog, rows: list[ManifestRow]) -> None:
    """Step (4): the rows of committed versions, copied to their final names, repointed at them in one
    ``__manifest`` commit (``ManifestTable.repoint``)."""
    catalog.manifest.repoint(rows)


def defer_repoint(catalog: Catalog, staged: list[ManifestRow], rows: list[ManifestRow]) -> None:
    """Seed 003 step (4) of committed versions copied to their final names (``staged``: their rows as committed;
    ``rows``: pointing at the final manifests), folded into the next commit point of this instance
    (``ManifestTable.defer_repoint``); until then this instance answers them from what the copies returned."""
    catalog.manifest.defer_repoint(staged, rows)


def finish_pending(catalog: Catalog, table: Table) -> None:
    """Finish every commit of the table that stopped after its row (an in-memory check of the table's rows
    in the index; storage requests only for a pending one). Called by every engine read, list and commit that
    touches the table, so that path-based readers see a committed version as soon as any engine call touches
    it."""
    if (
        catalog.managed()
        and catalog.config.manifest_enabled
        and catalog.manifest.table_index(table.object_id).has_staged(table.object_id)
    ):
        line = version_line(catalog, table)
        for version in line.staged:
            finish(catalog, table, version, version_row(line, version))


def finish_all_pending(catalog: Catalog) -> list[tuple[list[str], int]]:
    """Finish every pending commit of the catalog (on demand: the maintenance hook and operator); returns
    the (table id, version) pairs it finished."""
    if not catalog.config.manifest_enabled:
        return []
    catalog.manifest.flush_repoints()  # the versions this instance committed are final already
    rows = catalog.manifest.children("", TABLE_VERSION)
    table_rows = catalog.rows(*{row.object_id.rpartition(ids.DELIMITER)[0] for row in rows})
    finished = []
    for row in rows:
        table_oid, _, number = row.object_id.rpartition(ids.DELIMITER)
        table_row = table_rows.get(table_oid)
        if table_row is None or not table_row.location or not number.isdigit():
            continue
        table = Table(table_oid.split(ids.DELIMITER), table_row.location, table_row)
        before = (row.metadata or {}).get("manifest_path")
        if finish(catalog, table, int(number), row).get("manifest_path") != before:
            finished.append((table.parts, int(number)))
    return finished


def finalize(catalog: Catalog, staged_key: str, final_key: str, meta: dict[str, Any]) -> dict[str, Any]:
    """Copy staged → final (put-if-not-exists; idempotent), remove the staged file, and return the row
    metadata pointing at the final manifest (its path, size and e-tag). Several processes may finalize one
    version at once (the committer, readers), so a staged file gone meanwhile falls back to the final one."""
    storage = catalog.storage
    try:
        created: bool | None = storage.copy_if_not_exists(staged_key, final_key)
    except FileNotFoundError:
        created = None  # the staged file is gone: another finalizer has copied it already
    if created is False and manifests_differ(catalog, staged_key, final_key):
        raise ConcurrentModificationError(f"Another manifest already exists at '{final_key}'")
    if created is not None:
        storage.delete(staged_key)
    try:
        info = storage.info(final_key)
    except FileNotFoundError:
        raise TableVersionNotFoundError(f"Neither the staged nor the final manifest exists: '{final_key}'") from None
    return {**meta, "manifest_path": storage.object_path(final_key), "manifest_size": info.size, "e_tag": info.e_tag}


def manifests_differ(catalog: Catalog, staged_key: str, final_key: str) -> bool:
    """Whether the final manifest holds other bytes than the staged one (a vanished staged file was copied by
    another finalizer: not a difference)."""
    try:
        return catalog.storage.read(staged_key) != catalog.storage.read(final_key)
    except FileNotFoundError:
        return False
