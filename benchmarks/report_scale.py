"""Targets and sections of ``benchmarks/scale.py`` and ``benchmarks/spark_staging.py`` for ``docs/benchmarks.md``."""

from __future__ import annotations

import statistics
from typing import Any

Target = tuple[str, str, str, bool, str | None]  # name, wanted, measured, met, reason key

DATA_PLANE_GOAL = 1.1
READ_SCALING_GOAL = 4.0
SPARK_GOAL = 1.0


def _kinds(counts: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:g}" for k, v in sorted(counts.items()) if v) or "none"


def scale_targets(results: dict[str, Any]) -> list[Target]:
    """The goals of issue 15 measured by the scale and Spark sections, with whether they hold."""
    targets: list[Target] = []
    threads = results.get("threads") or {}
    for storage, engines in threads.items():
        if storage.startswith("_"):
            continue
        ours = engines["ours"]
        scaling = ours["reads_16"] / ours["reads_1"]
        targets.append(
            (
                f"reads through one instance, 16 threads / 1 thread ({storage})",
                f"≥ {READ_SCALING_GOAL:.0f}x",
                f"{scaling:.2f}x",
                scaling >= READ_SCALING_GOAL,
                f"threads_{storage}",
            )
        )
        writes = ours["writes_4"] / ours["writes_1"]
        targets.append(
            (
                f"DeclareTable from 4 threads: throughput / 1 thread, nothing lost ({storage})",
                "≥ 1.0x, all landed",
                f"{writes:.2f}x, {'all landed' if ours['writes_landed'] else 'LOST WRITES'}",
                writes >= 1.0 and ours["writes_landed"],
                "thread_writes",
            )
        )
    for op, engines in (results.get("data_plane") or {}).items():
        ratio = engines["ours"]["p50"] / engines["reference"]["p50"]
        targets.append(
            (f"{op} p50 (data plane)", f"≤ {DATA_PLANE_GOAL}x", f"{ratio:.2f}x", ratio <= DATA_PLANE_GOAL, None)
        )
    for storage, by_count in (results.get("processes") or {}).items():
        for count, engines in by_count.items():
            ours, reference = engines["ours"], engines["reference"]
            ratio = ours["writes_per_s"] / reference["writes_per_s"]
            landed = ours["landed"] == ours["writes"]
            targets.append(
                (
                    f"{count} writer processes, total writes/s ours / reference ({storage})",
                    "≥ 1.0x, all landed",
                    f"{ratio:.2f}x, {ours['landed']}/{ours['writes']} landed",
                    ratio >= 1.0 and landed,
                    "processes",
                )
            )
    spark = (results.get("spark") or {}).get("numbers")
    if spark:
        median = {name: statistics.median(values) for name, values in spark["seconds"].items()}
        ratio = median["ours"] / median["parquet"]
        targets.append(
            (
                f"Spark stage + commit of {spark['tables']} x {spark['rows']:,} rows / Spark Parquet writer",
                f"≤ {SPARK_GOAL:.1f}x",
                f"{ratio:.2f}x",
                ratio <= SPARK_GOAL,
                "spark",
            )
        )
    return targets


