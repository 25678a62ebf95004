"""Unsupported is Unsupported: an operation an implementation lacks answers code 0 through the server (406 where
the spec lists it for the route, 400 elsewhere),
whichever way it lacks it (the base class's "Not supported", ``NotImplementedError`` as pylance's bindings raise,
``lance_namespace.UnsupportedOperationError``), clients raise ``UnsupportedOperationError``, and an Airflow task
fails without a retry. (pylance ``dir``, Glue and the engine: tests/rest/test_adapter.py, test_glue_server.py,
tests/rest/test_differential.py.)"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import lance_namespace as ln
import pytest

import tests.airflow_helpers  # noqa: F401  (sets AIRFLOW_HOME before Airflow is imported)
from airflow_provider_lance.implementations import connect
from airflow_provider_lance.rest.client import RestNamespace
from tests.rest.servers import serve_namespace
from tests.rest.test_differential import unsupported


class PartialNamespace(ln.LanceNamespace):
    """A catalog served by class path that lacks operations in each of the three ways."""

    def __init__(self, **properties: str) -> None:
        self.properties = properties

    def namespace_id(self) -> str:
        return "PartialNamespace"

    def list_table_versions(self, request: Any) -> Any:
        raise NotImplementedError  # as pylance's Rust bindings raise for what they lack

    def describe_table(self, request: Any) -> Any:
        raise ln.UnsupportedOperationError("Not supported: describe_table in this catalog")

    # create_namespace: left to the base class ("Not supported")


#: (operation, route, body): one of each kind
LACKING = [
    ("list_table_versions", "/v1/table/a$t/version/list", {}),
    ("describe_table", "/v1/table/a$t/describe", {}),
    ("create_namespace", "/v1/namespace/a/create", {}),
]


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with serve_namespace(connect(f"{__name__}.PartialNamespace", {})) as url:
        yield url


@pytest.mark.parametrize(("operation", "route", "body"), LACKING, ids=[op for op, _, _ in LACKING])
def test_the_server_answers_unsupported(server: str, operation: str, route: str, body: dict[str, Any]) -> None:
    answer = httpx.post(server + route, json=body, timeout=30)
    assert (answer.status_code, answer.json()["code"]) == unsupported(operation), answer.text
    assert "Not supported" in answer.json()["error"] and "Traceback" not in answer.text


@pytest.mark.parametrize("client", ["pylance", "provider"])
def test_clients_raise_unsupported(server: str, client: str) -> None:
    namespace = ln.connect("rest", {"uri": server}) if client == "pylance" else RestNamespace(uri=server)
    calls = [
        lambda: namespace.list_table_versions(ln.ListTableVersionsRequest(id=["a", "t"])),
        lambda: namespace.describe_table(ln.DescribeTableRequest(id=["a", "t"])),
        lambda: namespace.create_namespace(ln.CreateNamespaceRequest(id=["a"])),
    ]
    for call in calls:
        with pytest.raises(ln.UnsupportedOperationError) as raised:
            call()
        assert raised.value.code == 0  # not InternalError (code 18), which a caller would retry


@pytest.mark.airflow
def test_an_airflow_task_fails_without_retry(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.providers.common.compat.sdk import AirflowFailException

    from airflow_provider_lance.operators.namespace import LanceCreateNamespaceOperator
    from tests.operators.context import make_context

    connection = {"conn_type": "lance", "host": server, "extra": {"impl": "rest"}}
    monkeypatch.setenv("AIRFLOW_CONN_LANCE_PARTIAL", json.dumps(connection))
    task = LanceCreateNamespaceOperator(task_id="create", namespace_id="a", lance_conn_id="lance_partial")
    with pytest.raises(AirflowFailException, match="UnsupportedOperationError"):  # Fail: no retry
        task.execute(make_context())
