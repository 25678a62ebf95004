"""Soak: 4 writer processes on one S3 catalog (moto) through the fault-injecting proxy (tests/fault_proxy.py),
first without faults, then at a 10 % fault rate (lost acknowledgements, throttling, resets, latency in equal
parts). Each write is a declare of a new table or a one-row commit to the writer's own table (a managed table
version); an operation that fails is retried once, as a scheduler would.

Reports writes/s with faults ÷ without, and checks through a clean engine that nothing was lost (every write
reported done is there) and nothing doubled (no row or table id twice), with the engine's check mode on
(``manifest_check_rows``: a row state that differs from storage fails the write). ``python -m benchmarks.soak``.
"""

from __future__ import annotations

import json
import multiprocessing
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import lance
import lance_namespace as ln
import pyarrow as pa

from airflow_provider_lance.namespace import DirectoryNamespace
from benchmarks.common import QUICK, Job, Target
from tests.fault_proxy import FaultProxy, FaultRates
from tests.s3.conftest import BUCKET, MotoServer, start_moto, stop

WRITERS = 4
RATE = 0.10
# check mode (manifest_check_rows): every derived or incrementally read __manifest version is compared with a
# fresh read, so that faults cannot hide a wrong row state behind a passing count
_MANAGED = {"table_version_management": "true", "manifest_check_rows": "true"}


def _writer(properties: dict[str, str], writer: int, seconds: float, phase: str, out: Any) -> None:
    """Write for ``seconds``; report the writes that succeeded (possibly after one retry) and those that failed."""
    ns = DirectoryNamespace(**properties)
    table = ["p", f"{phase}_w{writer}"]
    done: list[str] = []
    failed: list[str] = []
    deadline = time.monotonic() + seconds
    step = 0
    while time.monotonic() < deadline:
        key = f"{phase}-{writer}-{step}"
        if step % 2 == 0:
            call = lambda key=key: ns.declare_table(ln.DeclareTableRequest(id=["p", key.replace("-", "_")]))  # noqa: E731
            already: tuple[type[Exception], ...] = (ln.TableAlreadyExistsError,)
        else:
            data = pa.table({"key": [key]})
            call = lambda data=data: lance.write_dataset(data, namespace_client=ns, table_id=table, mode="append")  # noqa: E731
            already = ()
        for attempt in range(2):
            try:
                call()
            except Exception as error:
                if attempt and isinstance(error, already):
                    done.append(key)  # the first attempt landed: the retry finds it done
                    break
                if attempt:
                    failed.append(f"{key}: {type(error).__name__}")
                continue
            done.append(key)
            break
        step += 1
    out.put({"writer": writer, "done": done, "failed": failed})


def _phase(properties: dict[str, str], phase: str, seconds: float) -> dict[str, Any]:
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    processes = [
        context.Process(target=_writer, args=(properties, writer, seconds, phase, out)) for writer in range(WRITERS)
    ]
    started = time.perf_counter()
    for process in processes:
        process.start()
    reports = [out.get(timeout=seconds + 240) for _ in processes]
    for process in processes:
        process.join(timeout=60)
    elapsed = time.perf_counter() - started
    done = [key for report in reports for key in report["done"]]
    failed = [item for report in reports for item in report["failed"]]
    # every writer writes for ``seconds`` once started (process start-up is not counted)
    return {"elapsed": elapsed, "done": done, "failed": failed, "writes_per_s": len(done) / seconds}


def _check(clean: DirectoryNamespace, phase: str, result: dict[str, Any]) -> dict[str, int]:
    """Lost: a write reported done that is not there; doubled: a row or table id present twice."""
    tables = clean.list_tables(ln.ListTablesRequest(id=["p"])).tables
    table_counts = Counter(tables)
    keys: Counter[str] = Counter()
    for writer in range(WRITERS):
        name = f"{phase}_w{writer}"
        if name in table_counts:
            keys.update(lance.dataset(namespace_client=clean, table_id=["p", name]).to_table()["key"].to_pylist())
    lost = doubled = 0
    for key in result["done"]:
        step = int(key.rsplit("-", 1)[1])
        present = (key.replace("-", "_") in table_counts) if step % 2 == 0 else keys[key] > 0
        lost += not present
    doubled += sum(count - 1 for count in keys.values() if count > 1)
    doubled += sum(count - 1 for count in table_counts.values() if count > 1)
    return {"lost": lost, "doubled": doubled}


