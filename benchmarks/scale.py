"""Benchmarks beyond one call at a time: S3 requests per write, threads, writer processes, the data plane.

Every section measures both engines in the same run, interleaved where it times them, and reports ratios
ours / reference (or ours 16 threads / ours 1 thread). S3 runs against the request-counting moto server of
:mod:`benchmarks.s3_counter` (its own process, started and stopped by pid), so requests are counted whoever
sends them: our s3fs calls, Lance's Rust ``object_store``, and other writer processes.
"""

from __future__ import annotations

import multiprocessing
import statistics
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import lance
import lance_namespace as ln
import pyarrow as pa
from lance_namespace_urllib3_client.models import QueryTableRequestVector

from benchmarks import catalog
from benchmarks.run import QUICK, Engine, Timing, log, ours, reference
from benchmarks.s3_counter import CountingS3Server

ENGINES: dict[str, Callable[..., Engine]] = {"ours": ours, "reference": reference}
S3_SIZE = 300 if QUICK else 1000
WRITE_REPS = 3 if QUICK else 7


def s3_options(properties: dict[str, str]) -> dict[str, str]:
    """Lance storage options of a namespace's ``storage.*`` properties."""
    return {k[len("storage.") :]: v for k, v in properties.items() if k.startswith("storage.")}


def build_s3(properties: dict[str, str], make: Callable[..., Engine], size: int) -> None:
    """A catalog on S3: the namespace ``bench`` (created by the engine under test, so the `__manifest` is its
    own) and ``size`` declared table rows in it, appended in bulk."""
    builder = make(**properties)
    builder.call("create_namespace", ln.CreateNamespaceRequest(id=[catalog.NAMESPACE]))
    rows = [
        {
            "object_id": f"{catalog.NAMESPACE}$t{i}",
            "object_type": "table",
            "location": f"x{i}",
            "metadata": None,
            "base_objects": None,
        }
        for i in range(size)
    ]
    lance.dataset(properties["root"] + "/__manifest", storage_options=s3_options(properties)).insert(
        pa.Table.from_pylist(rows, schema=catalog.SCHEMA)
    )


# -- S3 requests per write operation ---------------------------------------------------------------------------
def _write_operations(engine: Engine, properties: dict[str, str]) -> dict[str, tuple[Callable[[int], Any], Any]]:
    """name -> (operation(i), setup(i) or None) of every single write, on an S3 catalog."""
    ns = catalog.NAMESPACE
    root, options = properties["root"], s3_options(properties)
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


def s3_writes() -> dict[str, Any]:
    """Requests (by kind) and latency of each single write operation on moto S3, both engines, same catalog
    size; repetition i runs on one engine then the other (order alternating)."""
    results: dict[str, Any] = {"size": S3_SIZE, "reps": WRITE_REPS, "operations": {}}
    with CountingS3Server() as server:
        operations = {}
        for name, make in ENGINES.items():
            properties = server.properties(f"writes-{name}")
            build_s3(properties, make, S3_SIZE)
            operations[name] = _write_operations(make(**properties), properties)
        for op in operations["ours"]:
            per_engine: dict[str, dict[str, Any]] = {name: {"ms": [], "requests": []} for name in ENGINES}
            for i in range(-1, WRITE_REPS):  # -1: warm-up
                for name in ENGINES if i % 2 == 0 else reversed(ENGINES):
                    operation, setup = operations[name][op]
                    if setup:
                        setup(i)
                    with server.counting() as counts:
                        started = time.perf_counter()
                        operation(i)
                        elapsed = (time.perf_counter() - started) * 1000
                    if i >= 0:
                        per_engine[name]["ms"].append(elapsed)
                        per_engine[name]["requests"].append(dict(counts))
            results["operations"][op] = {
                name: {
                    "p50": statistics.median(entry["ms"]),
                    "requests": statistics.median(sum(r.values()) for r in entry["requests"]),
                    "kinds": _median_kinds(entry["requests"]),
                }
                for name, entry in per_engine.items()
            }
            log(
                f"  S3 {op}: "
                + ", ".join(
                    f"{n} {v['requests']:.0f} req {v['p50']:.0f} ms" for n, v in results["operations"][op].items()
                )
            )
    return results


def _median_kinds(samples: list[dict[str, int]]) -> dict[str, float]:
    kinds = sorted({k for sample in samples for k in sample})
    return {k: statistics.median(sample.get(k, 0) for sample in samples) for k in kinds}


# -- threads ------------------------------------------------------------------------------------------------------
READ_THREADS = 16
WRITE_THREADS = 4


def _throughput(call: Callable[[int], Any], total: int, threads: int) -> float:
    """Calls per second of ``total`` calls spread over ``threads`` threads."""
    started = time.perf_counter()
    if threads == 1:
        for i in range(total):
            call(i)
    else:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(call, range(total)))
    return total / (time.perf_counter() - started)


