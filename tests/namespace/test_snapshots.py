"""Point reads (snapshots.py): a process's first lookups by id in a large, unread ``__manifest`` version scan for
their ids with pylance instead of reading every row, answer exactly as the whole read does, and give way to it
after ``POINT_READS`` lookups. ``POINT_READ_ROWS`` is lowered so that a small catalog counts as large."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest

from airflow_provider_lance.namespace import DirectoryNamespace, snapshots
from tests.namespace.conftest import IMPLEMENTATIONS, call

# Names that need care in a filter: quotes, SQL wildcards, URI characters, non-ASCII, the delimiter's neighbour.
NAMES = ["plain", "it's", "100%", "a_b", "x#y?z", "é中", "a%b", "a b"]


def build(kind: str, root: Path) -> None:
    """A catalog written by ``kind``: a namespace of tables (one with data, one dropped), root tables."""
    namespace = IMPLEMENTATIONS[kind](root=str(root))
    call(namespace, "create_namespace", id=["db"])
    for name in NAMES:
        call(namespace, "declare_table", id=["db", name])
        call(namespace, "declare_table", id=[name])
    lance.write_dataset(pa.table({"id": [1, 2]}), namespace_client=namespace, table_id=["db", "data"], mode="create")
    call(namespace, "drop_table", id=["db", "plain"])


def questions() -> list[tuple[str, dict[str, Any]]]:
    """Lookups a sensor or a task makes, for ids that exist and ids that do not."""
    asked: list[tuple[str, dict[str, Any]]] = [
        ("namespace_exists", {"id": ["db"]}),
        ("namespace_exists", {"id": ["no"]}),
    ]
    for name in [*NAMES, "data", "missing", "it''s", "10_%"]:
        asked.append(("describe_table", {"id": ["db", name], "load_detailed_metadata": False}))
        asked.append(("table_exists", {"id": ["db", name]}))
        asked.append(("table_exists", {"id": [name]}))
    asked.append(("describe_table", {"id": ["db", "data"]}))
    return asked


def answers(root: Path) -> list[Any]:
    """Each question asked of a new instance (a new process's first lookup)."""
    return [call(DirectoryNamespace(root=str(root)), method, **fields) for method, fields in questions()]


@pytest.mark.parametrize("writer", ["ours", "reference"])
def test_point_reads_answer_as_the_whole_read_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, writer: str):
    build(writer, tmp_path)
    whole = answers(tmp_path)
    monkeypatch.setattr(snapshots, "POINT_READ_ROWS", 1)
    reads: list[int] = []
    read = snapshots.Snapshot._read_whole
    monkeypatch.setattr(snapshots.Snapshot, "_read_whole", lambda self: reads.append(self.version) or read(self))
    assert answers(tmp_path) == whole
    assert reads == []  # no instance read the rows whole
    # both kinds of answer were compared: found, and not found (dropped, missing, lookalikes of escaped names)
    assert sum(result == ("ok", {}) for result in whole) >= 2 * len(NAMES)
    assert sum(result == ("error", 4) for result in whole) >= 10


def test_point_reads_give_way_to_one_whole_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build("ours", tmp_path)
    monkeypatch.setattr(snapshots, "POINT_READ_ROWS", 1)
    reads: list[int] = []
    read = snapshots.Snapshot._read_whole
    monkeypatch.setattr(snapshots.Snapshot, "_read_whole", lambda self: reads.append(self.version) or read(self))
    namespace = DirectoryNamespace(root=str(tmp_path))
    for _ in range(snapshots.POINT_READS):
        assert call(namespace, "table_exists", id=["db", "it's"]) == ("ok", {})
    assert reads == []
    for _ in range(3):
        assert call(namespace, "table_exists", id=["db", "a%b"]) == ("ok", {})
    assert len(reads) == 1  # read whole once, then answered from the index
    # a listing or a write needs every row: read whole at once, whatever the lookups so far
    fresh = DirectoryNamespace(root=str(tmp_path))
    assert "it's" in call(fresh, "list_tables", id=["db"])[1]["tables"]
    assert len(reads) == 2


