"""Spark stages new versions of several Lance tables; one atomic batch commit makes them visible together.

``stage_tables`` (``LanceSparkStagingOperator``) runs the provider's Spark job: executors write the Lance data
files, the driver stages one version per table and writes the entries to commit to a JSON file (nothing is
visible yet). The Lance connection (root, credentials, storage options) reaches the job through the
environment of ``spark-submit``, never its command line, so the DAG runs unchanged on ``s3://`` roots.
``commit_versions`` commits them with ``BatchCreateTableVersions``, all or nothing, and emits one ``lance://``
asset event per table (through the ``lance_spark_batch_commit`` asset alias; ``lance_asset_consumer`` is
scheduled on it). Sensors then confirm each table is at its new version and ``report`` reads the tables.

Reruns: the DAG run's identity goes into the metadata of every version it commits. A retried commit, or a
cleared and re-run DAG run, finds the versions this run committed: staging skips those tables and the
commit commits nothing new. ``max_active_runs=1``: two runs staging on top of the same versions would conflict.

Connections: ``lance_default`` (conn type ``lance``, host = namespace root, or extra ``{"root": ...}``; turn on
table version management) and ``spark_default`` (e.g. ``{"conn_type": "spark", "host": "local[2]"}``).
Environment: ``LANCE_DEMO_WORK`` (where entries files go; default ``demo_data/staging`` in the working tree).
"""

from __future__ import annotations

import os
from pathlib import Path

import pendulum
from airflow.sdk import DAG, AssetAlias, Param, task

from airflow_provider_lance.operators.spark import LanceSparkStagingOperator
from airflow_provider_lance.operators.version import LanceBatchCreateTableVersionsOperator
from airflow_provider_lance.sensors.lance import LanceTableVersionSensor
from airflow_provider_lance.spark import local_spark_env

DAG_ID = "lance_spark_batch_commit"
WORK_DIR = os.environ.get("LANCE_DEMO_WORK", str(Path(__file__).resolve().parents[1] / "demo_data" / "staging"))

#: Tables this pipeline writes, with the rows each gets per run (``range:START:END`` of ``params.rows``).
TABLES = {
    "demo.users": "range:{{ params.rows }}",
    "demo.events": "range:{{ params.rows * 10 }}",
    "demo.scores": "range:{{ params.rows // 2 }}",
}

#: Every table committed by this DAG gets an asset event through this alias (``lance://`` URI, version in extra).
COMMITTED = AssetAlias("lance_spark_batch_commit")

ENTRIES_FILE = WORK_DIR + "/{{ dag.dag_id }}/{{ run_id | replace(':', '') | replace('+', '') }}.json"

with DAG(
    dag_id=DAG_ID,
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["lance", "spark", "example"],
    params={
        "lance_conn_id": Param("lance_default", type="string"),
        "rows": Param(1000, type="integer", minimum=1),
        "mode": Param("append", enum=["append", "overwrite"]),
    },
    doc_md=__doc__,
) as dag:
    stage_tables = LanceSparkStagingOperator(
        task_id="stage_tables",
        conn_id="spark_default",
        lance_conn_id="{{ params.lance_conn_id }}",
        tables=TABLES,
        mode="{{ params.mode }}",
        entries_file=ENTRIES_FILE,
        conf={"spark.ui.enabled": "false"},
        env_vars=local_spark_env(),
    )

    commit_versions = LanceBatchCreateTableVersionsOperator(
        task_id="commit_versions",
        entries_file=ENTRIES_FILE,
        lance_conn_id="{{ params.lance_conn_id }}",
        outlets=[COMMITTED],
    )

    sensors = [
        LanceTableVersionSensor(
            task_id=f"wait_{table.replace('.', '_')}",
            table_id=table,
            # The version this run committed to this table (from the commit's XCom).
            version=(
                "{{ (ti.xcom_pull(task_ids='commit_versions')['versions'] "
                f"| selectattr('table_id', 'equalto', {table.split('.')!r}) | first)['version'] }}}}"
            ),
            lance_conn_id="{{ params.lance_conn_id }}",
            poke_interval=5,
            timeout=300,
        )
        for table in TABLES
    ]

    @task
    def report(params: dict | None = None) -> dict[str, dict[str, int]]:
        """Read every committed table through the namespace and log its version and row count."""
        import logging

        from airflow_provider_lance.hooks.lance import LanceHook

        log = logging.getLogger("airflow.task")
        hook = LanceHook(lance_conn_id=params["lance_conn_id"])
        result = {}
        for table in TABLES:
            result[table] = {"version": int(hook.get_latest_version(table)), "rows": hook.count_table_rows(table)}
            log.info("%s: version %s, %s rows", table, result[table]["version"], result[table]["rows"])
        return result

    stage_tables >> commit_versions >> sensors >> report()
