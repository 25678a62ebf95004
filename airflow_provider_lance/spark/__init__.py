"""Stage Spark DataFrames into Lance namespace tables (executors write, nothing is committed).

:func:`stage_dataframe` / :func:`stage_dataframes` need ``pyspark``; importing this package does not.
:func:`job_path` is the file to give ``SparkSubmitOperator(application=...)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_provider_lance.spark.staging import StagedDataFrame, stage_dataframe, stage_dataframes

__all__ = ["StagedDataFrame", "job_path", "stage_dataframe", "stage_dataframes"]


def job_path() -> str:
    """Return the path of the installed ``spark-submit`` job (``airflow_provider_lance/spark/job.py``)."""
    return str(Path(__file__).with_name("job.py").resolve())


def __getattr__(name: str) -> Any:
    """Import the pyspark-dependent names lazily.

    :param name: the attribute asked for.
    """
    if name in ("StagedDataFrame", "stage_dataframe", "stage_dataframes"):
        from airflow_provider_lance.spark import staging

        return getattr(staging, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
