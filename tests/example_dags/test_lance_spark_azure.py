"""End to end on Azure Blob Storage: the unchanged example DAG with ``lance_default`` pointing at
``az://lance-ns/<prefix>`` on Azurite.

The connection carries the account name and key (login/password, as a user of Azure would write them) and the
account URL in its storage options; nothing else tells Spark about Azure. The reference namespace reads the
committed tables; the account key appears in no task log, command line Airflow printed, or XCom.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path

import pytest

from tests.azurite import ACCOUNT, ACCOUNT_KEY, CONTAINER, AzuriteServer, azurite_server  # noqa: F401
from tests.example_dags.test_lance_spark_batch_commit import EXPECTED, ROWS, airflow
from tests.example_dags.test_lance_spark_s3 import DAG_ID, all_logs, dag_environment, table_state

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.azure]


def test_example_dag_on_azurite(tmp_path: Path, azurite_server: AzuriteServer) -> None:  # noqa: F811
    root = f"az://{CONTAINER}/dag-{uuid.uuid4().hex[:12]}"
    options = azurite_server.storage_options()
    connection = {
        "host": root,
        "login": ACCOUNT,
        "password": ACCOUNT_KEY,
        "extra": {
            "storage_options": {k: options[k] for k in ("azure_storage_endpoint", "allow_http")},
            "table_version_management": "true",
        },
    }
    env = dag_environment(tmp_path, connection, ("AZURE_", "AZURITE_"))

    done = airflow(env, "dags", "test", DAG_ID, "-c", json.dumps({"rows": ROWS}))

    assert table_state(azurite_server, root) == {table: ([1], rows) for table, rows in EXPECTED.items()}
    assert ACCOUNT_KEY not in done.stdout + done.stderr
    assert ACCOUNT_KEY not in all_logs(env)
    with sqlite3.connect(Path(env["AIRFLOW_HOME"]) / "airflow.db") as db:
        xcoms = [str(row[0]) for row in db.execute("select value from xcom")]
    assert xcoms
    assert not any(ACCOUNT_KEY in value for value in xcoms)
