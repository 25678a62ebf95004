"""A catalog as the example pipeline leaves it: staged versions of three tables batch-committed by DAG runs.

Each run stages a new version of ``demo.users``, ``demo.events`` and ``demo.scores`` with the staging API (what
the Spark job does on the driver) and commits them with ``LanceBatchCreateTableVersionsOperator``, which records
the run in every version's metadata. Then one more version is staged and left uncommitted, ``demo.users``
gains a column (for the diff) and a tag, ``demo.scores`` an index, and a table with a hostile name is created.
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import lance
import lance_namespace as ln
import pyarrow as pa

from airflow_provider_lance import staging
from airflow_provider_lance.namespace import DirectoryNamespace
from tests.airflow_helpers import conn_json

DAG_ID = "lance_spark_batch_commit"
TABLES = {"demo.users": 1, "demo.events": 10, "demo.scores": 0.5}
XSS_NAME = "<img src=x onerror=alert(1)>"
#: Tables of the namespace ``many`` (more than one page of the table list), added by the page tests' fixture.
MANY = 130
#: Versions of ``demo.long`` (more than one page of the version history), added by the page tests' fixture.
LONG = 57
RUN_IDS = [f"manual__2026-11-2{day}T02:00:00+00:00" for day in (1, 2, 3)]


def _context(task_id: str, run_id: str) -> dict[str, Any]:
    ti = SimpleNamespace(dag_id=DAG_ID, run_id=run_id, task_id=task_id, map_index=-1)
    return {"ti": ti, "outlet_events": defaultdict(lambda: SimpleNamespace(extra={}))}


def _rows(start: int, count: int) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + count), pa.int64()), "name": [f"n{i}" for i in range(count)]})


def build_catalog(root: Path, rows: int = 100, conn_id: str = "lance_default") -> dict[str, Any]:
    """Write the catalog under ``root`` (sets the ``AIRFLOW_CONN_*`` variable of ``conn_id`` to it); returns the
    namespace, what each run's commit returned (its XCom) and the last version of ``demo.users``."""
    from airflow_provider_lance.operators.version import LanceBatchCreateTableVersionsOperator

    os.environ[f"AIRFLOW_CONN_{conn_id.upper()}"] = conn_json(root, extra={"table_version_management": "true"})
    namespace = DirectoryNamespace(root=str(root), table_version_management="true")
    namespace.create_namespace(ln.CreateNamespaceRequest(id=["demo"]))
    results = {}
    for number, run_id in enumerate(RUN_IDS):
        stage = staging.StagingNamespace(namespace)
        for table, factor in TABLES.items():
            staging.stage_data(namespace, table.split("."), _rows(number * 10_000, int(rows * factor)), staging=stage)
        operator = LanceBatchCreateTableVersionsOperator(
            task_id="commit_versions",
            lance_conn_id=conn_id,
            entries=[e.model_dump(exclude_none=True) for e in stage.entries],
        )
        results[run_id] = operator.execute(_context("commit_versions", run_id))
    # demo.users gains a column (a schema change for the diff) and a tag.
    users = lance.write_dataset(
        _rows(50_000, 7).append_column("score", pa.array([0.5] * 7)),
        namespace_client=namespace,
        table_id=["demo", "users"],
        mode="overwrite",
    )
    namespace.create_table_tag(ln.CreateTableTagRequest(id=["demo", "users"], tag="audited", version=2))
    # demo.scores gets an index (a version of its own).
    lance.dataset(namespace_client=namespace, table_id=["demo", "scores"]).create_scalar_index("id", "BTREE")
    # A staged version that no commit picked up (the Spark job ran, the commit task did not).
    staging.stage_data(namespace, ["demo", "events"], _rows(90_000, 5))
    lance.write_dataset(_rows(0, 3), namespace_client=namespace, table_id=["demo", XSS_NAME], mode="create")
    return {"namespace": namespace, "results": results, "users_version": int(users.version)}
