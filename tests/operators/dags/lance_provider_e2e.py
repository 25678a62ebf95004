"""DAGs for the provider's real-Airflow tests (copied into the test AIRFLOW__CORE__DAGS_FOLDER).

``lance_provider_e2e``: create namespace → declare → write v1 (and, in a background thread, later
versions) → version sensors in reschedule (baseline in task_state_store), deferrable and poke mode →
stage versions → batch commit from XCom → retention.
``lance_provider_e2e_fail``: an invalid operation fails its task with the namespace error's message.
"""

from __future__ import annotations

import os
import threading
import time
from datetime import datetime

from airflow.providers.standard.operators.python import PythonOperator
from airflow.sdk import DAG

from airflow_provider_lance.assets.lance import create_asset
from airflow_provider_lance.hooks.lance import LanceHook
from airflow_provider_lance.operators.namespace import LanceCreateNamespaceOperator
from airflow_provider_lance.operators.table import LanceDeclareTableOperator, LanceRegisterTableOperator
from airflow_provider_lance.operators.version import (
    LanceBatchCreateTableVersionsOperator,
    LanceBatchDeleteTableVersionsOperator,
)
from airflow_provider_lance.sensors.lance import LanceTableVersionSensor

ROOT = os.environ.get("LANCE_E2E_ROOT", "/tmp/lance-e2e")
DELAY = float(os.environ.get("LANCE_E2E_DELAY", "4"))


def _append(table_id: list[str]) -> None:
    import lance
    import pyarrow as pa

    ns = LanceHook().get_conn()
    lance.write_dataset(pa.table({"x": [1, 2]}), namespace_client=ns, table_id=table_id, mode="append")


def write_first_versions() -> None:
    import lance
    import pyarrow as pa

    ns = LanceHook().get_conn()
    for table in (["prod", "a"], ["prod", "b"], ["prod", "c"]):
        lance.write_dataset(pa.table({"x": [0]}), namespace_client=ns, table_id=table, mode="create")

    def later() -> None:  # another writer, committing while the sensors wait
        time.sleep(DELAY)
        _append(["prod", "c"])
        time.sleep(DELAY)
        _append(["prod", "b"])

    threading.Thread(target=later, daemon=True).start()


def stage_versions() -> list[dict]:
    from tests.airflow_helpers import stage_append

    ns = LanceHook().get_conn()
    return [stage_append(ns, ["prod", "a"]), stage_append(ns, ["prod", "b"])]


with DAG(
    "lance_provider_e2e",
    schedule=None,
    start_date=datetime(2024, 1, 1),
    catchup=False,
    render_template_as_native_obj=True,
) as dag:
    create_ns = LanceCreateNamespaceOperator(task_id="create_ns", namespace_id="prod")
    declare = LanceDeclareTableOperator(task_id="declare", table_id="prod.declared")
    write = PythonOperator(task_id="write", python_callable=write_first_versions)
    wait_reschedule = LanceTableVersionSensor(
        task_id="wait_reschedule",
        table_id="prod.c",
        newer_than_baseline=True,
        mode="reschedule",
        poke_interval=1,
        timeout=120,
    )
    wait_deferred = LanceTableVersionSensor(
        task_id="wait_deferred", table_id="prod.b", min_version=2, deferrable=True, poke_interval=1, timeout=120
    )
    wait_poke = LanceTableVersionSensor(task_id="wait_poke", table_id=["prod", "a"], version=1, poke_interval=1)
    stage = PythonOperator(task_id="stage", python_callable=stage_versions)
    commit = LanceBatchCreateTableVersionsOperator(
        task_id="commit",
        entries="{{ ti.xcom_pull(task_ids='stage') }}",
        outlets=[create_asset(root=ROOT, table_id="prod.a"), create_asset(root=ROOT, table_id="prod.b")],
    )
    retention = LanceBatchDeleteTableVersionsOperator(task_id="retention", table_id="prod.a", keep_last=1)

    create_ns >> declare >> write >> wait_reschedule >> wait_deferred >> wait_poke >> stage >> commit >> retention


with DAG("lance_provider_e2e_fail", schedule=None, start_date=datetime(2024, 1, 1), catchup=False) as fail_dag:
    LanceRegisterTableOperator(task_id="register_bad", table_id="t", location="/absolute/not/allowed", retries=0)
