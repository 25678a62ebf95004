"""example_dags/lance_change_feed.py in a real Airflow: dag processor, scheduler, triggerer, api-server and the
LocalExecutor on 127.0.0.1, the catalog behind our REST server. Commits made outside Airflow (pylance through
the REST server) start one DAG run each, whose task reads the version that started it; the triggerer killed
with SIGKILL between two commits (one made while it is down) and started again: exactly one asset event per
commit. Kept small (``COMMITS``) so the test stays within a few minutes on the shared 2-core machine."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import lance
import lance_namespace as ln
import pyarrow as pa
import pytest
from cryptography.fernet import Fernet

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.rest import ServerSettings
from airflow_provider_lance.rest.client import RestNamespace
from tests.airflow_helpers import AIRFLOW_BIN, conn_json, migrate_airflow_db
from tests.browser import free_port
from tests.rest.servers import serve_namespace

pytestmark = [pytest.mark.airflow, pytest.mark.timeout(600)]

REPO = Path(__file__).resolve().parents[2]
DAG_ID = "lance_change_feed"
TABLE = ["sales", "orders"]
# The issue asks 20; 6 keep the test near three minutes on the shared machine (LANCE_CHANGE_FEED_COMMITS=20 for
# the figures in docs/change-feed.md)
COMMITS = int(os.environ.get("LANCE_CHANGE_FEED_COMMITS", "6"))
KILL_AFTER = 3  # the triggerer is killed once this many commits became asset events
TOKEN = "change-feed-token"
ASSET = f"lance_change_feed.{'.'.join(TABLE)}"
ASSET_EVENTS = "select e.extra from asset_event e join asset a on a.id = e.asset_id where a.name = ? order by e.id"


class _Airflow:
    """The Airflow processes of one AIRFLOW_HOME, each started (and stopped) by this object, by process group."""

    def __init__(self, home: Path, env: dict[str, str]) -> None:
        self.home = home
        self.env = env
        self.fernet = Fernet(env["AIRFLOW__CORE__FERNET_KEY"].encode())
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self._logs: list[Any] = []

    def start(self, name: str, *args: str) -> None:
        log = (self.home / f"{name}.log").open("ab")
        self._logs.append(log)
        self.processes[name] = subprocess.Popen(
            [AIRFLOW_BIN, *args], env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def kill(self, name: str) -> None:
        """SIGKILL to the process group of ``name`` (the command and the subprocesses it started)."""
        process = self.processes.pop(name)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()

    def stop_all(self) -> None:
        for name in list(self.processes):
            process = self.processes.pop(name)
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        for log in self._logs:
            log.close()

    def query(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        with sqlite3.connect(self.home / "airflow.db", timeout=30) as db:
            return db.execute(sql, args).fetchall()

    def saved_cursor(self) -> str | None:
        """The consumer's position the triggerer saved (the Variable, decrypted)."""
        found = self.query("select val from variable where key = 'lance_changes__lance_default__default'")
        return self.fernet.decrypt(found[0][0].encode()).decode() if found else None

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in self.home.glob("*.log"))


def wait_for(what: str, check: Callable[[], Any], airflow: _Airflow, timeout: float = 90) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}\n{airflow.logs()}")
        time.sleep(0.2)


@contextlib.contextmanager
def airflow_stack(base: Path) -> Iterator[tuple[_Airflow, str]]:
    """The example DAG in a real Airflow (api-server, dag processor, scheduler, triggerer) under ``base``, its
    catalog behind our REST server: yields the processes and the server's URL (also used by
    ``benchmarks/changes.py``)."""
    home, dags, root = base / "home", base / "dags", base / "root"
    for directory in (home, dags, root):
        directory.mkdir()
    shutil.copyfile(REPO / "example_dags" / "lance_change_feed.py", dags / "lance_change_feed.py")
    shutil.copyfile(migrate_airflow_db(), home / "airflow.db")
    engine = DirectoryNamespace(root=str(root), table_version_management="true")
    engine.create_namespace(ln.CreateNamespaceRequest(id=TABLE[:1]))
    with serve_namespace(engine, ServerSettings(tokens=frozenset({TOKEN}))) as url:
        port = free_port()
        env = {
            **os.environ,
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",  # a paused DAG's watchers do not run
            "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
            # one key for every process (each would otherwise write its own airflow.cfg with a key of its own,
            # and the triggerer could not decrypt the trigger kwargs the dag processor stored)
            "AIRFLOW__CORE__FERNET_KEY": Fernet.generate_key().decode(),
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": "2",
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
            "AIRFLOW__API__PORT": str(port),
            "AIRFLOW__API_AUTH__JWT_SECRET": "lance-change-feed-test-secret",
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
            "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
            "AIRFLOW__TRIGGERER__JOB_HEARTBEAT_SEC": "1",
            "AIRFLOW__TRIGGERER__TRIGGERER_HEALTH_CHECK_THRESHOLD": "4",
            "AIRFLOW_CONN_LANCE_DEFAULT": conn_json(url, "rest", password=TOKEN),
            "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        }
        airflow = _Airflow(home, env)
        try:
            airflow.start("api-server", "api-server", "--host", "127.0.0.1", "--port", str(port), "-w", "1")
            airflow.start("dag-processor", "dag-processor")
            airflow.start("scheduler", "scheduler")
            airflow.start("triggerer", "triggerer")
            yield airflow, url
        finally:
            airflow.stop_all()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[_Airflow, str]]:
    with airflow_stack(tmp_path_factory.mktemp("change-feed")) as started:
        yield started


