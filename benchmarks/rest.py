"""The REST section of ``make bench``: our ``lance-namespace-server`` (over our engine) against the reference
``RestAdapter`` (pylance's Rust server over its directory namespace), in the same run, on the same machine.

Both servers run in processes of their own and are reached by the same client, pylance's Rust ``RestNamespace``,
from 1, 8 and 32 client threads: p50 per operation and total throughput for declares (catalog writes) and
describe / exists / list (catalog reads). Also: the REST overhead over a direct engine call (p50 of a describe),
32 clients declaring through one server against 8 processes declaring directly with the reference (the group
commit goal), and the storage requests of sensor pokes through REST on a request-counting S3 server (one poke;
32 concurrent pokes, which should share freshness checks).

``python -m benchmarks.rest`` runs it alone and rewrites its section of ``docs/benchmarks.md``;
``BENCH_QUICK=1`` for a smoke run.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import lance_namespace as ln

from benchmarks.common import QUICK, Job, Target, marked, write_section

CLIENTS = (1, 8, 32)
TABLES = 200  # declared before the reads
OPS_PER_KIND = 200 if QUICK else 1000  # reads of each kind per client count (split across the clients)
DECLARES = 64 if QUICK else 320  # declares per client count (split across the clients)
_NS = "b"


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


class _Server:
    """A server in a process of its own; ``url`` once it listens."""

    def __init__(self, command: list[str], env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env={**os.environ, **(env or {})}
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("Serving on "):
            self.process.kill()
            raise RuntimeError(f"the server did not start: {line!r}")
        self.url = line.split()[-1]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@contextmanager
def ours(properties: dict[str, str]) -> Iterator[_Server]:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(properties, handle)
    server = _Server(
        [
            str(Path(sys.executable).with_name("lance-namespace-server")),
            *("--port", "0", "--no-page", "--properties-file", handle.name, "--log-level", "warning"),
        ]
    )
    try:
        yield server
    finally:
        server.stop()
        os.unlink(handle.name)


@contextmanager
def reference(properties: dict[str, str]) -> Iterator[_Server]:
    server = _Server([sys.executable, "-m", "benchmarks.rest", "--serve-reference", json.dumps(properties)])
    try:
        yield server
    finally:
        server.stop()


def serve_reference(properties: dict[str, str]) -> None:
    """The reference RestAdapter on an ephemeral port until terminated (run in its own process)."""
    from lance.namespace import RestAdapter

    adapter = RestAdapter("dir", properties, host="127.0.0.1", port=0)
    adapter.start()
    print(f"Serving on http://127.0.0.1:{adapter.port}", flush=True)
    threading.Event().wait()


def _client(url: str) -> ln.LanceNamespace:
    from lance.namespace import RestNamespace

    return RestNamespace(uri=url)


def _concurrently(clients: int, total: int, make: Callable[[int], Callable[[int], None]]) -> dict[str, float]:
    """Run ``total`` calls split over ``clients`` threads (``make(worker)`` builds one thread's call); p50 in ms
    and calls/s."""
    latencies: list[float] = []
    lock = threading.Lock()
    per_client = max(1, total // clients)

    def worker(index: int) -> None:
        call = make(index)
        mine = []
        for i in range(per_client):
            started = time.perf_counter()
            call(i)
            mine.append(time.perf_counter() - started)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=worker, args=(c,)) for c in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    return {"p50_ms": _percentile(latencies, 0.5) * 1000, "per_s": len(latencies) / elapsed}


def _server_workload(url: str) -> dict[str, dict[str, dict[str, float]]]:
    """Declares, then reads, from 1, 8 and 32 clients against one server."""
    setup = _client(url)
    setup.create_namespace(ln.CreateNamespaceRequest(id=[_NS]))
    for i in range(TABLES):
        setup.declare_table(ln.DeclareTableRequest(id=[_NS, f"t{i}"]))
    results: dict[str, dict[str, dict[str, float]]] = {}
    for clients in CLIENTS:
        per: dict[str, dict[str, float]] = {}

        def declare(worker: int, clients: int = clients) -> Callable[[int], None]:
            client = _client(url)
            return lambda i: client.declare_table(ln.DeclareTableRequest(id=[_NS, f"d{clients}_{worker}_{i}"]))

        def describe(worker: int) -> Callable[[int], None]:
            client = _client(url)
            return lambda i: client.describe_table(ln.DescribeTableRequest(id=[_NS, f"t{(worker * 7 + i) % TABLES}"]))

        def exists(worker: int) -> Callable[[int], None]:
            client = _client(url)
            return lambda i: client.table_exists(ln.TableExistsRequest(id=[_NS, f"t{(worker * 7 + i) % TABLES}"]))

        def listing(worker: int) -> Callable[[int], None]:
            client = _client(url)
            return lambda i: client.list_tables(ln.ListTablesRequest(id=[_NS], limit=100))

        per["declare"] = _concurrently(clients, DECLARES, declare)
        for name, make in (("describe", describe), ("exists", exists), ("list", listing)):
            per[name] = _concurrently(clients, OPS_PER_KIND, make)
        results[str(clients)] = per
    return results


def _direct_describe_p50(properties: dict[str, str]) -> float:
    """p50 (ms) of a describe called on our engine in this process (what the REST overhead is measured over)."""
    from airflow_provider_lance.namespace import DirectoryNamespace

    engine = DirectoryNamespace(**properties)
    engine.describe_table(ln.DescribeTableRequest(id=[_NS, "t0"]))
    samples = []
    for i in range(OPS_PER_KIND):
        started = time.perf_counter()
        engine.describe_table(ln.DescribeTableRequest(id=[_NS, f"t{i % TABLES}"]))
        samples.append(time.perf_counter() - started)
    return _percentile(samples, 0.5) * 1000


def _reference_process_declares(root: str, worker: int, count: int, ready: Any, go: Any) -> None:
    from lance.namespace import DirectoryNamespace as Reference

    namespace = Reference(root=root)
    namespace.list_tables(ln.ListTablesRequest(id=[_NS]))  # imports and first read done before the clock starts
    ready.release()
    go.wait()
    for i in range(count):
        namespace.declare_table(ln.DeclareTableRequest(id=[_NS, f"p{worker}_{i}"]))


def _reference_processes(root: str, processes: int, total: int) -> float:
    """Writes/s of ``processes`` processes declaring directly with the reference on one root (timed from the
    moment all of them are ready, so process start-up does not count)."""
    from lance.namespace import DirectoryNamespace as Reference

    Reference(root=root).create_namespace(ln.CreateNamespaceRequest(id=[_NS]))
    context = multiprocessing.get_context("spawn")
    ready, go = context.Semaphore(0), context.Event()
    workers = [
        context.Process(target=_reference_process_declares, args=(root, w, total // processes, ready, go))
        for w in range(processes)
    ]
    for worker in workers:
        worker.start()
    for _ in workers:
        ready.acquire()
    started = time.perf_counter()
    go.set()
    for worker in workers:
        worker.join()
    return (total // processes) * processes / (time.perf_counter() - started)


def _pokes(work: Path) -> dict[str, Any]:
    """Storage requests of sensor pokes through our server on a request-counting S3 server."""
    from benchmarks.s3_counter import CountingS3Server

    results: dict[str, Any] = {}
    with CountingS3Server() as s3:
        properties = s3.properties("rest-pokes")
        with ours(properties) as server:
            client = _client(server.url)
            client.create_namespace(ln.CreateNamespaceRequest(id=[_NS]))
            client.declare_table(ln.DeclareTableRequest(id=[_NS, "t"]))
            request = ln.TableExistsRequest(id=[_NS, "t"])
            client.table_exists(request)  # the previous poke: the server is warm
            with s3.counting() as one:
                client.table_exists(request)
            results["one_poke"] = dict(one)
            clients = [_client(server.url) for _ in range(32)]
            barrier = threading.Barrier(32)

            def poke(c: ln.LanceNamespace) -> None:
                barrier.wait()
                c.table_exists(request)

            with s3.counting() as many:
                threads = [threading.Thread(target=poke, args=(c,)) for c in clients]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
            results["32_concurrent_pokes"] = dict(many)
    return results


def run() -> dict[str, Any]:
    """Every measurement of the section."""
    results: dict[str, Any] = {"quick": QUICK}
    with tempfile.TemporaryDirectory(prefix="bench-rest-") as work_dir:
        work = Path(work_dir)
        for name, serve in (("ours", ours), ("reference", reference)):
            root = work / name
            root.mkdir()
            with serve({"root": str(root)}) as server:
                results[name] = _server_workload(server.url)
            if name == "ours":
                results["direct_describe_p50_ms"] = _direct_describe_p50({"root": str(root)})
        root = work / "processes"
        root.mkdir()
        results["reference_8_processes_declares_per_s"] = _reference_processes(str(root), 8, DECLARES)
        results["pokes"] = _pokes(work)
    return results


def _ratio(mine: float, theirs: float) -> str:
    return f"{mine / theirs:.2f}x" if theirs else "n/a"


def report(results: dict[str, Any]) -> str:
    """The markdown of the section."""
    lines = [
        "## REST server (issue 19)",
        "",
        "Our `lance-namespace-server` (our engine) and the reference `RestAdapter` (pylance's Rust server over its"
        " directory namespace), each in its own process, reached by pylance's Rust `RestNamespace` from 1, 8 and"
        f" 32 threads; {TABLES} tables declared first, local disk. Throughput = calls/s of all clients together.",
        "",
        "| clients | operation | ours p50 ms | ref p50 ms | ours calls/s | ref calls/s | throughput ours / ref |",
        "|---|---|---|---|---|---|---|",
    ]
    for clients in CLIENTS:
        for operation in ("declare", "describe", "exists", "list"):
            mine, theirs = results["ours"][str(clients)][operation], results["reference"][str(clients)][operation]
            lines.append(
                f"| {clients} | {operation} | {mine['p50_ms']:.2f} | {theirs['p50_ms']:.2f} | {mine['per_s']:.0f} | "
                f"{theirs['per_s']:.0f} | {_ratio(mine['per_s'], theirs['per_s'])} |"
            )
    rest_describe = results["ours"]["1"]["describe"]["p50_ms"]
    overhead = rest_describe - results["direct_describe_p50_ms"]
    ours_32 = results["ours"]["32"]["declare"]["per_s"]
    processes = results["reference_8_processes_declares_per_s"]
    pokes = results["pokes"]
    lines += [
        "",
        f"- REST overhead over a direct engine call (describe, p50, 1 client): {overhead:.2f} ms "
        f"({rest_describe:.2f} ms through REST, {results['direct_describe_p50_ms']:.2f} ms direct); goal ≤ 1 ms.",
        f"- 32 clients declaring through one server: {ours_32:.0f} writes/s; 8 processes declaring directly with the "
        f"reference: {processes:.0f} writes/s: {_ratio(ours_32, processes)} (goal >= 5x).",
        f"- A sensor poke (`table_exists`) through REST: 1 HTTP request, storage requests {pokes['one_poke']} "
        "(goal ≤ 1).",
        f"- 32 concurrent pokes: storage requests {pokes['32_concurrent_pokes']} (goal: far fewer than 32).",
    ]
    return "\n".join(lines)


def jobs(work: Path) -> list[Job]:
    """(results key, measure) of the section.

    :param work: the run's directory for catalogs.
    """
    return [("rest", run)]


def targets(results: dict[str, Any]) -> list[Target]:
    """The goals of issue 19: REST overhead ≤ 1 ms, 32 clients through one server ≥ 5x the reference's 8
    processes, a poke through REST ≤ 1 storage request."""
    rest = results.get("rest")
    if not rest:
        return []
    overhead = rest["ours"]["1"]["describe"]["p50_ms"] - rest["direct_describe_p50_ms"]
    clients = rest["ours"]["32"]["declare"]["per_s"] / rest["reference_8_processes_declares_per_s"]
    poke = sum(rest["pokes"]["one_poke"].values())
    return [
        Target("REST overhead over a direct engine call (describe p50)", "≤ 1 ms", f"{overhead:.2f} ms", overhead <= 1),
        Target("32 REST clients declaring ÷ the reference's 8 processes", "≥ 5x", f"{clients:.2f}x", clients >= 5),
        Target("a sensor poke through REST, storage requests", "≤ 1", str(poke), poke <= 1),
    ]


def section(results: dict[str, Any]) -> list[str]:
    """The section in the page (between its markers), when measured."""
    return [marked("rest", report(results["rest"])), ""] if "rest" in results else []


def main() -> int:
    results = run()
    markdown = report(results)
    print(markdown)
    write_section("rest", markdown)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--serve-reference":
        serve_reference(json.loads(sys.argv[2]))
    else:
        sys.exit(main())
