"""Write, audit, publish: Spark stages, one atomic commit, a data check, then a tag, or a rollback of the run.

``stage`` → ``commit`` (atomic) → ``audit`` (``LanceTableCheckOperator``: row counts and forbidden predicates
through the namespace's CountTableRows) → ``publish`` tags the audited versions (``audited``; readers pin the
tag) or, when the audit fails, ``roll_back`` restores every table this run committed to its version before
the run. Staged data cannot be read before its commit (opening a staged manifest with pylance would
finalise it), so the audit runs on the committed versions and the rollback undoes a failed audit.
"""

from __future__ import annotations

import os
from pathlib import Path

import pendulum
from airflow.sdk import DAG, Param

from airflow_provider_lance.operators.data import (
    LanceRollbackRunOperator,
    LanceTableCheckOperator,
    LanceTagTableVersionsOperator,
)
from airflow_provider_lance.operators.spark import LanceSparkStagingOperator
from airflow_provider_lance.operators.version import LanceBatchCreateTableVersionsOperator
from airflow_provider_lance.spark import local_spark_env

WORK_DIR = os.environ.get("LANCE_DEMO_WORK", str(Path(__file__).resolve().parents[1] / "demo_data" / "staging"))
TABLES = {"wap.orders": "range:{{ params.rows }}", "wap.customers": "range:{{ params.rows // 4 }}"}
ENTRIES_FILE = WORK_DIR + "/{{ dag.dag_id }}/{{ run_id | replace(':', '') | replace('+', '') }}.json"

with DAG(
    dag_id="lance_write_audit_publish",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["lance", "spark", "example"],
    params={
        "lance_conn_id": Param("lance_default", type="string"),
        "rows": Param(100, type="integer", minimum=1),
    },
    doc_md=__doc__,
) as dag:
    stage = LanceSparkStagingOperator(
        task_id="stage",
        conn_id="spark_default",
        lance_conn_id="{{ params.lance_conn_id }}",
        tables=TABLES,
        entries_file=ENTRIES_FILE,
        conf={"spark.ui.enabled": "false"},
        env_vars=local_spark_env(),
    )
    commit = LanceBatchCreateTableVersionsOperator(
        task_id="commit", entries_file=ENTRIES_FILE, lance_conn_id="{{ params.lance_conn_id }}"
    )
    audit = LanceTableCheckOperator(
        task_id="audit",
        tables=list(TABLES),
        min_rows="{{ params.rows // 4 }}",
        forbidden=["score < 0", "id IS NULL"],
        lance_conn_id="{{ params.lance_conn_id }}",
    )
    publish = LanceTagTableVersionsOperator(
        task_id="publish", tables=list(TABLES), tag="audited", lance_conn_id="{{ params.lance_conn_id }}"
    )
    roll_back = LanceRollbackRunOperator(
        task_id="roll_back",
        tables=list(TABLES),
        trigger_rule="one_failed",
        lance_conn_id="{{ params.lance_conn_id }}",
    )
    stage >> commit >> audit >> [publish, roll_back]