def commit(url: str, rows: int, first: bool) -> None:
    """A commit made outside Airflow: pylance writing through the REST server."""
    client = RestNamespace(uri=url, **{"header.Authorization": f"Bearer {TOKEN}"})
    data = pa.table({"id": pa.array(range(rows), pa.int64())})
    lance.write_dataset(data, namespace_client=client, table_id=TABLE, mode="create" if first else "append")


def asset_events(airflow: _Airflow) -> list[dict[str, Any]]:
    """The asset events of the example DAG's asset, oldest first (their ``extra``)."""
    return [json.loads(extra) for (extra,) in airflow.query(ASSET_EVENTS, ASSET)]


def runs(airflow: _Airflow) -> list[tuple[str, str, str]]:
    """The example DAG's runs, oldest first: run id, state, queued at."""
    return airflow.query("select run_id, state, queued_at from dag_run where dag_id = ? order by id", DAG_ID)


def latencies(airflow: _Airflow, skip: frozenset[int] = frozenset(), until: str = "queued") -> list[float]:
    """Seconds from each commit (the ``__manifest`` commit's time, in its event) to its DAG run queued (``until``
    ``"queued"``) or to its asset event stored by the triggerer (``"stored"``), sorted; ``skip``: commit numbers
    (from 1) left out."""
    if until == "queued":
        ends = [q for _, _, q in runs(airflow)]
    else:
        ends = [t for (t,) in airflow.query(ASSET_EVENTS.replace("e.extra", "e.timestamp"), ASSET)]
    made = [datetime.fromisoformat(event["payload"]["timestamp"]).timestamp() for event in asset_events(airflow)]
    ended = [datetime.fromisoformat(end + "+00:00").timestamp() for end in ends]
    return sorted(e - c for n, (e, c) in enumerate(zip(ended, made, strict=True), 1) if n not in skip)


def p50_p95(values: list[float]) -> tuple[float, float]:
    """The median and the 95th percentile (nearest rank) of sorted ``values``."""
    return statistics.median(values), values[min(len(values) - 1, round(0.95 * (len(values) - 1)))]


def test_commits_outside_airflow_start_one_run_each_and_survive_a_triggerer_kill(stack) -> None:
    airflow, url = stack
    wait_for("the triggerer to follow the catalog", airflow.saved_cursor, airflow, 180)
    for number in range(1, COMMITS + 1):
        if number == KILL_AFTER + 1:  # killed between commits; this commit lands while no triggerer runs
            # between commits: once the triggerer heard that the last event was stored and saved the cursor
            # past it (Airflow confirms a stored event at its next state sync; docs/change-feed.md, "Restarts")
            last = asset_events(airflow)[-1]["payload"]["cursor"]
            wait_for("the cursor saved past the last event", lambda c=last: airflow.saved_cursor() == c, airflow)
            airflow.kill("triggerer")
        commit(url, rows=number, first=number == 1)
        if number == KILL_AFTER + 1:
            time.sleep(2)
            airflow.start("triggerer-2", "triggerer")
        wait_for(f"asset event {number}", lambda n=number: len(asset_events(airflow)) >= n, airflow)
        wait_for(f"DAG run {number}", lambda n=number: len(runs(airflow)) >= n, airflow)
    time.sleep(8)  # a duplicate would arrive within a few polls
    events = asset_events(airflow)
    assert len(events) == COMMITS, events
    versions = [event["payload"]["versions"]["sales.orders"] for event in events]
    assert versions == [[v] for v in range(1, COMMITS + 1)]
    assert all(event["from_trigger"] for event in events)
    finished = wait_for(
        "every run to finish",
        lambda: (r := runs(airflow)) and all(state in ("success", "failed") for _, state, _ in r) and r,
        airflow,
        240,
    )
    assert len(finished) == COMMITS and {state for _, state, _ in finished} == {"success"}, finished
    # each run read the version that started it, with as many rows as that commit held
    results = airflow.query(
        "select run_id, value from xcom where dag_id = ? and task_id = 'read_pinned' and key = 'return_value'", DAG_ID
    )
    read = sorted(json.loads(value)["sales.orders"]["version"] for _, value in results)
    assert read == list(range(1, COMMITS + 1))
    for _, value in results:
        table = json.loads(value)["sales.orders"]
        assert table["rows"] == sum(range(1, table["version"] + 1))
    # commit (the __manifest commit's time, in the event) -> run queued; the commit made while no triggerer ran
    # apart (it waited for the restart)
    measured = latencies(airflow, skip=frozenset({KILL_AFTER + 1}))
    p50, p95 = p50_p95(measured)
    print(
        f"commit -> run queued over REST long-poll: p50 {p50:.2f} s, p95 {p95:.2f} s, max {measured[-1]:.2f} s "
        f"({len(measured)} commits)"
    )
