"""End to end with no long-lived storage key outside the catalog server: the unchanged example DAG with
``lance_default`` of ``impl=rest`` pointing at our REST server, which vends table-scoped credentials from STS
(moto) and holds the only storage keys.

The vended credentials live two seconds here and S3 refuses them once expired (``400 ExpiredToken``: the
server's S3 and STS are :class:`tests.expiring_s3.ExpiringS3` in front of moto, which records every request with
the key that signed it), so the Spark executors, which write the data files, and the driver, which stages the
versions after the executors' work, must renew them from the server: every S3 request of the run is signed by a
credential valid at that moment. The staging job's connection (``LANCE_NAMESPACE_PROPERTIES``), the Airflow
environment, every log (the ``spark-submit`` command line with its ``--conf`` included) and XCom carry no storage
key; the tables are committed anyway, with data only vended credentials could have written.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import lance
import lance_namespace as ln
import pytest

from airflow_provider_lance.hooks.connection import namespace_config
from airflow_provider_lance.rest import ServerSettings
from scripts.demo import demo_environment
from tests.example_dags.test_lance_spark_batch_commit import airflow
from tests.example_dags.test_lance_spark_s3 import all_logs
from tests.expiring_s3 import ExpiringS3
from tests.rest.servers import serve_namespace
from tests.s3.conftest import ACCESS_KEY, SECRET_KEY, MotoServer, moto_server, s3_root  # noqa: F401
from tests.s3.test_s3_credential_vending import make_role, vending_properties
from tests.s3.test_s3_vending_rest import RecordingNamespace

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.s3]

DAG_ID = "lance_spark_batch_commit"
TOKEN = "dag-token-7d2e41"
LIFETIME = timedelta(seconds=2)
#: Rows per run: enough that the executors' writes outlast the first credential on a quiet machine too (with 40
#: rows, and with 100,000 on a quiet machine once imports got cheaper, the driver staged 1.7 s after the first
#: vend, before that credential expired, and proved nothing; 1,000,000 write for about 5 s).
ROWS = 1_000_000
EXPECTED = {"demo.users": ROWS, "demo.events": ROWS * 10, "demo.scores": ROWS // 2}


@pytest.fixture
def vending_server(
    moto_server: MotoServer,  # noqa: F811
    s3_root: str,  # noqa: F811
) -> Iterator[tuple[str, RecordingNamespace, ExpiringS3]]:
    role = make_role(moto_server, f"dag-{s3_root.rsplit('-', 1)[-1]}")
    with ExpiringS3(moto_server.endpoint, LIFETIME) as expiring:
        through_proxy = MotoServer(expiring.endpoint, moto_server.pid)
        # renewed with 1.6 s left (refresh_fraction 0.4 and the clock-skew allowance): margin for a loaded machine
        properties = vending_properties(through_proxy, s3_root, role, table_version_management="true")
        engine = RecordingNamespace(**properties, **{"credential_vendor.refresh_fraction": "0.4"})
        with serve_namespace(engine, ServerSettings(tokens=frozenset({TOKEN}), vend_credentials=True)) as url:
            yield url, engine, expiring


def test_spark_staging_through_rest_with_vended_credentials_only(
    tmp_path: Path,
    vending_server: tuple[str, RecordingNamespace, ExpiringS3],
    moto_server: MotoServer,  # noqa: F811
) -> None:
    url, engine, expiring = vending_server
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
    since = time.time()
    done = airflow(env, "dags", "test", DAG_ID, "-c", json.dumps({"rows": ROWS}))
    run_seconds = time.time() - since

    for table, rows in EXPECTED.items():
        table_id = table.split(".")
        versions = engine.list_table_versions(ln.ListTableVersionsRequest(id=table_id)).versions
        assert [v.version for v in versions] == [1]
        location = engine.describe_table(ln.DescribeTableRequest(id=table_id, vend_credentials=False)).location
        assert lance.dataset(location, storage_options=moto_server.storage_options()).count_rows() == rows
    # the executors asked for new credentials of the batch's tables while writing (pylance's refresh)
    refreshed = {tuple(table_id) for table_id, asked in engine.described if asked is True}
    assert refreshed & {tuple(table.split(".")) for table in EXPECTED}, engine.described
    # every S3 request of the run (executors, driver, server) was signed by a credential valid when it arrived,
    # over a run that outlived many of them; the data files and the staged manifests with vended keys
    assert run_seconds > 5 * LIFETIME.total_seconds()
    assert expiring.expired(since) == []
    assert len(expiring.vended_keys(since)) >= 5
    signed = [r for r in expiring.signed if r.at >= since and r.method == "PUT"]
    data = [r for r in signed if ".lance/data/" in r.path or ".manifest-" in r.path]  # not __manifest's own
    assert any(".manifest-" in r.path for r in data) and all(r.expires_at is not None for r in data)
    # the driver staged after the first credentials it was handed had expired (the case that failed before)
    first_expiry = min(r.expires_at for r in expiring.signed if r.at >= since and r.expires_at is not None)
    assert max(r.at for r in data if ".manifest-" in r.path) > first_expiry

    outputs = done.stdout + done.stderr + all_logs(env)
    assert "spark-submit" in outputs.lower()  # the command line (with its --conf) is in the logs checked
    for key in (ACCESS_KEY, SECRET_KEY):
        assert key not in outputs
    with sqlite3.connect(home / "airflow.db") as db:
        xcoms = [str(row[0]) for row in db.execute("select value from xcom")]
    assert xcoms and not any(key in value for value in xcoms for key in (ACCESS_KEY, SECRET_KEY))
