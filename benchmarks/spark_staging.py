"""Spark staging throughput: stage + commit N tables against Spark's Parquet writer on the same cached DataFrames.

N tables (default 2) of R rows (default 2,000,000) x 4 columns (id long, name string, score double, bucket
int), built by Spark, cached in memory and counted before timing. Each round times:

* **Parquet**: ``df.write.parquet(path)`` of every table, one after the other (Spark's JVM writer);
* **ours**: :func:`airflow_provider_lance.spark.stage_dataframes` of every table, then one
  ``batch_create_table_versions`` of the staged entries (stage + commit, rows visible at the end);
* **pylance**: ``lance.write_dataset`` of the same rows (pyarrow tables built before timing), one process,
  one table after the other;
* ``ours_map_in_arrow``: ours with ``transfer="map_in_arrow"`` (the route of Spark Connect sessions, and of every
  session before ``Dataset.toArrowBatchRdd`` was used);
* three floors (reference rows): the jobs of every table reading every batch and writing nothing: through the
  RDD of Arrow batches ours uses (``transfer_rdd``), and through ``mapInArrow``, with the Arrow batch settings the
  staging uses (:func:`~airflow_provider_lance.spark.staging.arrow_batches`) and with Spark's defaults.

After a warm-up round, every round runs twice: on the quiet machine, then **loaded**, with another job using
one core: a single-threaded busy loop (a separate process, pinned to the last CPU where the OS allows it)
running during every path of the round, the same load for Parquet and for ours. The order of the paths
alternates between rounds.

Reports seconds and rows/s per path, and the ratios ours / Parquet and ours / pylance (median and best of the
rounds), quiet and loaded.
Usage: ``python -m benchmarks.spark_staging [--tables N] [--rows R] [--repeat K] [--no-load] [--out FILE]
[--json FILE]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

GOAL_PARQUET = 0.8  # stage + commit <= 0.8x Spark's Parquet writer, quiet and loaded


def demo_table(rows: int, start: int = 0) -> pa.Table:
    """The rows the Spark side builds, with pyarrow (for the single-process pylance writer).

    :param rows: the number of rows.
    :param start: the first id.
    """
    import numpy as np

    ids = np.arange(start, start + rows, dtype=np.int64)
    names = pa.compute.binary_join_element_wise("user-", pa.array(ids).cast(pa.string()), "")
    return pa.table(
        {"id": ids, "name": names, "score": (ids * 37 % 1000) / 10.0, "bucket": (ids % 16).astype(np.int32)}
    )


def _drain(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """A ``mapInArrow`` function that reads every batch and returns nothing."""
    for _ in batches:
        pass
    yield from ()


#: The process roles of a local Spark run whose CPU time is reported apart.
ROLES = ("jvm", "workers", "driver")


def cpu_seconds_by_role() -> dict[str, float] | None:
    """CPU seconds used so far by this process (``driver``: the Python driver, the staging and the commit), the
    JVM (``jvm``: Spark's tasks, rows to Arrow or to Parquet) and the Python workers (``workers``: Arrow from the
    JVM, Lance's encoding and writes), each with its ended children; ``None`` without psutil. Less sensitive to
    other jobs on the machine than wall time."""
    try:
        import psutil
    except ImportError:
        return None
    me = psutil.Process()
    totals = dict.fromkeys(ROLES, 0.0)
    for process in [me, *me.children(recursive=True)]:
        try:
            times, name = process.cpu_times(), process.name()
        except psutil.Error:  # ended meanwhile: its time went to its parent's children_* counters
            continue
        role = "driver" if process.pid == me.pid else "jvm" if name.startswith("java") else "workers"
        totals[role] += times.user + times.system
        if role != "driver":  # the driver's children are the JVM and its workers, counted on their own
            totals[role] += times.children_user + times.children_system
    return totals


class BusyCore:
    """Another job on the machine: one process spinning on one core (the last CPU, where affinity can be set)."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self.cpu: int | None = None

    def __enter__(self) -> BusyCore:
        self.process = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        if hasattr(os, "sched_setaffinity"):
            self.cpu = max(os.sched_getaffinity(0))
            os.sched_setaffinity(self.process.pid, {self.cpu})
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait()
            self.process = None


def timed(func: Callable[[], object]) -> float:
    """The wall time of one call in seconds.

    :param func: the call.
    """
    started = time.perf_counter()
    func()
    return time.perf_counter() - started


def driver_memory(tables: int, rows: int) -> str:
    """The JVM heap (``spark.driver.memory``; in ``local`` mode the tasks run in the driver's JVM) that keeps the
    cached DataFrames in memory: Spark's default 1 GiB up to 4M rows in all, then 1 GiB per 6M rows (4 x 10M
    rows: 7 GiB; the machine has 24 GiB), so that neither writer reads spilled blocks from disk.

    :param tables: the number of tables.
    :param rows: rows per table.
    """
    total = tables * rows
    return "1g" if total <= 4_000_000 else f"{-(-total // 6_000_000)}g"


def measure(
    tables: int,
    rows: int,
    repeat: int,
    master: str,
    loaded: bool = True,
    only: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Run the interleaved rounds; returns seconds per path and round (``seconds`` quiet, ``seconds_loaded`` with
    a busy core), CPU seconds per path, round and process role, the two phases of ours (staging, commit), plus
    set-up facts.

    :param tables: the number of tables staged together.
    :param rows: rows per table.
    :param repeat: timed rounds (after one warm-up round).
    :param master: the Spark master.
    :param loaded: also time every round with another job busy on one core.
    :param only: the paths to time (``parquet``, ``ours``, ``ours_map_in_arrow``, ``transfer_rdd``, ``transfer``,
        ``transfer_default``, ``pylance``); all by default. ``parquet`` and ``ours`` are always timed.
    """
    bin_dir = str(Path(sys.executable).parent)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")

    import lance
    import lance_namespace as ln
    import pyarrow.compute  # noqa: F401  (demo_table)
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from airflow_provider_lance.namespace import DirectoryNamespace
    from airflow_provider_lance.spark import stage_dataframes
    from airflow_provider_lance.spark.staging import (
        ARROW_MAX_RECORDS_PER_BATCH,
        arrow_batch_rdd,
        arrow_batch_rows,
        arrow_batches,
    )

    work = Path(tempfile.mkdtemp(prefix="lance-spark-bench-"))
    started = time.perf_counter()
    spark = (
        SparkSession.builder.master(master)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", driver_memory(tables, rows))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    session_seconds = time.perf_counter() - started
    partitions = spark.sparkContext.defaultParallelism
    frames = []
    for t in range(tables):
        ids = F.col("id")
        frame = (
            spark.range(t * rows, (t + 1) * rows, numPartitions=partitions)
            .select(
                ids.alias("id"),
                F.concat(F.lit("user-"), ids.cast("string")).alias("name"),
                ((ids * 37) % 1000 / F.lit(10.0)).alias("score"),
                (ids % 16).cast("int").alias("bucket"),
            )
            .cache()
        )
        frame.count()
        frames.append(frame)
    arrow = [demo_table(rows, t * rows) for t in range(tables)] if not only or "pylance" in only else []
    phases: dict[str, list[float]] = {"stage": [], "commit": []}  # of ours, in the quiet timed rounds
    last_phases: dict[str, float] = {}
    transfers: set[str] = set()  # how the rows reached ours' writers

    def parquet(r: int) -> None:
        for t, frame in enumerate(frames):
            frame.write.mode("overwrite").parquet(str(work / f"parquet{r}-{t}"))

    def ours(r: int, transfer: str = "auto") -> None:
        root = work / f"ours{r}-{transfer}"
        root.mkdir()
        namespace = DirectoryNamespace(root=str(root), table_version_management="true")
        started = time.perf_counter()
        staged = stage_dataframes(namespace, {f"b.t{t}": frame for t, frame in enumerate(frames)}, transfer=transfer)
        written = time.perf_counter()
        namespace.batch_create_table_versions(ln.BatchCreateTableVersionsRequest(entries=[s.entry for s in staged]))
        if transfer == "auto":
            last_phases.update(stage=written - started, commit=time.perf_counter() - written)
            transfers.update(s.transfer for s in staged)
        assert sum(s.rows for s in staged) == tables * rows

    def ours_map_in_arrow(r: int) -> None:
        ours(r, "map_in_arrow")

    def transfer_rdd(r: int) -> None:  # the floor of ours' route: Arrow batches built by the JVM, read by workers
        with arrow_batches(spark, arrow_batch_rows(frames[0])):
            for frame in frames:
                route = arrow_batch_rdd(frame, int(spark.conf.get(ARROW_MAX_RECORDS_PER_BATCH)))
                assert route is not None
                route[0].mapPartitions(_drain).collect()

    def transfer(r: int) -> None:  # the floor of any executor-side writer: rows to Python workers, no write
        with arrow_batches(spark, arrow_batch_rows(frames[0])):
            for frame in frames:
                frame.mapInArrow(_drain, "fragment string, writer_pid long").collect()

    def transfer_default(r: int) -> None:  # the same with Spark's default Arrow batch byte cap
        for frame in frames:
            frame.mapInArrow(_drain, "fragment string, writer_pid long").collect()

    def pylance(r: int) -> None:
        for t, table in enumerate(arrow):
            lance.write_dataset(table, str(work / f"pylance{r}-{t}.lance"), mode="create")

    every_path = {
        "parquet": parquet,
        "ours": ours,
        "ours_map_in_arrow": ours_map_in_arrow,
        "transfer_rdd": transfer_rdd,
        "transfer": transfer,
        "transfer_default": transfer_default,
        "pylance": pylance,
    }
    paths = {name: f for name, f in every_path.items() if not only or name in {"parquet", "ours", *only}}
    seconds: dict[str, list[float]] = {name: [] for name in paths}
    seconds_loaded: dict[str, list[float]] = {name: [] for name in paths}
    cpu_seconds: dict[str, list[dict[str, float]]] = {name: [] for name in paths}
    first_round: dict[str, list[float]] = {name: [] for name in paths}
    busy_cpu: int | None = None

    def one_round(r: int, into: dict[str, list[float]], cpu: dict[str, list[dict[str, float]]] | None = None) -> None:
        order = list(paths) if r % 2 == 0 else list(reversed(paths))
        for name in order:
            cpu_before = cpu_seconds_by_role()
            elapsed = timed(lambda name=name: paths[name](r))
            cpu_after = cpu_seconds_by_role()
            into[name].append(elapsed)
            print(f"[spark_staging] round {r} {name}: {elapsed:.2f} s", file=sys.stderr, flush=True)
            if cpu is not None and cpu_before is not None and cpu_after is not None:
                cpu[name].append({role: cpu_after[role] - cpu_before[role] for role in ROLES})
            if cpu is not None and name == "ours":
                for phase, values in phases.items():
                    values.append(last_phases[phase])
        for child in work.iterdir():
            shutil.rmtree(child, ignore_errors=True)

    try:
        one_round(0, first_round)  # warms up the JVM, the Python workers and the page cache (kept apart)
        for r in range(1, repeat + 1):
            one_round(r, seconds, cpu_seconds)
            if loaded:
                with BusyCore() as busy:
                    one_round(r, seconds_loaded)
                    busy_cpu = busy.cpu
        ours_root = work / "check"
        ours_root.mkdir()
        namespace = DirectoryNamespace(root=str(ours_root), table_version_management="true")
        staged = stage_dataframes(namespace, {"b.t0": frames[0]})
        fragment_rows = [json.loads(text)["physical_rows"] for text in staged[0].fragments]
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    return {
        "tables": tables,
        "rows": rows,
        "rounds": repeat,
        "master": master,
        "partitions": partitions,
        "session_seconds": session_seconds,
        "seconds": seconds,
        "seconds_loaded": seconds_loaded if loaded else {},
        "cpu_seconds": {name: values for name, values in cpu_seconds.items() if values},
        "phases": phases,
        "driver_memory": driver_memory(tables, rows),
        "first_round_seconds": {name: values[0] for name, values in first_round.items()},
        "load": "a single-threaded busy loop in another process"
        + (f", pinned to CPU {busy_cpu}" if busy_cpu is not None else ""),
        "fragment_rows": fragment_rows,
        "transfers": sorted(transfers),
        "machine": f"{os.cpu_count()} cores, Python {platform.python_version()}, pylance {lance.__version__}",
    }


def ratios(seconds: dict[str, list[float]]) -> dict[str, float]:
    """Ours / Parquet and ours / pylance, of the medians and of the best rounds.

    :param seconds: seconds per path and round.
    """
    median = {name: statistics.median(values) for name, values in seconds.items()}
    best = {name: min(values) for name, values in seconds.items()}
    result = {"parquet_median": median["ours"] / median["parquet"], "parquet_best": best["ours"] / best["parquet"]}
    if "pylance" in median:
        result["pylance_median"] = median["ours"] / median["pylance"]
    for path in ("ours_map_in_arrow", "transfer_rdd", "transfer", "transfer_default"):
        if path in median:
            result[f"{path}_median"] = median[path] / median["parquet"]
    return result


def _table(
    seconds: dict[str, list[float]], labels: dict[str, str], total: int, cpu: dict[str, list[dict[str, float]]]
) -> list[str]:
    """The markdown table of one condition (quiet or loaded).

    :param seconds: seconds per path and round.
    :param labels: the row label per path.
    :param total: rows written per round.
    :param cpu: CPU seconds per path, round and process role (columns when given: the total and each role's
        median).
    """
    rows = []
    for name, values in seconds.items():
        median = statistics.median(values)
        rounds = ", ".join(f"{s:.2f}" for s in values)
        cells = [labels[name], f"{median:.2f}", f"{min(values):.2f}", rounds, f"{total / median:,.0f}"]
        if cpu:
            split = cpu.get(name) or []
            cells.append(f"{statistics.median(sum(c.values()) for c in split):.2f}" if split else "")
            cells += [f"{statistics.median(c[role] for c in split):.2f}" if split else "" for role in ROLES]
        rows.append("| " + " | ".join(cells) + " |")
    header = "| path | median s | best s | all rounds s | rows/s (median) |"
    if cpu:
        header += " CPU s | of which JVM | Python workers | driver |"
    return [header, "|---|---:|---:|---:|---:|" + ("---:|---:|---:|---:|" if cpu else ""), *rows]


def _verdict(name: str, ratio: dict[str, float]) -> str:
    """One condition's ours / Parquet ratios against the goal.

    :param name: the condition.
    :param ratio: what :func:`ratios` returned for it.
    """
    met = max(ratio["parquet_median"], ratio["parquet_best"]) <= GOAL_PARQUET
    return (
        f"{name}: **{ratio['parquet_best']:.2f}x** best, {ratio['parquet_median']:.2f}x median "
        f"({'met' if met else 'not met'})"
    )


def render(result: dict[str, Any]) -> str:
    """The markdown section of one measurement.

    :param result: what :func:`measure` returned.
    """
    total = result["tables"] * result["rows"]
    quiet = ratios(result["seconds"])
    loaded_seconds = result.get("seconds_loaded") or {}
    labels = {
        "parquet": f"Spark `df.write.parquet`, {result['master']} (tables one after another)",
        "ours": f"`stage_dataframes` + `batch_create_table_versions`, {result['master']}"
        + (f" (rows to the writers: {', '.join(result['transfers'])})" if result.get("transfers") else ""),
        "ours_map_in_arrow": 'the same with `transfer="map_in_arrow"` (Spark Connect\'s route)',
        "transfer_rdd": "floor of ours' route: the Arrow batch RDD jobs writing nothing (JVM rows to Arrow to workers)",
        "transfer": "floor: the `mapInArrow` jobs writing nothing (JVM rows to Arrow in a struct to Python workers)",
        "transfer_default": "floor with Spark's default `spark.sql.execution.arrow.maxBytesPerBatch` (64 MiB)",
        "pylance": "pylance `lance.write_dataset`, 1 process (tables one after another)",
    }
    lines = [
        f"### {result['tables']} tables x {result['rows']:,} rows",
        "",
        f"{result['tables']} tables x {result['rows']:,} rows x 4 columns (long, string, double, int), cached "
        f"DataFrames ({result['partitions']} partitions each; `spark.driver.memory` "
        f"{result.get('driver_memory', '1g')}); {result['rounds']} interleaved rounds after a "
        f"warm-up round. Machine: {result['machine']}. Spark session start-up "
        f"({result['session_seconds']:.1f} s) not included. Fragment sizes written for one table: "
        f"{', '.join(f'{n:,}' for n in result['fragment_rows'])} rows.",
        "",
        "Quiet:",
        "",
        *_table(result["seconds"], labels, total, result.get("cpu_seconds") or {}),
        "",
    ]
    verdicts = [_verdict("quiet", quiet)]
    if loaded_seconds:
        loaded = ratios(loaded_seconds)
        verdicts.append(_verdict("loaded", loaded))
        lines += [
            f"Loaded (another job on one core: {result['load']}):",
            "",
            *_table(loaded_seconds, labels, total, {}),
        ]
        lines.append("")
    lines.append(f"Ratio ours / Parquet (goal ≤ {GOAL_PARQUET:.1f}x, best and median): {'; '.join(verdicts)}.")
    phases = result.get("phases") or {}
    if phases.get("stage"):
        lines[-1] += (
            f" Ours, median of the quiet rounds: {statistics.median(phases['stage']):.2f} s to stage (the driver "
            f"declares and plans, the executors write, the driver stages the manifests), "
            f"{statistics.median(phases['commit']) * 1000:.0f} ms for the one batch commit."
        )
    if "pylance_median" in quiet:
        lines[-1] += f" Ours / single-process pylance: {quiet['pylance_median']:.2f}x (quiet, median)."
    if "ours_map_in_arrow_median" in quiet:
        lines[-1] += f" Ours through `mapInArrow`: {quiet['ours_map_in_arrow_median']:.2f}x Parquet (quiet, median)."
    for floor in ("transfer_rdd", "transfer"):
        if f"{floor}_median" in quiet:
            lines[-1] += (
                f" The {labels[floor].split(':')[0]} row is what an executor-side Python writer on that route pays"
                f" before writing a byte ({quiet[f'{floor}_median']:.2f}x Parquet quiet): the rows leave the JVM as"
                " Arrow batches for the Python workers; Parquet is written inside the JVM."
            )
    if "transfer_default_median" in quiet:
        lines[-1] += (
            " The staging lifts Spark's Arrow batch byte cap for its jobs (`maxBytesPerBatch=2147483647`: the "
            "JVM stops measuring the batch after every row); with the default cap the floor alone is "
            f"{quiet['transfer_default_median']:.2f}x Parquet."
        )
    lines.append("")
    first = result.get("first_round_seconds")
    if first:
        lines += [
            f"First round (fresh Python workers, JVM code not compiled yet; not in the tables): Parquet "
            f"{first['parquet']:.2f} s, ours {first['ours']:.2f} s.",
            "",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the markdown section.

    :param argv: command-line arguments.
    """
    parser = argparse.ArgumentParser(description="Spark staging + commit vs Spark's Parquet writer")
    parser.add_argument("--tables", type=int, default=2)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--no-load", action="store_true", help="skip the rounds with a busy core")
    parser.add_argument(
        "--only",
        default="",
        help="comma-separated paths besides parquet and ours (ours_map_in_arrow, transfer_rdd, transfer, "
        "transfer_default, pylance)",
    )
    parser.add_argument("--out", default=None, help="also write the markdown section to this file")
    parser.add_argument("--json", default=None, help="also write the raw numbers to this file")
    args = parser.parse_args(argv)
    only = [name for name in args.only.split(",") if name] or None
    result = measure(args.tables, args.rows, args.repeat, args.master, loaded=not args.no_load, only=only)
    text = render(result)
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
