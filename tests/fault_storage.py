"""Shared test helpers: stage table versions with pylance, and inject storage faults into an engine.

:class:`FaultInjector` wraps, on one ``DirectoryNamespace`` instance, every method of its ``Storage`` (each is
one object-store request: exists, list, read, head, put, put-if-not-exists, delete) and the I/O methods of
its ``ManifestTable`` (pylance opening, creating and committing ``__manifest``). It counts the calls and makes
the N-th one fail with ``OSError``:

* ``before``: the request fails and nothing happens (a refused or lost request);
* ``after``: the request takes effect, then the caller sees the error (a lost response). Only for methods that
  change something; for reads it would be the same as ``before``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import lance
import lance_namespace as ln
import pyarrow as pa

from airflow_provider_lance.staging import StagingNamespace

STORAGE_READS = ("exists", "list_dir", "list_names", "read", "info")
STORAGE_WRITES = ("write", "put_if_not_exists", "delete", "delete_tree")
MANIFEST_READS = ("latest",)
MANIFEST_WRITES = ("_create", "insert", "insert_each", "upsert", "delete", "update_metadata")


class InjectedFault(OSError):
    """The error the injector raises (an OSError, like a failed storage request)."""


@dataclass
class FaultInjector:
    """Count storage/manifest calls of one namespace and fail the ``fail_at``-th (1-based; 0 = never)."""

    fail_at: int = 0
    mode: str = "before"
    calls: list[tuple[str, bool]] = field(default_factory=list)  # (name, mutating)
    fired: str | None = None
    enabled: bool = True

    def install(self, ns: Any) -> FaultInjector:
        for target, prefix, reads, writes in (
            (ns.storage, "storage", STORAGE_READS, STORAGE_WRITES),
            (ns.manifest, "manifest", MANIFEST_READS, MANIFEST_WRITES),
        ):
            for name in (*reads, *writes):
                original = getattr(target, name)
                setattr(target, name, self._wrap(f"{prefix}.{name}", original, name in writes))
        return self

    def _wrap(self, label: str, original: Callable[..., Any], mutating: bool) -> Callable[..., Any]:
        @functools.wraps(original)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if not self.enabled:
                return original(*args, **kwargs)
            self.calls.append((label, mutating))
            hit = self.fired is None and len(self.calls) == self.fail_at
            if hit and (self.mode == "before" or not mutating):
                self.fired = f"{label} (before)"
                raise InjectedFault(f"injected fault #{self.fail_at} before {label}")
            result = original(*args, **kwargs)
            if hit:
                self.fired = f"{label} (after)"
                raise InjectedFault(f"injected fault #{self.fail_at} after {label}")
            return result

        return wrapper

    def mutating_positions(self) -> list[int]:
        return [i + 1 for i, (_, mutating) in enumerate(self.calls) if mutating]


def rows(n: int, start: int = 0) -> pa.Table:
    return pa.table(
        {"id": pa.array(range(start, start + n), pa.int64()), "v": [f"r{i}" for i in range(start, start + n)]}
    )


def stage(
    ns: ln.LanceNamespace, table_id: Sequence[str], data: pa.Table, mode: str = "append"
) -> ln.CreateTableVersionEntry:
    """Write ``data`` with pylance through a staging wrapper: data files and a staged manifest, nothing
    committed. Returns the entry to pass to create_table_version / batch_create_table_versions."""
    staging = StagingNamespace(ns)
    lance.write_dataset(data, namespace_client=staging, table_id=list(table_id), mode=mode)
    return staging.entry_for(list(table_id))


def visible_version(ns: ln.LanceNamespace, table_id: Sequence[str]) -> int | None:
    """The latest version the namespace reports (None when it has none)."""
    try:
        return ns.describe_table_version(ln.DescribeTableVersionRequest(id=list(table_id))).version.version
    except ln.TableVersionNotFoundError:
        return None


def count_rows(ns: ln.LanceNamespace, table_id: Sequence[str]) -> int:
    """Rows of the latest version, read by pylance through the namespace."""
    return lance.dataset(namespace_client=ns, table_id=list(table_id)).count_rows()