def scale_sections(results: dict[str, Any]) -> list[str]:
    """Markdown of the S3-writes, threads, writer-processes and data-plane sections."""
    lines: list[str] = []
    add = lines.append
    s3 = results.get("s3_writes")
    if s3:
        add(f"## Storage requests per write on S3 (moto, {s3['size']:,} tables)")
        add("")
        add(
            "Every HTTP request counted at the moto server (its own process) while one write runs, whoever sends it;"
            f" median of {s3['reps']} repetitions per operation, both engines interleaved. Latency includes moto's"
            " own processing on this 2-core machine."
        )
        add("")
        add(
            "| operation | ours requests | reference requests | ours by kind | reference by kind | ours ms"
            " | reference ms |"
        )
        add("|---|---:|---:|---|---|---:|---:|")
        for op, engines in s3["operations"].items():
            o, r = engines["ours"], engines["reference"]
            add(
                f"| {op} | {o['requests']:g} | {r['requests']:g} | {_kinds(o['kinds'])} | {_kinds(r['kinds'])} |"
                f" {o['p50']:.0f} | {r['p50']:.0f} |"
            )
        add("")
    threads = results.get("threads")
    if threads:
        add("## Threads through one instance")
        add("")
        add(
            "Reads = DescribeTable / TableExists of varying tables of a 1,000-table child namespace, through one"
            " namespace object, from 1 thread and from 16 threads (best of alternating rounds); writes = DeclareTable"
            " of new tables from 1 and from 4 threads, then every table is looked for in ListTables. On 2 cores,"
            " reads scale only where they wait: on S3 (each request waits on the network and on moto) more than on"
            " local disk, where our reads are answered from memory and the interpreter lock serialises them."
        )
        add("")
        add(
            "| storage | engine | reads/s 1 thread | reads/s 16 threads | scaling | writes/s 1 thread |"
            " writes/s 4 threads | 4 / 1 | all landed |"
        )
        add("|---|---|---:|---:|---:|---:|---:|---:|---|")
        for storage, engines in threads.items():
            if storage.startswith("_"):
                continue
            for name, t in engines.items():
                add(
                    f"| {storage} | {name} | {t['reads_1']:,.0f} | {t['reads_16']:,.0f} |"
                    f" {t['reads_16'] / t['reads_1']:.2f}x | {t['writes_1']:.1f} | {t['writes_4']:.1f} |"
                    f" {t['writes_4'] / t['writes_1']:.2f}x | {'yes' if t['writes_landed'] else '**no**'} |"
                )
        for storage, ceiling in threads.get("_server", {}).items():
            add(
                f"| {storage} | moto itself: bare `LIST MaxKeys=1` (boto3) | {ceiling['reads_1']:,.0f} |"
                f" {ceiling['reads_16']:,.0f} | {ceiling['reads_16'] / ceiling['reads_1']:.2f}x | | | | |"
            )
        add("")
        add(
            "The moto rows are the server's ceiling: one Python process answering on the same 2 cores. Without added"
            " latency a request costs moto CPU time, so 16 clients cannot get more than the ceiling; with a 20 ms round"
            " trip the wait overlaps and threads can scale until moto's CPU is the limit again."
        )
        add("")
    processes = results.get("processes")
    if processes:
        add("## Concurrent writer processes on one catalog")
        add("")
        add(
            "N processes (spawned, each with its own namespace object, released together by a barrier) declare"
            " tables in the same 1,000-table namespace; wall time from the release to the last writer's end."
            " Conflicts the engine gives up on are retried by the writer (counted); afterwards every table must be"
            " listed. On S3 the requests of all processes are counted at the server."
        )
        add("")
        add("| storage | writers | engine | writes | writes/s | landed | retries | requests / write | by kind |")
        add("|---|---:|---|---:|---:|---:|---:|---:|---|")
        for storage, by_count in processes.items():
            for count, engines in by_count.items():
                for name, p in engines.items():
                    per_write = p.get("requests_per_write")
                    add(
                        f"| {storage} | {count} | {name} | {p['writes']} | {p['writes_per_s']:.1f} | {p['landed']} |"
                        f" {p['retries']} | {'-' if per_write is None else f'{per_write:.1f}'} |"
                        f" {_kinds({k: round(v, 1) for k, v in p.get('kinds_per_write', {}).items()})} |"
                    )
        add("")
    data = results.get("data_plane")
    if data:
        add("## Data plane")
        add("")
        add(
            "A table of 10,000 rows (id, name, score) in a child namespace, both engines, interleaved: CountTableRows,"
            " QueryTable with a range filter (100 rows), InsertIntoTable of 100 rows, MergeInsertIntoTable of 100"
            " rows on `id` (half of them matching). Milliseconds."
        )
        add("")
        add("| operation | ours p50 | ours p95 | reference p50 | reference p95 | p50 ratio |")
        add("|---|---:|---:|---:|---:|---:|")
        for op, engines in data.items():
            o, r = engines["ours"], engines["reference"]
            add(
                f"| {op} | {o['p50']:.2f} | {o['p95']:.2f} | {r['p50']:.2f} | {r['p95']:.2f} |"
                f" {o['p50'] / r['p50']:.2f}x |"
            )
        add("")
    return lines
