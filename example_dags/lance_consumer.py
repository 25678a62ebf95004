"""A consumer gated on Lance sensors: wait for the table, then for a version, then read that version.

``LanceTableExistenceSensor`` waits until ``demo.users`` exists, ``LanceTableVersionSensor`` until its latest
version is at least ``params.min_version`` (returned to XCom), then ``summarise`` reads exactly that version
with pylance and logs a small aggregate. Set ``deferrable=True`` on the sensors to wait in the triggerer.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG, Param, task

from airflow_provider_lance.sensors.lance import LanceTableExistenceSensor, LanceTableVersionSensor

TABLE = "demo.users"

with DAG(
    dag_id="lance_consumer",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["lance", "example"],
    params={
        "lance_conn_id": Param("lance_default", type="string"),
        "min_version": Param(1, type="integer", minimum=1),
    },
    doc_md=__doc__,
) as dag:
    table_exists = LanceTableExistenceSensor(
        task_id="wait_for_table",
        table_id=TABLE,
        lance_conn_id="{{ params.lance_conn_id }}",
        poke_interval=10,
        timeout=3600,
    )
    version_ready = LanceTableVersionSensor(
        task_id="wait_for_version",
        table_id=TABLE,
        min_version="{{ params.min_version }}",
        lance_conn_id="{{ params.lance_conn_id }}",
        poke_interval=10,
        timeout=3600,
    )

    @task
    def summarise(params: dict | None = None, ti=None) -> dict[str, float | int]:
        """Read the version the sensor found and log row count and mean score."""
        import logging

        import lance
        import pyarrow.compute as pc

        from airflow_provider_lance.hooks.lance import LanceHook

        version = int(ti.xcom_pull(task_ids="wait_for_version"))
        namespace = LanceHook(lance_conn_id=params["lance_conn_id"]).namespace
        dataset = lance.dataset(namespace_client=namespace, table_id=TABLE.split("."), version=version)
        table = dataset.to_table(columns=["score"]) if "score" in dataset.schema.names else dataset.to_table()
        summary: dict[str, float | int] = {"version": version, "rows": table.num_rows}
        if "score" in table.column_names and table.num_rows:
            summary["mean_score"] = float(pc.mean(table["score"]).as_py())
        logging.getLogger("airflow.task").info("%s: %s", TABLE, summary)
        return summary

    table_exists >> version_ready >> summarise()
