"""The spark-submit job, run for real: stage two tables, write the entries document, commit it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import lance
import lance_namespace as ln
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_lance.spark import job_path
from airflow_provider_lance.staging import latest_version, read_entries

pytestmark = pytest.mark.spark


def test_spark_submit_job(
    tmp_path: Path,
    root: Path,
    namespace: ln.LanceNamespace,
    commit,
    spark_environ: dict[str, str],
) -> None:
    orders = tmp_path / "orders.parquet"
    pq.write_table(pa.table({"order_id": pa.array(range(50), pa.int64()), "amount": [1.5] * 50}), orders)
    entries_out = tmp_path / "out" / "entries.json"
    command = [
        str(Path(sys.executable).with_name("spark-submit")),
        "--master",
        "local[2]",
        "--conf",
        "spark.ui.enabled=false",
        job_path(),
        "--impl",
        "dir",
        "--property",
        f"root={root}",
        "--table",
        "shop.users=range:100",
        "--table",
        f"shop.orders={orders}",
        "--entries-out",
        str(entries_out),
    ]
    done = subprocess.run(command, env=spark_environ, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    summary = json.loads(next(x for x in done.stdout.splitlines() if x.startswith('{"entries_out"')))
    assert summary["tables"] == [
        {"table": "shop.users", "version": 1, "rows": 100},
        {"table": "shop.orders", "version": 1, "rows": 50},
    ]

    entries = read_entries(entries_out)
    assert [e.id for e in entries] == [["shop", "users"], ["shop", "orders"]]
    assert latest_version(namespace, ["shop", "users"]) == 0  # staged only

    commit(namespace, entries)
    users = lance.dataset(namespace_client=namespace, table_id=["shop", "users"]).to_table().sort_by("id")
    assert users.column_names == ["id", "name", "score", "bucket"]
    assert users["id"].to_pylist() == list(range(100))
    assert users["name"][7].as_py() == "user-7"
    assert lance.dataset(namespace_client=namespace, table_id=["shop", "orders"]).count_rows() == 50