def run(quick: bool = False) -> dict[str, Any]:
    seconds = 8.0 if quick else 45.0
    process, endpoint = start_moto()
    try:
        moto = MotoServer(endpoint, process.pid)
        moto.client().create_bucket(Bucket=BUCKET)
        root = f"s3://{BUCKET}/soak-{uuid.uuid4().hex[:8]}"
        clean = DirectoryNamespace(**moto.properties(root, **_MANAGED))
        clean.create_namespace(ln.CreateNamespaceRequest(id=["p"]))
        results: dict[str, Any] = {"writers": WRITERS, "fault_rate": RATE, "seconds_per_phase": seconds}
        with FaultProxy(endpoint, FaultRates(), seed=2026) as proxy:
            properties = MotoServer(proxy.endpoint, 0).properties(root, **_MANAGED)
            for phase, rates in (("clean", FaultRates()), ("faults", FaultRates.uniform(RATE))):
                proxy.set_rates(rates)
                for writer in range(WRITERS):  # each writer's table exists before it appends
                    data = pa.table({"key": [f"{phase}-{writer}-init"]})
                    lance.write_dataset(
                        data, namespace_client=clean, table_id=["p", f"{phase}_w{writer}"], mode="create"
                    )
                before = proxy.totals()
                result = _phase(properties, phase, seconds)
                after = proxy.totals()
                checked = _check(clean, phase, result)
                results[phase] = {
                    "writes": len(result["done"]),
                    "writes_per_s": round(result["writes_per_s"], 2),
                    "failed": len(result["failed"]),
                    "failures": sorted(Counter(item.split(": ", 1)[1] for item in result["failed"]).items()),
                    "injected": {fault: after[fault] - before[fault] for fault in after},
                    **checked,
                }
        results["ratio"] = round(results["faults"]["writes_per_s"] / results["clean"]["writes_per_s"], 2)
        return results
    finally:
        stop(process)


def render(results: dict[str, Any]) -> str:
    """The soak section of docs/benchmarks.md."""
    lines = [
        "## Soak: writers on S3 through lost acknowledgements, throttling, resets and latency",
        "",
        f"{results['writers']} writer processes on one S3 catalog (moto) through the fault-injecting proxy "
        "(`tests/fault_proxy.py`), each writing for "
        f"{results['seconds_per_phase']:.0f} s per phase: first without faults, then with "
        f"{results['fault_rate']:.0%} of requests faulted (lost acknowledgements, throttling, resets, latency in equal "
        "parts). A write is a declare of a new table or a one-row commit to the writer's own table (table version "
        "management on); a failed write is retried once. Checked afterwards through a clean engine: lost = a "
        "write reported done that is not there, doubled = a row or table id present twice "
        "(`python -m benchmarks.soak`).",
        "",
        "| phase | writes | writes/s | failed | lost acks | throttles | resets | latency | lost | doubled |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for phase in ("clean", "faults"):
        row = results[phase]
        injected = row["injected"]
        lines.append(
            f"| {phase} | {row['writes']} | {row['writes_per_s']} | {row['failed']} | {injected['lost_ack']} | "
            f"{injected['throttle']} | {injected['reset']} | {injected['latency']} | {row['lost']} | {row['doubled']} |"
        )
    lines += ["", f"Writes/s with faults ÷ without: **{results['ratio']}**.", ""]
    return "\n".join(lines)


def jobs(work: Path) -> list[Job]:
    """(results key, measure) of the section.

    :param work: the run's directory for catalogs.
    """
    return [("soak", lambda: run(QUICK))]


def targets(results: dict[str, Any]) -> list[Target]:
    """Nothing lost and nothing doubled, with and without faults."""
    soak = results.get("soak")
    if not soak:
        return []
    bad = {phase: soak[phase]["lost"] + soak[phase]["doubled"] for phase in ("clean", "faults")}
    measured = ", ".join(f"{phase}: {soak[phase]['lost']} lost, {soak[phase]['doubled']} doubled" for phase in bad)
    name = f"soak: {soak['writers']} writer processes on S3, {soak['fault_rate']:.0%} faults, writes lost or doubled"
    return [Target(name, "0", measured, not any(bad.values()))]


def section(results: dict[str, Any]) -> list[str]:
    """The section in the page, when measured."""
    return [render(results["soak"])] if "soak" in results else []


if __name__ == "__main__":
    measured = run(quick="--quick" in sys.argv)
    print(json.dumps(measured, indent=2))
    print(render(measured))