def _reads(engine: Engine, size: int) -> Callable[[int], Any]:
    ns = catalog.NAMESPACE

    def read(i: int) -> Any:
        table = [ns, f"t{(i * 7919 + 13) % size}"]
        if i % 2:
            return engine.call("table_exists", ln.TableExistsRequest(id=table))
        return engine.call("describe_table", ln.DescribeTableRequest(id=table))

    return read


STORAGES = {"local": None, "s3": 0.0, "s3 + 20 ms round trip": 20.0}  # name -> moto latency (ms), None = disk


def threads() -> dict[str, Any]:
    """Reads through one instance from 1 and 16 threads (local disk, moto S3, and moto S3 answering 20 ms late
    like a remote store), and DeclareTable from 1 and 4 threads (nothing may be lost). Rounds alternate 1-thread
    and N-thread runs; the best round counts. On S3 the server's own ceiling (bare 1-key LISTs) is measured too."""
    size = 300 if QUICK else 1000
    rounds = 2 if QUICK else 3
    results: dict[str, Any] = {}
    work = Path(catalog.tempfile_dir("threads"))
    for storage, latency in STORAGES.items():
        reads_total = 400 if QUICK else 1600
        writes_total = 12 if QUICK else 40
        if latency is not None:
            reads_total, writes_total = (64, 8) if QUICK else (192, 16)
        with CountingS3Server(latency_ms=latency or 0.0) as server:
            if latency is not None:
                results.setdefault("_server", {})[storage] = _server_ceiling(server, reads_total)
            for name, make in ENGINES.items():
                if latency is None:
                    root = work / name
                    catalog.build(root, size)
                    engine = make(root)
                else:
                    properties = server.properties(f"threads-{name}")
                    build_s3(properties, make, size)
                    engine = make(**properties)
                results.setdefault(storage, {})[name] = _thread_rounds(engine, size, reads_total, writes_total, rounds)
                log(f"  threads {storage} {name}: {results[storage][name]}")
                if latency is None:
                    catalog.remove(work / name)
    catalog.remove(work)
    return results


def _server_ceiling(server: CountingS3Server, total: int) -> dict[str, float]:
    """Requests/s the moto server answers to bare ``LIST MaxKeys=1`` calls from 1 and 16 threads (boto3)."""
    import boto3

    client = boto3.client(
        "s3", endpoint_url=server.endpoint, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )

    def probe(i: int) -> Any:
        return client.list_objects_v2(Bucket="bench", Prefix="none/", MaxKeys=1)

    probe(0)
    return {"reads_1": _throughput(probe, total, 1), f"reads_{READ_THREADS}": _throughput(probe, total, READ_THREADS)}


def _thread_rounds(engine: Engine, size: int, reads_total: int, writes_total: int, rounds: int) -> dict[str, Any]:
    read = _reads(engine, size)
    for i in range(8):  # warm: the first read opens __manifest
        read(i)
    single, many = [], []
    for _ in range(rounds):
        single.append(_throughput(read, reads_total, 1))
        many.append(_throughput(read, reads_total, READ_THREADS))
    landed: dict[int, tuple[float, bool]] = {}
    for r, count in enumerate((1, WRITE_THREADS, 1, WRITE_THREADS)):
        names = [f"w{r}_{i}" for i in range(writes_total)]

        def declare(i: int, names: list[str] = names) -> Any:
            return engine.call("declare_table", ln.DeclareTableRequest(id=[catalog.NAMESPACE, names[i]]))

        rate = _throughput(declare, writes_total, count)
        listed = set(_list_all(engine))
        best, all_ok = landed.get(count, (0.0, True))
        landed[count] = (max(best, rate), all_ok and all(n in listed for n in names))
    return {
        "reads_1": max(single),
        f"reads_{READ_THREADS}": max(many),
        "writes_1": landed[1][0],
        f"writes_{WRITE_THREADS}": landed[WRITE_THREADS][0],
        "writes_landed": landed[1][1] and landed[WRITE_THREADS][1],
    }


def _list_all(engine: Engine) -> list[str]:
    names: list[str] = []
    token = None
    while True:
        answer = engine.call("list_tables", ln.ListTablesRequest(id=[catalog.NAMESPACE], page_token=token))
        names.extend(answer.tables)
        token = answer.page_token
        if not token:
            return names


# -- writer processes -----------------------------------------------------------------------------------------------
def _writer(
    engine_name: str, properties: dict[str, str], prefix: str, count: int, barrier: Any
) -> tuple[float, int, int]:
    """One writer process: wait for the others, then declare ``count`` tables; returns (seconds, retries, failed)."""
    engine = ENGINES[engine_name](**properties)
    engine.call("namespace_exists", ln.NamespaceExistsRequest(id=[catalog.NAMESPACE]))  # open before the start
    barrier.wait()
    started = time.perf_counter()
    retries = failed = 0
    for i in range(count):
        for attempt in range(10):
            try:
                engine.call("declare_table", ln.DeclareTableRequest(id=[catalog.NAMESPACE, f"{prefix}_{i}"]))
                break
            except ln.TableAlreadyExistsError:
                break  # an earlier attempt landed although it reported an error
            except Exception:  # a conflict the engine gave up on: the caller retries
                retries += 1
                if attempt == 9:
                    failed += 1
    return time.perf_counter() - started, retries, failed


