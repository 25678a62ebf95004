"""The data plane (results key ``data_plane``): CountTableRows, QueryTable, InsertIntoTable and
MergeInsertIntoTable on a table of 10,000 rows, both engines interleaved."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lance_namespace as ln
import pyarrow as pa
from lance_namespace_urllib3_client.models import QueryTableRequestVector

from benchmarks.common import ENGINES, QUICK, Engine, Job, Target, interleaved, log

ROWS = 10_000
GOAL = 1.1  # p50 ours / reference


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _rows(count: int, start: int = 0) -> pa.Table:
    ids = list(range(start, start + count))
    return pa.table({"id": pa.array(ids, pa.int64()), "name": [f"n{i}" for i in ids], "score": [i * 0.5 for i in ids]})


def run(work: Path) -> dict[str, Any]:
    """Each operation on a table of 10,000 rows in a child namespace, both engines, interleaved.

    :param work: a directory for the catalogs.
    """
    reps = 5 if QUICK else 25
    table = ["w", "t"]
    engines: dict[str, Engine] = {}
    for name, make in ENGINES.items():
        engine = make(work / f"data-{name}")
        engine.call("create_namespace", ln.CreateNamespaceRequest(id=["w"]))
        engine.namespace.create_table(ln.CreateTableRequest(id=table), _ipc(_rows(ROWS)))
        engines[name] = engine
    inserts = _ipc(_rows(100, start=10**6))
    merges = {i: _ipc(_rows(100, start=ROWS - 50 + 1000 * i)) for i in range(-1, reps)}
    operations = {
        "count_table_rows": lambda e, i: e.namespace.count_table_rows(ln.CountTableRowsRequest(id=table)),
        "query_table (filter)": lambda e, i: e.namespace.query_table(
            ln.QueryTableRequest(
                id=table,
                vector=QueryTableRequestVector(),
                filter=f"id >= {i * 10 + 100} AND id < {i * 10 + 200}",
                k=100,
            )
        ),
        "insert_into_table": lambda e, i: e.namespace.insert_into_table(ln.InsertIntoTableRequest(id=table), inserts),
        "merge_insert_into_table": lambda e, i: e.namespace.merge_insert_into_table(
            ln.MergeInsertIntoTableRequest(
                id=table, on=["id"], when_matched_update_all=True, when_not_matched_insert_all=True
            ),
            merges[i],
        ),
    }
    results: dict[str, Any] = {}
    for op, call in operations.items():
        timings = interleaved(
            {name: ((lambda i, e=engine, c=call: c(e, i)), None) for name, engine in engines.items()}, reps
        )
        results[op] = {name: timing.as_dict() for name, timing in timings.items()}
        log(f"  data plane {op}: " + ", ".join(f"{n} {t.p50:.2f} ms" for n, t in timings.items()))
    return results


def jobs(work: Path) -> list[Job]:
    """(results key, measure) of the section.

    :param work: the run's directory for catalogs.
    """
    return [("data_plane", lambda: run(work))]


def targets(results: dict[str, Any]) -> list[Target]:
    """Every data-plane p50 ≤ 1.1x the reference."""
    rows = []
    for op, engines in (results.get("data_plane") or {}).items():
        value = engines["ours"]["p50"] / engines["reference"]["p50"]
        rows.append(Target(f"{op} p50 (data plane)", f"≤ {GOAL}x", f"{value:.2f}x", value <= GOAL))
    return rows


def section(results: dict[str, Any]) -> list[str]:
    """The data-plane table."""
    data = results.get("data_plane")
    if not data:
        return []
    lines = [
        "## Data plane",
        "",
        "A table of 10,000 rows (id, name, score) in a child namespace, both engines, interleaved: "
        "CountTableRows, QueryTable with a range filter (100 rows), InsertIntoTable of 100 rows, "
        "MergeInsertIntoTable of 100 rows on `id` (half of them matching). Milliseconds.",
        "",
        "| operation | ours p50 | ours p95 | reference p50 | reference p95 | p50 ratio |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for op, engines in data.items():
        o, r = engines["ours"], engines["reference"]
        lines.append(
            f"| {op} | {o['p50']:.2f} | {o['p95']:.2f} | {r['p50']:.2f} | {r['p95']:.2f} | {o['p50'] / r['p50']:.2f}x |"
        )
    return [*lines, ""]
