"""Writing rows: CreateTable, InsertIntoTable, MergeInsertIntoTable, UpdateTable, DeleteFromTable. Bodies are
Arrow IPC streams; every write is one pylance commit; bad input is InvalidInput and writes nothing.
"""

from __future__ import annotations

import lance
import lance_namespace as ln
import pyarrow as pa

from airflow_provider_lance.namespace import identifiers as ids
from airflow_provider_lance.namespace import tables, version_lines
from airflow_provider_lance.namespace.catalog import Catalog, Table
from airflow_provider_lance.namespace.data.access import (
    locate,
    pylance_errors,
    read_ipc,
    transaction_id,
    write_dataset,
)

_WRITE_MODES = ("append", "overwrite")


def create_table(
    catalog: Catalog, request: ln.CreateTableRequest, request_data: bytes | None = None
) -> ln.CreateTableResponse:
    """CreateTable: declare the table and write the body as its first version (a failed write takes the
    declaration back). ``mode``: ``create`` (default), ``exist_ok`` (an existing table is answered untouched)
    or ``overwrite`` (an existing table gets the body as a new version)."""
    parts = ids.validate_identifier(request.id, "table")
    mode = ids.create_mode(request.mode, ("create", "exist_ok", "overwrite"), "CreateTable")
    data = read_ipc(request_data, "create_table")
    try:
        table = catalog.find_table(parts)
    except ln.TableNotFoundError:
        table = None
    if table is not None and mode == "create":
        raise ln.TableAlreadyExistsError(f"Table already exists: '{table.object_id}'")
    if table is not None and mode == "exist_ok":
        return _created(catalog, table, None, request)
    if table is not None:
        return _created(catalog, table, _write_rows(catalog, table, data, "overwrite"), request)
    tables.declare_table(catalog, ln.DeclareTableRequest(id=parts, properties=request.properties))
    table = catalog.find_table(parts)
    try:
        dataset = _write_rows(catalog, table, data, "overwrite")
    except Exception:
        if table.row is not None:
            catalog.manifest.delete_table(table.object_id)
        catalog.storage.delete_tree(table.location)
        raise
    return _created(catalog, table, dataset, request)


def _created(
    catalog: Catalog, table: Table, dataset: lance.LanceDataset | None, request: ln.CreateTableRequest
) -> ln.CreateTableResponse:
    return ln.CreateTableResponse(
        location=catalog.storage.uri(table.location),
        version=dataset.version if dataset is not None else None,
        transaction_id=transaction_id(dataset) if dataset is not None else None,
        storage_options=catalog.response_storage_options(table.location, request),
        properties=table.properties,
    )


def insert_into_table(
    catalog: Catalog, request: ln.InsertIntoTableRequest, request_data: bytes | None = None
) -> ln.InsertIntoTableResponse:
    """InsertIntoTable: append the body's rows (``mode="overwrite"`` replaces the table's rows). The first
    insert into a declared table creates its data."""
    mode = (request.mode or "append").lower()
    if mode not in _WRITE_MODES:
        raise ln.InvalidInputError(f"Unsupported write mode {request.mode!r}: use append or overwrite")
    table = locate(catalog, request.id)
    data = read_ipc(request_data, "insert_into_table")
    dataset = _write_rows(catalog, table, data, mode, request.branch)
    return ln.InsertIntoTableResponse(
        num_inserted_rows=data.num_rows, version=dataset.version, transaction_id=transaction_id(dataset)
    )


def _write_rows(
    catalog: Catalog, table: Table, data: pa.Table, mode: str, branch: str | None = None
) -> lance.LanceDataset:
    """Append or overwrite; a table without data yet (declared) gets its first version."""
    if branch is not None or version_lines.has_manifests(catalog, table):
        dataset = write_dataset(catalog, table, branch)
        with pylance_errors(f"insert into '{table.object_id}'"):
            dataset.insert(data, mode=mode)
        return dataset
    with pylance_errors(f"first write of '{table.object_id}'"):
        if catalog.managed():
            return lance.write_dataset(data, namespace_client=catalog.facade, table_id=table.parts, mode=mode)
        return lance.write_dataset(  # nothing to append to or overwrite yet
            data,
            catalog.storage.uri(table.location),
            mode="create",
            storage_options=catalog.config.storage_options or None,
        )


def merge_insert_into_table(
    catalog: Catalog, request: ln.MergeInsertIntoTableRequest, request_data: bytes | None = None
) -> ln.MergeInsertIntoTableResponse:
    """MergeInsertIntoTable: upsert the body on the ``on`` columns with the request's clauses
    (``when_matched_update_all[_filt]``, ``when_not_matched_insert_all``,
    ``when_not_matched_by_source_delete[_filt]``, ``use_index``). At least one clause is required."""
    if not request.on:
        raise ln.InvalidInputError("merge_insert_into_table needs the 'on' columns")
    table = locate(catalog, request.id)
    data = read_ipc(request_data, "merge_insert_into_table")
    dataset = write_dataset(catalog, table, request.branch)
    missing = [column for column in request.on if column not in dataset.schema.names]
    if missing:
        raise ln.InvalidInputError(f"Merge insert key columns {missing} do not exist in '{table.object_id}'")
    with pylance_errors(f"merge insert into '{table.object_id}'"):
        builder = dataset.merge_insert(list(request.on))
        if request.when_matched_update_all:
            builder = builder.when_matched_update_all(request.when_matched_update_all_filt)
        if request.when_not_matched_insert_all:
            builder = builder.when_not_matched_insert_all()
        if request.when_not_matched_by_source_delete:
            builder = builder.when_not_matched_by_source_delete(request.when_not_matched_by_source_delete_filt)
        if request.use_index is not None:
            builder = builder.use_index(request.use_index)
        result = builder.execute(data)
    return ln.MergeInsertIntoTableResponse(
        num_inserted_rows=result["num_inserted_rows"],
        num_updated_rows=result["num_updated_rows"],
        num_deleted_rows=result["num_deleted_rows"],
        version=dataset.version,
        transaction_id=transaction_id(dataset),
    )


def update_table(catalog: Catalog, request: ln.UpdateTableRequest) -> ln.UpdateTableResponse:
    """UpdateTable: ``updates`` is ``[[column, SQL expression], ...]``, applied to the rows matching
    ``predicate`` (all rows without one)."""
    table = locate(catalog, request.id)
    dataset = write_dataset(catalog, table, request.branch)
    unknown = [column for column, _ in request.updates if column not in dataset.schema.names]
    if unknown:
        raise ln.InvalidInputError(f"Columns {unknown} do not exist in '{table.object_id}'")
    with pylance_errors(f"update of '{table.object_id}'"):
        result = dataset.update(dict(request.updates), where=request.predicate)
    return ln.UpdateTableResponse(
        updated_rows=result["num_rows_updated"],
        version=dataset.version,
        transaction_id=transaction_id(dataset),
        properties=request.properties,
    )


def delete_from_table(catalog: Catalog, request: ln.DeleteFromTableRequest) -> ln.DeleteFromTableResponse:
    """DeleteFromTable: delete the rows matching ``predicate`` (a SQL filter)."""
    table = locate(catalog, request.id)
    dataset = write_dataset(catalog, table, request.branch)
    with pylance_errors(f"delete from '{table.object_id}'"):
        dataset.delete(request.predicate)
    return ln.DeleteFromTableResponse(version=dataset.version, transaction_id=transaction_id(dataset))
