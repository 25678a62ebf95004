"""The hook, operators and sensors on a ``lance`` connection with ``impl=glue`` (moto's Glue and S3): what Glue
can serve works, what needs table versions fails with an ``UnsupportedOperationError`` that names the catalog
and says what would serve."""

from __future__ import annotations

import json

import lance
import lance_namespace as ln
import pyarrow as pa
import pytest
from airflow.providers.common.compat.sdk import AirflowException

from airflow_provider_lance.get_provider_info import CONN_FIELDS
from airflow_provider_lance.hooks.lance import LanceHook
from airflow_provider_lance.operators.namespace import LanceCreateNamespaceOperator, LanceDropNamespaceOperator
from airflow_provider_lance.operators.table import LanceDeclareTableOperator, LanceDeregisterTableOperator
from airflow_provider_lance.operators.version import LanceCreateTableVersionOperator
from airflow_provider_lance.sensors.lance import LanceTableExistenceSensor
from tests.operators.context import make_context
from tests.s3.conftest import ACCESS_KEY, REGION, SECRET_KEY, MotoServer


@pytest.fixture
def glue_conn(monkeypatch: pytest.MonkeyPatch, moto_server: MotoServer, glue_root: str) -> str:
    """A ``lance`` connection as a user writes it: impl=glue, Host = the root of new tables, the Glue client's
    settings as ``glue.*`` keys, login/password = the S3 keys of the tables' data."""
    extra = {
        "impl": "glue",
        "glue.endpoint": moto_server.endpoint,
        "glue.region": REGION,
        "glue.access_key_id": ACCESS_KEY,
        "glue.secret_access_key": SECRET_KEY,
        "dir.table_version_management": "true",  # another implementation's key: left out
        "storage_options": {"aws_endpoint": moto_server.endpoint, "aws_region": REGION, "allow_http": "true"},
    }
    conn = {"conn_type": "lance", "host": glue_root, "login": ACCESS_KEY, "password": SECRET_KEY, "extra": extra}
    monkeypatch.setenv("AIRFLOW_CONN_LANCE_GLUE", json.dumps(conn))
    return "lance_glue"


def test_hook_operators_and_sensor_on_glue(glue_conn: str, glue_root: str, database: str) -> None:
    hook = LanceHook(glue_conn)
    impl, properties = hook.get_namespace_config()
    assert impl == "glue" and properties["region"] == REGION and "table_version_management" not in properties
    assert SECRET_KEY not in hook.redact(f"failed with {SECRET_KEY}")  # glue.secret_access_key is a secret
    context = make_context()
    created = LanceCreateNamespaceOperator(task_id="c", namespace_id=database, lance_conn_id=glue_conn).execute(context)
    assert created == {"namespace_id": [database], "created": True}
    assert hook.namespace_exists(database) and database in hook.list_namespaces()
    sensor = LanceTableExistenceSensor(task_id="s", table_id=f"{database}.events", lance_conn_id=glue_conn)
    assert sensor.poke(context) is False  # Glue answers a missing table with a RuntimeError: not yet

    declared = LanceDeclareTableOperator(task_id="d", table_id=f"{database}.events", lance_conn_id=glue_conn).execute(
        context
    )
    assert declared["location"] == f"{glue_root}/{database}/events.lance"
    assert sensor.poke(context) is True
    assert hook.list_tables(database, include_declared=True) == ["events"]

    lance.write_dataset(
        pa.table({"id": [1, 2]}), namespace_client=hook.namespace, table_id=[database, "events"], mode="overwrite"
    )
    assert hook.describe_table(f"{database}.events").location == declared["location"]
    assert lance.dataset(namespace_client=hook.namespace, table_id=[database, "events"]).count_rows() == 2

    with pytest.raises(ln.UnsupportedOperationError, match="list_table_versions is not implemented by GlueNamespace"):
        hook.list_table_versions(f"{database}.events")
    commit = LanceCreateTableVersionOperator(
        task_id="v", table_id=f"{database}.events", version=2, manifest_path="staged", lance_conn_id=glue_conn
    )
    with pytest.raises((AirflowException, ln.UnsupportedOperationError)) as raised:
        commit.execute(context)
    assert "GlueNamespace" in str(raised.value) and "table_version_management=true" in str(raised.value)

    removed = LanceDeregisterTableOperator(task_id="r", table_id=f"{database}.events", lance_conn_id=glue_conn)
    assert removed.execute(context)["location"] == declared["location"]
    assert sensor.poke(context) is False
    dropped = LanceDropNamespaceOperator(task_id="x", namespace_id=database, lance_conn_id=glue_conn).execute(context)
    assert dropped["dropped"]


def test_the_connection_form_documents_glue() -> None:
    description = CONN_FIELDS["impl"]["description"]
    assert "'glue'" in description
    for key in ("glue.region", "glue.endpoint", "glue.catalog_id", "glue.access_key_id", "glue.secret_access_key"):
        assert key in description
