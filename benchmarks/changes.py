"""The catalog's change feed (issue 40): what a poll costs on S3, counted at a moto server of its own
(``s3_counter.py``), at a small and a large catalog. The reference has no feed: what it offers a consumer that
wants to know what changed is to describe each watched table (the feed's documented fallback), so the
comparison is the feed's idle poll against the reference's DescribeTable of ``WATCHED`` tables. Then the
Airflow side: ``ASSETS`` watched assets of one catalog (``LanceChangeTrigger``s driven as the triggerer drives a
shared stream) counted as poll loops and storage requests, and commit -> DAG run queued in a real Airflow (the
example DAG, tests/example_dags/test_lance_change_feed.py's stack, commits through the REST server). Results key
``change_feed``.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import lance_namespace as ln
from lance.namespace import DirectoryNamespace as ReferenceNamespace

from airflow_provider_lance.namespace import DirectoryNamespace
from benchmarks import catalog
from benchmarks.common import QUICK, Job, Target, log, ms
from benchmarks.s3_counter import CountingS3Server

SIZES = [10, 1_000] if QUICK else [10, 100_000]
WATCHED = 10  # tables a consumer watches (the fallback describes each)
COMMITS = 10  # commits between two polls of the busy poll
POLLS = 5 if QUICK else 20
ASSETS = 1_000  # watched assets of one catalog
IDLE_SECONDS = 10.0  # the watched catalog left idle this long, its storage requests counted
POLL_INTERVAL = 1.0  # the triggers' poll interval in that window
RUN_COMMITS = 5 if QUICK else 20  # commits made outside Airflow, each starting one DAG run


def _poll_costs(server: CountingS3Server, size: int) -> dict[str, Any]:
    props = {**server.properties(f"feed-{size}-{uuid.uuid4().hex[:8]}"), "manifest_cache_dir": ""}
    writer = DirectoryNamespace(**props)
    catalog.build_s3(props, writer, size)
    consumer = DirectoryNamespace(**props)
    cursor = consumer.changes().cursor
    with server.counting() as idle:
        consumer.changes(since=cursor)
    idle_ms = []
    for _ in range(POLLS):
        started = time.perf_counter()
        consumer.changes(since=cursor)
        idle_ms.append((time.perf_counter() - started) * 1000)
    for i in range(COMMITS):
        writer.declare_table(ln.DeclareTableRequest(id=[catalog.NAMESPACE, f"new{i}"]))
    started = time.perf_counter()
    with server.counting() as busy:
        page = consumer.changes(since=cursor)
    busy_ms = (time.perf_counter() - started) * 1000
    reference = ReferenceNamespace(**props)
    watched = [[catalog.NAMESPACE, f"t{i}"] for i in range(WATCHED)]
    reference.describe_table(ln.DescribeTableRequest(id=watched[0]))  # its first open, not counted
    with server.counting() as fallback:
        for table in watched:
            reference.describe_table(ln.DescribeTableRequest(id=table))
    return {
        "idle_requests": dict(idle),
        "idle_ms": statistics.median(idle_ms),
        "busy_requests": dict(busy),
        "busy_changes": len(page.changes),
        "busy_ms": busy_ms,
        "fallback_requests": dict(fallback),
    }


def _watched_assets(server: CountingS3Server) -> dict[str, Any]:
    """``ASSETS`` triggers of one catalog on S3: poll loops started, storage requests of ``IDLE_SECONDS`` idle,
    and one commit's events (each trigger watches one of ``WATCHED`` tables being declared)."""
    importlib.import_module("tests.airflow_helpers")  # an AIRFLOW_HOME of its own, set before Airflow loads
    from airflow.triggers.shared_stream import SharedStreamManager

    from airflow_provider_lance.triggers import changes as trigger_module

    props = {**server.properties(f"watched-{uuid.uuid4().hex[:8]}"), "manifest_cache_dir": ""}
    writer = DirectoryNamespace(**props)
    catalog.build_s3(props, writer, WATCHED)
    conn_id = f"lance_bench_feed_{uuid.uuid4().hex[:6]}"
    connection = {"conn_type": "lance", "host": props.pop("root"), "extra": props}
    os.environ[f"AIRFLOW_CONN_{conn_id.upper()}"] = json.dumps(connection)
    loops: list[str] = []
    variables: dict[str, str] = {}

    class Counted(trigger_module.LanceChangeTrigger):
        @classmethod
        def create_shared_stream_producer(cls, kwargs: dict[str, Any]) -> Any:
            loops.append(kwargs["lance_conn_id"])
            return super().create_shared_stream_producer(kwargs)

    # the cursor Variable in memory (outside a triggerer there is no metadata database to reach)
    memory = SimpleNamespace(get=lambda key, default=None: variables.get(key, default), set=variables.__setitem__)
    saved, trigger_module.Variable = trigger_module.Variable, memory  # type: ignore[misc]
    try:
        triggers = [
            Counted(
                tables=[f"{catalog.NAMESPACE}.new{i % WATCHED}"],
                kinds=["table_declared"],
                lance_conn_id=conn_id,
                poll_interval=POLL_INTERVAL,
            )
            for i in range(ASSETS)
        ]
        return asyncio.run(_follow(server, SharedStreamManager(ack_timeout=60), triggers, writer, loops, variables))
    finally:
        trigger_module.Variable = saved  # type: ignore[misc]
        os.environ.pop(f"AIRFLOW_CONN_{conn_id.upper()}", None)


