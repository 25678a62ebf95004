"""Spark staging into an s3:// namespace root (moto's S3 server): storage options reach the executors."""

from __future__ import annotations

import lance
import lance.namespace
import pytest

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.spark import stage_dataframes
from airflow_provider_lance.staging import latest_version
from tests.s3.conftest import MotoServer, moto_server, s3_root  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.spark, pytest.mark.s3]


def test_stage_into_s3_root(spark, moto_server: MotoServer, s3_root: str, commit) -> None:  # noqa: F811
    options = moto_server.storage_options()
    namespace = DirectoryNamespace(**moto_server.properties(s3_root, table_version_management="true"))
    frame = spark.range(0, 500, numPartitions=2).selectExpr("id", "cast(id * 2 as int) as twice")
    (staged,) = stage_dataframes(namespace, {"sales.orders": frame}, storage_options=options)
    assert staged.rows == 500 and staged.entry.version == 1
    assert not staged.entry.manifest_path.startswith("s3://")  # kept as pylance reports it
    assert latest_version(namespace, ["sales", "orders"]) == 0

    commit(namespace, [staged.entry])
    dataset = lance.dataset(namespace_client=namespace, table_id=["sales", "orders"], storage_options=options)
    assert dataset.uri.startswith(f"{s3_root}/")
    assert sorted(dataset.to_table()["id"].to_pylist()) == list(range(500))
    assert latest_version(namespace, ["sales", "orders"]) == 1
