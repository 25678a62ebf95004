"""Event-driven: runs whenever anyone commits a version of ``sales.orders`` — a Spark job outside Airflow, lancedb
in a notebook, another team through the REST server — and reads exactly the version that started it.

The asset's watcher is a :class:`~airflow_provider_lance.triggers.changes.LanceChangeTrigger` on the catalog's
change feed (docs/change-feed.md): the triggerer follows the catalog (one poll loop per connection, however many
assets watch it; over the REST server a long-poll), and each commit of the table becomes one asset event
carrying the committed version. ``pinned_versions`` reads it back in the run, so newer commits landing
meanwhile do not change what the run reads.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG, Asset, AssetWatcher, task

from airflow_provider_lance.triggers.changes import LanceChangeTrigger

TABLE = "sales.orders"

orders = Asset(
    uri=f"lance://warehouse/{TABLE}",
    name=f"lance_change_feed.{TABLE}",
    watchers=[
        AssetWatcher(
            name="sales_orders_commits",
            trigger=LanceChangeTrigger(tables=[TABLE], lance_conn_id="lance_default", poll_interval=2.0),
        )
    ],
)

with DAG(
    dag_id="lance_change_feed",
    schedule=[orders],
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["lance", "assets", "event-driven", "example"],
    doc_md=__doc__,
) as dag:

    @task
    def read_pinned(triggering_asset_events=None) -> dict[str, dict[str, int]]:
        """Count the rows of each table at the version whose commit started this run."""
        from airflow_provider_lance.hooks.lance import LanceHook
        from airflow_provider_lance.triggers.changes import pinned_versions

        hook = LanceHook()
        return {
            table: {"version": version, "rows": hook.count_table_rows(table, version=version)}
            for table, version in pinned_versions(triggering_asset_events).items()
        }

    read_pinned()
