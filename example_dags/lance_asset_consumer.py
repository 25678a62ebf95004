"""Scheduled on data: runs whenever ``lance_spark_batch_commit`` commits, and reads exactly what was committed.

The commit operator emits one ``lance://`` asset event per table through the ``lance_spark_batch_commit``
asset alias, with ``{"version": N, "table_id": [...]}`` in ``extra``. This DAG is scheduled on that alias;
``summarise`` reads each triggering event's table at the version it names.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG, AssetAlias, task

with DAG(
    dag_id="lance_asset_consumer",
    schedule=[AssetAlias("lance_spark_batch_commit")],
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["lance", "assets", "example"],
    doc_md=__doc__,
) as dag:

    @task
    def summarise(triggering_asset_events=None) -> dict[str, dict[str, int]]:
        """Count the rows of every committed table at the committed version."""
        from airflow_provider_lance.hooks.lance import LanceHook

        hook = LanceHook()
        result = {}
        for events in (triggering_asset_events or {}).values():
            for event in events:
                table, version = event.extra.get("table_id"), event.extra.get("version")
                if table is None or version is None:
                    continue
                name = ".".join(table)
                result[name] = {"version": int(version), "rows": hook.count_table_rows(table, version=int(version))}
        return result

    summarise()
