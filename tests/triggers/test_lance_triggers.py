"""Triggers: serialize round trips and the events their run() yields, over real namespaces."""

from __future__ import annotations

import asyncio
import importlib
import json

import pytest

from airflow_provider_lance.triggers.lance import LanceTableExistenceTrigger, LanceTableVersionTrigger
from tests.airflow_helpers import write_table


def _round_trip(trigger):
    path, kwargs = trigger.serialize()
    json.dumps(kwargs)
    module, name = path.rsplit(".", 1)
    cls = getattr(importlib.import_module(module), name)
    assert cls is type(trigger)
    return cls(**kwargs)


def _first_event(trigger, timeout: float = 10):
    async def _run():
        agen = trigger.run()
        try:
            return await asyncio.wait_for(agen.__anext__(), timeout)
        finally:
            await agen.aclose()

    return asyncio.run(_run())


def test_serialize_round_trip():
    trig = LanceTableVersionTrigger(table_id="a.b", min_version=3, lance_conn_id="c", poll_interval=5)
    again = _round_trip(trig)
    assert again.serialize() == trig.serialize()
    assert trig.serialize()[1] == {
        "table_id": ["a", "b"],
        "lance_conn_id": "c",
        "poll_interval": 5.0,
        "wait_first": False,
        "version": None,
        "min_version": 3,
        "baseline": None,
    }
    exist = LanceTableExistenceTrigger(table_id=["x"], poll_interval=1)
    assert _round_trip(exist).serialize() == exist.serialize()


def test_existence_trigger_fires(hook):
    write_table(hook.namespace, ["t"])
    event = _first_event(LanceTableExistenceTrigger(table_id="t", poll_interval=0.05))
    assert event.payload == {"status": "success", "table_id": ["t"]}


def test_existence_trigger_waits_then_fires(hook):
    async def _run():
        trig = LanceTableExistenceTrigger(table_id="late", poll_interval=0.05)
        task = asyncio.create_task(trig.run().__anext__())
        await asyncio.sleep(0.3)
        assert not task.done()
        await asyncio.to_thread(write_table, hook.namespace, ["late"])
        return await asyncio.wait_for(task, 10)

    assert asyncio.run(_run()).payload["status"] == "success"


def test_a_trigger_that_waits_first_checks_nothing_before_its_interval(hook):
    """A deferring sensor has just checked: its trigger's first check comes one interval later, not at once."""
    write_table(hook.namespace, ["t"])
    waiting = LanceTableExistenceTrigger(table_id="t", poll_interval=3600, wait_first=True)
    assert _round_trip(waiting).serialize() == waiting.serialize()

    async def _run():
        agen = waiting.run()
        try:
            await asyncio.wait_for(agen.__anext__(), 0.5)
        finally:
            await agen.aclose()

    with pytest.raises(TimeoutError):  # nothing within the first half second of an hour's interval
        asyncio.run(_run())
    assert waiting._hook is None  # no check made: the hook is built by the first one
    event = _first_event(LanceTableExistenceTrigger(table_id="t", poll_interval=3600))
    assert event.payload["status"] == "success"  # without wait_first: checked at once


def test_version_trigger_fires_with_version(hook):
    write_table(hook.namespace, ["t"])
    write_table(hook.namespace, ["t"], mode="append")
    event = _first_event(LanceTableVersionTrigger(table_id="t", min_version=2, poll_interval=0.05))
    assert event.payload == {"status": "success", "table_id": ["t"], "version": 2}
    event = _first_event(LanceTableVersionTrigger(table_id="t", baseline=1, poll_interval=0.05))
    assert event.payload["version"] == 2


def test_trigger_error_event_on_bad_connection(set_conn):
    set_conn("no.such.Impl", password="hunter2-secret")
    event = _first_event(LanceTableExistenceTrigger(table_id="t", poll_interval=0.05))
    assert event.payload["status"] == "error"
    assert event.payload["fatal"] is True  # a configuration error: no point waiting
    assert "no.such.Impl" in event.payload["message"]
    assert "hunter2-secret" not in event.payload["message"]


def test_trigger_fatal_on_namespace_error(set_conn, engine_impl):
    # an invalid identifier is not "not yet": the engine raises InvalidInput and the trigger stops
    set_conn(engine_impl)
    event = _first_event(LanceTableVersionTrigger(table_id=["bad$part"], version=1, poll_interval=0.05))
    assert event.payload["status"] == "error"
    assert event.payload["fatal"] is True
    assert "InvalidInputError" in event.payload["message"]
