"""The Spark section (results keys ``spark``, 2 tables x 2M rows, and ``spark_large``, 4 tables x 10M rows):
``benchmarks/spark_staging.py`` (owned by the Spark work) measures stage + commit against Spark's Parquet writer;
this module runs it at both sizes and renders their goals and their section. ``BENCH_ONLY=spark`` selects both.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.common import QUICK, Job, Target
from benchmarks.spark_staging import GOAL_PARQUET as GOAL

WHY = (
    "Ours costs the CPU of its floor and Lance's encoding, nothing more: Spark's per-row work in the JVM (rows to"
    " Arrow batches, the transfer floor rows' CPU) plus Lance's encoder in the Python workers; the driver's"
    " planning, staging and one batch commit are tens of milliseconds. Since the rows leave the JVM through"
    " Dataset.toArrowBatchRdd (no per-row struct as in mapInArrow, whose route the ours_map_in_arrow row keeps),"
    " the JVM's share is ~20% smaller; Spark's Parquet writer still gets cheaper per row on larger tasks and"
    " files, ours less, and on a quiet machine the wall ratio follows the CPU ratio (the CPU columns show the"
    " split).",
    "Take the rows out of the JVM without any per-row Arrow conversion (a JVM-side writer: lance-spark), or"
    " encode cheaper (Lance file format 2.0: a change of what we store).",
)

INTRO = (
    "Measured by `benchmarks/spark_staging.py`: N tables of R rows (id long, name string, score double, bucket int),"
    " built by Spark and cached, written by Spark's Parquet writer (`df.write.parquet`, one table after another) and"
    " by ours (`stage_dataframes` of every table + one `batch_create_table_versions`), rounds interleaved. Ratio ="
    " ours ÷ Parquet in wall time: **lower is better, goal ≤ 0.8x**. Re-run both sizes with"
    " `BENCH_ONLY=spark BENCH_MERGE=1 make bench` (results keys `spark`, 2 x 2M rows, all paths, quiet and"
    " busy-core rounds; `spark_large`, 4 x 10M rows, Parquet / ours / ours through mapInArrow / the floor of ours'"
    " route, 5 rounds each); one size alone with `python -m benchmarks.spark_staging --tables 4 --rows 10000000"
    " --repeat 5 --no-load --only ours_map_in_arrow,transfer_rdd`. The CPU columns split each path's CPU by"
    " process: the JVM (Spark's tasks: rows to Arrow, or to Parquet), the Python workers (Arrow from the JVM,"
    " Lance's encoding and writes) and the driver (planning, staging, the commit)."
)

#: (results key, tables, rows per table, timed rounds, paths besides parquet and ours); the small size is the
#: issue's first measure, the large one its second (fewer paths: a round takes minutes).
SIZES: list[tuple[str, int, int, int, list[str] | None]] = [
    ("spark", 2, 2_000_000, 5, None),
    ("spark_large", 4, 10_000_000, 5, ["ours_map_in_arrow", "transfer_rdd"]),
]


def measure(tables: int, rows: int, repeat: int, only: list[str] | None) -> Callable[[], dict[str, Any]]:
    """A measure of one size with ``benchmarks/spark_staging.py``; a failure is recorded, not raised (it must not
    break the other sections).

    :param tables: the number of tables.
    :param rows: rows per table.
    :param repeat: timed rounds.
    :param only: the paths besides parquet and ours (all when ``None``).
    """

    def run() -> dict[str, Any]:
        try:
            from benchmarks import spark_staging

            scale = (tables, 200_000, 1) if QUICK else (tables, rows, repeat)
            numbers = spark_staging.measure(*scale, "local[2]", loaded=only is None, only=only)
            return {"status": "measured", "result": spark_staging.render(numbers), "numbers": numbers}
        except Exception as error:
            return {"status": "failed", "note": f"{type(error).__name__}: {error}"}

    return run


def conditions(numbers: dict[str, Any]) -> list[tuple[str, float]]:
    """(condition, best ours ÷ best Parquet) of each measured condition: the quiet machine (``seconds``) and
    another job busy on one core (``seconds_loaded``). Issue 42's row is the median of :func:`round_ratios`.

    :param numbers: what ``spark_staging.measure`` returned.
    """
    measured = (("quiet", numbers.get("seconds")), ("another job on the second core", numbers.get("seconds_loaded")))
    return [(name, min(seconds["ours"]) / min(seconds["parquet"])) for name, seconds in measured if seconds]


def round_ratios(numbers: dict[str, Any]) -> list[float]:
    """Ours ÷ Parquet of each quiet round (the two paths take turns within a round; issue 42's row is their
    median).

    :param numbers: what ``spark_staging.measure`` returned.
    """
    seconds = numbers["seconds"]
    return [ours / parquet for ours, parquet in zip(seconds["ours"], seconds["parquet"], strict=True)]


def jobs(work: Path) -> list[Job]:
    """(results key, measure) of each size.

    :param work: the run's directory for catalogs.
    """
    return [(key, measure(tables, rows, repeat, only)) for key, tables, rows, repeat, only in SIZES]


def targets(results: dict[str, Any]) -> list[Target]:
    """Stage + commit ≤ 0.8x Spark's Parquet writer (best of the rounds) at each size, quiet and with a busy
    core."""
    found = []
    for key, *_ in SIZES:
        numbers = (results.get(key) or {}).get("numbers")
        if not numbers:
            continue
        what = f"Spark stage + commit of {numbers['tables']} x {numbers['rows']:,} rows / Spark Parquet writer"
        found += [
            Target(f"{what} ({name}, best round ÷ best round)", f"≤ {GOAL:.1f}x", f"{value:.2f}x", value <= GOAL, WHY)
            for name, value in conditions(numbers)
        ]
    return found


def section(results: dict[str, Any]) -> list[str]:
    """The Spark benchmark's own sections, one per size (under our title), or what kept each from running."""
    lines = ["## Spark staging throughput", "", INTRO, ""]
    for key, tables, rows, *_ in SIZES:
        spark = results.get(key) or {"status": "placeholder", "note": "measured by benchmarks/spark_staging.py"}
        if spark.get("status") == "measured":
            body = spark["result"].splitlines()
            if body and body[0].startswith("## "):  # an older run's own section title
                body = [f"### {tables} tables x {rows:,} rows", *body[1:]]
            lines += [*body, ""]
        else:
            lines += [
                f"### {tables} tables x {rows:,} rows",
                "",
                f"Not measured: {spark.get('note')} ({spark.get('status')}).",
                "",
            ]
    return lines