async def _follow(
    server: CountingS3Server,
    manager: Any,
    triggers: list[Any],
    writer: DirectoryNamespace,
    loops: list[str],
    variables: dict[str, str],
) -> dict[str, Any]:
    received = [0] * len(triggers)

    async def consume(number: int, trigger: Any) -> None:
        key = trigger.shared_stream_key()
        async for _ in trigger.filter_shared_stream(manager.subscribe(trigger_id=number, trigger=trigger, key=key)):
            received[number] += 1
            seq = manager.bind_pending_event(trigger_id=number, key=key)
            manager.confirm_persisted([seq] if seq is not None else [])

    tasks = [asyncio.create_task(consume(i, t)) for i, t in enumerate(triggers)]
    while not variables:  # the loop started and saved the catalog's present
        await asyncio.sleep(0.1)
    await asyncio.sleep(POLL_INTERVAL)
    with server.counting() as idle:
        await asyncio.sleep(IDLE_SECONDS)
    # one commit: a table that a tenth of the triggers watch is declared
    await asyncio.to_thread(writer.declare_table, ln.DeclareTableRequest(id=[catalog.NAMESPACE, "new0"]))
    deadline = time.monotonic() + 60
    while sum(received) < len(triggers) // WATCHED and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await manager.stop_all()
    return {
        "assets": len(triggers),
        "poll_loops": len(loops),
        "idle_seconds": IDLE_SECONDS,
        "poll_interval": POLL_INTERVAL,
        "idle_requests": dict(idle),
        "events": sum(received),
        "expected_events": len(triggers) // WATCHED,
    }


def _commit_to_run() -> dict[str, Any]:
    """Commit -> DAG run queued over the REST long-poll in a real Airflow (``RUN_COMMITS`` commits, one at a time,
    each waited for as a queued run)."""
    from tests.example_dags import test_lance_change_feed as e2e

    with tempfile.TemporaryDirectory(prefix="bench-change-feed-") as base, e2e.airflow_stack(Path(base)) as stack:
        airflow, url = stack
        e2e.wait_for("the triggerer to follow the catalog", airflow.saved_cursor, airflow, 240)
        for number in range(1, RUN_COMMITS + 1):
            e2e.commit(url, rows=number, first=number == 1)
            e2e.wait_for(f"DAG run {number}", lambda n=number: len(e2e.runs(airflow)) >= n, airflow, 120)
            time.sleep(1)  # commits apart, as independent writers make them
        measured, stored = e2e.latencies(airflow), e2e.latencies(airflow, until="stored")
        load = os.getloadavg()
    p50, p95 = e2e.p50_p95(measured)
    stored_p50, stored_p95 = e2e.p50_p95(stored)
    return {
        "commits": len(measured),
        "p50_s": p50,
        "p95_s": p95,
        "max_s": measured[-1],
        "stored_p50_s": stored_p50,
        "stored_p95_s": stored_p95,
        "load": load,
    }


def run() -> dict[str, Any]:
    """Every size, on one counting server; then the watched assets and commit -> run."""
    results: dict[str, Any] = {"_meta": {"watched": WATCHED, "commits": COMMITS, "polls": POLLS}}
    with CountingS3Server() as server:
        for size in SIZES:
            results[str(size)] = _poll_costs(server, size)
            log(f"change feed at {size} tables: {results[str(size)]}")
        results["_meta"]["watched_assets"] = _watched_assets(server)
        log(f"change feed, watched assets: {results['_meta']['watched_assets']}")
    results["_meta"]["commit_to_run"] = _commit_to_run()
    log(f"change feed, commit -> run queued: {results['_meta']['commit_to_run']}")
    return results


def jobs(work: Path) -> list[Job]:
    """(results key, measure) of the section.

    :param work: the run's directory for catalogs (unused: the catalogs are on the counting S3 server).
    """
    return [("change_feed", run)]


def _total(requests: dict[str, int]) -> int:
    return sum(requests.values())


