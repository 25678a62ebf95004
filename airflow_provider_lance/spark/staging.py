"""Stage Spark DataFrames into tables of a Lance namespace without committing them.

The executors write the Lance data files in parallel (``lance.fragment.write_fragments`` in the Python workers)
and send back only the fragments' metadata as small JSON strings; no row reaches the driver. The driver then
stages one new version per table with :mod:`airflow_provider_lance.staging` and returns the
``CreateTableVersionEntry`` to commit later with ``batch_create_table_versions``. Until then readers see the
old versions.

How the rows reach the Python workers (``transfer``, :data:`TRANSFERS`): on a classic Spark session, as an RDD
of Arrow record batches that Spark's JVM builds from the rows (``Dataset.toArrowBatchRdd``, reached through
py4j: :func:`arrow_batch_rdd`); on Spark Connect, or if that JVM method is not there, with ``mapInArrow``, which
wraps every row in a struct on its way to Arrow (quiet, 4 x 10M rows: ~5 % more CPU and wall for the staging;
see ``benchmarks/notes.py``). What is written is the same either way.

Spark settings: the staging jobs run with ``spark.sql.execution.arrow.maxBytesPerBatch=2147483647`` and
``spark.sql.execution.arrow.maxRecordsPerBatch`` from :func:`arrow_batch_rows` (see :func:`arrow_batches`) unless
the session sets those keys itself; that halves the cost of handing the rows to the Python workers and cuts the
workers' cost per batch. The workers run :mod:`airflow_provider_lance.spark.writer`, which imports only pyarrow
and pylance and freezes the worker's long-lived objects (``gc.freeze``) so that PySpark's full garbage
collection after every task does not walk them again.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import lance_namespace as ln
import pyarrow as pa

from airflow_provider_lance.spark.writer import RESULT_SCHEMA, ArrowMessages, write_messages, write_partition
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
    from pyspark.rdd import RDD
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

#: How the rows reach the Python workers: ``arrow_batch_rdd`` (Spark's ``Dataset.toArrowBatchRdd``, classic
#: sessions), ``map_in_arrow`` (``DataFrame.mapInArrow``, any session), or ``auto``: the first where available.
Transfer = Literal["auto", "arrow_batch_rdd", "map_in_arrow"]
TRANSFERS: tuple[Transfer, ...] = ("auto", "arrow_batch_rdd", "map_in_arrow")

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
    :param transfer: how the rows reached the writers: ``arrow_batch_rdd`` or ``map_in_arrow``.
    """

    entry: ln.CreateTableVersionEntry
    fragments: list[str] = field(default_factory=list)
    writer_pids: set[int] = field(default_factory=set)
    rows: int = 0
    transfer: str = "map_in_arrow"


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
    transfer: Transfer = "auto",
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
    still freed by reference counting), see :func:`airflow_provider_lance.spark.writer.write_fragments`.

    The rows reach the Python workers as Arrow batches that the JVM builds without ``mapInArrow``'s per-row struct
    (:func:`arrow_batch_rdd`) on a classic session, through ``mapInArrow`` on Spark Connect (``transfer``).

    :param df: the DataFrame to write.
    :param namespace: the namespace that will commit the version.
    :param table_id: the table, as ``"ns.table"`` or a list of parts.
    :param mode: ``append`` or ``overwrite``.
    :param storage_options: storage options for the table's files (S3 credentials, endpoint...).
    :param staging: the staging wrapper to record into (to stage several tables together).
    :param create_parents: create missing parent namespaces of a new table.
    :param max_rows_per_file: the largest number of rows in one data file.
    :param transfer: how the rows go to the writers: ``auto`` (``arrow_batch_rdd`` where the session offers it,
        ``map_in_arrow`` otherwise), ``arrow_batch_rdd`` (an error where it is not offered) or ``map_in_arrow``
        (public PySpark API only).
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
        transfer=transfer,
    )
    return pending.stage(staging, _run_concurrently([pending])[0])


