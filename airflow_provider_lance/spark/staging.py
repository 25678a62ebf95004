"""Stage Spark DataFrames into tables of a Lance namespace without committing them.

The executors write the Lance data files in parallel (``mapInArrow`` + ``lance.fragment.write_fragments``) and
send back only the fragments' metadata as small JSON strings; no row reaches the driver. The driver then stages
one new version per table with :mod:`airflow_provider_lance.staging` and returns the
``CreateTableVersionEntry`` to commit later with ``batch_create_table_versions``. Until then readers see the
old versions.

Spark settings: the staging jobs run with ``spark.sql.execution.arrow.maxBytesPerBatch=2147483647`` and
``spark.sql.execution.arrow.maxRecordsPerBatch`` from :func:`arrow_batch_rows` (see :func:`arrow_batches`) unless
the session sets those keys itself; that halves the cost of handing the rows to the Python workers and cuts the
workers' cost per batch. The workers run :func:`airflow_provider_lance.spark.writer.write_partition`, which imports
only pyarrow and pylance and freezes the worker's long-lived objects (``gc.freeze``) so that PySpark's full
garbage collection after every task does not walk them again.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import lance_namespace as ln
import pyarrow as pa

from airflow_provider_lance.spark.writer import RESULT_SCHEMA, write_partition
from airflow_provider_lance.staging import (
    StageMode,
    StagingNamespace,
    StagingTarget,
    fragment_from_json,
    prepare_target,
    stage_fragments,
    table_id_key,
)
from airflow_provider_lance.utils.identifiers import parse_table_identifier

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

#: Spark's byte cap on the Arrow batches sent to Python workers, and the value (``Int.MaxValue``, the largest
#: accepted) at which Spark stops measuring the batch after every row.
ARROW_MAX_BYTES_PER_BATCH = "spark.sql.execution.arrow.maxBytesPerBatch"
ARROW_UNCAPPED_BYTES = str(2**31 - 1)
#: Spark's row cap on those batches (10,000 by default).
ARROW_MAX_RECORDS_PER_BATCH = "spark.sql.execution.arrow.maxRecordsPerBatch"
#: The rows of one staging batch: about ``ARROW_BATCH_BYTES`` by the schema's estimate (:func:`arrow_batch_rows`),
#: never fewer than Spark's default nor more than ``ARROW_BATCH_MAX_ROWS``.
ARROW_BATCH_BYTES = 4 * 1024 * 1024
ARROW_BATCH_MIN_ROWS = 10_000
ARROW_BATCH_MAX_ROWS = 65_536
#: Bytes per value of the flat Spark types (``DataType.typeName()``); a string counts Spark's estimate of its size
#: (``StringType.defaultSize``, 20 bytes). Other types (binary, arrays, maps, variants) have no useful estimate.
_VALUE_BYTES = {
    "boolean": 1,
    "byte": 1,
    "short": 2,
    "integer": 4,
    "float": 4,
    "date": 4,
    "long": 8,
    "double": 8,
    "timestamp": 8,
    "timestamp_ntz": 8,
    "string": 20,
}

_conf_lock = threading.Lock()
#: id(session) -> [the number of staging calls running under :func:`arrow_batches`, the keys they set].
_conf_users: dict[int, list[Any]] = {}


@dataclass
class StagedDataFrame:
    """What staging one DataFrame produced.

    :param entry: the staged version, to commit with ``batch_create_table_versions``.
    :param fragments: the fragments' metadata as JSON strings, as the executors sent them.
    :param writer_pids: the ids of the processes that wrote the data files (Spark Python workers).
    :param rows: the number of rows written.
    """

    entry: ln.CreateTableVersionEntry
    fragments: list[str] = field(default_factory=list)
    writer_pids: set[int] = field(default_factory=set)
    rows: int = 0


def spark_to_arrow_schema(df: DataFrame) -> pa.Schema:
    """Convert a DataFrame's schema to Arrow (plain, not large, string and binary types).

    :param df: the DataFrame.
    """
    from pyspark.sql.pandas.types import to_arrow_schema

    timezone = df.sparkSession.conf.get("spark.sql.session.timeZone")
    return to_arrow_schema(df.schema, timezone=timezone, prefers_large_types=False)


def _row_bytes(data_type: Any) -> int | None:
    """Estimate the bytes of one value of a Spark type in an Arrow batch; ``None`` when the type has no estimate.

    :param data_type: a ``pyspark.sql.types.DataType``.
    """
    from pyspark.sql.types import DecimalType, StructType

    if isinstance(data_type, StructType):
        total = 0
        for item in data_type.fields:
            size = _row_bytes(item.dataType)
            if size is None:
                return None
            total += size
        return total
    if isinstance(data_type, DecimalType):
        return 8 if data_type.precision <= 18 else 16
    return _VALUE_BYTES.get(data_type.typeName())


def arrow_batch_rows(df: DataFrame) -> int:
    """The rows per Arrow batch the staging asks Spark for: ``ARROW_BATCH_BYTES`` divided by the estimated row
    size, between Spark's default (10,000) and 65,536; Spark's default when a column is binary, an array, a map or
    another type without an estimate.

    Each batch costs the Python worker a fixed amount (PySpark's and Lance's work per batch): at 10,000 rows of
    4 narrow columns that was about 10% of the staging's CPU. Up to 65,536 rows, a batch stays within Spark's own
    default byte cap (``maxBytesPerBatch``, 64 MiB) while rows average up to 1 KiB.

    :param df: the DataFrame.
    """
    width = _row_bytes(df.schema)
    if not width:
        return ARROW_BATCH_MIN_ROWS
    return max(ARROW_BATCH_MIN_ROWS, min(ARROW_BATCH_MAX_ROWS, ARROW_BATCH_BYTES // width))


@contextlib.contextmanager
def arrow_batches(spark: SparkSession, rows: int) -> Iterator[list[str]]:
    """Run the block's ``mapInArrow`` jobs with the staging's Arrow batches; restore the session after.

    Spark 4 cuts the Arrow batches it sends to Python workers at ``spark.sql.execution.arrow.maxRecordsPerBatch``
    rows (10,000 by default) or ``spark.sql.execution.arrow.maxBytesPerBatch`` bytes (64 MiB by default). To
    apply the byte cap, the JVM measures every column's buffers after every row it converts
    (``ArrowWriter.sizeInBytes``), which costs more than the rest of the transfer. With the cap at
    ``2147483647`` (``Int.MaxValue``) Spark skips the check: a ``mapInArrow`` job that only reads the rows takes
    about 0.5x instead of 1.2-1.6x the time of ``df.write.parquet`` of the same cached DataFrames (``local[2]``).
    The batches stay bounded by the row count, ``rows`` (:func:`arrow_batch_rows`).

    Each key is set for the block and unset afterwards, unless the session already sets it (its value is kept:
    set ``spark.sql.execution.arrow.maxBytesPerBatch=2147483647`` in the session or ``spark-submit --conf`` to
    get the fast path for every Arrow Python UDF; set ``maxRecordsPerBatch`` smaller when that many rows can
    exceed the memory of a Python worker). Concurrent calls on one session share the settings of the first one;
    the last one out unsets them.

    :param spark: the session that runs the jobs.
    :param rows: the rows per batch.
    :return: (as the context value) the keys set by this call or a concurrent one.
    """
    key = id(spark)
    settings = {ARROW_MAX_BYTES_PER_BATCH: ARROW_UNCAPPED_BYTES, ARROW_MAX_RECORDS_PER_BATCH: str(rows)}
    with _conf_lock:
        users = _conf_users.get(key)
        if users:
            users[0] += 1
        else:
            owned = [name for name in settings if spark.conf.get(name, None) is None]
            for name in owned:
                spark.conf.set(name, settings[name])
            users = _conf_users[key] = [1, owned]
    try:
        yield users[1]
    finally:
        with _conf_lock:
            users[0] -= 1
            if not users[0]:
                del _conf_users[key]
                for name in users[1]:
                    spark.conf.unset(name)


def _target_schema(df: DataFrame, target: StagingTarget, mode: StageMode) -> pa.Schema:
    """Return the schema the fragments are written with: the table's for an append, the DataFrame's otherwise.

    :param df: the DataFrame.
    :param target: the table.
    :param mode: the staging mode.
    """
    frame_schema = spark_to_arrow_schema(df)
    if mode == "overwrite" or not target.exists:
        return frame_schema
    table_schema = target.schema()
    missing = [n for n in table_schema.names if n not in frame_schema.names]
    extra = [n for n in frame_schema.names if n not in table_schema.names]
    if missing or extra:
        raise ln.InvalidInputError(
            f"Cannot append to table '{table_id_key(target.table_id)}': DataFrame columns differ from the "
            f"table's (missing {missing}, unexpected {extra})"
        )
    return table_schema


def stage_dataframe(
    df: DataFrame,
    namespace: ln.LanceNamespace,
    table_id: str | Sequence[str],
    *,
    mode: StageMode = "append",
    storage_options: Mapping[str, str] | None = None,
    staging: StagingNamespace | None = None,
    create_parents: bool = True,
    max_rows_per_file: int = 1024 * 1024,
) -> StagedDataFrame:
    """Write a DataFrame into a table from the executors and stage the new version; commit nothing.

    A table that does not exist is declared (and missing parent namespaces created with ``create_parents``);
    its version 1 is staged. ``append`` to an existing table keeps the table's schema (columns matched by
    name, values cast); ``overwrite`` replaces the rows and takes the DataFrame's schema.

    Spark settings: the job runs with ``spark.sql.execution.arrow.maxBytesPerBatch=2147483647`` and
    ``spark.sql.execution.arrow.maxRecordsPerBatch`` at 10,000 to 65,536 rows (about 4 MiB by the schema's
    estimate, :func:`arrow_batch_rows`) unless the session sets those keys (then their values are kept). With any
    smaller byte cap Spark measures the Arrow batch after every row it hands to the Python workers, which doubles
    the cost of the transfer (:func:`arrow_batches`). Setting it in the session (``spark-submit --conf``) gives
    other Arrow Python UDFs the same speed-up; set ``maxRecordsPerBatch`` smaller if that many rows can outgrow a
    Python worker's memory (long strings: the estimate counts 20 bytes a string). In the Python workers, the
    objects alive when a partition starts are frozen (``gc.freeze``: never walked by the cycle collector again,
    still freed by reference counting), see :func:`airflow_provider_lance.spark.writer.write_partition`.

    :param df: the DataFrame to write.
    :param namespace: the namespace that will commit the version.
    :param table_id: the table, as ``"ns.table"`` or a list of parts.
    :param mode: ``append`` or ``overwrite``.
    :param storage_options: storage options for the table's files (S3 credentials, endpoint...).
    :param staging: the staging wrapper to record into (to stage several tables together).
    :param create_parents: create missing parent namespaces of a new table.
    :param max_rows_per_file: the largest number of rows in one data file.
    :return: the staged entry and what the executors reported.
    """
    staging = staging if staging is not None else StagingNamespace(namespace)
    pending = _prepare_write(
        df,
        staging,
        table_id,
        mode=mode,
        storage_options=storage_options,
        create_parents=create_parents,
        max_rows_per_file=max_rows_per_file,
    )
    return pending.stage(staging, _run_concurrently([pending])[0])


@dataclass
class _PendingWrite:
    """One table's write, prepared on the driver: the target, the schema and the Spark job to run."""

    df: DataFrame
    target: StagingTarget
    schema: pa.Schema
    mode: StageMode
    writer: functools.partial[Iterator[pa.RecordBatch]]

    def run(self) -> list[tuple[str, int]]:
        """Run the Spark job that writes the data files; returns ``(fragment JSON, writer pid)`` per fragment."""
        return [
            (row["fragment"], int(row["writer_pid"]))
            for row in self.df.mapInArrow(self.writer, RESULT_SCHEMA).collect()
        ]

    def stage(self, staging: StagingNamespace, reported: list[tuple[str, int]], audit: bool = False) -> StagedDataFrame:
        """Stage the new version made of the written fragments (on the driver; commits nothing). ``audit``: keep
        the staged content readable before the commit (``staging.staged_dataset``)."""
        fragments = [text for text, _ in reported]
        metadata = [fragment_from_json(text) for text in fragments]
        entry = stage_fragments(
            staging.inner, self.target, metadata, mode=self.mode, schema=self.schema, staging=staging, audit=audit
        )
        return StagedDataFrame(
            entry=entry,
            fragments=fragments,
            writer_pids={pid for _, pid in reported},
            rows=sum(m.physical_rows for m in metadata),
        )


