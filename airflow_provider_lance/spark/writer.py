"""What a Spark Python worker runs to write one partition as Lance fragments.

Spark pickles the writer by reference, so every Python worker imports this module: it imports only the standard
library at load time, and ``pyarrow`` / ``lance.fragment`` when a partition is written. Keep it that way: the
driver side (:mod:`airflow_provider_lance.spark.staging`) pulls in ``lance_namespace`` and the staging package,
which would cost each worker about a second to import and double the objects Spark's garbage collection walks
after every task (see :func:`write_partition`).
"""

from __future__ import annotations

import gc
import json
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

#: The schema of what each Spark task returns: one row per fragment written.
RESULT_SCHEMA = "fragment string, writer_pid long"

#: Whether this process (a reused Python worker) already froze its long-lived objects; see write_partition.
_worker_frozen = False


def write_partition(
    batches: Iterator[pa.RecordBatch],
    *,
    location: str,
    schema_ipc: bytes,
    write_mode: str,
    storage_options: dict[str, str],
    max_rows_per_file: int,
    refresh_from: dict[str, str] | None = None,
    table_id: list[str] | None = None,
) -> Iterator[pa.RecordBatch]:
    """Write one Spark partition as Lance fragments (runs in a Spark Python worker, in ``mapInArrow``).

    The first partition a worker writes moves the objects alive at that point (its modules: pyspark, pyarrow,
    pandas, lance) out of the garbage collector's reach with :func:`gc.freeze`: a reused PySpark worker runs a
    full ``gc.collect()`` after every task (``pyspark.daemon``), and walking those modules each time was half
    of the worker's CPU in a staging job. Frozen objects are still freed by reference counting; only cycles
    among them stay, and only those of the first task (later ones are not frozen).

    :param batches: the partition's Arrow batches.
    :param location: the table location.
    :param schema_ipc: the target Arrow schema, IPC-serialised.
    :param write_mode: ``append`` (checked against the table's schema) or ``overwrite`` (new field ids).
    :param storage_options: storage options for the table's files.
    :param max_rows_per_file: the largest number of rows in one data file.
    :param refresh_from: when ``storage_options`` are vended (they expire), the REST client properties (``uri``,
        ``header.*``) of the catalog that vended them: pylance asks it for new ones (DescribeTable of
        ``table_id`` with ``vend_credentials=true``) before they expire.
    :param table_id: the table, with ``refresh_from``.
    :return: one batch of ``(fragment, writer_pid)`` rows (none for an empty partition).
    """
    global _worker_frozen
    import lance.fragment
    import pyarrow as pa

    if not _worker_frozen:
        gc.freeze()
        _worker_frozen = True
    schema = pa.ipc.read_schema(pa.py_buffer(schema_ipc))
    columns = schema.names

    def conformed() -> Iterator[pa.RecordBatch]:
        for batch in batches:
            if not batch.num_rows:
                continue
            # Spark sends the DataFrame's columns: as is for a new table or an overwrite, conformed otherwise.
            yield batch if batch.schema.equals(schema, check_metadata=True) else batch.select(columns).cast(schema)

    stream = conformed()
    first = next(stream, None)
    if first is None:  # an empty partition writes nothing
        return

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
    texts = [json.dumps(f.to_json(), separators=(",", ":")) for f in fragments]
    yield pa.RecordBatch.from_pydict(
        {"fragment": texts, "writer_pid": [os.getpid()] * len(texts)},
        schema=pa.schema([("fragment", pa.string()), ("writer_pid", pa.int64())]),
    )
