"""Schema evolution: UpdateTableSchemaMetadata, AlterTableAddColumns, AlterTableAlterColumns,
AlterTableDropColumns. Each change is one new table version (a managed one with table version management).
An unknown column is TableColumnNotFound and changes nothing.
"""

from __future__ import annotations

from typing import Any

import lance
import lance_namespace as ln
import pyarrow as pa

from airflow_provider_lance.namespace.catalog import Catalog, Table
from airflow_provider_lance.namespace.data.access import locate, pylance_errors, transaction_id, write_dataset


def _open(catalog: Catalog, identifier: list[str] | None, branch: str | None) -> tuple[Table, lance.LanceDataset]:
    table = locate(catalog, identifier)
    return table, write_dataset(catalog, table, branch)


def _require_columns(dataset: lance.LanceDataset, table: Table, paths: list[str]) -> None:
    """TableColumnNotFound unless every path's top-level column (``a`` of ``a.b``) exists; pylance checks
    the nested rest."""
    missing = [path for path in paths if path.split(".")[0] not in dataset.schema.names]
    if missing:
        raise ln.TableColumnNotFoundError(f"Columns {missing} not found in '{table.object_id}'")


def update_table_schema_metadata(
    catalog: Catalog, request: ln.UpdateTableSchemaMetadataRequest
) -> ln.UpdateTableSchemaMetadataResponse:
    """UpdateTableSchemaMetadata: merge ``metadata`` into the schema's metadata; answers the whole of it."""
    table, dataset = _open(catalog, request.id, request.branch)
    with pylance_errors(f"schema metadata of '{table.object_id}'"):
        metadata = dataset.update_schema_metadata(dict(request.metadata or {}))
    return ln.UpdateTableSchemaMetadataResponse(metadata=dict(metadata), transaction_id=transaction_id(dataset))


def alter_table_add_columns(
    catalog: Catalog, request: ln.AlterTableAddColumnsRequest
) -> ln.AlterTableAddColumnsResponse:
    """AlterTableAddColumns: new columns computed from SQL ``expression``s over the existing ones."""
    expressions = {}
    for entry in request.new_columns:
        if entry.virtual_column is not None or entry.computed is not None:
            raise ln.UnsupportedOperationError(f"Column '{entry.name}': only SQL expression columns are supported")
        if not entry.name:
            raise ln.InvalidInputError("A new column needs a name")
        if not entry.expression:
            raise ln.InvalidInputError(f"Expression is required for new column '{entry.name}'")
        expressions[entry.name] = entry.expression
    table, dataset = _open(catalog, request.id, request.branch)
    taken = [name for name in expressions if name in dataset.schema.names]
    if taken:
        raise ln.InvalidInputError(f"Columns {taken} already exist in '{table.object_id}'")
    with pylance_errors(f"add columns to '{table.object_id}'"):
        dataset.add_columns(expressions)
    return ln.AlterTableAddColumnsResponse(version=dataset.version)


def alter_table_alter_columns(
    catalog: Catalog, request: ln.AlterTableAlterColumnsRequest
) -> ln.AlterTableAlterColumnsResponse:
    """AlterTableAlterColumns: rename a column, change its nullability, or cast it to ``data_type`` (an
    Arrow type name such as ``"int32"``, or ``{"type": "int32"}``)."""
    alterations = [_alteration(entry) for entry in request.alterations]
    table, dataset = _open(catalog, request.id, request.branch)
    _require_columns(dataset, table, [entry.path for entry in request.alterations])
    with pylance_errors(f"alter columns of '{table.object_id}'"):
        dataset.alter_columns(*alterations)
    return ln.AlterTableAlterColumnsResponse(version=dataset.version)


def _alteration(entry: Any) -> dict[str, Any]:
    if entry.virtual_column is not None:
        raise ln.UnsupportedOperationError(f"Column '{entry.path}': virtual columns are not supported")
    alteration: dict[str, Any] = {"path": entry.path}
    if entry.rename == "":
        raise ln.InvalidInputError(f"Column '{entry.path}' cannot be renamed to an empty name")
    if entry.rename is not None:
        alteration["name"] = entry.rename
    if entry.nullable is not None:
        alteration["nullable"] = entry.nullable
    if entry.data_type is not None:
        alteration["data_type"] = _arrow_type(entry.data_type)
    if len(alteration) == 1:
        raise ln.InvalidInputError(f"Alteration of '{entry.path}' changes nothing (rename, nullable or data_type)")
    return alteration


def _arrow_type(data_type: Any) -> pa.DataType:
    name = data_type.get("type") if isinstance(data_type, dict) else data_type
    try:
        return pa.type_for_alias(str(name))
    except ValueError:
        raise ln.InvalidInputError(f"Unsupported data_type {data_type!r}: use an Arrow type name") from None


def alter_table_drop_columns(
    catalog: Catalog, request: ln.AlterTableDropColumnsRequest
) -> ln.AlterTableDropColumnsResponse:
    """AlterTableDropColumns: remove columns (their data stays until the table is compacted)."""
    table, dataset = _open(catalog, request.id, request.branch)
    _require_columns(dataset, table, list(request.columns))
    with pylance_errors(f"drop columns of '{table.object_id}'"):
        dataset.drop_columns(list(request.columns))
    return ln.AlterTableDropColumnsResponse(version=dataset.version, transaction_id=transaction_id(dataset))
