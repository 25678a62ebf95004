"""End to end: the example DAG with a real spark-submit, checked with the reference namespace and pylance.

Runs ``airflow dags test lance_spark_batch_commit`` in a subprocess (own AIRFLOW_HOME, the repository's
``example_dags`` as DAGs folder), then re-runs the commit task of the same DAG run and checks it does not
commit twice.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import lance
import lance.namespace
import lance_namespace as ln
import pytest

from scripts.demo import demo_environment

pytestmark = [pytest.mark.airflow, pytest.mark.spark]

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
ROWS = 40
EXPECTED = {"demo.users": ROWS, "demo.events": ROWS * 10, "demo.scores": ROWS // 2}


@pytest.fixture
def airflow_env(tmp_path: Path) -> dict[str, str]:
    home, root, work = tmp_path / "airflow", tmp_path / "namespace", tmp_path / "staging"
    for path in (home, root, work):
        path.mkdir()
    env = demo_environment(root, work, home)  # exactly what `make demo` runs with
    for key in [k for k in env if k.startswith("LANCE_TEST_")]:
        env.pop(key)
    airflow(env, "db", "migrate")
    return env


def airflow(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(BIN / "airflow"), *args], env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, f"airflow {' '.join(args)} failed:\n{done.stdout[-5000:]}\n{done.stderr[-5000:]}"
    return done


def check_tables(root: str, version: int) -> None:
    """Every table at ``version`` with exactly the expected rows, through the reference and plain pylance."""
    reference = lance.namespace.DirectoryNamespace(root=root)
    for table, count in EXPECTED.items():
        table_id = table.split(".")
        versions = reference.list_table_versions(ln.ListTableVersionsRequest(id=table_id)).versions
        assert [v.version for v in versions] == list(range(1, version + 1))
        location = reference.describe_table(ln.DescribeTableRequest(id=table_id)).location
        data = lance.dataset(location).to_table()
        assert lance.dataset(location).version == version
        assert sorted(data["id"].to_pylist()) == list(range(count))
        assert data.column_names == ["id", "name", "score", "bucket"]
        assert lance.dataset(namespace_client=reference, table_id=table_id).count_rows() == count


def test_example_dag_end_to_end(airflow_env: dict[str, str]) -> None:
    conf = json.dumps({"rows": ROWS})
    airflow(airflow_env, "dags", "test", "lance_spark_batch_commit", "-c", conf)
    root = airflow_env["LANCE_DEMO_ROOT"]
    check_tables(root, version=1)

    # Re-running the commit task of the same run finds its own commit and commits nothing new.
    (entries_file,) = (Path(airflow_env["LANCE_DEMO_WORK"]) / "lance_spark_batch_commit").glob("*.json")
    listed = airflow(airflow_env, "dags", "list-runs", "lance_spark_batch_commit", "-o", "json").stdout
    runs = json.loads(next(line for line in listed.splitlines() if line.startswith("[")))
    (run_id,) = [r["run_id"] for r in runs]
    assert entries_file.stem == re.sub(r"[:+]", "", run_id)
    rerun = airflow(airflow_env, "tasks", "test", "lance_spark_batch_commit", "commit_versions", run_id)
    output = rerun.stdout + rerun.stderr
    # The catalog manages table versions, so the operator finds its run key on the committed versions.
    assert "All 3 versions were already committed by this DAG run" in output, output[-6000:]
    assert "Committed version 2" not in output, output[-6000:]
    check_tables(root, version=1)
    # One atomic commit: every table's version row is in __manifest.
    rows = lance.dataset(f"{root}/__manifest").to_table(filter="object_type = 'table_version'").to_pylist()
    assert sorted(row["object_id"] for row in rows) == sorted(f"{t.replace('.', '$')}$1" for t in EXPECTED)
