"""lancedb on our engine (issue 14): ``lancedb.connect_namespace`` with the engine's class path, with and without
table version management, across create / add / search / index / update / delete / drop; and tables written
through our engine are read through the reference and the reverse."""

from __future__ import annotations

from pathlib import Path

import lancedb
import pytest

from airflow_provider_lance.namespace import IMPL
from tests.lancedb_round_trip import round_trip, vector_rows


@pytest.mark.parametrize("managed", ["false", "true"])
def test_lancedb_round_trip_on_our_engine(tmp_path: Path, managed: str) -> None:
    db = lancedb.connect_namespace(IMPL, {"root": str(tmp_path), "table_version_management": managed})
    round_trip(db)
    db.drop_table("t")
    assert db.list_tables().tables == []


@pytest.mark.parametrize(("writer", "reader"), [(IMPL, "dir"), ("dir", IMPL)], ids=["ours-to-ref", "ref-to-ours"])
def test_lancedb_reads_what_the_other_implementation_wrote(tmp_path: Path, writer: str, reader: str) -> None:
    written = lancedb.connect_namespace(writer, {"root": str(tmp_path)}).create_table("t", vector_rows([1, 2, 3]))
    written.add(vector_rows([4]))
    table = lancedb.connect_namespace(reader, {"root": str(tmp_path)}).open_table("t")
    assert sorted(table.to_arrow()["id"].to_pylist()) == [1, 2, 3, 4]
    assert table.search([0.4, 0.5]).limit(1).to_arrow()["id"].to_pylist() == [4]
