"""Sensors: poke, defer and execute_complete over real namespaces."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from airflow.providers.common.compat.sdk import AirflowException, AirflowFailException, TaskDeferred

from airflow_provider_lance.sensors.lance import BASELINE_KEY, LanceTableExistenceSensor, LanceTableVersionSensor
from airflow_provider_lance.triggers.lance import LanceTableExistenceTrigger, LanceTableVersionTrigger
from tests.airflow_helpers import ENGINE_ONLY, write_table


class FakeStateStore:
    """Stands in for Airflow 3.3's ``context["task_state_store"]`` (a key/value store per task)."""

    def __init__(self):
        self.data = {}

    def get(self, key, default=None):
        return self.data.get(key, default)

    def set(self, key, value, **_):
        self.data[key] = value


def ctx(store=None):
    context = {"ti": SimpleNamespace(dag_id="d", run_id="r", task_id="s", map_index=-1)}
    if store is not None:
        context["task_state_store"] = store
    return context


def test_templated_fields_are_rendered():
    """The fields a DAG author templates (table, versions, connection) are rendered, on both sensors."""
    context = {"params": {"t": "ns.t", "v": 3, "c": "lance_x"}}
    sensors = [
        LanceTableExistenceSensor(task_id="e", table_id="{{ params.t }}", lance_conn_id="{{ params.c }}"),
        LanceTableVersionSensor(task_id="v", table_id="{{ params.t }}", version="{{ params.v }}"),
        LanceTableVersionSensor(task_id="m", table_id="{{ params.t }}", min_version="{{ params.v }}"),
    ]
    for sensor in sensors:
        sensor.render_template_fields(context)
    assert [sensor.table_id for sensor in sensors] == ["ns.t"] * 3
    assert (sensors[0].lance_conn_id, sensors[1].version, sensors[2].min_version) == ("lance_x", "3", "3")


@ENGINE_ONLY
def test_existence_poke(hook):
    sensor = LanceTableExistenceSensor(task_id="s", table_id="ns.t")
    assert sensor.poke(ctx()) is False  # missing namespace: not yet
    hook.create_namespace("ns")
    assert sensor.poke(ctx()) is False
    hook.declare_table("ns.t")
    assert sensor.poke(ctx()) is True


def test_version_modes_are_exclusive():
    with pytest.raises(ValueError, match="exactly one"):
        LanceTableVersionSensor(task_id="s", table_id="t")
    with pytest.raises(ValueError, match="exactly one"):
        LanceTableVersionSensor(task_id="s", table_id="t", version=1, min_version=1)


@ENGINE_ONLY
def test_version_poke_modes(hook):
    by_version = LanceTableVersionSensor(task_id="s", table_id="t", version=2)
    by_min = LanceTableVersionSensor(task_id="s", table_id="t", min_version="2")
    assert not by_version.poke(ctx()).is_done  # table missing: not yet
    write_table(hook.namespace, ["t"])
    assert not by_version.poke(ctx()).is_done
    assert not by_min.poke(ctx()).is_done
    write_table(hook.namespace, ["t"], mode="append")
    result = by_version.poke(ctx())
    assert (result.is_done, result.xcom_value) == (True, 2)
    result = by_min.poke(ctx())
    assert (result.is_done, result.xcom_value) == (True, 2)


@ENGINE_ONLY
def test_baseline_in_task_state_store(hook):
    write_table(hook.namespace, ["t"])
    store = FakeStateStore()
    assert not LanceTableVersionSensor(task_id="s", table_id="t", newer_than_baseline=True).poke(ctx(store)).is_done
    assert store.data == {BASELINE_KEY: 1}
    write_table(hook.namespace, ["t"], mode="append")
    # a new sensor object, as after a reschedule: the baseline comes back from the store
    result = LanceTableVersionSensor(task_id="s", table_id="t", newer_than_baseline=True, mode="reschedule").poke(
        ctx(store)
    )
    assert (result.is_done, result.xcom_value) == (True, 2)


