"""Worker functions for the multi-process races (importable by spawned processes as ``tests.s3.race_workers``).

Each worker builds its own ``DirectoryNamespace`` from plain properties (its own s3fs client and pylance
runtime), waits on a shared barrier so that all contenders start together, and reports the outcome of its
call as the error class name (``"ok"`` for success).
"""

from __future__ import annotations

from typing import Any

import lance_namespace as ln

from airflow_provider_lance.namespace import DirectoryNamespace
from tests.fault_storage import rows, stage


def _outcome(call: Any) -> str:
    try:
        call()
    except (ln.InternalError, ln.UnsupportedOperationError) as error:  # unexpected: keep the message
        return f"{type(error).__name__}: {error}"
    except ln.LanceNamespaceError as error:
        return type(error).__name__
    return "ok"


def create_namespace(props: dict[str, str], namespace_id: list[str], barrier: Any) -> str:
    ns = DirectoryNamespace(**props)
    barrier.wait()
    return _outcome(lambda: ns.create_namespace(ln.CreateNamespaceRequest(id=namespace_id)))


def declare_table(props: dict[str, str], table_id: list[str], barrier: Any) -> str:
    ns = DirectoryNamespace(**props)
    barrier.wait()
    return _outcome(lambda: ns.declare_table(ln.DeclareTableRequest(id=table_id)))


def version_rounds(
    props: dict[str, str], table_id: list[str], rounds: int, worker: int, barrier: Any
) -> list[tuple[int, int, str]]:
    """Per round: stage the next version (own data: ids ``worker*1000 + round``), wait for everyone, commit
    it with create_table_version, wait again. Returns (round, version, outcome) per round."""
    ns = DirectoryNamespace(**props)
    results = []
    for round_number in range(rounds):
        barrier.wait()
        entry = stage(ns, table_id, rows(1, worker * 1000 + round_number))
        barrier.wait()
        request = ln.CreateTableVersionRequest(**entry.model_dump(exclude_none=True))
        results.append((round_number, entry.version, _outcome(lambda r=request: ns.create_table_version(r))))
    return results
