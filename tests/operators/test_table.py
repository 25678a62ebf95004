"""Table operators against real local namespaces."""

from __future__ import annotations

import json

import pytest
from airflow.providers.common.compat.sdk import AirflowException

from airflow_provider_lance.operators.table import (
    LanceDeclareTableOperator,
    LanceDeregisterTableOperator,
    LanceDropTableOperator,
    LanceRegisterTableOperator,
)
from tests.airflow_helpers import ENGINE_ONLY, write_table
from tests.operators.context import make_context


@ENGINE_ONLY
def test_table_operators(hook):
    hook.create_namespace("ns")
    declared = LanceDeclareTableOperator(task_id="d", table_id="ns.t").execute(make_context())
    assert declared["created"] is True
    assert declared["table_id"] == ["ns", "t"]
    json.dumps(declared)
    again = LanceDeclareTableOperator(task_id="d", table_id=["ns", "t"]).execute(make_context())
    assert again == {**declared, "created": False}
    with pytest.raises(AirflowException, match=r"Table ns\.t already exists"):
        LanceDeclareTableOperator(task_id="d", table_id="ns.t", if_exists="fail").execute(make_context())

    write_table(hook.namespace, ["ns", "data"])
    location = hook.describe_table("ns.data").location
    out = LanceDeregisterTableOperator(task_id="x", table_id="ns.data").execute(make_context())
    assert out["deregistered"] is True
    assert not hook.table_exists("ns.data")
    relative = location.rstrip("/").rsplit("/", 1)[-1]
    registered = LanceRegisterTableOperator(task_id="r", table_id="ns.data2", location=relative).execute(make_context())
    assert registered["created"] is True
    assert hook.table_exists("ns.data2")

    assert LanceDropTableOperator(task_id="x", table_id="ns.data2").execute(make_context())["dropped"]
    assert not hook.table_exists("ns.data2")
    with pytest.raises(AirflowException, match="does not exist"):
        LanceDropTableOperator(task_id="x", table_id="ns.data2").execute(make_context())
    skipped = LanceDropTableOperator(task_id="x", table_id="ns.data2", ignore_if_missing=True).execute(make_context())
    assert skipped["dropped"] is False
    assert not LanceDeregisterTableOperator(task_id="x", table_id="ns.gone", ignore_if_missing=True).execute(
        make_context()
    )["deregistered"]


@ENGINE_ONLY
def test_error_message_names_the_namespace_error(hook):
    op = LanceRegisterTableOperator(task_id="r", table_id="t", location="/abs/path")
    with pytest.raises(AirflowException, match=r"Cannot register table t: InvalidInputError"):
        op.execute(make_context())
