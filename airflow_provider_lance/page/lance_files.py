"""What a version holds, read from the table's own Lance files with pylance: the operation that made it, its rows
and size (the summary in its manifest), its schema, and the versions a dataset lists itself (a catalog that keeps
no versions of its own). Committed manifests never change, so what is read from one is kept per process by
(location, version), oldest entries dropped first.
"""

from __future__ import annotations

import threading
from typing import Any

import lance
import lance_namespace as ln

# Committed manifests never change: what was read from them is kept (oldest entries dropped first).
_CACHE_SIZE = 4096
_SUMMARIES_SIZE = 64
_CACHE_LOCK = threading.Lock()
_OPERATIONS: dict[tuple[str, int], str | None] = {}
_SUMMARIES: dict[tuple[str, int], dict[int, tuple[int | None, int | None]]] = {}


def schema_fields(schema: Any) -> list[tuple[str, str, bool]]:
    """Return each field of a pylance schema as ``(name, type, nullable)``.

    :param schema: the dataset's schema.
    """
    return [(f.name, str(f.type), bool(f.nullable)) for f in schema]


def operation(dataset: lance.LanceDataset, version: int) -> str | None:
    """Return the operation that made a version (``Append``, ``Overwrite``, ``Restore`` ...), read once.

    :param dataset: the table's dataset.
    :param version: the version.
    """
    key = (dataset.uri, version)
    if key in _OPERATIONS:
        return _OPERATIONS.get(key)
    transaction = dataset.read_transaction(version)
    made_by = type(transaction.operation).__name__ if transaction is not None else None
    _remember(_OPERATIONS, key, made_by)
    return made_by


def _remember(cache: dict[Any, Any], key: Any, value: Any, size: int = _CACHE_SIZE) -> None:
    """Keep ``value`` under ``key``, dropping the oldest entry of a full cache (requests run on many threads)."""
    with _CACHE_LOCK:
        if key not in cache and len(cache) >= size:
            cache.pop(next(iter(cache)))
        cache[key] = value


def dataset_versions(dataset: lance.LanceDataset, limit: int) -> list[ln.TableVersion]:
    """Return the newest ``limit`` versions a dataset lists itself, as the namespace would list them.

    :param dataset: the table's dataset.
    :param limit: how many versions.
    """
    newest = sorted(dataset.versions(), key=lambda entry: -int(entry["version"]))[:limit]
    return [
        ln.TableVersion(
            version=int(entry["version"]),
            manifest_path=f"{dataset.uri}/_versions",
            timestamp_millis=int(entry["timestamp"].timestamp() * 1000),
        )
        for entry in newest
    ]


def totals(dataset: lance.LanceDataset, version: int) -> tuple[int | None, int | None]:
    """Return ``(rows, size in bytes)`` of one version (from its manifest's summary, else its fragments).

    :param dataset: the table's dataset.
    :param version: the version.
    """
    summary = summaries(dataset).get(version)
    if summary and summary[0] is not None:
        return summary
    checked_out = dataset if dataset.version == version else dataset.checkout_version(version)
    return checked_out.count_rows(), None


def summaries(dataset: lance.LanceDataset) -> dict[int, tuple[int | None, int | None]]:
    """Return ``{version: (rows, size)}`` of every version of a dataset (from each manifest's summary), read once
    per (location, latest version): a new version reads them again.

    :param dataset: the table's dataset.
    """
    key = (dataset.uri, dataset.latest_version)
    cached = _SUMMARIES.get(key)
    if cached is not None:
        return cached
    result = {}
    for entry in dataset.versions():
        metadata = entry.get("metadata") or {}
        rows, size = metadata.get("total_rows"), metadata.get("total_files_size")
        result[int(entry["version"])] = (int(rows) if rows else None, int(size) if size else None)
    _remember(_SUMMARIES, key, result, _SUMMARIES_SIZE)
    return result
