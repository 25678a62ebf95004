"""Scheduled clean-up of several tables in one call on S3 (moto): the manifests of every table in one bulk
delete, the rows in one ``__manifest`` commit, and the reference reading the catalog afterwards."""

from __future__ import annotations

import lance
import lance.namespace
import lance_namespace as ln
import pytest

from airflow_provider_lance.namespace import DirectoryNamespace
from tests.fault_storage import count_rows, rows

pytestmark = pytest.mark.s3


def test_cleanup_of_several_tables_in_one_call(s3_props, moto_server):
    ns = DirectoryNamespace(**s3_props, table_version_management="true")
    ns.create_namespace(ln.CreateNamespaceRequest(id=["db"]))
    tables = [["db", "a"], ["db", "b"]]
    for table in tables:
        lance.write_dataset(rows(1), namespace_client=ns, table_id=table, mode="create")
        for i in range(1, 4):
            lance.write_dataset(rows(1, i), namespace_client=ns, table_id=table, mode="append")
    keep_latest = [{"start_version": 1, "end_version": 4}]
    answers = ns.batch_delete_versions_of_tables(
        [ln.BatchDeleteTableVersionsRequest(id=table, ranges=keep_latest) for table in tables]
    )
    assert [answer.deleted_count for answer in answers] == [3, 3]
    for table in tables:
        listed = ns.list_table_versions(ln.ListTableVersionsRequest(id=table)).versions
        assert [v.version for v in listed] == [4]
        location = ns.describe_table(ln.DescribeTableRequest(id=table)).location
        bucket, _, key = location.removeprefix("s3://").partition("/")
        names = moto_server.client().list_objects_v2(Bucket=bucket, Prefix=f"{key}/_versions/")["Contents"]
        assert [entry["Key"].rsplit("/", 1)[1] for entry in names] == [f"{2**64 - 1 - 4:020d}.manifest"]
        assert count_rows(ns, table) == 4

    reference = lance.namespace.DirectoryNamespace(**s3_props, table_version_tracking_enabled="true")
    assert reference.list_tables(ln.ListTablesRequest(id=["db"])).tables == ["a", "b"]
    options = moto_server.storage_options()  # the reference vends none: the reader passes them
    for table in tables:
        dataset = lance.dataset(namespace_client=reference, table_id=table, storage_options=options)
        assert (dataset.version, dataset.count_rows()) == (4, 4)
