"""A delete is described once (``RowSelection``, manifest_rows.py): the Lance SQL filter a delete commits and the
Arrow mask over rows in memory select the same rows, for names that need care in SQL and in patterns. Rows taken
out of a table of many chunks by slices (``rows_without``) are those a filter keeps."""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from airflow_provider_lance.namespace.manifest_rows import (
    NAMESPACE,
    TABLE,
    TABLE_VERSION,
    ManifestRow,
    RowSelection,
    rows_table,
    rows_without,
)

# quotes, SQL LIKE wildcards, URI characters, spaces, non-ASCII, and lookalikes of each other
NAMES = ["it's", "''", "100%", "100", "a_b", "axb", "x#y?z", "a b", "é中", "e中", "%", "_", "plain"]


def _catalog() -> pa.Table:
    rows = []
    for name in NAMES:
        rows.append(ManifestRow(name, NAMESPACE))
        for table in NAMES:
            oid = f"{name}${table}"
            rows.append(ManifestRow(oid, TABLE, f"loc_{len(rows)}"))
            rows += [ManifestRow(f"{oid}${version}", TABLE_VERSION) for version in (1, 2, 10)]
    return rows_table(rows)


SELECTIONS = [
    *(RowSelection((name,), object_type=NAMESPACE) for name in NAMES),
    *(RowSelection.table_and_versions(f"{name}${name}") for name in NAMES),
    *(RowSelection.table_and_versions(f"plain${name}") for name in NAMES),
    *(RowSelection.versions(f"{name}$a_b") for name in NAMES),
    *(RowSelection.versions(f"100%${name}", (1, 10, 3)) for name in NAMES),
    RowSelection(tuple(NAMES), object_type=NAMESPACE),
    RowSelection(prefix="100%"),
    RowSelection(prefix="a_"),
    RowSelection(any_of=(RowSelection(("it's",)), RowSelection(prefix="é"), RowSelection.versions("_$%"))),
]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> lance.LanceDataset:
    return lance.write_dataset(_catalog(), str(tmp_path_factory.mktemp("rows") / "manifest"))


@pytest.mark.parametrize("selection", SELECTIONS, ids=lambda selection: selection.sql()[:60])
def test_the_filter_and_the_mask_select_the_same_rows(dataset: lance.LanceDataset, selection: RowSelection) -> None:
    table = dataset.to_table()
    by_mask = sorted(table.filter(selection.mask(table))["object_id"].to_pylist())
    by_sql = sorted(dataset.to_table(columns=["object_id"], filter=selection.sql())["object_id"].to_pylist())
    assert by_sql == by_mask
    assert by_mask  # every selection selects something: the comparison is not of two empty lists


def test_a_delete_by_the_filter_leaves_what_the_mask_keeps(dataset: lance.LanceDataset, tmp_path: Path) -> None:
    table = dataset.to_table()
    for selection in SELECTIONS:
        copy = lance.write_dataset(table, str(tmp_path / "copy"), mode="overwrite")
        copy.delete(selection.sql())
        kept = table.filter(pc.invert(selection.mask(table)))
        assert sorted(copy.to_table()["object_id"].to_pylist()) == sorted(kept["object_id"].to_pylist())


@pytest.mark.parametrize("cut", [[], [0], [5], [11], [0, 11], [3, 4, 9], list(range(12))])
def test_rows_without_keeps_what_a_filter_keeps(cut: list[int]) -> None:
    rows = rows_table([ManifestRow(f"t${n}", TABLE_VERSION, None, {"n": n}) for n in range(12)])
    chunked = pa.concat_tables([rows.slice(start, 3) for start in range(0, 12, 3)])  # 4 chunks, as a tail has
    kept = rows_without(chunked, cut)
    assert kept.equals(rows.filter(pa.array([n not in cut for n in range(12)])))
    assert kept.schema == rows.schema
