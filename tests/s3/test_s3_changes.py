"""What the change feed costs on S3, counted at a moto server of its own (benchmarks/s3_counter.py): an idle poll
is one request whatever the catalog's size, a poll with changes costs in proportion to the changes."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import lance_namespace as ln
import pytest

from airflow_provider_lance.namespace import DirectoryNamespace
from benchmarks.catalog import build_s3
from benchmarks.s3_counter import CountingS3Server


@pytest.fixture(scope="module")
def server() -> Iterator[CountingS3Server]:
    with CountingS3Server() as running:
        yield running


@pytest.mark.parametrize("tables", [10, 100_000])
def test_an_idle_poll_is_one_request_and_a_change_costs_the_change(server: CountingS3Server, tables: int) -> None:
    props = {**server.properties(f"feed-{uuid.uuid4().hex[:12]}"), "manifest_cache_dir": ""}
    writer = DirectoryNamespace(**props)
    build_s3(props, writer, tables)
    consumer = DirectoryNamespace(**props)  # another process
    cursor = consumer.changes().cursor
    with server.counting() as idle:
        page = consumer.changes(since=cursor)
    assert page.changes == [] and dict(idle) == {"LIST": 1}

    writer.declare_table(ln.DeclareTableRequest(id=["bench", "new"]))
    writer.create_namespace(ln.CreateNamespaceRequest(id=["other"]))
    with server.counting() as busy:
        page = consumer.changes(since=page.cursor)
    assert [[(e.kind, e.id) for e in c.events] for c in page.changes] == [
        [("table_declared", ["bench", "new"])],
        [("namespace_created", ["other"])],
    ]
    # the newest version (a LIST), per version its manifest and its new fragment, the declared table's listing:
    # the same at 10 tables as at 100,000
    assert dict(busy) == {"LIST": 2, "HEAD": 2, "GET": 4}
    with server.counting() as idle:
        assert consumer.changes(since=page.cursor).changes == []
    assert dict(idle) == {"LIST": 1}
