"""The data-plane operations of ``LanceHook`` (a mixin): write, read, maintenance (indices, tags ...: ``admin.py``).

Each method is one namespace operation (``lance_namespace.LanceNamespace``), except :meth:`optimize_table`,
which opens the table's dataset with pylance (the namespace has no compaction operation).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow_provider_lance.utils.identifiers import parse_identifier

if TYPE_CHECKING:
    import pyarrow as pa

TableId = str | Sequence[str]


def arrow_ipc(data: Any) -> bytes:
    """
    Return rows as an Arrow IPC stream (the body of the namespace's write operations).

    :param data: A ``pyarrow.Table``, ``RecordBatch``, a dict of columns or a list of row dicts.
    """
    import pyarrow as pa

    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    elif isinstance(data, dict):
        data = pa.table(data)
    elif isinstance(data, list):
        data = pa.Table.from_pylist(data)
    if not isinstance(data, pa.Table):
        raise TypeError(f"data must be a pyarrow Table, a dict of columns or a list of rows, got {type(data).__name__}")
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, data.schema) as writer:
        writer.write_table(data)
    return sink.getvalue().to_pybytes()


class LanceTableDataMixin:
    """Data-plane operations: one thin method per namespace operation."""

    _call: Callable[[str, Any], Any]
    namespace: Any
    describe_table: Callable[..., Any]
    get_namespace_config: Callable[[], tuple[str, dict[str, str]]]

    def _call_with_data(self, operation: str, request: Any, data: Any) -> Any:
        """
        Call a write ``operation`` with its request model and the rows as an Arrow IPC body.

        :param operation: The ``LanceNamespace`` method name.
        :param request: The request model.
        :param data: The rows (see :func:`arrow_ipc`).
        """
        return getattr(self.namespace, operation)(request, arrow_ipc(data))

    # ------------------------------------------------------------------ writes

    def create_table(
        self, table_id: TableId, data: Any, mode: str | None = None, properties: dict[str, str] | None = None
    ) -> Any:
        """
        Create a table with ``data`` as its first version.

        :param table_id: Table identifier.
        :param data: The rows (``pyarrow.Table``, dict of columns or list of row dicts).
        :param mode: ``create`` (default), ``exist_ok`` or ``overwrite``.
        :param properties: Table properties.
        """
        import lance_namespace as ln

        request = ln.CreateTableRequest(id=parse_identifier(table_id), mode=mode, properties=properties)
        return self._call_with_data("create_table", request, data)

    def insert_into_table(self, table_id: TableId, data: Any, mode: str = "append", branch: str | None = None) -> Any:
        """
        Append rows to a table (``mode="overwrite"`` replaces its rows).

        :param table_id: Table identifier.
        :param data: The rows.
        :param mode: ``append`` or ``overwrite``.
        :param branch: Branch to write (the main branch by default).
        """
        import lance_namespace as ln

        request = ln.InsertIntoTableRequest(id=parse_identifier(table_id), mode=mode, branch=branch)
        return self._call_with_data("insert_into_table", request, data)

    def merge_insert_into_table(
        self,
        table_id: TableId,
        data: Any,
        on: str | list[str],
        when_matched_update_all: bool = True,
        when_not_matched_insert_all: bool = True,
        when_not_matched_by_source_delete: bool = False,
        branch: str | None = None,
    ) -> Any:
        """
        Upsert rows on the ``on`` column.

        :param table_id: Table identifier.
        :param data: The rows.
        :param on: The key column(s).
        :param when_matched_update_all: Update matched rows.
        :param when_not_matched_insert_all: Insert unmatched rows.
        :param when_not_matched_by_source_delete: Delete target rows missing from ``data``.
        :param branch: Branch to write.
        """
        import lance_namespace as ln

        request = ln.MergeInsertIntoTableRequest(
            id=parse_identifier(table_id),
            on=[on] if isinstance(on, str) else list(on),
            when_matched_update_all=when_matched_update_all,
            when_not_matched_insert_all=when_not_matched_insert_all,
            when_not_matched_by_source_delete=when_not_matched_by_source_delete,
            branch=branch,
        )
        return self._call_with_data("merge_insert_into_table", request, data)

    def update_table(self, table_id: TableId, updates: dict[str, str], predicate: str | None = None) -> Any:
        """
        Update rows: ``updates`` maps a column to a SQL expression.

        :param table_id: Table identifier.
        :param updates: ``{column: SQL expression}``.
        :param predicate: Only rows matching this SQL filter.
        """
        import lance_namespace as ln

        pairs = [[str(column), str(expression)] for column, expression in updates.items()]
        request = ln.UpdateTableRequest(id=parse_identifier(table_id), updates=pairs, predicate=predicate)
        return self._call("update_table", request)

    def delete_from_table(self, table_id: TableId, predicate: str) -> Any:
        """
        Delete the rows matching a SQL filter.

        :param table_id: Table identifier.
        :param predicate: SQL filter, e.g. ``"id < 10"``.
        """
        import lance_namespace as ln

        request = ln.DeleteFromTableRequest(id=parse_identifier(table_id), predicate=predicate)
        return self._call("delete_from_table", request)

    # ------------------------------------------------------------------ reads

    def count_table_rows(self, table_id: TableId, predicate: str | None = None, version: int | None = None) -> int:
        """
        Count the rows of a table (matching ``predicate`` when given).

        :param table_id: Table identifier.
        :param predicate: SQL filter.
        :param version: Version to count (the latest by default).
        """
        import lance_namespace as ln

        request = ln.CountTableRowsRequest(id=parse_identifier(table_id), predicate=predicate, version=version)
        response = self._call("count_table_rows", request)
        return int(response if isinstance(response, int) else response.count)

    def count_staged_rows(self, entry: Any, predicate: str | None = None) -> int:
        """
        Count the rows of a staged, not yet committed version (staged with ``audit=True``): the audit of
        write-audit-publish before the commit. Nothing becomes visible.

        :param entry: A staged ``CreateTableVersionEntry`` (model or dict).
        :param predicate: SQL filter.
        """
        from airflow_provider_lance.staging import staged_dataset

        _, props = self.get_namespace_config()
        options = {key.removeprefix("storage."): value for key, value in props.items() if key.startswith("storage.")}
        return staged_dataset(self.namespace, entry, storage_options=options).count_rows(predicate)

    def query_table(
        self,
        table_id: TableId,
        filter: str | None = None,
        columns: list[str] | None = None,
        limit: int = 10_000,
        version: int | None = None,
    ) -> pa.Table:
        """
        Scan a table and return the rows as a ``pyarrow.Table``.

        :param table_id: Table identifier.
        :param filter: SQL filter.
        :param columns: Columns to return (all by default).
        :param limit: At most this many rows (the namespace's QueryTable always has a limit).
        :param version: Version to read (the latest by default).
        """
        import lance_namespace as ln
        import pyarrow as pa

        request = ln.QueryTableRequest(
            id=parse_identifier(table_id),
            filter=filter,
            columns=None if columns is None else {"column_names": list(columns)},
            k=int(limit),
            version=version,
            vector={},
        )
        response = self._call("query_table", request)
        body = response if isinstance(response, bytes) else response.data
        return pa.ipc.open_file(pa.BufferReader(body)).read_all()

    # ------------------------------------------------------------------ maintenance (pylance)

    def optimize_table(
        self,
        table_id: TableId,
        compact: bool = True,
        optimize_indices: bool = True,
        cleanup_older_than: timedelta | None = None,
        target_rows_per_fragment: int | None = None,
    ) -> dict[str, Any]:
        """
        Compact a table's files, optimize its indices and clean up old versions with pylance.

        The namespace has no compaction operation: the dataset is opened at the table's location with the
        connection's storage options. With table version management, compaction commits a version the
        catalog does not record until a namespace commit follows, so use it on tables written through
        the namespace (pylance then commits through the catalog).

        :param table_id: Table identifier.
        :param compact: Rewrite small fragments into bigger ones.
        :param optimize_indices: Add new data to the indices.
        :param cleanup_older_than: Delete the files of versions older than this (None: no cleanup).
        :param target_rows_per_fragment: Compaction target (pylance's default otherwise).
        :return: ``{"table_id", "version", "compaction", "cleanup"}`` (JSON-able).
        """
        import lance

        ident = parse_identifier(table_id)
        dataset = lance.dataset(namespace_client=self.namespace, table_id=ident)
        result: dict[str, Any] = {"table_id": ident, "compaction": None, "cleanup": None}
        if compact:
            options = {} if target_rows_per_fragment is None else {"target_rows_per_fragment": target_rows_per_fragment}
            metrics = dataset.optimize.compact_files(**options)
            result["compaction"] = {
                "fragments_removed": metrics.fragments_removed,
                "fragments_added": metrics.fragments_added,
            }
        if optimize_indices and dataset.describe_indices():
            dataset.optimize.optimize_indices()
        if cleanup_older_than is not None:
            stats = dataset.cleanup_old_versions(older_than=cleanup_older_than)
            result["cleanup"] = {"bytes_removed": stats.bytes_removed, "old_versions": stats.old_versions}
        result["version"] = int(lance.dataset(namespace_client=self.namespace, table_id=ident).version)
        return result
