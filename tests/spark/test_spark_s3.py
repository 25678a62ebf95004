"""Spark staging into an s3:// namespace root (moto's S3 server): storage options reach the executors."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import lance
import lance.namespace
import pytest

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.spark import stage_dataframes
from airflow_provider_lance.staging import latest_version

pytestmark = [pytest.mark.spark, pytest.mark.s3]


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    moto = Path(sys.executable).with_name("moto_server")
    if not moto.exists():
        pytest.skip("moto_server is not installed")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [str(moto), "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_stage_into_s3_root(spark, s3_endpoint: str, commit) -> None:
    import boto3

    boto3.client(
        "s3", endpoint_url=s3_endpoint, aws_access_key_id="k", aws_secret_access_key="s", region_name="us-east-1"
    ).create_bucket(Bucket="lake")
    options = {
        "aws_access_key_id": "k",
        "aws_secret_access_key": "s",
        "aws_endpoint": s3_endpoint,
        "aws_region": "us-east-1",
        "allow_http": "true",
    }
    namespace = DirectoryNamespace(
        root="s3://lake/warehouse",
        table_version_management="true",
        **{f"storage.{k}": v for k, v in options.items()},
    )
    frame = spark.range(0, 500, numPartitions=2).selectExpr("id", "cast(id * 2 as int) as twice")
    (staged,) = stage_dataframes(namespace, {"sales.orders": frame}, storage_options=options)
    assert staged.rows == 500 and staged.entry.version == 1
    assert not staged.entry.manifest_path.startswith("s3://")  # kept as pylance reports it
    assert latest_version(namespace, ["sales", "orders"]) == 0

    commit(namespace, [staged.entry])
    dataset = lance.dataset(namespace_client=namespace, table_id=["sales", "orders"], storage_options=options)
    assert dataset.uri.startswith("s3://lake/warehouse/")
    assert sorted(dataset.to_table()["id"].to_pylist()) == list(range(500))
    assert latest_version(namespace, ["sales", "orders"]) == 1
