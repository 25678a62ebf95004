"""The DAG of the scheduled clean-up test (copied into the test AIRFLOW__CORE__DAGS_FOLDER): pylance writes
four versions into each table of ``prod`` (and of ``other``), then one task cleans up every table of ``prod``
(keep the newest), another two tables named explicitly, and a last task checks what the clean-ups pushed to
XCom."""

from __future__ import annotations

from datetime import datetime

from airflow.providers.standard.operators.python import PythonOperator
from airflow.sdk import DAG

from airflow_provider_lance.hooks.lance import LanceHook
from airflow_provider_lance.operators.version import LanceBatchDeleteTableVersionsOperator

TABLES = [["prod", "a"], ["prod", "b"], ["prod", "c"], ["other", "x"]]


def write_versions() -> None:
    import lance
    import pyarrow as pa

    hook = LanceHook()
    for namespace in ("prod", "other"):
        hook.create_namespace(namespace)
    for table in TABLES:
        lance.write_dataset(pa.table({"x": [0]}), namespace_client=hook.namespace, table_id=table, mode="create")
        for i in range(1, 4):
            lance.write_dataset(pa.table({"x": [i]}), namespace_client=hook.namespace, table_id=table, mode="append")


def check(ti) -> None:
    namespace = ti.xcom_pull(task_ids="clean_namespace")
    assert namespace == {"deleted_count": 9, "tables": {"prod.a": 3, "prod.b": 3, "prod.c": 3}}, namespace
    named = ti.xcom_pull(task_ids="clean_named")
    assert named == {"deleted_count": 2, "tables": {"other.x": 2}}, named


with DAG("lance_cleanup", schedule=None, start_date=datetime(2024, 1, 1), catchup=False) as dag:
    write = PythonOperator(task_id="write", python_callable=write_versions)
    clean_namespace = LanceBatchDeleteTableVersionsOperator(task_id="clean_namespace", namespace_id="prod", keep_last=1)
    clean_named = LanceBatchDeleteTableVersionsOperator(
        task_id="clean_named", table_ids=["other.x", "other.gone"], ranges=[[1, 3]], ignore_if_missing=True
    )
    verify = PythonOperator(task_id="check", python_callable=check)
    write >> clean_namespace >> clean_named >> verify
