"""Reading rows and facts about them: CountTableRows, QueryTable, ExplainTableQueryPlan,
AnalyzeTableQueryPlan, GetTableStats, DescribeTransaction, ListAllTables. Reads take ``version`` and ``branch``
where the request has them.
"""

from __future__ import annotations

from typing import Any

import lance
import lance_namespace as ln
import pyarrow as pa
from lance_namespace_urllib3_client.models import FragmentStats, FragmentSummary

from airflow_provider_lance.namespace import identifiers as ids
from airflow_provider_lance.namespace import tables, version_lines
from airflow_provider_lance.namespace.catalog import Catalog
from airflow_provider_lance.namespace.data.access import locate, pylance_errors, read_dataset, table_dataset
from airflow_provider_lance.namespace.manifest_rows import TABLE

# A fragment with fewer rows than this is "small" in table stats (compaction would merge it): a fact of Lance, its
# default ``target_rows_per_fragment`` of compaction (not a tuning constant, so not tuning.SMALL_FRAGMENT_ROWS).
COMPACTION_TARGET_ROWS = 1024 * 1024
_PERCENTILES = (25, 50, 75, 99)
_QueryLike = ln.QueryTableRequest | ln.AnalyzeTableQueryPlanRequest


def count_table_rows(catalog: Catalog, request: ln.CountTableRowsRequest) -> ln.CountTableRowsResponse:
    """CountTableRows: the rows matching ``predicate`` (all without one) at ``version`` of ``branch``."""
    table = locate(catalog, request.id)
    dataset = read_dataset(catalog, table, request.version, request.branch)
    with pylance_errors(f"count of '{table.object_id}'"):
        return ln.CountTableRowsResponse(count=dataset.count_rows(request.predicate))


def query_table(catalog: Catalog, request: ln.QueryTableRequest) -> ln.QueryTableResponse:
    """QueryTable: a scan (``filter``, ``columns``, ``k`` as the limit, ``offset``), a vector search
    (``vector`` on ``vector_column``, default ``vector``) or a full-text search (``full_text_query``, needs
    an FTS index). The rows come back as an Arrow IPC file."""
    scanner = _scanner(catalog, request, request.branch)
    with pylance_errors("query"):
        result = scanner.to_table()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, result.schema) as writer:
        writer.write_table(result)
    return ln.QueryTableResponse(data=sink.getvalue().to_pybytes())


def explain_table_query_plan(catalog: Catalog, request: ln.ExplainTableQueryPlanRequest) -> str:
    """ExplainTableQueryPlan: the physical plan of ``query`` (``verbose`` for more detail)."""
    scanner = _scanner(catalog, request.query, request.branch or request.query.branch, request.id)
    with pylance_errors("explain"):
        return scanner.explain_plan(verbose=bool(request.verbose))


def analyze_table_query_plan(catalog: Catalog, request: ln.AnalyzeTableQueryPlanRequest) -> str:
    """AnalyzeTableQueryPlan: run the query and return its plan with the measured metrics."""
    scanner = _scanner(catalog, request, request.branch)
    with pylance_errors("analyze"):
        return scanner.analyze_plan()


def _scanner(
    catalog: Catalog, query: _QueryLike, branch: str | None, identifier: list[str] | None = None
) -> lance.LanceScanner:
    """A pylance scanner for a QueryTable-shaped request (``identifier`` overrides the query's ``id``)."""
    vector = _query_vector(query)
    table = locate(catalog, identifier or query.id)
    dataset = read_dataset(catalog, table, query.version, branch)
    options: dict[str, Any] = {
        "filter": query.filter,
        "offset": query.offset,
        "with_row_id": query.with_row_id,
        "prefilter": query.prefilter,
        "fast_search": query.fast_search,
    }
    if query.columns is not None:
        options["columns"] = query.columns.column_aliases or query.columns.column_names
    if vector:
        options["nearest"] = _nearest(query, vector)
    else:
        options["limit"] = query.k
    if query.full_text_query is not None:
        options["full_text_query"] = _full_text(query)
    with pylance_errors("query"):
        return dataset.scanner(**{key: value for key, value in options.items() if value is not None})


def _query_vector(query: _QueryLike) -> list[Any] | None:
    """The query vector, or the query vectors of a multi-vector search (each non-empty, all of one length)."""
    single, multi = query.vector.single_vector, query.vector.multi_vector
    if single and multi:
        raise ln.InvalidInputError("A query takes a single_vector or a multi_vector, not both")
    if multi and (not all(multi) or len({len(vector) for vector in multi}) > 1):
        raise ln.InvalidInputError("The vectors of a multi_vector must be non-empty and of one length")
    return multi or single


def _nearest(query: _QueryLike, vector: list[Any]) -> dict[str, Any]:
    nearest: dict[str, Any] = {
        "column": query.vector_column or "vector",
        "q": vector,
        "k": query.k,
        "metric": query.distance_type,
        "nprobes": query.nprobes,
        "minimum_nprobes": query.minimum_nprobes,
        "maximum_nprobes": query.maximum_nprobes,
        "refine_factor": query.refine_factor,
        "ef": query.ef,
        "use_index": None if query.bypass_vector_index is None else not query.bypass_vector_index,
    }
    if query.lower_bound is not None or query.upper_bound is not None:
        nearest["distance_range"] = (query.lower_bound, query.upper_bound)
    return {key: value for key, value in nearest.items() if value is not None}