def _prepare_write(
    df: DataFrame,
    staging: StagingNamespace,
    table_id: str | Sequence[str],
    *,
    mode: StageMode,
    storage_options: Mapping[str, str] | None,
    create_parents: bool,
    max_rows_per_file: int,
) -> _PendingWrite:
    """Check the request, declare the table if needed and build the executors' writer (driver side, no job).

    :param df: the DataFrame to write.
    :param staging: the staging wrapper the version will be recorded into.
    :param table_id: the table, as ``"ns.table"`` or a list of parts.
    :param mode: ``append`` or ``overwrite``.
    :param storage_options: storage options for the table's files.
    :param create_parents: create missing parent namespaces of a new table.
    :param max_rows_per_file: the largest number of rows in one data file.
    """
    if mode not in ("append", "overwrite"):
        raise ln.InvalidInputError(f"Unknown staging mode {mode!r}: expected 'append' or 'overwrite'")
    table_id = parse_table_identifier(table_id)
    staging.ensure_not_staged(table_id)
    target = prepare_target(
        staging.inner,
        table_id,
        create=True,
        create_parents=create_parents,
        storage_options=storage_options,
    )
    schema = _target_schema(df, target, mode)
    write_mode = "append" if mode == "append" and target.exists else "overwrite"
    writer = functools.partial(
        write_partition,
        location=target.location,
        schema_ipc=schema.serialize().to_pybytes(),
        write_mode=write_mode,
        storage_options=dict(target.storage_options),
        max_rows_per_file=max_rows_per_file,
        **_refresh(staging.inner, target),
    )
    log.info("Writing %s (%s on version %s)", table_id_key(table_id), mode, target.read_version)
    return _PendingWrite(df=df, target=target, schema=schema, mode=mode, writer=writer)


