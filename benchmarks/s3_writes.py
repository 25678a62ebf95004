"""Storage requests and latency of each single write on S3 (results key ``s3_writes``). Every request is counted
at the moto server of :mod:`benchmarks.s3_counter` (its own process), whoever sends it: our s3fs calls and
Lance's Rust ``object_store``."""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import lance
import lance_namespace as ln
import pyarrow as pa

from benchmarks import catalog
from benchmarks.common import ENGINES, QUICK, Engine, Job, Operation, interleaved, kinds, log
from benchmarks.s3_counter import CountingS3Server

SIZE = 300 if QUICK else 1000
REPS = 3 if QUICK else 7


def _operations(engine: Engine, properties: dict[str, str]) -> dict[str, Operation]:
    """name -> (operation(i), setup(i) or None) of every single write, on an S3 catalog."""
    ns = catalog.NAMESPACE
    root, options = properties["root"], catalog.s3_options(properties)
    data = [ns, "data"]
    declared = engine.call("declare_table", ln.DeclareTableRequest(id=data))
    lance.write_dataset(pa.table({"x": [1]}), declared.location, mode="append", storage_options=options)
    staged: dict[int, ln.CreateTableVersionEntry] = {}

    def register_setup(i: int) -> None:
        lance.write_dataset(pa.table({"x": [i]}), f"{root}/registered{i}", storage_options=options)

    def version_setup(i: int) -> None:
        from airflow_provider_lance.staging import stage_data

        staged[i] = stage_data(engine.namespace, data, pa.table({"x": [i]}), storage_options=options)

    def create_version(i: int) -> Any:
        entry = staged[i]
        request = ln.CreateTableVersionRequest(id=entry.id, version=entry.version, manifest_path=entry.manifest_path)
        return engine.call("create_table_version", request)

    return {
        "create_namespace": (lambda i: engine.call("create_namespace", ln.CreateNamespaceRequest(id=[f"n{i}"])), None),
        "declare_table": (lambda i: engine.call("declare_table", ln.DeclareTableRequest(id=[ns, f"new{i}"])), None),
        "register_table": (
            lambda i: engine.call(
                "register_table", ln.RegisterTableRequest(id=[ns, f"reg{i}"], location=f"registered{i}")
            ),
            register_setup,
        ),
        "create_table_version": (create_version, version_setup),
        "drop_table": (lambda i: engine.call("drop_table", ln.DropTableRequest(id=[ns, f"new{i}"])), None),
        "deregister_table": (
            lambda i: engine.call("deregister_table", ln.DeregisterTableRequest(id=[ns, f"reg{i}"])),
            None,
        ),
    }


def run() -> dict[str, Any]:
    """Requests (by kind) and latency of each single write operation on moto S3, both engines, same catalog
    size; repetition i runs on one engine then the other (order alternating)."""
    results: dict[str, Any] = {"size": SIZE, "reps": REPS, "operations": {}}
    with CountingS3Server() as server:
        operations = {}
        for name, make in ENGINES.items():
            properties = server.properties(f"writes-{name}")
            catalog.build_s3(properties, make(**properties).namespace, SIZE)
            operations[name] = _operations(make(**properties), properties)
        for op in operations["ours"]:
            requests: dict[str, list[dict[str, int]]] = {name: [] for name in ENGINES}

            @contextmanager
            def counted(name: str, i: int, requests: dict[str, list[dict[str, int]]] = requests) -> Iterator[None]:
                with server.counting() as counts:
                    yield
                if i >= 0:
                    requests[name].append(dict(counts))

            timings = interleaved({name: operations[name][op] for name in ENGINES}, REPS, counted)
            results["operations"][op] = {
                name: {
                    "p50": timings[name].p50,
                    "requests": statistics.median(sum(r.values()) for r in requests[name]),
                    "kinds": _median_kinds(requests[name]),
                }
                for name in ENGINES
            }
            log(
                f"  S3 {op}: "
                + ", ".join(
                    f"{n} {v['requests']:.0f} req {v['p50']:.0f} ms" for n, v in results["operations"][op].items()
                )
            )
    return results


def _median_kinds(samples: list[dict[str, int]]) -> dict[str, float]:
    names = sorted({k for sample in samples for k in sample})
    return {k: statistics.median(sample.get(k, 0) for sample in samples) for k in names}


def jobs(work: Path) -> list[Job]:
    """(results key, measure) of the section.

    :param work: the run's directory for catalogs.
    """
    return [("s3_writes", run)]


def section(results: dict[str, Any]) -> list[str]:
    """The requests-per-write table."""
    s3 = results.get("s3_writes")
    if not s3:
        return []
    lines = [
        f"## Storage requests per write on S3 (moto, {s3['size']:,} tables)",
        "",
        "Every HTTP request counted at the moto server (its own process) while one write runs, whoever sends "
        f"it; median of {s3['reps']} repetitions per operation, both engines interleaved. Latency includes "
        "moto's own processing on this 2-core machine.",
        "",
        "| operation | ours requests | reference requests | ours by kind | reference by kind | ours ms"
        " | reference ms |",
        "|---|---:|---:|---|---|---:|---:|",
    ]
    for op, engines in s3["operations"].items():
        o, r = engines["ours"], engines["reference"]
        lines.append(
            f"| {op} | {o['requests']:g} | {r['requests']:g} | {kinds(o['kinds'])} | {kinds(r['kinds'])} |"
            f" {o['p50']:.0f} | {r['p50']:.0f} |"
        )
    return [*lines, ""]
