"""Stage Spark DataFrames into Lance namespace tables (executors write, nothing is committed).

:func:`stage_dataframe` / :func:`stage_dataframes` need ``pyspark``; importing this package does not.
:func:`job_path` is the file to give ``SparkSubmitOperator(application=...)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_provider_lance.spark.staging import StagedDataFrame, stage_dataframe, stage_dataframes

__all__ = ["StagedDataFrame", "job_path", "local_spark_env", "stage_dataframe", "stage_dataframes"]


def local_spark_env() -> dict[str, str]:
    """Return the ``env_vars`` a local Spark (``local[N]``) needs: this Python for the workers, a loopback address.

    ``PYSPARK_PYTHON`` and ``SPARK_LOCAL_IP`` from the environment win.
    """
    import os
    import sys

    return {
        "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable),
        "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
    }


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
