"""BatchCommitTables (``lance_namespace`` 0.13; the reference answers Unsupported): declare tables, create
versions, delete versions and deregister tables, across tables, in ONE ``__manifest`` commit: all or nothing.

Every operation is checked first, with the single operations' own checks (nothing is written while any is
invalid); declared tables get their ``.lance-reserved`` markers; one merge-insert adds every new row and deletes
every removed one (the commit point); then, as the single operations do, staged manifests are finalized (seed
003), deleted versions lose their files and deregistered root tables get their marker. A failure before the
commit point removes the markers it wrote. Version operations need table version management: without it no
single commit can make them atomic, so the batch is refused rather than applied in part.
"""

from __future__ import annotations

import contextlib
import uuid
from dataclasses import dataclass, field

import lance_namespace as ln
from lance_namespace_urllib3_client.models import CommitTableOperation, CommitTableResult

from airflow_provider_lance.namespace import identifiers as ids
from airflow_provider_lance.namespace.catalog import DEREGISTERED_MARKER, MARKER_CONTENT, Catalog, Table
from airflow_provider_lance.namespace.commit import (
    VersionEntry,
    entry_of,
    finish_versions,
    mark_table_versions,
    validate_entry,
    version_conflict,
    version_rows_to_insert,
)
from airflow_provider_lance.namespace.delete_versions import versions_in_ranges
from airflow_provider_lance.namespace.manifest import DuplicateObjectError
from airflow_provider_lance.namespace.manifest_rows import TABLE, ManifestRow, RowSelection
from airflow_provider_lance.namespace.tables import declared_response, reserve_table
from airflow_provider_lance.namespace.version_lines import is_main, naming_scheme, version_names, version_rows

_KINDS = ("declare_table", "create_table_version", "delete_table_versions", "deregister_table")


@dataclass
class _Plan:
    """What the one commit does, and what follows it."""

    rows: list[ManifestRow] = field(default_factory=list)  # inserted: declared tables
    removed: list[str] = field(default_factory=list)  # object ids deleted
    declared: dict[str, Table] = field(default_factory=dict)  # by object id, with their markers written
    touched: set[str] = field(default_factory=set)  # table object ids declared or deregistered here
    entries: list[VersionEntry] = field(default_factory=list)
    listings: list[list[str]] = field(default_factory=list)
    manifests_to_delete: list[str] = field(default_factory=list)
    markers_to_write: list[str] = field(default_factory=list)
    results: list[CommitTableResult] = field(default_factory=list)


def batch_commit_tables(catalog: Catalog, request: ln.BatchCommitTablesRequest) -> ln.BatchCommitTablesResponse:
    """BatchCommitTables: validate every operation, write the declared tables' markers, commit every row
    change in one ``__manifest`` commit, then finish (copies, repointing, file deletions, markers)."""
    operations = request.operations or []
    if not operations:
        raise ln.InvalidInputError("BatchCommitTables needs at least one operation")
    catalog.require_manifest("BatchCommitTables")
    plan = _Plan()
    try:
        for index, operation in enumerate(operations):
            _plan_operation(catalog, plan, index, operation)
        version_rows_new = version_rows_to_insert(catalog, plan.entries, plan.listings) if plan.entries else []
        _commit(catalog, plan, version_rows_new)
    except BaseException:
        for table in plan.declared.values():  # nothing was committed: take the reservations back
            with contextlib.suppress(OSError):
                catalog.storage.delete_tree(table.location)
        raise
    versions = iter(finish_versions(catalog, plan.entries, version_rows_new) if plan.entries else [])
    for key in plan.manifests_to_delete:
        catalog.storage.delete(key)
    for marker in plan.markers_to_write:
        catalog.storage.put_if_not_exists(marker, MARKER_CONTENT)
    results = [
        CommitTableResult(create_table_version=ln.CreateTableVersionResponse(version=next(versions)))
        if result.create_table_version is not None
        else result
        for result in plan.results
    ]
    return ln.BatchCommitTablesResponse(transaction_id=str(uuid.uuid4()), results=results)


def _plan_operation(catalog: Catalog, plan: _Plan, index: int, operation: CommitTableOperation) -> None:
    given = [kind for kind in _KINDS if getattr(operation, kind) is not None]
    if len(given) != 1:
        raise ln.InvalidInputError(f"Operation {index}: expected exactly one of {', '.join(_KINDS)}, got {given}")
    kind = given[0]
    if kind == "declare_table":
        _plan_declare(catalog, plan, operation.declare_table)
    elif kind == "create_table_version":
        _plan_create_version(catalog, plan, operation.create_table_version)
    elif kind == "delete_table_versions":
        _plan_delete_versions(catalog, plan, operation.delete_table_versions)
    else:
        _plan_deregister(catalog, plan, operation.deregister_table)


