"""End to end on S3: the unchanged example DAG with ``lance_default`` pointing at ``s3://`` on a moto server.

The connection carries the credentials (login/password) and the storage options (endpoint, region,
allow_http); nothing else tells Spark about S3. Checks the tables with the reference namespace, that the
secret appears in no task log, argv-visible command line or XCom, and that re-running the staging and commit
tasks of the same DAG run (what clearing the run does) leaves the tables as one run left them.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import lance
import lance.namespace
import lance_namespace as ln
import pytest

from airflow_provider_lance.namespace import DirectoryNamespace
from scripts.demo import demo_environment
from tests.example_dags.test_lance_spark_batch_commit import EXPECTED, ROWS, airflow
from tests.s3.conftest import ACCESS_KEY, BUCKET, SECRET_KEY, MotoServer, moto_server, s3_root  # noqa: F401

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.s3]

DAG_ID = "lance_spark_batch_commit"


def dag_environment(tmp_path: Path, connection: dict[str, Any], foreign: tuple[str, ...]) -> dict[str, str]:
    """``make demo``'s environment with ``lance_default`` = ``connection`` (a catalog on an object store), without
    the variables starting with ``foreign`` (the store's own credentials must come from the connection only),
    and a migrated Airflow database.

    :param tmp_path: the test's directory.
    :param connection: the connection's fields (host, login, password, extra).
    :param foreign: prefixes of environment variables to drop.
    """
    home, work = tmp_path / "airflow", tmp_path / "staging"
    home.mkdir()
    work.mkdir()
    env = demo_environment(tmp_path / "unused", work, home)
    env["AIRFLOW_CONN_LANCE_DEFAULT"] = json.dumps({"conn_type": "lance", **connection})
    for key in [k for k in env if k.startswith(("LANCE_TEST_", *foreign))]:
        env.pop(key)
    airflow(env, "db", "migrate")
    return env


@pytest.fixture
def s3_env(tmp_path: Path, moto_server: MotoServer, s3_root: str) -> dict[str, str]:  # noqa: F811
    options = moto_server.storage_options()
    connection = {
        "host": s3_root,
        "login": ACCESS_KEY,
        "password": SECRET_KEY,
        "extra": {
            "storage_options": {k: options[k] for k in ("aws_endpoint", "aws_region", "allow_http")},
            "table_version_management": "true",
        },
    }
    return dag_environment(tmp_path, connection, ("AWS_",))


def reference(moto: MotoServer, root: str) -> lance.namespace.DirectoryNamespace:
    return lance.namespace.DirectoryNamespace(**moto.properties(root))


def table_state(moto: MotoServer, root: str) -> dict[str, tuple[list[int], int]]:
    """Per table: the version numbers and the latest version's row count, read by the reference."""
    ns = reference(moto, root)
    state = {}
    for table in EXPECTED:
        table_id = table.split(".")
        versions = [v.version for v in ns.list_table_versions(ln.ListTableVersionsRequest(id=table_id)).versions]
        location = ns.describe_table(ln.DescribeTableRequest(id=table_id)).location
        rows = lance.dataset(location, storage_options=moto.storage_options()).count_rows()
        state[table] = (versions, rows)
    return state


def all_logs(env: dict[str, str]) -> str:
    return "\n".join(p.read_text(errors="replace") for p in Path(env["AIRFLOW_HOME"]).rglob("*.log"))


def test_example_dag_on_s3_and_rerun(s3_env: dict[str, str], moto_server: MotoServer, s3_root: str) -> None:  # noqa: F811
    done = airflow(s3_env, "dags", "test", DAG_ID, "-c", json.dumps({"rows": ROWS}))
    one_run = {table: ([1], rows) for table, rows in EXPECTED.items()}
    assert table_state(moto_server, s3_root) == one_run

    listed = airflow(s3_env, "dags", "list-runs", DAG_ID, "-o", "json").stdout
    (run_id,) = [r["run_id"] for r in json.loads(next(line for line in listed.splitlines() if line.startswith("[")))]

    # Clearing the whole run re-runs staging and commit: nothing is staged or committed twice.
    restage = airflow(s3_env, "tasks", "test", DAG_ID, "stage_tables", run_id)
    recommit = airflow(s3_env, "tasks", "test", DAG_ID, "commit_versions", run_id)
    assert "already committed by run" in restage.stdout + restage.stderr
    assert "All 3 versions were already committed by this DAG run" in recommit.stdout + recommit.stderr
    assert table_state(moto_server, s3_root) == one_run

    engine = DirectoryNamespace(**moto_server.properties(s3_root))  # the reference does not return metadata
    described = engine.describe_table_version(ln.DescribeTableVersionRequest(id=["demo", "users"], version=1))
    assert described.version.metadata["airflow_run_id"] == f"{DAG_ID}/{run_id}"

    # The secret is in no log, no command line Airflow printed, no XCom.
    outputs = done.stdout + done.stderr + restage.stdout + restage.stderr + recommit.stdout + recommit.stderr
    assert SECRET_KEY not in outputs
    assert SECRET_KEY not in all_logs(s3_env)
    with sqlite3.connect(Path(s3_env["AIRFLOW_HOME"]) / "airflow.db") as db:
        xcoms = [str(row[0]) for row in db.execute("select value from xcom")]
    assert xcoms
    assert not any(SECRET_KEY in value for value in xcoms)