def _writers(
    pool: Any, manager: Any, engine_name: str, properties: dict[str, str], processes: int, count: int, label: str
) -> dict[str, Any]:
    barrier = manager.Barrier(processes + 1)
    pending = [
        pool.apply_async(_writer, (engine_name, properties, f"{label}p{p}", count, barrier)) for p in range(processes)
    ]
    barrier.wait(timeout=120)
    started = time.perf_counter()
    reports = [result.get(timeout=600) for result in pending]
    wall = time.perf_counter() - started
    engine = ENGINES[engine_name](**properties)
    listed = set(_list_all(engine))
    expected = {f"{label}p{p}_{i}" for p in range(processes) for i in range(count)}
    return {
        "writes": len(expected),
        "seconds": wall,
        "writes_per_s": len(expected) / wall,
        "landed": len(expected & listed),
        "retries": sum(r[1] for r in reports),
        "failed": sum(r[2] for r in reports),
    }


def processes() -> dict[str, Any]:
    """4 and 8 writer processes (of one pool of 8 spawned processes) declaring tables in one catalog (local disk
    and moto S3), both engines; every write must land. On S3 the counting server also gives requests per write
    (all processes together)."""
    size = 300 if QUICK else 1000
    counts = {"local": 5 if QUICK else 12, "s3": 2 if QUICK else 4}
    results: dict[str, Any] = {}
    work = Path(catalog.tempfile_dir("writers"))
    context = multiprocessing.get_context("spawn")  # lance is not fork-safe; the pool's imports are paid once
    with CountingS3Server() as server, context.Pool(8) as pool, context.Manager() as manager:
        for storage in ("local", "s3"):
            for writers in (4, 8):
                for name, make in ENGINES.items():
                    if storage == "local":
                        root = work / f"{name}-{writers}"
                        catalog.build(root, size)
                        properties = {"root": str(root)}
                    else:
                        properties = server.properties(f"writers-{name}-{writers}")
                        build_s3(properties, make, size)
                    with server.counting() as requests:
                        outcome = _writers(
                            pool, manager, name, properties, writers, counts[storage], f"{storage}{writers}"
                        )
                    if storage == "s3":
                        outcome["requests_per_write"] = sum(requests.values()) / outcome["writes"]
                        outcome["kinds_per_write"] = {k: v / outcome["writes"] for k, v in requests.items()}
                    results.setdefault(storage, {}).setdefault(str(writers), {})[name] = outcome
                    log(f"  writers {storage} x{writers} {name}: {outcome}")
    catalog.remove(work)
    return results


# -- data plane ------------------------------------------------------------------------------------------------
DATA_ROWS = 10_000


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _rows(count: int, start: int = 0) -> pa.Table:
    ids = list(range(start, start + count))
    return pa.table({"id": pa.array(ids, pa.int64()), "name": [f"n{i}" for i in ids], "score": [i * 0.5 for i in ids]})


def data_plane() -> dict[str, Any]:
    """CountTableRows, QueryTable with a filter, InsertIntoTable and MergeInsertIntoTable on a table of 10,000
    rows in a child namespace, both engines, interleaved."""
    reps = 5 if QUICK else 25
    work = Path(catalog.tempfile_dir("data"))
    table = ["w", "t"]
    engines = {}
    for name, make in ENGINES.items():
        engine = make(work / name)
        engine.call("create_namespace", ln.CreateNamespaceRequest(id=["w"]))
        engine.namespace.create_table(ln.CreateTableRequest(id=table), _ipc(_rows(DATA_ROWS)))
        engines[name] = engine
    inserts = _ipc(_rows(100, start=10**6))
    merges = {i: _ipc(_rows(100, start=DATA_ROWS - 50 + 1000 * i)) for i in range(-1, reps)}
    operations: dict[str, Callable[[Engine, int], Any]] = {
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
        timings = {name: Timing() for name in engines}
        for i in range(-1, reps):
            for name in list(engines) if i % 2 == 0 else list(reversed(engines)):
                started = time.perf_counter()
                call(engines[name], i)
                if i >= 0:
                    timings[name].samples.append((time.perf_counter() - started) * 1000)
        results[op] = {name: timing.as_dict() for name, timing in timings.items()}
        log(f"  data plane {op}: " + ", ".join(f"{n} {t.p50:.2f} ms" for n, t in timings.items()))
    catalog.remove(work)
    return results


def requests_text(kinds: dict[str, float]) -> str:
    """``GET 2, PUT 1`` of a by-kind count."""
    return ", ".join(f"{k} {v:g}" for k, v in sorted(Counter(kinds).items()) if v) or "none"
