"""End to end with no long-lived storage key outside the catalog server: the unchanged example DAG with
``lance_default`` of ``impl=rest`` pointing at our REST server, which vends table-scoped credentials from STS
(moto) and holds the only storage keys.

The vended credentials live two seconds here (the STS answer's expiry is set by a botocore hook on the
server's vendor), so the Spark executors, which write the data files, must renew them from the server while
they write. The staging job's connection (``LANCE_NAMESPACE_PROPERTIES``), the Airflow environment, every log
(the ``spark-submit`` command line with its ``--conf`` included) and XCom carry no storage key; the tables
are committed anyway, with data only vended credentials could have written.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import lance
import lance_namespace as ln
import pytest

from airflow_provider_lance.hooks.connection import namespace_config
from airflow_provider_lance.rest import ServerSettings
from scripts.demo import demo_environment
from tests.example_dags.test_lance_spark_batch_commit import EXPECTED, ROWS, airflow
from tests.example_dags.test_lance_spark_s3 import all_logs
from tests.rest.servers import serve_namespace
from tests.s3.conftest import ACCESS_KEY, SECRET_KEY, MotoServer, moto_server, s3_root  # noqa: F401
from tests.s3.test_s3_credential_vending import make_role, vending_properties
from tests.s3.test_s3_vending_rest import RecordingNamespace

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.s3]

DAG_ID = "lance_spark_batch_commit"
TOKEN = "dag-token-7d2e41"
LIFETIME = timedelta(seconds=2)


@pytest.fixture
def vending_server(moto_server: MotoServer, s3_root: str) -> Iterator[tuple[str, RecordingNamespace]]:  # noqa: F811
    role = make_role(moto_server, f"dag-{s3_root.rsplit('-', 1)[-1]}")
    engine = RecordingNamespace(**vending_properties(moto_server, s3_root, role, table_version_management="true"))

    def short_lived(parsed: dict[str, Any], **_: Any) -> None:
        parsed["Credentials"]["Expiration"] = datetime.now(UTC) + LIFETIME

    engine.catalog.vendor.sts.meta.events.register("after-call.sts.AssumeRole", short_lived)
    with serve_namespace(engine, ServerSettings(tokens=frozenset({TOKEN}), vend_credentials=True)) as url:
        yield url, engine


def test_spark_staging_through_rest_with_vended_credentials_only(
    tmp_path: Path,
    vending_server: tuple[str, RecordingNamespace],
    moto_server: MotoServer,  # noqa: F811
) -> None:
    url, engine = vending_server
    home, work = tmp_path / "airflow", tmp_path / "staging"
    home.mkdir()
    work.mkdir()
    env = demo_environment(tmp_path / "unused", work, home)
    connection = {"conn_type": "lance", "host": url, "password": TOKEN, "extra": {"impl": "rest"}}
    env["AIRFLOW_CONN_LANCE_DEFAULT"] = json.dumps(connection)
    for key in [k for k in env if k.startswith(("LANCE_TEST_", "AWS_"))]:
        env.pop(key)
    # What LanceSparkStagingOperator hands spark-submit (LANCE_NAMESPACE_PROPERTIES): the server and the token
    from airflow.sdk import Connection

    impl, properties = namespace_config(
        Connection(conn_id="lance_default", conn_type="lance", host=url, password=TOKEN, extra='{"impl": "rest"}'),
        lambda secret: None,
    )
    assert impl == "rest" and set(properties) == {"uri", "header.Authorization"}
    inputs = json.dumps([env, properties])
    assert ACCESS_KEY not in inputs and SECRET_KEY not in inputs

    airflow(env, "db", "migrate")
    done = airflow(env, "dags", "test", DAG_ID, "-c", json.dumps({"rows": ROWS}))

    for table, rows in EXPECTED.items():
        table_id = table.split(".")
        versions = engine.list_table_versions(ln.ListTableVersionsRequest(id=table_id)).versions
        assert [v.version for v in versions] == [1]
        location = engine.describe_table(ln.DescribeTableRequest(id=table_id, vend_credentials=False)).location
        assert lance.dataset(location, storage_options=moto_server.storage_options()).count_rows() == rows
    # the executors asked for new credentials of the batch's tables while writing (pylance's refresh)
    refreshed = {tuple(table_id) for table_id, asked in engine.described if asked is True}
    assert refreshed & {tuple(table.split(".")) for table in EXPECTED}, engine.described

    outputs = done.stdout + done.stderr + all_logs(env)
    assert "spark-submit" in outputs.lower()  # the command line (with its --conf) is in the logs checked
    for key in (ACCESS_KEY, SECRET_KEY):
        assert key not in outputs
    with sqlite3.connect(home / "airflow.db") as db:
        xcoms = [str(row[0]) for row in db.execute("select value from xcom")]
    assert xcoms and not any(key in value for value in xcoms for key in (ACCESS_KEY, SECRET_KEY))
