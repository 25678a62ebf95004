"""Scheduled clean-up of many tables in one call (``DirectoryNamespace.batch_delete_versions_of_tables``):
BatchDeleteTableVersions for several tables, every request checked before anything is deleted, the manifests
first, then every table's rows in one ``__manifest`` commit. Real pylance writers, the reference reading the
catalog afterwards."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import lance
import lance.namespace
import lance_namespace as ln
import pytest

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.namespace.identifiers import manifest_name
from tests.namespace.helpers_versions import location, read, rows, version_rows, versions

Snapshot = Callable[[Path], dict[str, bytes]]
TABLES = [["p", "a"], ["p", "b"], ["p", "c"]]


def _catalog(root: Path, managed: bool, count: int = 5) -> DirectoryNamespace:
    """Three tables of ``count`` versions each, written by pylance through the namespace; no ``__manifest``
    maintenance, so that its versions count the commits."""
    ns = DirectoryNamespace(
        root=str(root),
        table_version_management="true" if managed else "false",
        manifest_maintenance_every="0",
        manifest_cleanup_every="0",
    )
    ns.create_namespace(ln.CreateNamespaceRequest(id=["p"]))
    for table in TABLES:
        lance.write_dataset(rows(1), namespace_client=ns, table_id=table, mode="create")
        for i in range(1, count):
            lance.write_dataset(rows(1, i), namespace_client=ns, table_id=table, mode="append")
    return ns


def _request(
    table: list[str], *ranges: tuple[int, int], ignore_missing: bool = False
) -> ln.BatchDeleteTableVersionsRequest:
    return ln.BatchDeleteTableVersionsRequest(
        id=table,
        ranges=[{"start_version": start, "end_version": end} for start, end in ranges],
        context={"ignore_missing": "true"} if ignore_missing else None,
    )


def _manifests(ns: DirectoryNamespace, table: list[str]) -> list[int]:
    directory = location(ns, table) / "_versions"
    return [v for v in range(1, 10) if (directory / manifest_name(v, "V2")).exists()]


def _manifest_version(root: Path) -> int:
    return lance.dataset(str(root / "__manifest")).version


@pytest.mark.parametrize("managed", [True, False], ids=["managed", "unmanaged"])
def test_cleanup_of_several_tables_in_one_call(root: Path, managed: bool) -> None:
    ns = _catalog(root, managed)
    before = _manifest_version(root)
    answers = ns.batch_delete_versions_of_tables(
        [_request(TABLES[0], (1, 5)), _request(TABLES[1], (1, 3)), _request(TABLES[2], (2, 4), (5, -1))]
    )
    assert [answer.deleted_count for answer in answers] == [4, 2, 3]
    assert [versions(ns, table) for table in TABLES] == [[5], [3, 4, 5], [1, 4]]
    assert [_manifests(ns, table) for table in TABLES] == [[5], [3, 4, 5], [1, 4]]
    if managed:
        # every table's rows went in ONE __manifest commit
        assert _manifest_version(root) == before + 1
        assert sorted(version_rows(ns)) == ["p$a$5", "p$b$3", "p$b$4", "p$b$5", "p$c$1", "p$c$4"]
    else:
        assert _manifest_version(root) == before  # no rows: __manifest untouched
    assert [read(ns, table).count_rows() for table in TABLES] == [5, 5, 4]

    # the reference still reads the catalog, through its namespace and at the tables' locations
    reference = lance.namespace.DirectoryNamespace(root=str(root), table_version_tracking_enabled="true")
    assert reference.list_tables(ln.ListTablesRequest(id=["p"])).tables == ["a", "b", "c"]
    for table, count, latest in zip(TABLES, [5, 5, 4], [5, 5, 4], strict=True):
        assert reference.describe_table(ln.DescribeTableRequest(id=table)).location.endswith(location(ns, table).name)
        dataset = lance.dataset(namespace_client=reference, table_id=table)
        assert (dataset.version, dataset.count_rows()) == (latest, count)


def test_cleanup_is_checked_whole_before_anything_is_deleted(root: Path, snapshot: Snapshot) -> None:
    ns = _catalog(root, managed=True, count=3)
    before = snapshot(root)
    cases = [
        ([_request(TABLES[0], (1, 3)), _request(["p", "nope"], (1, 2))], ln.TableNotFoundError, 4),
        ([_request(TABLES[0], (1, 3)), _request(TABLES[1], (2, 6))], ln.TableVersionNotFoundError, 11),
        ([_request(TABLES[0], (1, 2)), _request(TABLES[0], (2, 3))], ln.InvalidInputError, 13),
        ([_request(TABLES[0], (1, 2)), {"id": ["p", "b"], "ranges": [], "bad": 1}], ln.InvalidInputError, 13),
    ]
    for requests, error, code in cases:
        with pytest.raises(error) as excinfo:
            ns.batch_delete_versions_of_tables(requests)
        assert excinfo.value.code == code
        assert snapshot(root) == before, f"{error.__name__} left a trace"

    # ignore_missing per request; dicts as pylance sends them; nothing to delete is no commit
    answers = ns.batch_delete_versions_of_tables(
        [
            _request(TABLES[0], (1, 3)),
            _request(TABLES[1], (2, 6), ignore_missing=True),
            {
                "id": TABLES[2],
                "ranges": [{"start_version": 7, "end_version": 9}],
                "context": {"ignore_missing": "true"},
            },
        ]
    )
    assert [answer.deleted_count for answer in answers] == [2, 2, 0]
    assert [versions(ns, table) for table in TABLES] == [[3], [1], [1, 2, 3]]
    assert ns.batch_delete_versions_of_tables([]) == []
    unchanged = snapshot(root)
    assert [
        a.deleted_count for a in ns.batch_delete_versions_of_tables([_request(TABLES[2], (8, 9), ignore_missing=True)])
    ] == [0]
    assert snapshot(root) == unchanged
