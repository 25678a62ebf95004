"""Real Airflow: DAG runs over a real local namespace, and provider registration."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.airflow_helpers import AIRFLOW_BIN, conn_json, load_dag_file, migrate_airflow_db

pytestmark = pytest.mark.airflow

DAG_FILE = Path(__file__).parent / "dags" / "lance_provider_e2e.py"


@pytest.fixture(scope="session")
def airflow_db():
    return migrate_airflow_db()


@pytest.fixture
def e2e(airflow_db, tmp_path, monkeypatch):
    root = tmp_path / "warehouse"
    root.mkdir()
    monkeypatch.setenv("LANCE_E2E_ROOT", str(root))
    monkeypatch.setenv("AIRFLOW_CONN_LANCE_DEFAULT", conn_json(root, extra={"table_version_management": "true"}))
    return load_dag_file(DAG_FILE, "lance_provider_e2e_dags"), root


def _states(dag_run):
    return {ti.task_id: str(getattr(ti.state, "value", ti.state)) for ti in dag_run.get_task_instances()}


def test_end_to_end_dag(e2e):
    from airflow_provider_lance.hooks.lance import LanceHook

    module, _ = e2e
    dag_run = module.dag.test()
    states = _states(dag_run)
    assert str(getattr(dag_run.state, "value", dag_run.state)) == "success", states
    assert set(states.values()) == {"success"}

    hook = LanceHook()
    assert hook.table_exists("prod.declared")
    assert hook.get_latest_version("prod.b") == 3  # v1 write, v2 other writer, v3 batch commit
    assert [v.version for v in hook.list_table_versions("prod.a")] == [2]  # retention kept the latest
    assert hook.get_latest_version("prod.c") == 2

    from airflow.models.asset import AssetEvent
    from airflow.utils.session import create_session

    with create_session() as session:
        events = session.query(AssetEvent).filter(AssetEvent.source_run_id == dag_run.run_id).all()
        versions = sorted((e.extra or {}).get("version") for e in events)
    assert versions == [2, 3]


def test_failing_operation_fails_its_task(e2e, capfd):
    module, _ = e2e
    dag_run = module.fail_dag.test()
    states = _states(dag_run)
    assert str(getattr(dag_run.state, "value", dag_run.state)) == "failed"
    assert states == {"register_bad": "failed"}
    out = capfd.readouterr()
    assert "Cannot register table t: InvalidInputError" in out.out + out.err


def test_airflow_lists_the_hook(airflow_db):
    result = subprocess.run(
        [AIRFLOW_BIN, "providers", "hooks"], env=dict(os.environ), capture_output=True, text=True, timeout=120
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "lance" in output
    assert "airflow_provider_lance.hooks.lance.LanceHook" in output
    assert "Error when importing hook" not in output
