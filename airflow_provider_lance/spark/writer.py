"""What a Spark Python worker runs to write one partition as Lance fragments.

Spark pickles the writer by reference, so every Python worker imports this module: it imports only the standard
library and PySpark's serializers (every worker has them loaded already) at load time, and ``pyarrow`` /
``lance.fragment`` when a partition is written. Keep it that way: the driver side
(:mod:`airflow_provider_lance.spark.staging`) pulls in ``lance_namespace`` and the staging package, which would
cost each worker about a second to import and double the objects Spark's garbage collection walks after every
task (see :func:`write_fragments`).

The rows reach a worker in one of two ways (:mod:`~airflow_provider_lance.spark.staging` picks): Spark's
``mapInArrow`` (:func:`write_partition`) or an RDD of Arrow IPC record batch messages
(``Dataset.toArrowBatchRdd``, read by :class:`ArrowMessages`, written by :func:`write_messages`).
"""

from __future__ import annotations

import gc
import json
import os
import struct
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any

from pyspark.serializers import Serializer, SpecialLengths

if TYPE_CHECKING:
    import pyarrow as pa

#: The schema of what each Spark task returns: one row per fragment written.
RESULT_SCHEMA = "fragment string, writer_pid long"

#: Whether this process (a reused Python worker) already froze its long-lived objects; see write_fragments.
_worker_frozen = False


def write_partition(batches: Iterator[pa.RecordBatch], **options: Any) -> Iterator[pa.RecordBatch]:
    """Write one Spark partition as Lance fragments (runs in a Spark Python worker, in ``mapInArrow``).

    :param batches: the partition's Arrow batches.
    :param options: what :func:`write_fragments` takes besides the batches.
    :return: one batch of ``(fragment, writer_pid)`` rows (none for an empty partition).
    """
    import pyarrow as pa

    texts = write_fragments(batches, **options)
    if texts:
        yield pa.RecordBatch.from_pydict(
            {"fragment": texts, "writer_pid": [os.getpid()] * len(texts)},
            schema=pa.schema([("fragment", pa.string()), ("writer_pid", pa.int64())]),
        )


def write_messages(
    messages: Iterator[pa.Buffer], *, frame_schema_ipc: bytes, **options: Any
) -> Iterator[tuple[str, int]]:
    """Write one partition of Arrow IPC record batch messages as Lance fragments (runs in a Spark Python worker,
    in ``mapPartitions`` over the RDD that :class:`ArrowMessages` reads).

    :param messages: the partition's record batch messages, without their schema.
    :param frame_schema_ipc: the schema the JVM wrote them with (the DataFrame's columns), IPC-serialised.
    :param options: what :func:`write_fragments` takes besides the batches.
    :return: one ``(fragment, writer_pid)`` pair per fragment written (none for an empty partition).
    """
    import pyarrow as pa

    frame = pa.ipc.read_schema(pa.py_buffer(frame_schema_ipc))
    pid = os.getpid()
    for text in write_fragments((pa.ipc.read_record_batch(message, frame) for message in messages), **options):
        yield text, pid


class ArrowMessages(Serializer):
    """PySpark's deserializer for an RDD of Arrow IPC messages, as the JVM sends an RDD of byte arrays to a
    Python worker: each a 4-byte big-endian length and that many bytes, until ``END_OF_DATA_SECTION``.

    Each message is read into a buffer of pyarrow's memory pool, which reuses the memory of the batches already
    written, rather than into a new ``bytes`` object (PySpark's ``NoOpSerializer``): a fresh allocation of a few
    MiB per batch is fresh pages from the kernel, and page faults, for every batch (measured at 4 tables x 10M
    rows: the workers' system time 2.2-3.7 s a round with ``bytes``, 1.0-2.2 s with the pool).
    """

    def load_stream(self, stream: IO[bytes]) -> Iterator[pa.Buffer]:
        """Yield the messages of a worker's input stream.

        :param stream: the worker's input (a buffered socket file).
        """
        import pyarrow as pa

        while True:
            head = stream.read(4)
            if len(head) < 4:
                raise EOFError("the Arrow message stream ended before its end marker")
            (length,) = struct.unpack("!i", head)
            if length == SpecialLengths.END_OF_DATA_SECTION:
                return
            if length < 0:
                raise ValueError(f"unexpected marker {length} in an Arrow message stream")
            buffer = pa.allocate_buffer(length)
            view = memoryview(buffer).cast("B")
            filled = 0
            while filled < length:
                count = stream.readinto(view[filled:])
                if not count:
                    raise EOFError("the Arrow message stream ended inside a message")
                filled += count
            yield buffer


