"""Scheduled clean-up in a real DAG run (``dag.test()``): ``LanceBatchDeleteTableVersionsOperator`` over every
table of a namespace and over named tables, on the provider's engine in managed mode."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import lance
import lance.namespace
import lance_namespace as ln
import pytest

from tests.airflow_helpers import DAGS_FOLDER, migrate_airflow_db

pytestmark = pytest.mark.airflow

DAG_FILE = Path(__file__).parent / "dags" / "lance_cleanup.py"


@pytest.fixture(scope="session")
def airflow_db():
    return migrate_airflow_db()


def test_cleanup_dag(airflow_db, tmp_path, monkeypatch):
    from airflow_provider_lance.hooks.lance import LanceHook

    root = tmp_path / "warehouse"
    root.mkdir()
    monkeypatch.setenv(
        "AIRFLOW_CONN_LANCE_DEFAULT",
        f'{{"conn_type": "lance", "host": "{root}", "extra": {{"table_version_management": "true"}}}}',
    )
    DAGS_FOLDER.mkdir(parents=True, exist_ok=True)
    target = DAGS_FOLDER / DAG_FILE.name
    shutil.copyfile(DAG_FILE, target)
    spec = importlib.util.spec_from_file_location("lance_cleanup_dag", target)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

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