def _refresh(namespace: ln.LanceNamespace, target: StagingTarget) -> dict[str, Any]:
    """How executors renew vended credentials (they expire: ``expires_at_millis``): from the REST server that
    vended them, with the client's properties. Other credentials (the job's own, or an in-process engine's)
    do not expire and need nothing."""
    client_properties = getattr(namespace, "client_properties", None)  # our REST client
    if client_properties is None or not target.credentials.expires:
        return {}
    return {"refresh_from": client_properties(), "table_id": list(target.table_id)}


def stage_dataframes(
    namespace: ln.LanceNamespace,
    tables: Mapping[str, DataFrame] | Sequence[tuple[str | Sequence[str], DataFrame]],
    *,
    mode: StageMode = "append",
    storage_options: Mapping[str, str] | None = None,
    create_parents: bool = True,
    max_rows_per_file: int = 1024 * 1024,
    audit: bool = False,
) -> list[StagedDataFrame]:
    """Stage one new version for each of several tables; commit nothing.

    The tables are written concurrently (one Spark job per table, submitted together), then staged one after the
    other on the driver. If any write fails the exception propagates and no entry is returned, so nothing can
    be committed: every table stays at its old version (new tables stay declared with no version). Data files
    already written are left for cleanup.

    Spark settings: as for :func:`stage_dataframe` (``spark.sql.execution.arrow.maxBytesPerBatch`` and
    ``maxRecordsPerBatch``; the tables of one session share the smallest of their :func:`arrow_batch_rows`).

    :param namespace: the namespace that will commit the versions.
    :param tables: ``{"ns.table": df}`` or ``[(table_id, df), ...]``.
    :param mode: ``append`` or ``overwrite`` for every table.
    :param storage_options: storage options for the tables' files.
    :param create_parents: create missing parent namespaces of new tables.
    :param max_rows_per_file: the largest number of rows in one data file.
    :param audit: keep each staged content readable before the commit (write-audit-publish; tables with a
        version only).
    :return: one result per table, in order.
    """
    pairs = list(tables.items()) if isinstance(tables, Mapping) else list(tables)
    keys = [table_id_key(parse_table_identifier(t)) for t, _ in pairs]
    duplicates = sorted({k for k in keys if keys.count(k) > 1})
    if duplicates:
        raise ln.InvalidInputError(f"Tables listed more than once: {duplicates}")
    staging = StagingNamespace(namespace)
    pending = [
        _prepare_write(
            df,
            staging,
            table,
            mode=mode,
            storage_options=storage_options,
            create_parents=create_parents,
            max_rows_per_file=max_rows_per_file,
        )
        for table, df in pairs
    ]
    results = zip(pending, _run_concurrently(pending), strict=True)
    return [write.stage(staging, reported, audit=audit) for write, reported in results]