def _full_text(query: _QueryLike) -> str | dict[str, Any]:
    """A string full-text query (optionally on some columns); structured queries are InvalidInput."""
    full_text = query.full_text_query
    if full_text is None or full_text.string_query is None:
        raise ln.InvalidInputError("Only string full-text queries are supported (full_text_query.string_query)")
    string_query = full_text.string_query
    if string_query.columns:
        return {"query": string_query.query, "columns": list(string_query.columns)}
    return string_query.query


def get_table_stats(catalog: Catalog, request: ln.GetTableStatsRequest) -> ln.GetTableStatsResponse:
    """GetTableStats: bytes on disk, rows, indices and the distribution of fragment lengths (physical rows;
    a fragment under ``COMPACTION_TARGET_ROWS`` rows is small)."""
    table = locate(catalog, request.id)
    dataset = read_dataset(catalog, table, branch=request.branch)
    with pylance_errors(f"stats of '{table.object_id}'"):
        lengths = sorted(fragment.metadata.physical_rows for fragment in dataset.get_fragments())
        total_bytes = sum(field.bytes_on_disk for field in dataset.stats.data_stats().fields)
        num_rows = dataset.count_rows()
        num_indices = len(dataset.describe_indices())
    return ln.GetTableStatsResponse(
        total_bytes=total_bytes,
        num_rows=num_rows,
        num_indices=num_indices,
        fragment_stats=FragmentStats(
            num_fragments=len(lengths),
            num_small_fragments=sum(1 for length in lengths if length < COMPACTION_TARGET_ROWS),
            lengths=_summary(lengths),
        ),
    )


def _summary(lengths: list[int]) -> FragmentSummary:
    """Min, max, mean and nearest-rank percentiles of sorted fragment lengths (zeros for no fragments)."""
    if not lengths:
        return FragmentSummary(min=0, max=0, mean=0, p25=0, p50=0, p75=0, p99=0)
    percentiles = {f"p{p}": lengths[min(len(lengths) - 1, (len(lengths) * p) // 100)] for p in _PERCENTILES}
    return FragmentSummary(min=lengths[0], max=lengths[-1], mean=sum(lengths) // len(lengths), **percentiles)


def describe_transaction(catalog: Catalog, request: ln.DescribeTransactionRequest) -> ln.DescribeTransactionResponse:
    """DescribeTransaction: ``id`` is the table id followed by a transaction: the version it made, or the
    ``transaction_id`` (uuid) a write answered with. Every committed transaction has SUCCEEDED."""
    parts = ids.validate_identifier(request.id, "transaction")
    if len(parts) < 2:
        raise ln.InvalidInputError(f"Transaction id must be a table id followed by a transaction, got {parts!r}")
    table = catalog.find_table(parts[:-1])
    dataset = table_dataset(catalog, table)
    wanted = parts[-1]
    candidates = [int(wanted)] if wanted.isdigit() else [v["version"] for v in reversed(dataset.versions())]
    for version in candidates:
        try:
            transaction = dataset.read_transaction(version)
        except (ValueError, OSError):  # no such version
            continue
        if transaction is not None and (wanted.isdigit() or transaction.uuid == wanted):
            return ln.DescribeTransactionResponse(
                status="SUCCEEDED",
                properties={
                    "uuid": transaction.uuid,
                    "operation": type(transaction.operation).__name__,
                    "version": str(version),
                    "read_version": str(transaction.read_version),
                    **(transaction.transaction_properties or {}),
                },
            )
    raise ln.TransactionNotFoundError(f"Transaction not found: '{wanted}' of '{table.object_id}'")


def alter_transaction(catalog: Catalog, request: ln.AlterTransactionRequest) -> ln.AlterTransactionResponse:
    """AlterTransaction: a committed Lance transaction is immutable, so an action that would change it is
    refused (Unsupported; the reference ignores it); setting the status it has changes nothing."""
    described = describe_transaction(catalog, ln.DescribeTransactionRequest(id=request.id))
    for action in request.actions:
        status = action.set_status_action.status if action.set_status_action is not None else None
        if status is None or status.replace("_", "").upper() != described.status:
            raise ln.UnsupportedOperationError(
                f"Committed transactions are immutable: cannot apply {action.model_dump(exclude_none=True)}"
            )
    return ln.AlterTransactionResponse(status=described.status, properties=described.properties)


def list_all_tables(catalog: Catalog, request: ln.ListTablesRequest) -> ln.ListTablesResponse:
    """ListAllTables: every table below the namespace ``id`` (the root by default) at any depth, as object
    ids relative to it (``ns$table``), sorted and paged like ListTables."""
    parts = ids.validate_identifier(request.id, "namespace", allow_root=True)
    direct = tables.list_tables(catalog, ln.ListTablesRequest(id=parts, include_declared=request.include_declared))
    names = set(direct.tables)
    if catalog.config.manifest_enabled:
        prefix = ids.child_prefix(parts)
        for oid in catalog.manifest.index().descendants(prefix, TABLE)["object_id"].to_pylist():
            if request.include_declared is False and not version_lines.has_manifests(
                catalog, catalog.find_table(oid.split(ids.DELIMITER), check_parent=False)
            ):
                continue
            names.add(oid[len(prefix) :])
    page, token = ids.paginate(names, request.page_token, request.limit)
    return ln.ListTablesResponse(tables=page, page_token=token)
