"""A DAG whose only credential for the REST server is a token file (a Kubernetes projected service-account
token): write through the server, the kubelet rotates the token mid-run (``rotate``), then declare, write,
stage, batch-commit and a deferrable sensor as the new token's principal (copied into the test DAGS_FOLDER)."""

from __future__ import annotations

import os
from datetime import datetime

from airflow.providers.standard.operators.python import PythonOperator
from airflow.sdk import DAG

from airflow_provider_lance.hooks.lance import LanceHook
from airflow_provider_lance.operators.table import LanceDeclareTableOperator
from airflow_provider_lance.operators.version import LanceBatchCreateTableVersionsOperator
from airflow_provider_lance.sensors.lance import LanceTableVersionSensor


def write(table: str) -> None:
    from tests.airflow_helpers import write_table

    write_table(LanceHook().get_conn(), table.split("."), rows=2)


def rotate() -> None:
    """What the kubelet does before the token expires: the new token moved into place."""
    os.replace(os.environ["LANCE_NEXT_TOKEN"], os.environ["LANCE_TOKEN_FILE"])


def stage() -> list[dict]:
    from tests.airflow_helpers import stage_append

    return [stage_append(LanceHook().get_conn(), ["after", "t"])]


with DAG("lance_token_file", schedule=None, start_date=datetime(2024, 1, 1), catchup=False) as dag:
    declare_before = LanceDeclareTableOperator(task_id="declare_before", table_id="before.declared")
    write_before = PythonOperator(task_id="write_before", python_callable=write, op_args=["before.t"])
    rotation = PythonOperator(task_id="rotate", python_callable=rotate)
    declare_after = LanceDeclareTableOperator(task_id="declare_after", table_id="after.declared")
    write_after = PythonOperator(task_id="write_after", python_callable=write, op_args=["after.t"])
    staged = PythonOperator(task_id="stage", python_callable=stage)
    commit = LanceBatchCreateTableVersionsOperator(task_id="commit", entries=staged.output)
    wait = LanceTableVersionSensor(
        task_id="wait", table_id="after.t", min_version=2, deferrable=True, poke_interval=1, timeout=60
    )
    declare_before >> write_before >> rotation >> declare_after >> write_after >> staged >> commit >> wait