def _run_concurrently(pending: Sequence[_PendingWrite]) -> list[list[tuple[str, int]]]:
    """Run the tables' Spark jobs at the same time (one driver thread each, so the scheduler keeps every core
    busy: no idle slots at the end of one table's job or while the driver stages); results in order.

    The jobs run under :func:`arrow_batches`, with the fewest rows any of a session's tables asks for. The
    threads inherit the caller's Spark local properties (job group, scheduler pool, description). If a job
    fails, the exception propagates once every job has finished.

    :param pending: the prepared writes.
    """
    with contextlib.ExitStack() as stack:
        sessions: dict[int, SparkSession] = {}
        rows: dict[int, int] = {}
        for write in pending:
            spark = write.df.sparkSession
            sessions[id(spark)] = spark
            rows[id(spark)] = min(rows.get(id(spark), ARROW_BATCH_MAX_ROWS), arrow_batch_rows(write.df))
        for key, spark in sessions.items():
            stack.enter_context(arrow_batches(spark, rows[key]))
        if len(pending) < 2:
            return [write.run() for write in pending]
        from concurrent.futures import ThreadPoolExecutor

        from pyspark.util import inheritable_thread_target

        with ThreadPoolExecutor(max_workers=len(pending), thread_name_prefix="lance-stage") as pool:
            futures = [pool.submit(inheritable_thread_target(write.df.sparkSession)(write.run)) for write in pending]
            return [future.result() for future in futures]
