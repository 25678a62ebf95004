"""Staging throughput: the Spark path (executors write fragments) vs one process writing with pylance.

Writes the same rows (default 1M rows x 4 columns: id long, name string, score double, bucket int) as a
new staged version of a namespace table, and reports rows/s as a markdown section:

* ``lance.write_dataset`` to a plain path (no namespace, committed): the single-process baseline;
* :func:`airflow_provider_lance.staging.stage_data`: single process, staged through the namespace;
* :func:`airflow_provider_lance.spark.stage_dataframe` on ``local[N]``: first (cold) job and best warm job.

The Spark input is cached in memory first, and the pyarrow table is built before timing, so neither side pays
for generating rows. Usage: ``python benchmarks/spark_staging.py [--rows N] [--repeat K] [--out FILE]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa


def demo_table(rows: int) -> pa.Table:
    """Build the rows the Spark job's ``range:N`` produces, with pyarrow.

    :param rows: the number of rows.
    """
    import numpy as np

    ids = np.arange(rows, dtype=np.int64)
    return pa.table(
        {
            "id": ids,
            "name": pa.array([f"user-{i}" for i in range(rows)], pa.string()),
            "score": (ids * 37 % 1000) / 10.0,
            "bucket": (ids % 16).astype(np.int32),
        }
    )


def timed(func: Callable[[], object]) -> float:
    """Return the wall time of one call in seconds.

    :param func: the call.
    """
    started = time.perf_counter()
    func()
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the markdown section.

    :param argv: command-line arguments.
    """
    parser = argparse.ArgumentParser(description="Spark staging throughput vs single-process pylance")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--out", default=None, help="also write the markdown section to this file")
    args = parser.parse_args(argv)

    bin_dir = str(Path(sys.executable).parent)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")

    import lance
    import lance.namespace
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from airflow_provider_lance.spark import stage_dataframe
    from airflow_provider_lance.staging import stage_data

    work = Path(tempfile.mkdtemp(prefix="lance-spark-bench-"))
    try:
        table = demo_table(args.rows)
        results: list[tuple[str, float]] = []

        def plain(i: int) -> None:
            lance.write_dataset(table, str(work / f"plain{i}.lance"), mode="create")

        results.append(
            (
                "pylance `write_dataset`, 1 process (committed)",
                min(timed(lambda i=i: plain(i)) for i in range(args.repeat)),
            )
        )

        def staged_single(i: int) -> None:
            root = work / f"single{i}"
            root.mkdir()
            stage_data(lance.namespace.DirectoryNamespace(root=str(root)), ["t"], table)

        results.append(
            (
                "`stage_data`, 1 process (staged via namespace)",
                min(timed(lambda i=i: staged_single(i)) for i in range(args.repeat)),
            )
        )

        started = time.perf_counter()
        spark = (
            SparkSession.builder.master(args.master)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .getOrCreate()
        )
        session_seconds = time.perf_counter() - started
        partitions = spark.sparkContext.defaultParallelism
        ids = F.col("id")
        frame = (
            spark.range(0, args.rows, numPartitions=partitions)
            .select(
                ids.alias("id"),
                F.concat(F.lit("user-"), ids.cast("string")).alias("name"),
                ((ids * 37) % 1000 / F.lit(10.0)).alias("score"),
                (ids % 16).cast("int").alias("bucket"),
            )
            .cache()
        )
        frame.count()

        def staged_spark(i: int) -> None:
            root = work / f"spark{i}"
            root.mkdir()
            result = stage_dataframe(frame, lance.namespace.DirectoryNamespace(root=str(root)), ["t"])
            assert result.rows == args.rows

        spark_times = [timed(lambda i=i: staged_spark(i)) for i in range(args.repeat + 1)]
        results.append((f"`stage_dataframe`, Spark {args.master}, first job", spark_times[0]))
        results.append((f"`stage_dataframe`, Spark {args.master}, best warm job", min(spark_times[1:])))
        spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    lines = [
        "## Spark staging throughput",
        "",
        f"{args.rows:,} rows x 4 columns (long, string, double, int) staged as one new table version; "
        f"best of {args.repeat}. Machine: {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"pylance {lance.__version__}. Spark session start-up ({session_seconds:.1f} s) not included.",
        "",
        "| path | seconds | rows/s |",
        "|---|---:|---:|",
        *[f"| {name} | {seconds:.2f} | {args.rows / seconds:,.0f} |" for name, seconds in results],
        "",
        "Spark pays a fixed cost per job (scheduling, Arrow conversion, Python workers), so on one small "
        "machine a single process is faster (numbers vary with machine load); the Spark path is for data "
        "that does not fit one process or already lives in Spark, and it scales with executors.",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
