"""Table indices: CreateTableIndex, CreateTableScalarIndex, ListTableIndices, DescribeTableIndexStats,
DropTableIndex. Index types are pylance's; an index is named ``<column>_idx`` unless ``name`` is given, and a
name in use is TableIndexAlreadyExists (nothing is replaced).
"""

from __future__ import annotations

import json
from typing import Any

import lance
import lance_namespace as ln
from lance_namespace_urllib3_client.models import IndexContent

from airflow_provider_lance.namespace import identifiers as ids
from airflow_provider_lance.namespace.catalog import Catalog, Table
from airflow_provider_lance.namespace.data.access import (
    locate,
    pylance_errors,
    read_dataset,
    transaction_id,
    write_dataset,
)

VECTOR_TYPES = frozenset({"IVF_FLAT", "IVF_PQ", "IVF_SQ", "IVF_RQ", "IVF_HNSW_FLAT", "IVF_HNSW_PQ", "IVF_HNSW_SQ"})
SCALAR_TYPES = frozenset({"BTREE", "BITMAP", "LABEL_LIST", "INVERTED", "FTS", "NGRAM", "ZONEMAP", "BLOOMFILTER"})
# Request fields passed to pylance as they are (vector build parameters, full-text tokenizer options).
_VECTOR_OPTIONS = (
    "num_partitions",
    "num_sub_vectors",
    "num_bits",
    "sample_rate",
    "max_iterations",
    "target_partition_size",
    "m",
    "ef_construction",
)
_TEXT_OPTIONS = (
    "with_position",
    "base_tokenizer",
    "language",
    "max_token_length",
    "lower_case",
    "stem",
    "remove_stop_words",
    "ascii_folding",
)


def create_table_index(catalog: Catalog, request: ln.CreateTableIndexRequest) -> ln.CreateTableIndexResponse:
    """CreateTableIndex: build a vector or scalar index on ``column`` (``distance_type``: l2, cosine, dot,
    hamming for vector indices)."""
    return ln.CreateTableIndexResponse(transaction_id=_create(catalog, request, VECTOR_TYPES | SCALAR_TYPES))


def create_table_scalar_index(
    catalog: Catalog, request: ln.CreateTableIndexRequest
) -> ln.CreateTableScalarIndexResponse:
    """CreateTableScalarIndex: CreateTableIndex restricted to scalar index types."""
    return ln.CreateTableScalarIndexResponse(transaction_id=_create(catalog, request, SCALAR_TYPES))


def _create(catalog: Catalog, request: ln.CreateTableIndexRequest, allowed: frozenset[str]) -> str | None:
    index_type = request.index_type.upper()
    if index_type not in VECTOR_TYPES | SCALAR_TYPES:
        raise ln.InvalidInputError(f"Unsupported index_type {request.index_type!r}")
    if index_type not in allowed:
        raise ln.InvalidInputError(f"create_table_scalar_index only supports scalar index types, got {index_type}")
    table = locate(catalog, request.id)
    dataset = write_dataset(catalog, table, request.branch)
    if request.column not in dataset.schema.names:
        raise ln.TableColumnNotFoundError(f"Column '{request.column}' not found in '{table.object_id}'")
    name = request.name or f"{request.column}_idx"
    if name in _index_names(dataset):
        raise ln.TableIndexAlreadyExistsError(f"Index '{name}' already exists on '{table.object_id}'")
    with pylance_errors(f"index of '{table.object_id}'"):
        if index_type in VECTOR_TYPES:
            options = _options(request, _VECTOR_OPTIONS)
            dataset.create_index(request.column, index_type, name=name, metric=request.distance_type or "l2", **options)
        else:
            scalar_type = "INVERTED" if index_type == "FTS" else index_type
            options = _options(request, _TEXT_OPTIONS) if scalar_type == "INVERTED" else {}
            dataset.create_scalar_index(request.column, scalar_type, name=name, replace=False, **options)
    return transaction_id(dataset)


def _options(request: ln.CreateTableIndexRequest, names: tuple[str, ...]) -> dict[str, Any]:
    return {name: getattr(request, name) for name in names if getattr(request, name) is not None}


def _index_names(dataset: lance.LanceDataset) -> list[str]:
    return [index.name for index in dataset.describe_indices()]


def _require_index(dataset: lance.LanceDataset, table: Table, name: str | None) -> str:
    if not name or name not in _index_names(dataset):
        raise ln.TableIndexNotFoundError(f"Table index not found: '{name}' on '{table.object_id}'")
    return name


def list_table_indices(catalog: Catalog, request: ln.ListTableIndicesRequest) -> ln.ListTableIndicesResponse:
    """ListTableIndices: every index of the table (at ``version`` of ``branch``), by name, paged."""
    table = locate(catalog, request.id)
    dataset = read_dataset(catalog, table, request.version, request.branch)
    with pylance_errors(f"indices of '{table.object_id}'"):
        described = {index.name: index for index in dataset.describe_indices()}
        page, token = ids.paginate(described, request.page_token, request.limit)
        contents = [_content(dataset, described[name]) for name in page]
    return ln.ListTableIndicesResponse(indexes=contents, page_token=token)


def _content(dataset: lance.LanceDataset, index: Any) -> IndexContent:
    """One index as IndexContent (its first segment gives the uuid, creation time and format version)."""
    statistics = dataset.stats.index_stats(index.name)
    first = index.segments[0] if index.segments else None
    return IndexContent(
        index_name=index.name,
        index_uuid=str(first.uuid) if first else "",
        columns=list(index.field_names),
        status="SUCCEEDED",
        index_type=statistics.get("index_type"),
        type_url=index.type_url,
        num_indexed_rows=index.num_rows_indexed,
        num_unindexed_rows=statistics.get("num_unindexed_rows"),
        size_bytes=index.total_size_bytes,
        num_segments=len(index.segments),
        created_at=first.created_at if first else None,
        index_version=first.index_version if first else None,
        index_details=json.dumps(index.details) if isinstance(index.details, dict) else "{}",
    )


def describe_table_index_stats(
    catalog: Catalog, request: ln.DescribeTableIndexStatsRequest
) -> ln.DescribeTableIndexStatsResponse:
    """DescribeTableIndexStats: type, distance, and indexed / unindexed row counts of one index."""
    table = locate(catalog, request.id)
    dataset = read_dataset(catalog, table, request.version, request.branch)
    name = _require_index(dataset, table, request.index_name)
    with pylance_errors(f"index stats of '{table.object_id}'"):
        statistics = dataset.stats.index_stats(name)
    metric = next((index.get("metric_type") for index in statistics.get("indices", [])), None)
    return ln.DescribeTableIndexStatsResponse(
        index_type=statistics.get("index_type"),
        distance_type=metric,
        num_indexed_rows=statistics.get("num_indexed_rows"),
        num_unindexed_rows=statistics.get("num_unindexed_rows"),
        num_indices=statistics.get("num_indices"),
    )


def drop_table_index(catalog: Catalog, request: ln.DropTableIndexRequest) -> ln.DropTableIndexResponse:
    """DropTableIndex: remove the index named ``index_name`` (TableIndexNotFound if there is none)."""
    table = locate(catalog, request.id)
    dataset = write_dataset(catalog, table, request.branch)
    name = _require_index(dataset, table, request.index_name)
    with pylance_errors(f"drop of index '{name}'"):
        dataset.drop_index(name)
    return ln.DropTableIndexResponse(transaction_id=transaction_id(dataset))