def _claim(plan: _Plan, oid: str) -> None:
    if oid in plan.touched:
        raise ln.InvalidInputError(f"BatchCommitTables declares or deregisters table '{oid}' twice")
    plan.touched.add(oid)


def _plan_declare(catalog: Catalog, plan: _Plan, request: ln.DeclareTableRequest) -> None:
    """DeclareTable's own checks and reservation (tables.py); the row goes into the batch's one commit."""
    _claim(plan, ids.object_id(ids.validate_identifier(request.id, "table")))
    parts, location = reserve_table(catalog, request)
    oid = ids.object_id(parts)
    plan.declared[oid] = Table(parts, location)
    plan.rows.append(ManifestRow(oid, TABLE, location, dict(request.properties or {}) or None))
    plan.results.append(CommitTableResult(declare_table=declared_response(catalog, request, location)))


def _table(catalog: Catalog, plan: _Plan, identifier: object) -> Table:
    """A table named by an operation: declared earlier in this batch, or in the catalog."""
    parts = ids.validate_identifier(identifier, "table")
    return plan.declared.get(ids.object_id(parts)) or catalog.find_table(parts)


def _require_management(catalog: Catalog, branch: str | None) -> None:
    if not catalog.managed():
        raise ln.UnsupportedOperationError(
            "BatchCommitTables commits versions atomically only with table version management "
            "(table_version_management=true); without it nothing is committed"
        )
    if not is_main(branch):
        raise ln.UnsupportedOperationError(f"BatchCommitTables commits main-line versions, not branch '{branch}'")


def _plan_create_version(catalog: Catalog, plan: _Plan, request: ln.CreateTableVersionRequest) -> None:
    _require_management(catalog, request.branch)
    table = _table(catalog, plan, request.id)
    entry = entry_of(request)
    names = version_names(catalog, table)
    if any(e.object_id == ids.version_object_id(table.parts, request.version) for e in plan.entries):
        raise ln.InvalidInputError(f"BatchCommitTables creates version {request.version} of '{table.object_id}' twice")
    plan.entries.append(validate_entry(catalog, table, entry, names))
    plan.listings.append(names)
    plan.results.append(CommitTableResult(create_table_version=ln.CreateTableVersionResponse()))


def _plan_delete_versions(catalog: Catalog, plan: _Plan, request: ln.BatchDeleteTableVersionsRequest) -> None:
    _require_management(catalog, request.branch)
    table = _table(catalog, plan, request.id)
    names = version_names(catalog, table)
    rows = version_rows(catalog, [table])[0]
    targets = versions_in_ranges(request, table, set(rows))
    scheme = naming_scheme(names) or ids.V2
    plan.removed.extend(ids.version_object_id(table.parts, v) for v in targets)
    plan.manifests_to_delete.extend(ids.manifest_key(table.location, v, scheme) for v in targets)
    plan.results.append(
        CommitTableResult(delete_table_versions=ln.BatchDeleteTableVersionsResponse(deleted_count=len(targets)))
    )


def _plan_deregister(catalog: Catalog, plan: _Plan, request: ln.DeregisterTableRequest) -> None:
    table = catalog.find_table(ids.validate_identifier(request.id, "table"))
    _claim(plan, table.object_id)
    if table.row is None:
        raise ln.UnsupportedOperationError(
            f"Table '{table.object_id}' is known only by directory listing: deregister it on its own"
        )
    plan.removed.append(table.object_id)
    plan.removed.extend(ids.version_object_id(table.parts, v) for v in version_rows(catalog, [table])[0])
    if catalog.is_v1_location(table):
        plan.markers_to_write.append(f"{table.location}/{DEREGISTERED_MARKER}")
    plan.results.append(
        CommitTableResult(
            deregister_table=ln.DeregisterTableResponse(
                id=table.parts, location=catalog.storage.uri(table.location), properties=table.properties
            )
        )
    )


def _commit(catalog: Catalog, plan: _Plan, version_rows_new: list[ManifestRow]) -> None:
    """The commit point: every inserted and deleted row in one ``__manifest`` commit."""
    rows = plan.rows + version_rows_new
    if version_rows_new:
        mark_table_versions(catalog)
    if plan.rows:
        catalog.persist_management()
    removed = RowSelection(tuple(plan.removed)) if plan.removed else None
    try:
        if rows:
            catalog.manifest.insert(rows, replacing=removed.sql() if removed else None)
        elif removed:
            catalog.manifest.delete(removed)
    except DuplicateObjectError as error:
        if error.object_id in plan.declared:
            raise ln.TableAlreadyExistsError(f"Table already exists: '{error.object_id}'") from None
        raise version_conflict(error) from None
