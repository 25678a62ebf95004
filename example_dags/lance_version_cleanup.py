"""Scheduled maintenance: compact each Lance table's files, then keep its newest versions and delete the older ones.

``optimize`` (``LanceOptimizeTableOperator``, pylance's optimizer: compaction and index optimization), then one
``LanceBatchDeleteTableVersionsOperator`` for all tables with a ``keep_last`` policy (the latest version is never
deleted; a table that does not exist yet is skipped). On the provider's engine the clean-up of every table is
one call: every table checked before anything is deleted, their rows in one ``__manifest`` commit
(``namespace_id="demo"`` would clean every table of the namespace).
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG, Param

from airflow_provider_lance.operators.data import LanceOptimizeTableOperator
from airflow_provider_lance.operators.version import LanceBatchDeleteTableVersionsOperator

TABLES = ["demo.users", "demo.events", "demo.scores"]

with DAG(
    dag_id="lance_version_cleanup",
    schedule="@daily",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["lance", "maintenance", "example"],
    params={
        "lance_conn_id": Param("lance_default", type="string"),
        "keep_last": Param(5, type="integer", minimum=1),
    },
    doc_md=__doc__,
) as dag:
    optimize = LanceOptimizeTableOperator(task_id="optimize", tables=TABLES, lance_conn_id="{{ params.lance_conn_id }}")
    optimize >> LanceBatchDeleteTableVersionsOperator(
        task_id="retain",
        table_ids=TABLES,
        keep_last="{{ params.keep_last }}",
        ignore_if_missing=True,
        lance_conn_id="{{ params.lance_conn_id }}",
    )
