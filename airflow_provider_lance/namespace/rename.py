"""RenameTable (the reference answers "not supported"): one ``__manifest`` commit replaces a table's row and its
``table_version`` rows by the same rows under the new id; its files do not move.
"""

from __future__ import annotations

import lance_namespace as ln

from airflow_provider_lance.namespace import identifiers as ids
from airflow_provider_lance.namespace import version_lines
from airflow_provider_lance.namespace.catalog import DEREGISTERED_MARKER, MARKER_CONTENT, Catalog
from airflow_provider_lance.namespace.manifest import DuplicateObjectError
from airflow_provider_lance.namespace.manifest_rows import TABLE, TABLE_VERSION, ManifestRow, RowSelection


def rename_table(catalog: Catalog, request: ln.RenameTableRequest) -> ln.RenameTableResponse:
    """RenameTable: ``id`` becomes ``new_namespace_id`` (default: the same) + ``new_table_name``; Unsupported
    for tables without a manifest row (register them first). A root ``<old name>.lance`` table also gets a
    ``.lance-deregistered`` marker, so that the directory listing does not bring the old name back."""
    catalog.require_manifest("RenameTable")
    parts = ids.validate_identifier(request.id, "table")
    target = parts[:-1]
    if request.new_namespace_id is not None:
        target = ids.validate_identifier(request.new_namespace_id, "namespace", allow_root=True)
    new_parts = ids.validate_identifier([*target, request.new_table_name], "table")
    table = catalog.find_table(parts)
    if table.row is None:
        raise ln.UnsupportedOperationError(
            f"Table '{table.object_id}' is known only by directory listing: register it before renaming it"
        )
    new_oid = ids.object_id(new_parts)
    rows = catalog.rows(ids.object_id(target), new_oid)
    catalog.check_namespace(target, rows)
    if new_oid in rows or new_parts == parts or catalog.v1_table(new_parts) is not None:
        raise ln.TableAlreadyExistsError(f"Table already exists: '{new_oid}'")
    renamed = [ManifestRow(new_oid, TABLE, table.location, table.row.metadata)]
    renamed += [
        ManifestRow(ids.version_object_id(new_parts, version), TABLE_VERSION, None, row.metadata)
        for version, row in version_lines.version_rows(catalog, [table])[0].items()
    ]
    try:
        catalog.manifest.insert(renamed, replacing=RowSelection.table_and_versions(table.object_id).sql())
    except DuplicateObjectError:
        raise ln.TableAlreadyExistsError(f"Table already exists: '{new_oid}'") from None
    if catalog.is_v1_location(table):
        catalog.storage.put_if_not_exists(f"{table.location}/{DEREGISTERED_MARKER}", MARKER_CONTENT)
    return ln.RenameTableResponse()
