"""The catalog's change feed (issue 40): what a poll costs on S3, counted at a moto server of its own
(``s3_counter.py``), at a small and a large catalog. The reference has no feed: what it offers a consumer that
wants to know what changed is to describe each watched table (the feed's documented fallback), so the
comparison is the feed's idle poll against the reference's DescribeTable of ``WATCHED`` tables. Results key
``change_feed``.
"""

from __future__ import annotations

import statistics
import time
import uuid
from pathlib import Path
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


def run() -> dict[str, Any]:
    """Every size, on one counting server."""
    results: dict[str, Any] = {"_meta": {"watched": WATCHED, "commits": COMMITS, "polls": POLLS}}
    with CountingS3Server() as server:
        for size in SIZES:
            results[str(size)] = _poll_costs(server, size)
            log(f"change feed at {size} tables: {results[str(size)]}")
    return results


def jobs(work: Path) -> list[Job]:
    """(results key, measure) of the section.

    :param work: the run's directory for catalogs (unused: the catalogs are on the counting S3 server).
    """
    return [("change_feed", run)]


def _total(requests: dict[str, int]) -> int:
    return sum(requests.values())


def targets(results: dict[str, Any]) -> list[Target]:
    """An idle poll is one storage request at every size."""
    measured = results.get("change_feed")
    if not measured:
        return []
    sizes = [key for key in measured if not key.startswith("_")]
    idle = {size: _total(measured[size]["idle_requests"]) for size in sizes}
    return [
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
    return [*lines, ""]
