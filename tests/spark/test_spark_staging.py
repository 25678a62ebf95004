"""Spark staging on local[2]: executors write, the driver stages, nothing is visible before the commit."""

from __future__ import annotations

import os
from collections.abc import Iterator

import lance
import lance_namespace as ln
import pyarrow as pa
import pytest

from airflow_provider_lance.spark import stage_dataframe, stage_dataframes
from airflow_provider_lance.staging import latest_version

pytestmark = pytest.mark.spark


def demo(spark, n: int, start: int = 0):
    from pyspark.sql import functions as F

    return spark.range(start, start + n, numPartitions=2).select(
        F.col("id"), F.concat(F.lit("u"), F.col("id").cast("string")).alias("name")
    )


@pytest.fixture(params=["engine", "rest"])
def staging_namespace(request: pytest.FixtureRequest, namespace: ln.LanceNamespace) -> Iterator[ln.LanceNamespace]:
    """The engine itself, or a client of our REST server over it: the Spark job stages through REST and the
    batch is committed through REST (BatchCreateTableVersions on the server)."""
    if request.param == "engine":
        yield namespace
        return
    from airflow_provider_lance.rest.client import RestNamespace
    from tests.rest.servers import serve_namespace

    with serve_namespace(namespace) as url:
        yield RestNamespace(uri=url)


def test_append_and_overwrite(spark, staging_namespace: ln.LanceNamespace, commit) -> None:
    namespace = staging_namespace
    namespace.create_namespace(ln.CreateNamespaceRequest(id=["prod"]))
    existing = ["prod", "events"]
    lance.write_dataset(
        pa.table({"id": pa.array(range(5), pa.int64()), "name": [f"u{i}" for i in range(5)]}),
        namespace_client=namespace,
        table_id=existing,
        mode="create",
    )
    staged = stage_dataframes(
        namespace, {"prod.events": demo(spark, 1000, 5), "prod.users": demo(spark, 300)}, mode="append"
    )

    # Executors wrote the files; the driver only got fragment metadata strings back.
    for result in staged:
        assert result.writer_pids and os.getpid() not in result.writer_pids
        assert 1 <= len(result.fragments) <= 2
        assert all(isinstance(f, str) and '"physical_rows"' in f for f in result.fragments)
    assert [r.rows for r in staged] == [1000, 300]
    assert [r.entry.version for r in staged] == [2, 1]

    # Nothing visible yet.
    location = namespace.describe_table(ln.DescribeTableRequest(id=existing)).location
    assert lance.dataset(location).version == 1
    assert lance.dataset(location).count_rows() == 5
    assert latest_version(namespace, existing) == 1
    assert latest_version(namespace, ["prod", "users"]) == 0

    commit(namespace, [r.entry for r in staged])
    events = lance.dataset(namespace_client=namespace, table_id=existing)
    assert events.version == 2
    assert sorted(events.to_table()["id"].to_pylist()) == list(range(1005))
    users = lance.dataset(namespace_client=namespace, table_id=["prod", "users"]).to_table()
    assert sorted(users["name"].to_pylist()) == sorted(f"u{i}" for i in range(300))

    # Overwrite replaces rows and takes the DataFrame's schema.
    frame = spark.createDataFrame([(1, "a"), (2, "b")], "k long, label string")
    result = stage_dataframe(frame, namespace, "prod.events", mode="overwrite")
    assert result.entry.version == 3
    assert lance.dataset(location).count_rows() == 1005
    commit(namespace, [result.entry])
    table = lance.dataset(location).to_table().sort_by("k")
    assert table.to_pydict() == {"k": [1, 2], "label": ["a", "b"]}


def test_failure_midway_commits_nothing(spark, namespace: ln.LanceNamespace) -> None:
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType

    for name in ("a", "b"):
        lance.write_dataset(
            pa.table({"id": pa.array([0], pa.int64()), "name": ["x"]}),
            namespace_client=namespace,
            table_id=[name],
            mode="create",
        )

    @F.udf(returnType=LongType())
    def explode_at_500(value: int) -> int:
        if value == 500:
            raise RuntimeError("boom at row 500")
        return value

    broken = demo(spark, 1000).withColumn("id", explode_at_500("id"))
    tables = [("a", demo(spark, 100)), ("b", demo(spark, 100)), ("c", broken)]
    with pytest.raises(Exception, match="boom at row 500"):
        stage_dataframes(namespace, tables, mode="append")

    for name in ("a", "b"):
        assert latest_version(namespace, [name]) == 1
        location = namespace.describe_table(ln.DescribeTableRequest(id=[name])).location
        assert lance.dataset(location).count_rows() == 1
        assert lance.dataset(namespace_client=namespace, table_id=[name]).version == 1
    assert latest_version(namespace, ["c"]) == 0  # declared, never given a version


