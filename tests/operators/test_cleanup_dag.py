"""Scheduled clean-up in a real DAG run (``dag.test()``): ``LanceBatchDeleteTableVersionsOperator`` over every
table of a namespace and over named tables, on the provider's engine in managed mode."""

from __future__ import annotations

from pathlib import Path

import lance
import lance.namespace
import lance_namespace as ln
import pytest

from tests.airflow_helpers import conn_json, load_dag_file, migrate_airflow_db

pytestmark = pytest.mark.airflow

DAG_FILE = Path(__file__).parent / "dags" / "lance_cleanup.py"


@pytest.fixture(scope="session")
def airflow_db():
    return migrate_airflow_db()


def test_cleanup_dag(airflow_db, tmp_path, monkeypatch):
    from airflow_provider_lance.hooks.lance import LanceHook

    root = tmp_path / "warehouse"
    root.mkdir()
    monkeypatch.setenv("AIRFLOW_CONN_LANCE_DEFAULT", conn_json(root, extra={"table_version_management": "true"}))
    module = load_dag_file(DAG_FILE, "lance_cleanup_dag")

    dag_run = module.dag.test()
    states = {ti.task_id: str(getattr(ti.state, "value", ti.state)) for ti in dag_run.get_task_instances()}
    assert set(states.values()) == {"success"}, states  # "check" asserted the XCom of both clean-ups

    hook = LanceHook()
    for table in ("prod.a", "prod.b", "prod.c"):
        assert [v.version for v in hook.list_table_versions(table)] == [4]
    assert [v.version for v in hook.list_table_versions("other.x")] == [3, 4]
    # the reference still reads the cleaned catalog
    reference = lance.namespace.DirectoryNamespace(root=str(root), table_version_tracking_enabled="true")
    assert reference.list_tables(ln.ListTablesRequest(id=["prod"])).tables == ["a", "b", "c"]
    dataset = lance.dataset(namespace_client=reference, table_id=["prod", "a"])
    assert (dataset.version, dataset.count_rows()) == (4, 4)