@ENGINE_ONLY
def test_baseline_in_memory_in_poke_mode(hook):
    write_table(hook.namespace, ["t"])
    sensor = LanceTableVersionSensor(task_id="s", table_id="t", newer_than_baseline=True)
    assert not sensor.poke(ctx()).is_done
    assert not sensor.poke(ctx()).is_done
    write_table(hook.namespace, ["t"], mode="append")
    assert sensor.poke(ctx()).xcom_value == 2


@ENGINE_ONLY
def test_baseline_needs_a_store_in_reschedule_mode(hook):
    sensor = LanceTableVersionSensor(task_id="s", table_id="t", newer_than_baseline=True, mode="reschedule")
    with pytest.raises(AirflowFailException, match="task_state_store"):
        sensor.poke(ctx())


@ENGINE_ONLY
def test_baseline_of_missing_table_is_zero(hook):
    store = FakeStateStore()
    sensor = LanceTableVersionSensor(task_id="s", table_id="t", newer_than_baseline=True)
    assert not sensor.poke(ctx(store)).is_done
    write_table(hook.namespace, ["t"])
    assert sensor.poke(ctx(store)).xcom_value == 1


def test_fatal_errors_fail_at_once(set_conn, engine_impl):
    set_conn(engine_impl, password="pa55word-secret")
    sensor = LanceTableVersionSensor(task_id="s", table_id=["bad$part"], version=1)
    with pytest.raises(AirflowFailException, match="InvalidInputError") as excinfo:
        sensor.poke(ctx())
    assert "pa55word-secret" not in str(excinfo.value)


def test_configuration_errors_fail_at_once(set_conn):
    set_conn("no.such.Impl")
    with pytest.raises(AirflowFailException, match=r"no\.such\.Impl"):
        LanceTableExistenceSensor(task_id="s", table_id="t").poke(ctx())


@ENGINE_ONLY
def test_deferrable_returns_at_once_when_done(hook):
    write_table(hook.namespace, ["t"])
    assert LanceTableVersionSensor(task_id="s", table_id="t", version=1, deferrable=True).execute(ctx()) == 1
    assert LanceTableExistenceSensor(task_id="s", table_id="t", deferrable=True).execute(ctx()) is None


@ENGINE_ONLY
def test_deferrable_defers_with_trigger(hook):
    write_table(hook.namespace, ["t"])
    store = FakeStateStore()
    sensor = LanceTableVersionSensor(
        task_id="s", table_id="t", newer_than_baseline=True, deferrable=True, poke_interval=7, timeout=99
    )
    with pytest.raises(TaskDeferred) as excinfo:
        sensor.execute(ctx(store))
    trigger = excinfo.value.trigger
    assert isinstance(trigger, LanceTableVersionTrigger)
    assert trigger.serialize()[1] == {
        "table_id": ["t"],
        "lance_conn_id": "lance_default",
        "poll_interval": 7.0,
        "wait_first": True,
        "version": None,
        "min_version": None,
        "baseline": 1,
    }
    assert excinfo.value.method_name == "execute_complete"
    assert excinfo.value.timeout.total_seconds() == 99

    with pytest.raises(TaskDeferred) as excinfo:
        LanceTableExistenceSensor(task_id="s", table_id="missing", deferrable=True).execute(ctx())
    assert isinstance(excinfo.value.trigger, LanceTableExistenceTrigger)


def test_execute_complete():
    sensor = LanceTableVersionSensor(task_id="s", table_id="t", version=3)
    assert sensor.execute_complete(ctx(), {"status": "success", "table_id": ["t"], "version": 3}) == 3
    with pytest.raises(AirflowFailException, match="boom"):
        sensor.execute_complete(ctx(), {"status": "error", "fatal": True, "message": "boom"})
    with pytest.raises(AirflowException, match="flaky") as excinfo:
        sensor.execute_complete(ctx(), {"status": "error", "fatal": False, "message": "flaky"})
    assert not isinstance(excinfo.value, AirflowFailException)
    with pytest.raises(AirflowException):
        sensor.execute_complete(ctx(), None)