def test_audited_staging_is_readable_before_the_commit(spark, namespace: ln.LanceNamespace, commit) -> None:
    """stage_dataframes(audit=True): the staged content of an existing table can be checked before the commit,
    while readers still see the committed version."""
    from airflow_provider_lance.staging import staged_dataset

    namespace.create_namespace(ln.CreateNamespaceRequest(id=["prod"]))
    lance.write_dataset(
        pa.table({"id": pa.array(range(5), pa.int64()), "name": [f"u{i}" for i in range(5)]}),
        namespace_client=namespace,
        table_id=["prod", "events"],
        mode="create",
    )
    (staged,) = stage_dataframes(namespace, {"prod.events": demo(spark, 100, 5)}, mode="append", audit=True)
    assert staged_dataset(namespace, staged.entry).count_rows() == 105
    assert lance.dataset(namespace_client=namespace, table_id=["prod", "events"]).count_rows() == 5
    commit(namespace, [staged.entry])
    assert lance.dataset(namespace_client=namespace, table_id=["prod", "events"]).count_rows() == 105


def test_append_conforms_column_order_and_types(spark, namespace: ln.LanceNamespace, commit) -> None:
    """Batches that differ from the table's schema are reordered and cast; matching ones go through as they are."""
    lance.write_dataset(
        pa.table({"name": ["x"], "id": pa.array([0], pa.int64())}),
        namespace_client=namespace,
        table_id=["t"],
        mode="create",
    )
    frame = spark.createDataFrame([(1, "a"), (2, "b")], "id int, name string")
    commit(namespace, [stage_dataframe(frame, namespace, "t", mode="append").entry])
    table = lance.dataset(namespace_client=namespace, table_id=["t"]).to_table().sort_by("id")
    assert table.schema.names == ["name", "id"] and table.schema.field("id").type == pa.int64()
    assert table.to_pydict() == {"name": ["x", "a", "b"], "id": [0, 1, 2]}


def test_both_transfers_write_the_same_tables(spark, namespace: ln.LanceNamespace, commit) -> None:
    """The rows reach the writers as Arrow batches built by the JVM (Dataset.toArrowBatchRdd, the default on a
    classic session) or through mapInArrow: the same rows and schema land in the tables, several batches per
    partition, every type the tables take, nulls included; appends are conformed on both routes."""
    import datetime
    import decimal

    from airflow_provider_lance.spark.staging import (
        ARROW_MAX_RECORDS_PER_BATCH,
        arrow_batch_rdd,
        spark_to_arrow_schema,
    )

    ddl = (
        "id long, name string, score double, bucket int, flag boolean, day date, at timestamp, amount decimal(10,2),"
        " payload binary, tags array<string>, point struct<x: double, y: double>"
    )
    rows = [
        (
            i,
            None if i % 7 == 0 else f"user-{i}",
            i / 3,
            i % 16,
            i % 2 == 0,
            datetime.date(2026, 1, 1) + datetime.timedelta(days=i % 300),
            datetime.datetime(2026, 1, 1, 12, 30) + datetime.timedelta(seconds=i),
            decimal.Decimal(i) / 4,
            bytes([i % 256]) * (i % 5),
            None if i % 11 == 0 else [f"t{i % 3}", f"u{i % 5}"],
            None if i % 13 == 0 else (float(i), -float(i)),
        )
        for i in range(3000)
    ]
    frame = spark.createDataFrame(rows, ddl).repartition(2)
    # The JVM writes the batches with the schema the tables get: no batch is cast on its way to Lance.
    route = arrow_batch_rdd(frame, 500)
    assert route is not None
    assert pa.ipc.read_schema(pa.py_buffer(route[1])).equals(spark_to_arrow_schema(frame))

    spark.conf.set(ARROW_MAX_RECORDS_PER_BATCH, "500")  # several batches in each partition
    try:
        staged = {
            transfer: stage_dataframe(frame, namespace, f"t_{transfer}", transfer=transfer)
            for transfer in ("auto", "map_in_arrow")
        }
        commit(namespace, [s.entry for s in staged.values()])
        # Appends are conformed to the table: columns in another order, a wider type.
        reordered = frame.select(*reversed(frame.columns)).withColumn("bucket", frame["bucket"].cast("long"))
        appended = [stage_dataframe(reordered, namespace, f"t_{transfer}", transfer=transfer) for transfer in staged]
    finally:
        spark.conf.unset(ARROW_MAX_RECORDS_PER_BATCH)
    assert {t: s.transfer for t, s in staged.items()} == {"auto": "arrow_batch_rdd", "map_in_arrow": "map_in_arrow"}
    assert [s.transfer for s in appended] == ["arrow_batch_rdd", "map_in_arrow"]
    assert all(s.rows == 3000 for s in [*staged.values(), *appended])
    tables = {t: lance.dataset(namespace_client=namespace, table_id=[f"t_{t}"]).to_table() for t in staged}
    assert tables["auto"].schema.equals(spark_to_arrow_schema(frame))
    assert tables["auto"].sort_by("id").equals(tables["map_in_arrow"].sort_by("id"))
    (row,) = tables["auto"].sort_by("id").slice(3, 1).to_pylist()
    assert (row["name"], row["amount"], row["payload"], row["tags"], row["point"]) == (
        "user-3",
        decimal.Decimal("0.75"),
        b"\x03" * 3,
        ["t0", "u3"],
        {"x": 3.0, "y": -3.0},
    )

    commit(namespace, [s.entry for s in appended])
    after = {t: lance.dataset(namespace_client=namespace, table_id=[f"t_{t}"]).to_table() for t in staged}
    assert after["auto"].num_rows == after["map_in_arrow"].num_rows == 6000
    assert after["auto"].schema.equals(tables["auto"].schema)
    assert after["auto"].sort_by("id").equals(after["map_in_arrow"].sort_by("id"))


