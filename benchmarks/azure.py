"""The main operations on an Azure catalog (Azurite), our engine against the reference on the same emulator
(results key ``azure``): each engine on its own catalog of ``SIZE`` declared tables, repetitions interleaved."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import lance
import lance_namespace as ln
import pyarrow as pa

from benchmarks import catalog
from benchmarks.common import ENGINES, QUICK, Engine, Job, Operation, interleaved, log, ms, ratio
from tests.azurite import CONTAINER, AzuriteServer, start_azurite, stop

SIZE = 100 if QUICK else 1000
REPS = 5 if QUICK else 15


def _operations(engine: Engine, options: dict[str, str]) -> dict[str, Operation]:
    """name -> (operation(i), setup(i) or None) of the main catalog operations and a pylance write through the
    namespace (create, then append)."""
    ns = catalog.NAMESPACE
    table = pa.table({"x": [1, 2, 3]})

    def write(i: int, mode: str) -> Any:
        target = [ns, f"w{i}"]
        return lance.write_dataset(
            table, namespace_client=engine.namespace, table_id=target, mode=mode, storage_options=options
        )

    return {
        "describe_table": (
            lambda i: engine.call("describe_table", ln.DescribeTableRequest(id=[ns, f"t{i + 1}"])),
            None,
        ),
        "table_exists": (lambda i: engine.call("table_exists", ln.TableExistsRequest(id=[ns, f"t{i + 1}"])), None),
        "list_tables": (lambda i: engine.call("list_tables", ln.ListTablesRequest(id=[ns])), None),
        "create_namespace": (lambda i: engine.call("create_namespace", ln.CreateNamespaceRequest(id=[f"n{i}"])), None),
        "declare_table": (lambda i: engine.call("declare_table", ln.DeclareTableRequest(id=[ns, f"d{i}"])), None),
        "write_dataset (create)": (lambda i: write(i, "create"), None),
        "write_dataset (append)": (lambda i: write(i, "append"), None),
        "drop_table": (lambda i: engine.call("drop_table", ln.DropTableRequest(id=[ns, f"d{i}"])), None),
    }


def run() -> dict[str, Any]:
    """p50/p95 of each operation on Azurite, both engines, same catalog size."""
    results: dict[str, Any] = {"size": SIZE, "reps": REPS, "operations": {}}
    with tempfile.TemporaryDirectory(prefix="bench-azurite-") as location:
        process = start_azurite(location)
        try:
            server = AzuriteServer(process.url, process.pid)  # type: ignore[attr-defined]
            server.container().create_container()
            operations = {}
            for name, make in ENGINES.items():
                properties = server.properties(f"az://{CONTAINER}/bench-{name}")
                catalog.build_s3(properties, make(**properties).namespace, SIZE)
                operations[name] = _operations(make(**properties), server.storage_options())
            for op in operations["ours"]:
                timings = interleaved({name: operations[name][op] for name in ENGINES}, REPS)
                results["operations"][op] = {name: timing.as_dict() for name, timing in timings.items()}
                log(f"  azure {op}: " + ", ".join(f"{n} {t.p50:.1f} ms" for n, t in timings.items()))
        finally:
            stop(process)
    return results


def jobs(work: Path) -> list[Job]:
    """(results key, measure) of the section.

    :param work: the run's directory (unused: Azurite keeps its blobs in a directory of its own).
    """
    return [("azure", run)]


def section(results: dict[str, Any]) -> list[str]:
    """One table: p50 of each engine and the ratio."""
    data = results.get("azure")
    if not data:
        return []
    lines = [
        "## Azure (Azurite)",
        "",
        f"Each engine on its own `az://` catalog of {data['size']:,} declared tables on one Azurite process"
        f" (npm `azurite`, local disk), {data['reps']} repetitions interleaved; p50 in ms. Azurite is an"
        " emulator on the same machine: the figures compare the engines' request patterns, not Azure's latency."
        " Not profiled yet: where our commits lose to the reference here (its requests are not counted as the"
        " S3 section counts moto's).",
        "",
        "| operation | ours | reference | ours / reference |",
        "|---|---:|---:|---:|",
    ]
    for op, by_engine in data["operations"].items():
        mine, theirs = by_engine["ours"]["p50"], by_engine["reference"]["p50"]
        lines.append(f"| {op} | {ms(mine)} | {ms(theirs)} | {ratio(mine, theirs)} |")
    return [*lines, ""]