def test_small_versions_and_handed_in_rows_are_read_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build("ours", tmp_path)
    reads: list[int] = []
    read = snapshots.Snapshot._read_whole
    monkeypatch.setattr(snapshots.Snapshot, "_read_whole", lambda self: reads.append(self.version) or read(self))
    assert call(DirectoryNamespace(root=str(tmp_path)), "table_exists", id=["db", "it's"]) == ("ok", {})
    assert len(reads) == 1  # below POINT_READ_ROWS: one whole read (a few milliseconds), indexed at once


def test_a_burst_of_first_lookups_makes_at_most_point_reads_scans(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server starting on a large catalog meets many first lookups at once: at most ``POINT_READS`` of them
    scan, the others wait for the one whole read; every answer is right."""
    build("ours", tmp_path)
    monkeypatch.setattr(snapshots, "POINT_READ_ROWS", 1)
    scans: list[bool] = []
    decide = snapshots.Snapshot._reads_by_point
    monkeypatch.setattr(snapshots.Snapshot, "_reads_by_point", lambda self: scans.append(decide(self)) or scans[-1])
    namespace = DirectoryNamespace(root=str(tmp_path))
    with ThreadPoolExecutor(16) as pool:
        found = list(pool.map(lambda name: call(namespace, "table_exists", id=["db", name]), NAMES * 4))
    assert found == [("error", 4) if name == "plain" else ("ok", {}) for name in NAMES * 4]
    assert 1 <= scans.count(True) <= snapshots.POINT_READS


def test_version_lines_read_by_point_answer_as_the_whole_read_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Managed mode: a new process's version calls find the table's ``table_version`` rows with one scan of its
    id range (step 2 of ``Snapshot.index``), not a whole read, and answer exactly as the whole read does; tables whose
    names share a prefix (``t``, ``t2``, ``t%``) or need care in a filter keep their own rows."""
    names = ["t", "t2", "t%", "it's", "a_b", "é中"]
    writer = DirectoryNamespace(root=str(tmp_path), table_version_management="true")
    call(writer, "create_namespace", id=["db"])
    for versions, name in enumerate(names, start=1):
        for number in range(versions):
            mode = "create" if number == 0 else "append"
            data = pa.table({"id": [number]})
            lance.write_dataset(data, namespace_client=writer, table_id=["db", name], mode=mode)
    asked: list[tuple[str, dict[str, Any]]] = []
    for name in [*names, "missing"]:
        asked += [
            ("describe_table", {"id": ["db", name]}),
            ("list_table_versions", {"id": ["db", name], "descending": True}),
            ("describe_table_version", {"id": ["db", name]}),
            ("describe_table_version", {"id": ["db", name], "version": 1}),
            ("describe_table_version", {"id": ["db", name], "version": 99}),
        ]

    def answers() -> list[Any]:
        return [
            call(DirectoryNamespace(root=str(tmp_path), table_version_management="true"), method, **fields)
            for method, fields in asked
        ]

    whole = answers()
    monkeypatch.setattr(snapshots, "POINT_READ_ROWS", 1)
    reads: list[int] = []
    read = snapshots.Snapshot._read_whole
    monkeypatch.setattr(snapshots.Snapshot, "_read_whole", lambda self: reads.append(self.version) or read(self))
    below: list[str] = []
    by_point = snapshots.Snapshot._read_by_point
    monkeypatch.setattr(
        snapshots.Snapshot,
        "_read_by_point",
        lambda self, ids, prefix: below.append(prefix) or by_point(self, ids, prefix),
    )
    assert answers() == whole
    assert reads == []  # every instance found its table's rows by point
    assert {f"db${name}$" for name in names} <= set(below)
    listed = [result for (method, _), result in zip(asked, whole, strict=True) if method == "list_table_versions"]
    assert [len(result[1]["versions"]) for result in listed[:-1]] == list(range(1, len(names) + 1))
    assert listed[-1] == ("error", 4)  # the missing table: TableNotFound