@dataclass
class _PendingWrite:
    """One table's write, prepared on the driver: the target, the schema and what the writers are given."""

    df: DataFrame
    target: StagingTarget
    schema: pa.Schema
    mode: StageMode
    #: The keyword arguments of :func:`airflow_provider_lance.spark.writer.write_fragments` besides the batches.
    options: dict[str, Any]
    transfer: Transfer

    def run(self) -> tuple[str, list[tuple[str, int]]]:
        """Run the Spark job that writes the data files (under :func:`arrow_batches`); returns the transfer used
        and ``(fragment JSON, writer pid)`` per fragment."""
        transfer = self.transfer
        rows = int(self.df.sparkSession.conf.get(ARROW_MAX_RECORDS_PER_BATCH))
        route = arrow_batch_rdd(self.df, rows) if transfer != "map_in_arrow" else None
        if route is not None:
            rdd, frame_schema_ipc = route
            writer = functools.partial(write_messages, frame_schema_ipc=frame_schema_ipc, **self.options)
            return "arrow_batch_rdd", rdd.mapPartitions(writer).collect()
        if transfer == "arrow_batch_rdd":
            raise ln.InvalidInputError(
                "transfer='arrow_batch_rdd' needs a classic Spark session whose JVM has Dataset.toArrowBatchRdd"
            )
        frame = self.df.mapInArrow(functools.partial(write_partition, **self.options), RESULT_SCHEMA)
        return "map_in_arrow", [(row["fragment"], int(row["writer_pid"])) for row in frame.collect()]

    def stage(
        self, staging: StagingNamespace, written: tuple[str, list[tuple[str, int]]], audit: bool = False
    ) -> StagedDataFrame:
        """Stage the new version made of the written fragments (on the driver; commits nothing). ``written``: what
        :meth:`run` returned. ``audit``: keep the staged content readable before the commit
        (``staging.staged_dataset``)."""
        transfer, reported = written
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
            transfer=transfer,
        )


def arrow_batch_rdd(df: DataFrame, rows: int) -> tuple[RDD[pa.Buffer], bytes] | None:
    """Return the DataFrame's rows as an RDD of Arrow record batch messages built by Spark's JVM, and the Arrow
    schema they are written with (IPC-serialised); ``None`` where the session offers no such RDD.

    ``Dataset.toArrowBatchRdd`` (the JVM method behind Spark's own Arrow collection, reached through py4j) turns
    each partition's rows into Arrow IPC record batch messages of at most ``rows`` rows, without the struct that
    ``mapInArrow`` wraps every row in. The messages carry no schema: it comes from the conversion Spark runs for
    them (``ArrowUtils.toArrowSchema``, same time zone, same flags), so the workers read the buffers with the
    types the JVM wrote. Strings and binaries keep 32-bit offsets whatever
    ``spark.sql.execution.arrow.useLargeVarTypes`` says: the types the tables get.

    ``None`` for a Spark Connect DataFrame (it has no JVM object) or a JVM without those methods (another Spark
    version). An error of the query itself propagates: the JVM runs a query's shuffle stages while it builds
    the RDD.

    :param df: the DataFrame.
    :param rows: the most rows per batch (0 or less: one batch per partition).
    """
    jdf = getattr(df, "_jdf", None)
    if jdf is None:
        return None
    from py4j.protocol import Py4JError, Py4JJavaError
    from pyspark.rdd import RDD

    spark = df.sparkSession
    jvm = spark._jvm
    timezone = spark.conf.get("spark.sql.session.timeZone")
    try:
        schema = jvm.org.apache.spark.sql.util.ArrowUtils.toArrowSchema(jdf.schema(), timezone, True, False)
        out = jvm.java.io.ByteArrayOutputStream()
        channel = jvm.org.apache.arrow.vector.ipc.WriteChannel(jvm.java.nio.channels.Channels.newChannel(out))
        jvm.org.apache.arrow.vector.ipc.message.MessageSerializer.serialize(channel, schema)
        batches = jdf.toArrowBatchRdd(rows, timezone, True, False)
    except Py4JJavaError:
        raise
    except Py4JError as error:
        log.warning("Spark's Dataset.toArrowBatchRdd is not reachable (%s): the rows go through mapInArrow", error)
        return None
    return RDD(batches.toJavaRDD(), spark.sparkContext, ArrowMessages()), bytes(out.toByteArray())


