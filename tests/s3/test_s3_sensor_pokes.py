"""S3 requests per sensor poke (issue 42): the real sensors and triggers, in each mode, never take more requests
than the floor of the key ranges their answer rests on (``benchmarks/poke.py``: ``CASES``, ``RANGES``), and a warm
poke still sees what storage says (another writer's commit, the reference's, a table written by path, a
deregister). Requests are counted at a moto server of its own, whoever sends them (s3fs or pylance)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lance
import lance_namespace as ln
import pyarrow as pa
import pytest
from lance.namespace import DirectoryNamespace as ReferenceNamespace

import tests.airflow_helpers  # noqa: F401  (sets AIRFLOW_HOME before Airflow is imported)
from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.sensors.lance import LanceTableExistenceSensor, LanceTableVersionSensor
from airflow_provider_lance.triggers.lance import LanceTableExistenceTrigger, LanceTableVersionTrigger
from benchmarks.catalog import s3_options
from benchmarks.poke import CASES, CATALOGS, DATA, EXISTENCE, Case, build_catalog
from benchmarks.s3_counter import CountingS3Server

CONN = "lance_pokes"  # a machine whose processes read the catalog before (its rows cache)
NEW_MACHINE = "lance_pokes_new_machine"  # a machine that never read it (no rows cache)


@pytest.fixture(scope="module")
def server() -> Iterator[CountingS3Server]:
    with CountingS3Server() as running:
        yield running


@pytest.fixture(scope="module")
def catalogs(server: CountingS3Server) -> dict[str, dict[str, str]]:
    """One small poke catalog of each kind, as the benchmark builds them (their pokes only read them)."""
    return {kind: build_catalog(server, f"pokes-{uuid.uuid4().hex[:8]}", "ours", 5, kind) for kind in CATALOGS}


def _connect(monkeypatch: pytest.MonkeyPatch, properties: dict[str, str], cache: Path) -> None:
    """The two connections of ``properties``' catalog: on this machine (rows cache ``cache``) and on a new one
    (an empty rows cache of its own)."""
    extra = {key: value for key, value in properties.items() if key != "root"}
    for conn_id, cache_dir in ((CONN, str(cache / "machine")), (NEW_MACHINE, str(cache / "new-machine"))):
        conn = {"conn_type": "lance", "host": properties["root"], "extra": {**extra, "manifest_cache_dir": cache_dir}}
        monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(conn))


def _sensor(case: Case, conn_id: str = CONN, **kwargs: Any) -> Any:
    if case.sensor == EXISTENCE:
        return LanceTableExistenceSensor(task_id="poke", table_id=case.table, lance_conn_id=conn_id, **kwargs)
    return LanceTableVersionSensor(task_id="poke", table_id=case.table, lance_conn_id=conn_id, **case.params, **kwargs)


def _trigger(case: Case) -> Any:
    if case.sensor == EXISTENCE:
        return LanceTableExistenceTrigger(table_id=case.table, lance_conn_id=CONN)
    return LanceTableVersionTrigger(table_id=case.table, lance_conn_id=CONN, **case.params)


def _answer(case: Case, result: Any) -> Any:
    """A sensor's poke result as its hook call answers (a version sensor returns the version once done)."""
    if case.sensor == EXISTENCE:
        return result
    return (result.is_done, result.xcom_value)


def _expected(case: Case) -> Any:
    if case.sensor == EXISTENCE:
        return case.answer
    done, found = case.answer
    return (done, found if done else None)


CONTEXT: dict[str, Any] = {}