def test_transfer_is_checked_before_anything_is_declared(spark, namespace: ln.LanceNamespace) -> None:
    with pytest.raises(ln.InvalidInputError, match="Unknown transfer 'rows'"):
        stage_dataframes(namespace, {"a": demo(spark, 10)}, transfer="rows")  # type: ignore[arg-type]
    assert not namespace.list_tables(ln.ListTablesRequest(id=[])).tables  # nothing declared


def test_arrow_batch_settings_for_the_staging_jobs_only(
    spark, namespace: ln.LanceNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The jobs run with maxBytesPerBatch=Int.MaxValue (no per-row size check) and maxRecordsPerBatch from the
    schema unless the session sets the keys; the session is left as it was, also when a job fails."""
    from airflow_provider_lance.spark import staging

    keys = (staging.ARROW_MAX_BYTES_PER_BATCH, staging.ARROW_MAX_RECORDS_PER_BATCH)
    seen: list[tuple[str | None, ...]] = []
    run = staging._PendingWrite.run

    def recording_run(self):
        seen.append(tuple(spark.conf.get(key, None) for key in keys))
        return run(self)

    monkeypatch.setattr(staging._PendingWrite, "run", recording_run)
    assert all(spark.conf.get(key, None) is None for key in keys)
    staged = stage_dataframes(namespace, {"a": demo(spark, 100), "b": demo(spark, 50)})
    assert [s.rows for s in staged] == [100, 50]
    assert seen == [(staging.ARROW_UNCAPPED_BYTES, "65536")] * 2  # id, name, score, bucket: ~40 bytes a row
    assert all(spark.conf.get(key, None) is None for key in keys)

    seen.clear()
    blobs = spark.createDataFrame([(1, b"x")], "id long, payload binary")  # no estimate: Spark's default rows
    stage_dataframes(namespace, {"c": demo(spark, 10), "c_blobs": blobs})
    assert seen == [(staging.ARROW_UNCAPPED_BYTES, "10000")] * 2  # one session: the fewest rows of its tables
    assert all(spark.conf.get(key, None) is None for key in keys)

    seen.clear()
    spark.conf.set(keys[0], "16m")
    spark.conf.set(keys[1], "500")
    try:
        stage_dataframe(demo(spark, 10), namespace, "d")
        assert seen == [("16m", "500")]
        assert (spark.conf.get(keys[0], None), spark.conf.get(keys[1], None)) == ("16m", "500")
    finally:
        for key in keys:
            spark.conf.unset(key)

    def failing_run(self):
        raise RuntimeError("job failed")

    monkeypatch.setattr(staging._PendingWrite, "run", failing_run)
    with pytest.raises(RuntimeError, match="job failed"):
        stage_dataframes(namespace, {"e": demo(spark, 10), "f": demo(spark, 10)})
    assert all(spark.conf.get(key, None) is None for key in keys)


def test_arrow_batch_rows_follow_the_estimated_row_size(spark) -> None:
    """About 4 MiB a batch by the schema's estimate, between Spark's default rows and 65,536; Spark's default for
    types without an estimate."""
    from airflow_provider_lance.spark.staging import arrow_batch_rows

    def rows(ddl: str) -> int:
        return arrow_batch_rows(spark.createDataFrame([], ddl))

    assert rows("id long, name string, score double, bucket int") == 65_536  # 40 bytes
    assert rows(", ".join(f"c{i} double" for i in range(16))) == 32_768  # 128 bytes: 4 MiB / 128
    assert rows(", ".join(f"c{i} decimal(38, 2)" for i in range(64))) == 10_000  # 1 KiB: never below Spark's
    assert rows("id long, point struct<x: double, y: double>") == 65_536
    assert rows("id long, tags array<string>") == 10_000
    assert rows("id long, attributes map<string, string>") == 10_000


def test_arrow_batches_is_shared_by_concurrent_calls(spark) -> None:
    from airflow_provider_lance.spark.staging import (
        ARROW_MAX_BYTES_PER_BATCH,
        ARROW_MAX_RECORDS_PER_BATCH,
        ARROW_UNCAPPED_BYTES,
        arrow_batches,
    )

    keys = [ARROW_MAX_BYTES_PER_BATCH, ARROW_MAX_RECORDS_PER_BATCH]
    with arrow_batches(spark, 20_000) as outer:
        with arrow_batches(spark, 30_000) as inner:
            assert outer == inner == keys
            assert [spark.conf.get(key, None) for key in keys] == [ARROW_UNCAPPED_BYTES, "20000"]
        assert [spark.conf.get(key, None) for key in keys] == [ARROW_UNCAPPED_BYTES, "20000"]  # the outer still runs
    assert [spark.conf.get(key, None) for key in keys] == [None, None]
