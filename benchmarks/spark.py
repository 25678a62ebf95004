"""The Spark section (results key ``spark``): ``benchmarks/spark_staging.py`` (owned by the Spark work) measures
stage + commit against Spark's Parquet writer; this module runs it and renders its goal and its section."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.common import QUICK, Job, Target
from benchmarks.spark_staging import GOAL_PARQUET as GOAL

WHY = (
    "What is left is Spark's own per-row work for `mapInArrow` (~0.7 s of JVM CPU per round turning rows into"
    " Arrow, as much as the Parquet path spends) and Lance's encoding in the Python workers (0.3-0.4 s, mostly"
    " compressing the string column); the workers no longer import the engine nor pay pyspark's full"
    " `gc.collect()` after every task over it (`spark/writer.py`, `gc.freeze()` once per worker).",
    "Lance file format 2.0 encodes 3-7x faster at ~3x the size; a JVM-side writer (lance-spark) avoids the transfer.",
)


def run() -> dict[str, Any]:
    """Measure with ``benchmarks/spark_staging.py``; a failure is recorded, not raised (it must not break the
    other sections)."""
    try:
        from benchmarks import spark_staging

        rows, repeat = (200_000, 1) if QUICK else (2_000_000, 3)
        numbers = spark_staging.measure(2, rows, repeat, "local[2]")
        return {"status": "measured", "result": spark_staging.render(numbers), "numbers": numbers}
    except Exception as error:
        return {"status": "failed", "note": f"{type(error).__name__}: {error}"}


def conditions(numbers: dict[str, Any]) -> list[tuple[str, float]]:
    """(condition, best ours ÷ best Parquet) of each measured condition: the quiet machine (``seconds``) and
    another job busy on one core (``seconds_loaded``); the issue's measure is the best of the rounds.

    :param numbers: what ``spark_staging.measure`` returned.
    """
    measured = (("quiet", numbers.get("seconds")), ("another job on the second core", numbers.get("seconds_loaded")))
    return [(name, min(seconds["ours"]) / min(seconds["parquet"])) for name, seconds in measured if seconds]


def jobs(work: Path) -> list[Job]:
    """(results key, measure) of the section.

    :param work: the run's directory for catalogs.
    """
    return [("spark", run)]


def targets(results: dict[str, Any]) -> list[Target]:
    """Stage + commit ≤ 0.8x Spark's Parquet writer (best of the rounds), quiet and with a busy core."""
    numbers = (results.get("spark") or {}).get("numbers")
    if not numbers:
        return []
    what = f"Spark stage + commit of {numbers['tables']} x {numbers['rows']:,} rows / Spark Parquet writer"
    return [
        Target(f"{what}{f' ({name})' if name else ''}", f"≤ {GOAL:.1f}x", f"{value:.2f}x", value <= GOAL, WHY)
        for name, value in conditions(numbers)
    ]


def section(results: dict[str, Any]) -> list[str]:
    """The Spark benchmark's own section (its title replaced by ours), or what kept it from running."""
    spark = results.get("spark") or {"status": "placeholder", "note": "measured by benchmarks/spark_staging.py"}
    lines = ["## Spark staging throughput", ""]
    if spark.get("status") == "measured":
        body = spark["result"].splitlines()
        if body and body[0].startswith("## "):  # the module's own section title
            body = body[1:]
        lines += ["Measured by `benchmarks/spark_staging.py` (its own section, included as it is):", *body]
    else:
        lines.append(f"Not measured in this run: {spark.get('note')} ({spark.get('status')}).")
    return [*lines, ""]
