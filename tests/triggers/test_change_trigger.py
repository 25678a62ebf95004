"""LanceChangeTrigger (triggers/changes.py): filters, serialisation, and Airflow 3.3's shared stream driven the
way the triggerer drives it (``SharedStreamManager``): 1,000 watched assets of one catalog are one poll loop,
and the cursor moves only past changes whose events were stored."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import lance_namespace as ln
import pytest
from airflow.triggers.shared_stream import SharedStreamManager

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.namespace.changes import Change, Event, Run
from airflow_provider_lance.triggers import changes as trigger_module
from airflow_provider_lance.triggers.changes import LanceChangeTrigger, cursor_variable, pinned_versions
from tests.namespace.helpers_versions import batch, stage
from tests.namespace.helpers_versions import rows as data_rows

pytestmark = pytest.mark.airflow


class _Variables:
    """Airflow Variables in memory (the triggerer's are in the metadata database)."""

    values: ClassVar[dict[str, str]] = {}

    @classmethod
    def get(cls, key: str, default: Any = None) -> Any:
        return cls.values.get(key, default)

    @classmethod
    def set(cls, key: str, value: str) -> None:
        cls.values[key] = value


@pytest.fixture(autouse=True)
def variables(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    _Variables.values = {}
    monkeypatch.setattr(trigger_module, "Variable", _Variables)
    return _Variables.values


def _change(*events: Event, run: Run | None = None) -> Change:
    return Change(7, "2026-01-01T00:00:00+00:00", list(events), "c1.x", run)


def test_filters_and_payload() -> None:
    change = _change(
        Event("version_created", ["sales", "orders"], 3, metadata={"k": "v"}),
        Event("version_created", ["sales", "items"], 5),
        Event("table_declared", ["hr", "people"]),
        run=Run("etl", "r1", "commit"),
    )
    orders = LanceChangeTrigger(tables=["sales.orders"])
    event = orders.event_for(change)
    assert event is not None
    assert event.payload["versions"] == {"sales.orders": [3]} and event.payload["tables"] == ["sales.orders"]
    assert event.payload["run"] == {"dag_id": "etl", "run_id": "r1", "task_id": "commit"}
    assert event.payload["cursor"] == "c1.x" and event.payload["manifest_version"] == 7
    assert LanceChangeTrigger(namespace="sales").event_for(change).payload["tables"] == ["sales.orders", "sales.items"]
    assert LanceChangeTrigger(namespace="sal").event_for(change) is None  # part by part, not a string prefix
    assert LanceChangeTrigger(kinds=["table_declared"]).event_for(change).payload["tables"] == ["hr.people"]
    assert LanceChangeTrigger(tables=["hr.people"]).event_for(change) is None  # a declare is no version
    assert LanceChangeTrigger(tables=["sales.orders"], ignore_dag_ids=["etl"]).event_for(change) is None
    with pytest.raises(ValueError, match="Unknown kind"):
        LanceChangeTrigger(kinds=["version_made"])


def test_serialisation_round_trip_and_one_key_per_catalog() -> None:
    trigger = LanceChangeTrigger(tables=["b.t", ["a", "t"]], kinds=["version_created"], lance_conn_id="c")
    path, kwargs = trigger.serialize()
    assert path == "airflow_provider_lance.triggers.changes.LanceChangeTrigger"
    again = LanceChangeTrigger(**kwargs)
    assert again.serialize() == (path, kwargs) and kwargs["tables"] == ["a.t", "b.t"]
    assert trigger.shared_stream_key() == LanceChangeTrigger(namespace="x", lance_conn_id="c").shared_stream_key()
    assert trigger.shared_stream_key() != LanceChangeTrigger(lance_conn_id="other").shared_stream_key()


def test_pinned_versions() -> None:
    def event(versions: dict[str, list[int]]) -> Any:
        return SimpleNamespace(extra={"from_trigger": True, "payload": {"versions": versions}})

    events = {"asset-a": [event({"a.t": [3]}), event({"a.t": [4], "b.t": [1]})], "asset-b": [SimpleNamespace(extra={})]}
    assert pinned_versions(events) == {"a.t": 4, "b.t": 1}
    assert pinned_versions(None) == {}


async def _follow_shared(
    triggers: list[LanceChangeTrigger], commit: Any, expect: int, timeout: float = 60
) -> dict[int, list[dict[str, Any]]]:
    """Drive the triggers as the triggerer does (subscribe, filter, bind and confirm each stored event) until
    ``expect`` events came out; ``commit()`` runs on a thread once every trigger subscribed."""
    manager = SharedStreamManager(ack_timeout=30)
    received: dict[int, list[dict[str, Any]]] = {i: [] for i in range(len(triggers))}
    count = 0
    done = asyncio.Event()

    async def consume(number: int, trigger: LanceChangeTrigger) -> None:
        nonlocal count
        key = trigger.shared_stream_key()
        try:
            async for event in trigger.filter_shared_stream(
                manager.subscribe(trigger_id=number, trigger=trigger, key=key)
            ):
                received[number].append(event.payload)
                seq = manager.bind_pending_event(trigger_id=number, key=key)
                manager.confirm_persisted([seq] if seq is not None else [])  # stored
                count += 1
                if count >= expect:
                    done.set()
        finally:
            await manager.unsubscribe(number, key)

    tasks = [asyncio.create_task(consume(i, t)) for i, t in enumerate(triggers)]
    await asyncio.sleep(0.5)
    await asyncio.to_thread(commit)
    await asyncio.wait_for(done.wait(), timeout)
    # the last confirmations reach the producer's advance, which saves the newest event's cursor
    newest = max((p for payloads in received.values() for p in payloads), key=lambda p: p["manifest_version"])
    key = cursor_variable(triggers[0].lance_conn_id, triggers[0].consumer)
    for _ in range(300):
        if _Variables.values.get(key) == newest["cursor"]:
            break
        await asyncio.sleep(0.1)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await manager.stop_all()
    return received


@pytest.mark.parametrize("impl", ["default", "rest"])
def test_a_thousand_watched_assets_are_one_poll_loop(
    set_conn, lance_root: Path, monkeypatch: pytest.MonkeyPatch, variables: dict[str, str], impl: str
) -> None:
    engine = DirectoryNamespace(root=str(lance_root), table_version_management="true")
    engine.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    for i in range(3):
        engine.declare_table(ln.DeclareTableRequest(id=["a", f"t{i}"]))
    set_conn(impl=impl, extra={"table_version_management": "true"} if impl == "rest" else {})
    polls = []
    original = DirectoryNamespace.changes

    def counted(self: DirectoryNamespace, since: str | None = None, limit: int | None = None) -> Any:
        polls.append(since)
        return original(self, since=since, limit=limit)

    monkeypatch.setattr(DirectoryNamespace, "changes", counted)
    triggers = [LanceChangeTrigger(tables=[f"a.t{i % 3}"], poll_interval=0.5) for i in range(1000)]

    def commit() -> None:
        batch(engine, stage(engine, {("a", "t0"): data_rows(2), ("a", "t1"): data_rows(1)}))  # one commit
        batch(engine, stage(engine, {("a", "t2"): data_rows(1)}))

    started = asyncio.run(_timed(_follow_shared(triggers, commit, expect=1000)))
    received, seconds = started
    assert all(len(payloads) == 1 for payloads in received.values())  # each trigger its one change, once
    assert received[0][0]["versions"] == {"a.t0": [1]} and received[2][0]["versions"] == {"a.t2": [1]}
    assert received[0][0]["manifest_version"] == received[1][0]["manifest_version"]  # the batch: one change
    # one follower: its polls are bounded by the time, not by the 1,000 triggers (the REST server long-polls:
    # its engine is asked every 0.5 s whatever the number of waiting clients)
    assert len(polls) <= seconds / 0.5 + 6, (len(polls), seconds)
    saved = variables[cursor_variable("lance_default")]
    assert saved == received[2][0]["cursor"]  # moved past the stored events, to the last one


async def _timed(work: Any) -> tuple[Any, float]:
    loop = asyncio.get_running_loop()
    started = loop.time()
    result = await work
    return result, loop.time() - started


def test_the_cursor_resumes_where_it_was_saved(set_conn, lance_root: Path, variables: dict[str, str]) -> None:
    """A restarted follower (a new triggerer) starts at the saved cursor: the commits made while it was down
    come out, once."""
    engine = DirectoryNamespace(root=str(lance_root))
    set_conn()
    trigger = LanceChangeTrigger(kinds=["namespace_created"], poll_interval=0.2)

    def first() -> None:
        engine.create_namespace(ln.CreateNamespaceRequest(id=["one"]))

    received = asyncio.run(_follow_shared([trigger], first, expect=1))
    assert [p["tables"] for p in received[0]] == [["one"]]
    engine.create_namespace(ln.CreateNamespaceRequest(id=["two"]))  # while no triggerer runs
    engine.create_namespace(ln.CreateNamespaceRequest(id=["three"]))
    received = asyncio.run(_follow_shared([trigger], lambda: None, expect=2))
    assert [p["tables"] for p in received[0]] == [["two"], ["three"]]