def write_fragments(
    batches: Iterator[pa.RecordBatch],
    *,
    location: str,
    schema_ipc: bytes,
    write_mode: str,
    storage_options: dict[str, str],
    max_rows_per_file: int,
    refresh_from: dict[str, str] | None = None,
    table_id: list[str] | None = None,
) -> list[str]:
    """Write a partition's batches as Lance fragments of the target schema; return each fragment's metadata as
    JSON (none for no rows).

    The first partition a worker writes moves the objects alive at that point (its modules: pyspark, pyarrow,
    pandas, lance) out of the garbage collector's reach with :func:`gc.freeze`: a reused PySpark worker runs a
    full ``gc.collect()`` after every task (``pyspark.daemon``), and walking those modules each time was half
    of the worker's CPU in a staging job. Frozen objects are still freed by reference counting; only cycles
    among them stay, and only those of the first task (later ones are not frozen).

    :param batches: the partition's Arrow batches (the DataFrame's columns).
    :param location: the table location.
    :param schema_ipc: the target Arrow schema, IPC-serialised.
    :param write_mode: ``append`` (checked against the table's schema) or ``overwrite`` (new field ids).
    :param storage_options: storage options for the table's files.
    :param max_rows_per_file: the largest number of rows in one data file.
    :param refresh_from: when ``storage_options`` are vended (they expire), the REST client properties (``uri``,
        ``header.*``) of the catalog that vended them: pylance asks it for new ones (DescribeTable of
        ``table_id`` with ``vend_credentials=true``) before they expire.
    :param table_id: the table, with ``refresh_from``.
    """
    global _worker_frozen
    import lance.fragment
    import pyarrow as pa

    if not _worker_frozen:
        gc.freeze()
        _worker_frozen = True
    schema = pa.ipc.read_schema(pa.py_buffer(schema_ipc))
    columns = schema.names
    wide = [i for i, item in enumerate(schema) if _holds_wide_values(item.type)]

    def conformed() -> Iterator[pa.RecordBatch]:
        for batch in batches:
            if not batch.num_rows:
                continue
            # Spark sends the DataFrame's columns: as is for a new table or an overwrite, conformed otherwise.
            if not batch.schema.equals(schema, check_metadata=True):
                batch = batch.select(columns).cast(schema)
            for index in wide:
                column = batch.column(index)
                if _misaligned(column):
                    batch = batch.set_column(index, schema.field(index), pa.concat_arrays([column]))
            yield batch

    stream = conformed()
    first = next(stream, None)
    if first is None:  # an empty partition writes nothing
        return []

    def chained() -> Iterator[pa.RecordBatch]:
        yield first
        yield from stream

    refresh = {}
    if refresh_from is not None:
        import lance.namespace

        refresh = {"namespace_client": lance.namespace.RestNamespace(**refresh_from), "table_id": table_id}
    fragments = lance.fragment.write_fragments(
        pa.RecordBatchReader.from_batches(schema, chained()),
        location,
        schema=schema,
        mode=write_mode,
        storage_options=storage_options or None,
        max_rows_per_file=max_rows_per_file,
        **refresh,
    )
    return [json.dumps(f.to_json(), separators=(",", ":")) for f in fragments]


def _holds_wide_values(data_type: pa.DataType) -> bool:
    """Whether a column of this type holds 16-byte values (decimals), itself or in a nested field.

    Lance reads the batches through arrow-rs, which needs such values 16-byte aligned (it panics otherwise). The
    JVM pads the buffers of the Arrow batches it sends to 8 bytes only, so a decimal column's values can start
    8 bytes off (a column after a string column, half of the time): :func:`write_fragments` copies those.

    :param data_type: the column's Arrow type.
    """
    import pyarrow as pa

    if pa.types.is_decimal128(data_type) or pa.types.is_decimal256(data_type):
        return True
    return any(_holds_wide_values(data_type.field(i).type) for i in range(data_type.num_fields))


def _misaligned(column: pa.Array) -> bool:
    """Whether a column of :func:`_holds_wide_values` has a buffer off a 16-byte boundary (for a decimal column,
    its values; for a nested one, any buffer).

    :param column: the column.
    """
    import pyarrow as pa

    buffers = column.buffers()
    if pa.types.is_decimal(column.type):
        buffers = buffers[1:]
    return any(buffer is not None and buffer.address % 16 for buffer in buffers)
