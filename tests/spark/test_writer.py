"""The executors' writer, run as a Spark Python worker runs it: in a fresh process, without Spark."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import lance
import pyarrow as pa

from tests.spark.conftest import REPO

#: Run in a child process: import the writer as a worker does, write two batches (and an empty one), report.
WORKER = """
import gc, io, json, os, struct, sys
import pyarrow as pa
from airflow_provider_lance.spark.writer import ArrowMessages, write_messages, write_partition

heavy = ("lance_namespace", "pydantic", "airflow_provider_lance.staging", "airflow_provider_lance.namespace")
loaded_on_import = sorted(m for m in sys.modules if m.startswith(heavy))
schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
batches = [pa.record_batch([pa.array(range(s, s + 3), pa.int64()), pa.array(["a", "b", "c"])], schema=schema)
           for s in (0, 3)]
empty = [pa.RecordBatch.from_pylist([], schema=schema)]
out = list(write_partition(iter(batches[:1] + empty + batches[1:]), location=sys.argv[1],
                           schema_ipc=schema.serialize().to_pybytes(), write_mode="overwrite",
                           storage_options={}, max_rows_per_file=4))
frozen = gc.get_freeze_count()
nothing = list(write_partition(iter(empty), location=sys.argv[1] + "-empty",
                               schema_ipc=schema.serialize().to_pybytes(), write_mode="overwrite",
                               storage_options={}, max_rows_per_file=4))
# The other route: record batch messages framed as the JVM sends an RDD of byte arrays, then its end marker.
frame = pa.schema([("name", pa.string()), ("id", pa.int32())])  # the DataFrame's columns: conformed
framed = b"".join(struct.pack("!i", len(m)) + m for m in (
    pa.record_batch([pa.array(["x", "y"]), pa.array([7, 8], pa.int32())], schema=frame).serialize().to_pybytes(),
    pa.record_batch([pa.array([], pa.string()), pa.array([], pa.int32())], schema=frame).serialize().to_pybytes(),
)) + struct.pack("!i", -1)
stream = io.BufferedReader(io.BytesIO(framed + b"after"))
from_messages = list(write_messages(ArrowMessages().load_stream(stream),
                                    frame_schema_ipc=frame.serialize().to_pybytes(),
                                    location=sys.argv[1] + "-messages", schema_ipc=schema.serialize().to_pybytes(),
                                    write_mode="overwrite", storage_options={}, max_rows_per_file=4))
left = stream.read()
try:
    list(ArrowMessages().load_stream(io.BufferedReader(io.BytesIO(framed[:-9]))))
    truncated = "read"
except EOFError as error:
    truncated = str(error)
print(json.dumps({
    "loaded_on_import": loaded_on_import,
    "loaded_after_write": sorted(m for m in sys.modules if m.startswith(heavy)),
    "frozen": frozen,
    "frozen_later": gc.get_freeze_count(),
    "result": [b.to_pylist() for b in out],
    "empty_partition": len(nothing),
    "pid": os.getpid(),
    "from_messages": from_messages,
    "left_after_end_marker": left.decode(),
    "truncated": truncated,
}))
"""


def test_writer_stays_light_and_writes_fragments(tmp_path: Path) -> None:
    """Workers import only the writer module (no namespace client, no staging package), freeze their long-lived
    objects once so that PySpark's per-task full collection skips them, and report one row per fragment written."""
    location = str(tmp_path / "t.lance")
    done = subprocess.run(
        [sys.executable, "-c", WORKER, location], cwd=REPO, capture_output=True, text=True, timeout=120, check=True
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["loaded_on_import"] == [] and report["loaded_after_write"] == []
    assert report["frozen"] > 1000  # pyarrow and lance at least
    assert report["frozen_later"] == report["frozen"]  # once per worker: later tasks' objects stay collectable
    assert report["empty_partition"] == 0

    (rows,) = report["result"]
    assert len(rows) == 2  # 6 rows, at most 4 per file
    fragments = [lance.FragmentMetadata.from_json(row["fragment"]) for row in rows]
    assert sorted(f.physical_rows for f in fragments) == [2, 4]
    assert {row["writer_pid"] for row in rows} == {report["pid"]}
    # the fragments commit into a table holding every row
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    dataset = lance.LanceDataset.commit(location, lance.LanceOperation.Overwrite(schema, fragments))
    assert sorted(dataset.to_table()["id"].to_pylist()) == list(range(6))

    # Arrow IPC messages (Dataset.toArrowBatchRdd's route): read up to the end marker and no further, conformed
    # to the table's schema, one (fragment, pid) pair per fragment; a stream cut short is an error.
    assert report["left_after_end_marker"] == "after"
    assert "ended inside a message" in report["truncated"]
    ((text, pid),) = report["from_messages"]
    assert pid == report["pid"]
    messages = lance.LanceDataset.commit(
        location + "-messages",
        lance.LanceOperation.Overwrite(schema, [lance.FragmentMetadata.from_json(text)]),
    )
    assert messages.to_table().to_pydict() == {"id": [7, 8], "name": ["x", "y"]}