def targets(results: dict[str, Any]) -> list[Target]:
    """An idle poll is one storage request at every size; the watched assets of one catalog are one poll loop;
    commit -> run queued over the REST long-poll within 2 s at p95."""
    measured = results.get("change_feed")
    if not measured:
        return []
    sizes = [key for key in measured if not key.startswith("_")]
    idle = {size: _total(measured[size]["idle_requests"]) for size in sizes}
    found = [
        Target(
            "Change feed: an idle poll costs one storage request (S3)",
            "1 request at every size",
            ", ".join(f"{n} at {int(size):,} tables" for size, n in idle.items()),
            all(n == 1 for n in idle.values()),
            (
                "A poll lists `__manifest/_versions/` newest first (one LIST) and stops when the cursor is at the"
                " newest version; anything more is a regression in `namespace/changes.py`.",
                "Count the requests of `tests/s3/test_s3_changes.py` and find the extra one.",
            ),
        )
    ]
    watched = measured["_meta"].get("watched_assets")
    if watched:
        found.append(
            Target(
                f"Change feed: {watched['assets']:,} watched assets of one catalog are one poll loop",
                "1 loop",
                f"{watched['poll_loops']} loop(s), {_total(watched['idle_requests'])} requests in"
                f" {watched['idle_seconds']:g} s idle at a {watched['poll_interval']:g} s interval",
                watched["poll_loops"] == 1,
                (
                    "Every trigger of one connection and consumer returns the same `shared_stream_key`; a second"
                    " loop means the key differs (a kwarg in it) or Airflow stopped sharing.",
                    "Compare the keys of two triggers of `triggers/changes.py`.",
                ),
            )
        )
    timed = measured["_meta"].get("commit_to_run")
    if timed:
        found.append(
            Target(
                "Change feed: commit -> DAG run queued over the REST long-poll, p95",
                "<= 2 s",
                f"p50 {timed['p50_s']:.2f} s, p95 {timed['p95_s']:.2f} s ({timed['commits']} commits,"
                f" load {timed['load'][0]:.1f})",
                timed["p95_s"] <= 2.0,
                (
                    "What remains after the server wakes its long-polls on a commit is Airflow's: the triggerer"
                    " hands events to its supervisor once a second, and the scheduler sleeps up to"
                    " `scheduler_idle_sleep_time` (1 s) between idle loops; on a loaded machine each step takes"
                    " longer.",
                    "Re-run on a quiet machine; `[scheduler] scheduler_idle_sleep_time` lower trades CPU for latency.",
                ),
            )
        )
    return found


def section(results: dict[str, Any]) -> list[str]:
    """Requests and milliseconds of an idle poll, a busy poll and the fallback, per catalog size."""
    measured = results.get("change_feed")
    if not measured:
        return []
    meta = measured["_meta"]
    lines = [
        "## Change feed (issue 40)",
        "",
        "Requests counted at a moto S3 server of its own (whoever sends them: s3fs or pylance). *Idle*: a poll with"
        f" nothing new (median of {meta['polls']} for the time); *busy*: one poll after {meta['commits']} commits"
        " (declares); *fallback*: what a consumer without the feed does — describe each of the"
        f" {meta['watched']} tables it watches — measured on the reference. Ratio = feed idle requests / fallback"
        " requests. Shared 2-core machine: the counts are exact, the times indicative.",
        "",
        "| tables | idle poll requests | idle ms | busy poll requests (changes) | busy ms | fallback requests |"
        " ratio |",
        "|---:|---|---:|---|---:|---|---:|",
    ]
    for size, row in ((k, v) for k, v in measured.items() if not k.startswith("_")):
        idle, fallback = _total(row["idle_requests"]), _total(row["fallback_requests"])
        lines.append(
            f"| {int(size):,} | {idle} {row['idle_requests']} | {ms(row['idle_ms'])} |"
            f" {_total(row['busy_requests'])} {row['busy_requests']} ({row['busy_changes']}) | {ms(row['busy_ms'])} |"
            f" {fallback} {row['fallback_requests']} | {idle / fallback:.2f} |"
        )
    watched, timed = meta.get("watched_assets"), meta.get("commit_to_run")
    if watched:
        lines += [
            "",
            f"**{watched['assets']:,} watched assets of one catalog** (`LanceChangeTrigger`s of one connection, each"
            f" watching one of {meta['watched']} tables, driven through Airflow's `SharedStreamManager` as the"
            f" triggerer drives them): {watched['poll_loops']} poll loop(s) started;"
            f" {_total(watched['idle_requests'])} storage requests {watched['idle_requests']} in"
            f" {watched['idle_seconds']:g} s of an idle catalog at a {watched['poll_interval']:g} s poll interval"
            " (one request a poll, whatever the number of assets); one commit (a table declared) gave"
            f" {watched['events']} events for the {watched['expected_events']} triggers watching that table.",
        ]
    if timed:
        lines += [
            "",
            f"**Commit -> DAG run queued** in a real Airflow (`example_dags/lance_change_feed.py`: api-server, dag"
            " processor, scheduler, triggerer, LocalExecutor; each commit made with pylance through our REST server,"
            f" the trigger long-polling it): p50 {timed['p50_s']:.2f} s, p95 {timed['p95_s']:.2f} s, max"
            f" {timed['max_s']:.2f} s over {timed['commits']} commits, from the `__manifest` commit's time to the"
            f" run's `queued_at`; of which commit -> asset event stored by the triggerer p50"
            f" {timed['stored_p50_s']:.2f} s, p95 {timed['stored_p95_s']:.2f} s (our feed, the trigger, and the"
            " triggerer's once-a-second hand-off to its supervisor; the rest is the scheduler's loop queueing the"
            f" run). Load average during the run {', '.join(f'{x:.1f}' for x in timed['load'])} on 2"
            " cores (other work shared the machine: indicative only).",
        ]
    return [*lines, ""]