def _prepare_write(
    df: DataFrame,
    staging: StagingNamespace,
    table_id: str | Sequence[str],
    *,
    mode: StageMode,
    storage_options: Mapping[str, str] | None,
    create_parents: bool,
    max_rows_per_file: int,
    transfer: Transfer,
) -> _PendingWrite:
    """Check the request, declare the table if needed and build the executors' writer (driver side, no job).

    :param df: the DataFrame to write.
    :param staging: the staging wrapper the version will be recorded into.
    :param table_id: the table, as ``"ns.table"`` or a list of parts.
    :param mode: ``append`` or ``overwrite``.
    :param storage_options: storage options for the table's files.
    :param create_parents: create missing parent namespaces of a new table.
    :param max_rows_per_file: the largest number of rows in one data file.
    :param transfer: how the rows go to the writers (:data:`TRANSFERS`).
    """
    if mode not in ("append", "overwrite"):
        raise ln.InvalidInputError(f"Unknown staging mode {mode!r}: expected 'append' or 'overwrite'")
    if transfer not in TRANSFERS:
        raise ln.InvalidInputError(f"Unknown transfer {transfer!r}: expected one of {', '.join(TRANSFERS)}")
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
    options = {
        "location": target.location,
        "schema_ipc": schema.serialize().to_pybytes(),
        "write_mode": write_mode,
        "storage_options": dict(target.storage_options),
        "max_rows_per_file": max_rows_per_file,
        **_refresh(staging.inner, target),
    }
    log.info("Writing %s (%s on version %s)", table_id_key(table_id), mode, target.read_version)
    return _PendingWrite(df=df, target=target, schema=schema, mode=mode, options=options, transfer=transfer)


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
    transfer: Transfer = "auto",
) -> list[StagedDataFrame]:
    """Stage one new version for each of several tables; commit nothing.

    The tables are written concurrently (one Spark job per table, submitted together), then staged one after the
    other on the driver. If any write fails the exception propagates and no entry is returned, so nothing can
    be committed: every table stays at its old version (new tables stay declared with no version). Data files
    already written are left for cleanup.

    Spark settings and ``transfer``: as for :func:`stage_dataframe` (``spark.sql.execution.arrow.maxBytesPerBatch``
    and ``maxRecordsPerBatch``; the tables of one session share the smallest of their :func:`arrow_batch_rows`).

    :param namespace: the namespace that will commit the versions.
    :param tables: ``{"ns.table": df}`` or ``[(table_id, df), ...]``.
    :param mode: ``append`` or ``overwrite`` for every table.
    :param storage_options: storage options for the tables' files.
    :param create_parents: create missing parent namespaces of new tables.
    :param max_rows_per_file: the largest number of rows in one data file.
    :param audit: keep each staged content readable before the commit (write-audit-publish; tables with a
        version only).
    :param transfer: how the rows go to the writers (see :func:`stage_dataframe`).
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
            transfer=transfer,
        )
        for table, df in pairs
    ]
    results = zip(pending, _run_concurrently(pending), strict=True)
    return [write.stage(staging, written, audit=audit) for write, written in results]


def _run_concurrently(pending: Sequence[_PendingWrite]) -> list[tuple[str, list[tuple[str, int]]]]:
    """Run the tables' Spark jobs at the same time (one driver thread each, so the scheduler keeps every core
    busy: no idle slots at the end of one table's job or while the driver stages); what :meth:`_PendingWrite.run`
    returned, in order.

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
