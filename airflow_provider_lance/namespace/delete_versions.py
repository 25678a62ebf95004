"""BatchDeleteTableVersions (seed 000): deleting the versions in ranges of one table, or of many tables in one
call (scheduled clean-up of a catalog), every request checked before anything is deleted, then the manifests,
then every table's ``table_version`` rows in one ``__manifest`` commit. BatchCommitTables' deletes check their
ranges here too (:func:`versions_in_ranges`).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from lance_namespace import (
    BatchDeleteTableVersionsRequest,
    BatchDeleteTableVersionsResponse,
    InvalidInputError,
    TableVersionNotFoundError,
)

from airflow_provider_lance.namespace import identifiers as ids
from airflow_provider_lance.namespace.catalog import Catalog, Table
from airflow_provider_lance.namespace.concurrency import map_concurrently
from airflow_provider_lance.namespace.manifest_rows import NO_VERSIONS
from airflow_provider_lance.namespace.version_lines import locate_line, naming_scheme, version_line, version_names
from airflow_provider_lance.namespace.versions import rows_without_manifest

MAX_VERSIONS_PER_DELETE = 1_000_000


def batch_delete_table_versions(
    catalog: Catalog, request: BatchDeleteTableVersionsRequest
) -> BatchDeleteTableVersionsResponse:
    """BatchDeleteTableVersions: delete the manifests of every version in the ranges (start inclusive, end
    exclusive, a negative end = through the latest), then their rows (see :func:`versions_in_ranges`)."""
    return batch_delete_versions_of_tables(catalog, [request])[0]


@dataclass(frozen=True)
class _Deletion:
    """What BatchDeleteTableVersions deletes in one table: ``versions`` (ascending), their manifest files
    (``keys``) and, with management, the versions that have a row (``rowed``)."""

    table: Table
    versions: list[int]
    keys: list[str]
    rowed: list[int]


def batch_delete_versions_of_tables(
    catalog: Catalog, requests: Sequence[BatchDeleteTableVersionsRequest]
) -> list[BatchDeleteTableVersionsResponse]:
    """BatchDeleteTableVersions of several tables in one call (scheduled clean-up of a catalog), in the
    operation's order: every request is checked first, so a missing table or version fails the call before
    anything is deleted; then every table's manifests are deleted, then every table's rows in ONE
    ``__manifest`` commit (all of them or none), where a call per table makes a commit per table. On a remote
    store the ``_versions/`` listings run concurrently."""
    lines = [locate_line(catalog, request.id, request.branch) for request in requests]
    tables = Counter(table.object_id for table, _ in lines)
    twice = sorted(oid for oid, count in tables.items() if count > 1)
    if twice:
        raise InvalidInputError(f"BatchDeleteTableVersions names table '{twice[0]}' twice: give it one request")
    listings = map_concurrently(lambda line: version_names(catalog, line[0]), lines, catalog.storage.is_remote)
    deletions = [
        _deletion(catalog, request, table, managed, names)
        for request, (table, managed), names in zip(requests, lines, listings, strict=True)
    ]
    catalog.storage.delete_many([key for deletion in deletions for key in deletion.keys])
    catalog.manifest.delete_versions({deletion.table.object_id: deletion.rowed for deletion in deletions})
    return [BatchDeleteTableVersionsResponse(deleted_count=len(deletion.versions)) for deletion in deletions]


def _deletion(
    catalog: Catalog, request: BatchDeleteTableVersionsRequest, table: Table, managed: bool, names: list[str]
) -> _Deletion:
    """The versions one request deletes: of its table's manifest files (``names``, its ``_versions/``) and
    (managed) rows, those in its ranges. A row whose manifest is not listed (removed by a clean-up of someone
    else's) is not a version: its row goes, it is not counted."""
    files = {parsed[0] for name in names if (parsed := ids.parse_manifest_name(name))}
    line = version_line(catalog, table) if managed else NO_VERSIONS
    existing = files | set(line.staged) | ({line.latest} if line.latest else set())
    targets = versions_in_ranges(request, table, existing)
    scheme = naming_scheme(names) or ids.V2
    keys = [ids.manifest_key(table.location, version, scheme) for version in targets]
    # the rows were read after the listing: a version committed since is above every listed one, not gone
    gone = [version for version in rows_without_manifest(line, files) if version < max(files, default=0)]
    return _Deletion(table, targets, keys, sorted({*gone, *(version for version in targets if version in line.rows)}))


def versions_in_ranges(request: BatchDeleteTableVersionsRequest, table: Table, existing: set[int]) -> list[int]:
    """The existing versions the request's ranges cover, ascending; TableVersionNotFound for a version they
    cover that does not exist, unless ``ignore_missing`` (the request model has no such field: it travels in
    the context). A version below the oldest one that exists is not missing: a clean-up removed it (pylance's,
    or an earlier attempt of this request that failed part-way), so deleting it is done already."""
    spans = _version_spans(request, latest=max(existing, default=0))
    targets = sorted(v for v in existing if any(start <= v < end for start, end in spans))
    ignore_missing = (request.context or {}).get("ignore_missing", "false").lower() == "true"
    oldest = min(existing, default=0)
    if not ignore_missing and sum(max(0, end - max(start, oldest)) for start, end in spans) != len(targets):
        missing = itertools.islice(
            (v for start, end in spans for v in range(max(start, oldest), end) if v not in existing), 10
        )
        raise TableVersionNotFoundError(f"Table versions not found for '{table.object_id}': {list(missing)}")
    return targets


def _version_spans(request: BatchDeleteTableVersionsRequest, latest: int) -> list[tuple[int, int]]:
    """The request's ranges as sorted, merged ``[start, end)`` spans (a negative end = through ``latest``),
    without expanding them: at most ``MAX_VERSIONS_PER_DELETE`` versions per request, as the reference."""
    spans = []
    for version_range in request.ranges:
        start = ids.check_version(version_range.start_version, "start_version", minimum=0)
        end = version_range.end_version
        end = latest + 1 if isinstance(end, int) and end < 0 else ids.check_version(end, "end_version", minimum=0)
        if end > start:
            spans.append((start, end))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    if sum(end - start for start, end in merged) > MAX_VERSIONS_PER_DELETE:
        raise InvalidInputError(f"BatchDeleteTableVersions covers more than {MAX_VERSIONS_PER_DELETE} versions")
    return merged
