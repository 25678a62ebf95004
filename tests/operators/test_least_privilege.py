"""Least privilege from a DAG's side: tasks reach one shared REST server with a principal's token. Each operator
and sensor works with the lowest grant its operation needs; a missing grant fails the task at once (no retry can
fix it), names the operation, the table and the level it needs, and changes nothing."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import lance_namespace as ln
import pytest
from airflow.providers.common.compat.sdk import AirflowFailException

from airflow_provider_lance.hooks.lance import LanceHook
from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.operators.table import LanceDeclareTableOperator, LanceDropTableOperator
from airflow_provider_lance.rest import ServerSettings
from airflow_provider_lance.rest.principals import Principals, PrincipalStore, hash_secret
from airflow_provider_lance.sensors.lance import LanceTableExistenceSensor, LanceTableVersionSensor
from tests.airflow_helpers import conn_json, write_table
from tests.operators.context import make_context
from tests.rest.servers import serve_namespace

LEVELS = ("read", "write", "admin")  # each principal holds one level on namespace "sales", nothing on "hr"


@pytest.fixture
def catalog(lance_root: Path) -> DirectoryNamespace:
    engine = DirectoryNamespace(root=str(lance_root), table_version_management="true")
    for namespace in ("sales", "hr"):
        engine.create_namespace({"id": [namespace]})
    write_table(engine, ["sales", "orders"])
    write_table(engine, ["hr", "people"])
    return engine


@pytest.fixture
def connect_as(catalog: DirectoryNamespace, monkeypatch: pytest.MonkeyPatch) -> Iterator:
    """``connect_as(level)`` points ``lance_default`` at the server with the token of the principal granted
    ``level`` on ``sales``."""
    tokens = {level: secrets.token_urlsafe(16) for level in LEVELS}
    document = {
        "principals": [
            {
                "name": f"{level}-etl",
                "tokens": [hash_secret(tokens[level])],
                "grants": [{"namespace": "sales", "level": level}],
            }
            for level in LEVELS
        ]
    }
    store = PrincipalStore.of(Principals.from_document(document, "test"))
    with serve_namespace(catalog, ServerSettings(principals=store)) as url:

        def _connect(level: str) -> None:
            monkeypatch.setenv("AIRFLOW_CONN_LANCE_DEFAULT", conn_json(url, "rest", password=tokens[level]))

        yield _connect


def test_sensors_need_only_read(connect_as) -> None:
    connect_as("read")
    assert LanceTableExistenceSensor(task_id="s", table_id="sales.orders").poke(make_context())
    assert not LanceTableExistenceSensor(task_id="s", table_id="sales.later").poke(make_context())
    assert LanceTableVersionSensor(task_id="v", table_id="sales.orders", min_version=1).poke(make_context()).is_done


def test_a_sensor_outside_its_grant_fails_at_once_instead_of_waiting(connect_as, catalog) -> None:
    connect_as("admin")  # admin on sales, nothing on hr: hr.people exists, but the principal may not know it
    with pytest.raises(AirflowFailException, match=r"may not .*'hr\.people'.*level 'read'"):
        LanceTableExistenceSensor(task_id="s", table_id="hr.people").poke(make_context())


def test_a_write_with_a_read_grant_fails_naming_the_grant_it_needs(connect_as, catalog) -> None:
    connect_as("read")
    with pytest.raises(AirflowFailException, match=r"read-etl.* may not .*'sales\.new'.*level 'write'"):
        LanceDeclareTableOperator(task_id="d", table_id="sales.new").execute(make_context())
    with pytest.raises(ln.TableNotFoundError):  # nothing was declared
        catalog.table_exists(ln.TableExistsRequest(id=["sales", "new"]))
    connect_as("write")
    declared = LanceDeclareTableOperator(task_id="d", table_id="sales.new").execute(make_context())
    assert declared["created"] is True


def test_a_drop_with_a_write_grant_fails_and_the_table_stays(connect_as, catalog) -> None:
    connect_as("write")
    with pytest.raises(AirflowFailException, match=r"write-etl.* may not .*'sales\.orders'.*level 'admin'"):
        LanceDropTableOperator(task_id="x", table_id="sales.orders").execute(make_context())
    assert LanceHook().table_exists("sales.orders")
    connect_as("admin")
    assert LanceDropTableOperator(task_id="x", table_id="sales.orders").execute(make_context())["dropped"]