@pytest.mark.parametrize("case", CASES, ids=[case.key.replace(" ", "_") for case in CASES])
def test_each_poke_takes_the_floor_of_its_key_ranges(
    server: CountingS3Server,
    catalogs: dict[str, dict[str, str]],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    case: Case,
) -> None:
    _connect(monkeypatch, catalogs[case.catalog], tmp_path)
    counted: dict[str, int] = {}

    poking = _sensor(case)  # mode='poke': the sensor keeps its hook between pokes
    assert _answer(case, poking.poke(CONTEXT)) == _expected(case)
    with server.counting() as requests:
        assert _answer(case, poking.poke(CONTEXT)) == _expected(case)
    counted["warm"] = requests.total()

    with server.counting() as requests:  # mode='reschedule': each poke a new process, on this machine
        assert _answer(case, _sensor(case, mode="reschedule").poke(CONTEXT)) == _expected(case)
    counted["cold"] = requests.total()

    with server.counting() as requests:  # ... on a machine whose processes never read the catalog
        assert _answer(case, _sensor(case, NEW_MACHINE, mode="reschedule").poke(CONTEXT)) == _expected(case)
    counted["cold_new_machine"] = requests.total()

    trigger = _trigger(case)  # deferrable: the trigger keeps its hook between polls
    first = trigger._check()
    with server.counting() as requests:
        assert trigger._check() == first
    counted["trigger_warm"] = requests.total()

    floors = {temperature: case.floor(temperature) for temperature in ("warm", "cold", "cold_new_machine")}
    assert counted == {**floors, "trigger_warm": floors["warm"]}


def test_a_first_baseline_poke_is_one_poke(
    server: CountingS3Server, catalogs: dict[str, dict[str, str]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``newer_than_baseline``: the first poke reads the latest version (the baseline) and nothing more."""
    (latest,) = (case for case in CASES if case.case == "min_version: latest version")
    _connect(monkeypatch, catalogs[latest.catalog], tmp_path)
    sensor = LanceTableVersionSensor(task_id="poke", table_id=DATA, lance_conn_id=CONN, newer_than_baseline=True)
    with server.counting() as first:  # a new process on a machine whose processes never read the catalog
        assert not sensor.poke(CONTEXT).is_done
    with server.counting() as second:
        assert not sensor.poke(CONTEXT).is_done
    assert (first.total(), second.total()) == (latest.floor("cold_new_machine"), latest.floor("warm"))


def _writer(properties: dict[str, str], reference: bool = False) -> Any:
    """Another writer of the catalog: ours, or the reference (tracking mode on a managed catalog)."""
    if not reference:
        return DirectoryNamespace(**properties)
    kind = "managed" if "table_version_management" in properties else ""
    ours_only = set(CATALOGS[kind][0])
    return ReferenceNamespace(
        **{key: value for key, value in properties.items() if key not in ours_only}, **CATALOGS[kind][1]
    )


@pytest.mark.parametrize("kind", list(CATALOGS), ids=["files", "managed"])
def test_a_warm_poke_sees_what_storage_says(server: CountingS3Server, kind: str, tmp_path: Path) -> None:
    """A warm poke trusts nothing storage has not confirmed: a version the reference committed, a root table
    written by path or declared by the reference, a table deregistered by another process."""
    from airflow_provider_lance.hooks.lance import LanceHook

    properties = build_catalog(server, f"warm-{uuid.uuid4().hex[:8]}", "ours", 3, kind)
    hook = LanceHook()
    hook.__dict__["namespace"] = DirectoryNamespace(**properties, manifest_cache_dir=str(tmp_path))
    assert hook.check_table_version(DATA, version=2) == (False, None)
    assert not hook.check_table_exists(["by_path"])
    assert not hook.check_table_exists(["by_reference"])

    reference = _writer(properties, reference=True)
    lance.write_dataset(
        pa.table({"x": [2]}),
        namespace_client=reference,
        table_id=DATA,
        mode="append",
        storage_options=s3_options(properties),
    )
    assert hook.check_table_version(DATA, version=2) == (True, 2)
    assert hook.check_table_version(DATA, min_version=2) == (True, 2)

    lance.write_dataset(
        pa.table({"x": [1]}), f"{properties['root']}/by_path.lance", storage_options=s3_options(properties)
    )
    assert hook.check_table_exists(["by_path"])
    if not kind:  # the reference refuses to write a catalog with table_version rows (a writer feature flag)
        reference.declare_table(ln.DeclareTableRequest(id=["by_reference"]))
        assert hook.check_table_exists(["by_reference"])

    _writer(properties).deregister_table(ln.DeregisterTableRequest(id=DATA))
    assert not hook.check_table_exists(DATA)
    assert hook.check_table_version(DATA, min_version=1) == (False, None)
