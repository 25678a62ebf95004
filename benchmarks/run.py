"""``python -m benchmarks``: our engine against the reference (pylance's Rust ``DirectoryNamespace``) in one run.

Writes ``docs/benchmarks.md`` (and the raw numbers to ``benchmarks/results/latest.json``). ``BENCH_QUICK=1``
runs a small smoke version in about a minute and writes ``benchmarks/results/quick.{md,json}`` instead.
``BENCH_ONLY=operations,poke`` runs some sections (to ``benchmarks/results/partial.json`` only; the last full
run's ``latest.json`` and the page stay as they are), ``BENCH_SIZES=1000`` picks catalog sizes,
``BENCH_DIR`` keeps the catalogs in a directory of your choice.

Sections: every operation at 300 and 1,000 tables (here), BatchCreateTableVersions, latency after 10,000
writes, requests per sensor poke (here); S3 requests per write, threads, writer processes and the data plane
(``benchmarks/scale.py``); Spark staging against Spark's Parquet writer (``benchmarks/spark_staging.py``). The
goals and what the page says about each miss: ``benchmarks/report.py`` and ``benchmarks/report_scale.py``.
"""

from __future__ import annotations

import gc
import importlib
import json
import logging
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lance
import lance_namespace as ln
from lance.namespace import DirectoryNamespace as ReferenceNamespace

from airflow_provider_lance.namespace import DirectoryNamespace
from benchmarks import catalog
from benchmarks.report import render

QUICK = os.environ.get("BENCH_QUICK", "") not in ("", "0", "false")
REPO = Path(__file__).resolve().parent.parent
# A quick (smoke) run must not overwrite the real numbers: it writes its page next to its JSON.
DOC = Path(__file__).resolve().parent / "results" / "quick.md" if QUICK else REPO / "docs" / "benchmarks.md"
ONLY = set(filter(None, os.environ.get("BENCH_ONLY", "").split(",")))
# A partial run (BENCH_ONLY or BENCH_SIZES) must not overwrite the last full run's numbers (docs/benchmarks.md
# is rendered from latest.json): it writes partial.json and leaves the page alone.
PARTIAL = bool(ONLY or os.environ.get("BENCH_SIZES"))
RESULTS = (
    Path(__file__).resolve().parent
    / "results"
    / ("quick.json" if QUICK else "partial.json" if PARTIAL else "latest.json")
)

# 300 and 1,000: the write goals; BENCH_SIZES=300,1000,10000 adds the large catalog (+2-3 minutes).
SIZES = [int(n) for n in os.environ.get("BENCH_SIZES", "").split(",") if n] or ([300] if QUICK else [300, 1000])
REPS = 5 if QUICK else 30
REPS_LARGE = 5 if QUICK else 15  # at 10,000 tables
ROOT_LIST_REPS = 3 if QUICK else 7
WRITE_CHECKPOINTS = [100, 300] if QUICK else [100, 1000, 10000]
REFERENCE_WRITE_CHECKPOINTS = [100, 300] if QUICK else [100, 1000]
BATCH_SIZES = [1, 10] if QUICK else [1, 10, 100]
BATCH_ROUNDS = 1 if QUICK else 5  # medians of 5 rounds: this 2-core machine is often shared
POKE_SIZES = [int(n) for n in os.environ.get("BENCH_SIZES", "").split(",") if n] or (
    [100] if QUICK else [100, 1000, 10000]
)
LIST_VERSIONS = 20  # versions of the table that ListTableVersions / DescribeTableVersion read

# The reference's version methods take plain dicts (its other methods take request models).
_REFERENCE_DICT_METHODS = {"create_table_version", "describe_table_version", "batch_delete_table_versions"}


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", flush=True)


@dataclass
class Engine:
    """One implementation behind a uniform ``call``."""

    name: str
    namespace: Any

    def call(self, method: str, request: Any) -> Any:
        if self.name == "reference" and method in _REFERENCE_DICT_METHODS:
            request = request.model_dump(exclude_none=True)
        return getattr(self.namespace, method)(request)


def ours(root: Path | str, **properties: str) -> Engine:
    return Engine("ours", DirectoryNamespace(root=str(root), **properties))


def reference(root: Path | str, **properties: str) -> Engine:
    return Engine("reference", ReferenceNamespace(root=str(root), **properties))


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


@dataclass
class Timing:
    samples: list[float] = field(default_factory=list)  # milliseconds

    @property
    def p50(self) -> float:
        return statistics.median(self.samples)

    @property
    def p95(self) -> float:
        return percentile(self.samples, 0.95)

    def as_dict(self) -> dict[str, float]:
        return {"p50": self.p50, "p95": self.p95, "n": len(self.samples)}


def measure(
    operation: Callable[[int], Any], reps: int, setup: Callable[[int], Any] | None = None, warmup: bool = True
) -> Timing:
    """Time ``operation(i)`` for i in range(reps) (``setup(i)`` runs untimed before each)."""
    timing = Timing()
    if warmup:
        if setup:
            setup(-1)
        operation(-1)
    gc.collect()
    for i in range(reps):
        if setup:
            setup(i)
        start = time.perf_counter()
        operation(i)
        timing.samples.append((time.perf_counter() - start) * 1000)
    return timing


# -- 1. every operation at 100 / 1,000 / 10,000 tables ------------------------------------------------------------
Operation = tuple[Callable[[int], Any], Callable[[int], Any] | None]


def operations_at(size: int, work: Path, template: Path) -> dict[str, dict[str, Any]]:
    """Both engines on copies of one catalog, measured interleaved: repetition i runs the operation on one
    engine then the other (the order alternates), so background load hits both alike."""
    reps = REPS_LARGE if size >= 10000 else REPS
    base = work / f"catalog-{size}"
    log(f"building a catalog of {size} root + {size} child-namespace tables")
    started = time.perf_counter()
    data = catalog.build(base, size, data_tables=2, template=template)
    catalog.install_data(template, data["data1"], LIST_VERSIONS)
    built = time.perf_counter() - started
    results: dict[str, dict[str, Any]] = {"_meta": {"build_seconds": built, "reps": reps}}
    engines = []
    for make in (ours, reference):
        root = work / f"catalog-{size}-{make.__name__}"
        catalog.copy(base, root)
        engines.append((make(root), root))
    catalog.remove(base)
    specs = [
        (name, count, [factory(engine, root, size, template) for engine, root in engines])
        for name, count, factory in _operation_specs(reps)
    ]
    for name, count, operations in specs:
        timings = [Timing() for _ in engines]
        for operation, setup in operations:  # warm-up, untimed
            if setup:
                setup(-1)
            operation(-1)
        gc.collect()
        for i in range(count):
            order = (0, 1) if i % 2 == 0 else (1, 0)
            for index in order:
                operation, setup = operations[index]
                if setup:
                    setup(i)
                start = time.perf_counter()
                operation(i)
                timings[index].samples.append((time.perf_counter() - start) * 1000)
        results[name] = {engine.name: timing.as_dict() for (engine, _), timing in zip(engines, timings, strict=True)}
        log(f"  {name}: " + ", ".join(f"{e.name} {t.p50:.2f} ms" for (e, _), t in zip(engines, timings, strict=True)))
    for engine, root in engines:
        results["_meta"][f"{engine.name}_fragments_after"] = catalog.fragment_count(root)
        results["_meta"][f"{engine.name}_versions_after"] = catalog.version_count(root)
        catalog.remove(root)
    return results


def _operation_specs(reps: int) -> list[tuple[str, int, Callable[[Engine, Path, int, Path], Operation]]]:
    """(name, repetitions, factory(engine, root, size, template) -> (operation(i), setup(i) or None))."""
    ns = catalog.NAMESPACE

    def pick(i: int, size: int) -> int:
        return (i * 7919 + 13) % size

    def simple(method: str, request: Callable[[int, int], Any]) -> Callable[[Engine, Path, int, Path], Operation]:
        def factory(engine: Engine, root: Path, size: int, template: Path) -> Operation:
            return (lambda i: engine.call(method, request(i, size))), None

        return factory

    def register(engine: Engine, root: Path, size: int, template: Path) -> Operation:
        def setup(i: int) -> None:
            catalog.copy(template, root / f"registered{i}")

        def operation(i: int) -> Any:
            request = ln.RegisterTableRequest(id=[ns, f"reg{i}"], location=f"registered{i}")
            return engine.call("register_table", request)

        return operation, setup

    def create_version(engine: Engine, root: Path, size: int, template: Path) -> Operation:
        location = root / _location(engine, [ns, "data0"])
        staged: dict[int, str] = {}

        def setup(i: int) -> None:
            staged[i] = catalog.stage(template, location, i + 3)

        def operation(i: int) -> Any:
            request = ln.CreateTableVersionRequest(id=[ns, "data0"], version=i + 3, manifest_path=staged[i])
            return engine.call("create_table_version", request)

        return operation, setup

    return [
        ("list_namespaces", reps, simple("list_namespaces", lambda i, n: ln.ListNamespacesRequest(id=[]))),
        ("describe_namespace", reps, simple("describe_namespace", lambda i, n: ln.DescribeNamespaceRequest(id=[ns]))),
        ("namespace_exists", reps, simple("namespace_exists", lambda i, n: ln.NamespaceExistsRequest(id=[ns]))),
        ("list_tables (child namespace)", reps, simple("list_tables", lambda i, n: ln.ListTablesRequest(id=[ns]))),
        (
            "list_tables (root, compatibility mode)",
            ROOT_LIST_REPS,
            simple("list_tables", lambda i, n: ln.ListTablesRequest(id=[])),
        ),
        (
            "describe_table",
            reps,
            simple("describe_table", lambda i, n: ln.DescribeTableRequest(id=[ns, f"t{pick(i, n)}"])),
        ),
        (
            "describe_table (table with data)",
            reps,
            simple("describe_table", lambda i, n: ln.DescribeTableRequest(id=[ns, "data1"])),
        ),
        ("table_exists", reps, simple("table_exists", lambda i, n: ln.TableExistsRequest(id=[ns, f"t{pick(i, n)}"]))),
        (
            "describe_table (root table)",
            reps,
            simple("describe_table", lambda i, n: ln.DescribeTableRequest(id=[f"t{pick(i, n)}"])),
        ),
        (
            "table_exists (root table)",
            reps,
            simple("table_exists", lambda i, n: ln.TableExistsRequest(id=[f"t{pick(i, n)}"])),
        ),
        (
            "list_table_versions",
            reps,
            simple("list_table_versions", lambda i, n: ln.ListTableVersionsRequest(id=[ns, "data1"])),
        ),
        (
            "describe_table_version",
            reps,
            simple("describe_table_version", lambda i, n: ln.DescribeTableVersionRequest(id=[ns, "data1"])),
        ),
        ("create_namespace", reps, simple("create_namespace", lambda i, n: ln.CreateNamespaceRequest(id=[f"new{i}"]))),
        ("declare_table", reps, simple("declare_table", lambda i, n: ln.DeclareTableRequest(id=[ns, f"new{i}"]))),
        ("register_table", reps, register),
        (
            "deregister_table",
            reps,
            simple("deregister_table", lambda i, n: ln.DeregisterTableRequest(id=[ns, f"reg{i}"])),
        ),
        ("drop_table", reps, simple("drop_table", lambda i, n: ln.DropTableRequest(id=[ns, f"new{i}"]))),
        ("create_table_version", reps, create_version),
    ]


def _location(engine: Engine, table: list[str]) -> str:
    described = engine.call("describe_table", ln.DescribeTableRequest(id=table))
    return described.location.removeprefix("file://").rsplit("/", 1)[1]


# -- 2. BatchCreateTableVersions against single CreateTableVersion calls ------------------------------------------
def batch_commits(work: Path, template: Path) -> dict[str, Any]:
    root = work / "batch"
    count = max(BATCH_SIZES)
    engine = ours(root, table_version_management="true")
    engine.call("create_namespace", ln.CreateNamespaceRequest(id=["b"]))
    locations = []
    for i in range(count):
        declared = engine.call("declare_table", ln.DeclareTableRequest(id=["b", f"t{i}"]))
        location = Path(declared.location.removeprefix("file://"))
        catalog.install_data(template, location, 1)
        locations.append(location)
    results: dict[str, Any] = {}
    current = [1] * count  # each table's latest version

    def entry_for(i: int) -> ln.CreateTableVersionEntry:
        version = current[i] + 1
        return ln.CreateTableVersionEntry(
            id=["b", f"t{i}"], version=version, manifest_path=catalog.stage(template, locations[i], version)
        )

    for _ in range(BATCH_ROUNDS):
        for k in BATCH_SIZES:
            singles = Timing()
            for i in range(k):  # k single commits ...
                entry = entry_for(i)
                request = ln.CreateTableVersionRequest(
                    id=entry.id, version=entry.version, manifest_path=entry.manifest_path
                )
                start = time.perf_counter()
                engine.call("create_table_version", request)
                singles.samples.append((time.perf_counter() - start) * 1000)
                current[i] += 1
            entries = [entry_for(i) for i in range(k)]  # ... against one batch of the same k tables
            start = time.perf_counter()
            engine.call("batch_create_table_versions", ln.BatchCreateTableVersionsRequest(entries=entries))
            batch_ms = (time.perf_counter() - start) * 1000
            for i in range(k):
                current[i] += 1
            result = results.setdefault(str(k), {"single": [], "singles_total": [], "batch": []})
            result["single"].extend(singles.samples)
            result["singles_total"].append(sum(singles.samples))
            result["batch"].append(batch_ms)
    log(f"  batch: tables at versions {min(current)}..{max(current)}")
    summary = {}
    for k, entry in results.items():
        summary[k] = {
            "single_p50": statistics.median(entry["single"]),
            "singles_total_p50": statistics.median(entry["singles_total"]),
            "batch_p50": statistics.median(entry["batch"]),
            "rounds": len(entry["batch"]),
        }
    catalog.remove(root)
    return summary


# -- 3. latency after 100 vs 10,000 catalog writes -----------------------------------------------------------------
PROBE_REPS = 60  # p50 of 60: sub-millisecond probes on a shared machine need many samples
PROBES = ("describe_namespace", "describe_table", "table_exists", "list_tables (child namespace)", "declare_table")


def write_scaling(work: Path, make: Callable[..., Engine], checkpoints: list[int]) -> dict[str, Any]:
    """Writes are DeclareTable + DropTable of a scratch table and CreateNamespace + DropNamespace of a scratch
    namespace (four ``__manifest`` commits: insert, delete, insert, delete), so the catalog keeps exactly its
    100 + 100 tables while commits (fragments, deletion files, versions) pile up: what ages is the history,
    not the size."""
    root = work / f"writes-{make.__name__}"
    catalog.build(root, 100)
    engine = make(root)
    ns = catalog.NAMESPACE
    writes = 2  # the namespace and the bulk insert
    results: dict[str, Any] = {}
    started = time.perf_counter()
    for checkpoint in checkpoints:
        while writes < checkpoint:
            engine.call("declare_table", ln.DeclareTableRequest(id=[ns, "scratch"]))
            engine.call("drop_table", ln.DropTableRequest(id=[ns, "scratch"]))
            engine.call("create_namespace", ln.CreateNamespaceRequest(id=["scratch"]))
            engine.call("drop_namespace", ln.DropNamespaceRequest(id=["scratch"]))
            writes += 4
        probe: dict[str, Timing] = {
            "describe_namespace": measure(
                lambda i: engine.call("describe_namespace", ln.DescribeNamespaceRequest(id=[ns])), PROBE_REPS
            ),
            "describe_table": measure(
                lambda i: engine.call("describe_table", ln.DescribeTableRequest(id=[ns, f"t{(i * 37) % 100}"])),
                PROBE_REPS,
            ),
            "table_exists": measure(
                lambda i: engine.call("table_exists", ln.TableExistsRequest(id=[ns, f"t{(i * 37) % 100}"])),
                PROBE_REPS,
            ),
            "list_tables (child namespace)": measure(
                lambda i: engine.call("list_tables", ln.ListTablesRequest(id=[ns])), PROBE_REPS
            ),
            "declare_table": measure(
                lambda i, c=checkpoint: engine.call("declare_table", ln.DeclareTableRequest(id=[ns, f"p{c}_{i}"])), 20
            ),
        }
        for i in range(-1, 20):
            engine.call("drop_table", ln.DropTableRequest(id=[ns, f"p{checkpoint}_{i}"]))
        writes += 42
        results[str(checkpoint)] = {
            "probes": {name: timing.as_dict() for name, timing in probe.items()},
            "fragments": catalog.fragment_count(root),
            "versions": catalog.version_count(root),
            "elapsed_s": time.perf_counter() - started,
        }
        log(f"  {engine.name}: {checkpoint} writes, {results[str(checkpoint)]['fragments']} fragments")
    catalog.remove(root)
    return results


# -- 4. storage requests per sensor poke -----------------------------------------------------------------------------
STORAGE_REQUESTS = (  # the request-making methods of the engine's Storage (those it has are counted)
    "exists",
    "file_exists",
    "file_info",
    "first_entry",
    "copy_if_not_exists",
    "list_dir",
    "list_names",
    "read",
    "info",
    "write",
    "put_if_not_exists",
    "delete",
    "delete_tree",
)


class CountingStorage:
    """Counts the calls of our ``Storage`` methods on one namespace (each is one request or one listing;
    ``file_exists`` is a ``stat`` on local disk, not an fsspec call, so counting fsspec calls would miss it)."""

    def __init__(self, storage: Any) -> None:
        self.storage = storage
        self.calls: dict[str, int] = {}

    def __enter__(self) -> CountingStorage:
        for name in STORAGE_REQUESTS:
            if hasattr(self.storage, name):
                setattr(self.storage, name, self._counted(name, getattr(self.storage, name)))
        return self

    def __exit__(self, *exc: object) -> None:
        for name in STORAGE_REQUESTS:
            vars(self.storage).pop(name, None)

    def _counted(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] = self.calls.get(name, 0) + 1
            return method(*args, **kwargs)

        return counted


# Each sensor's poke is the one hook call it makes (``LanceTableExistenceSensor`` -> ``check_table_exists`` ->
# TableExists; ``LanceTableVersionSensor`` -> ``check_table_version`` -> DescribeTableVersion, of the latest
# version with ``min_version`` / ``newer_than_baseline``, of version N with ``version=N``), made through a real
# ``LanceHook`` whose namespace is the engine under test. (sensor, case, hook call, table).
POKE_CASES: list[tuple[str, str, Callable[[Any, list[str]], Any], list[str]]] = [
    ("LanceTableExistenceSensor", "table exists", lambda hook, t: hook.check_table_exists(t), ["bench", "data"]),
    (
        "LanceTableExistenceSensor",
        "not yet (child namespace)",
        lambda hook, t: hook.check_table_exists(t),
        ["bench", "missing"],
    ),
    ("LanceTableExistenceSensor", "not yet (root table)", lambda hook, t: hook.check_table_exists(t), ["missing"]),
    (
        "LanceTableVersionSensor",
        "min_version: latest version",
        lambda hook, t: hook.check_table_version(t, min_version=1),
        ["bench", "data"],
    ),
    (
        "LanceTableVersionSensor",
        "min_version: not yet (no table)",
        lambda hook, t: hook.check_table_version(t, min_version=1),
        ["bench", "missing"],
    ),
    ("LanceTableVersionSensor", "version=1", lambda hook, t: hook.check_table_version(t, version=1), ["bench", "data"]),
    (
        "LanceTableVersionSensor",
        "version=2: not yet",
        lambda hook, t: hook.check_table_version(t, version=2),
        ["bench", "data"],
    ),
]


def _hook(engine: Engine) -> Any:
    """A ``LanceHook`` whose (cached) namespace is ``engine``'s: the sensors' code path, no connection."""
    from airflow_provider_lance.hooks.lance import LanceHook

    hook = LanceHook()
    hook.__dict__["namespace"] = engine.namespace
    return hook


def sensor_poke(work: Path) -> dict[str, Any]:
    """HTTP requests per sensor poke against a request-counting S3 server (moto), both engines; plus our
    storage requests on local disk through :class:`CountingStorage`. Warm = the hook (and namespace object) of the
    previous poke (a sensor in poke mode); cold = a new one (reschedule mode: a new process) on a machine whose
    processes read the catalog before (the engine's rows cache), and for ours also on a machine that never did."""
    import pyarrow as pa

    from benchmarks import scale
    from benchmarks.s3_counter import CountingS3Server

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    results: dict[str, Any] = {"s3": {}, "local_storage": {}, "expected": {}}
    table = [catalog.NAMESPACE, "data"]
    with CountingS3Server() as server:
        for size in POKE_SIZES:
            for make in (ours, reference):
                properties = server.properties(f"{make.__name__}-{size}")
                options = {k[len("storage.") :]: v for k, v in properties.items() if k.startswith("storage.")}
                scale.build_s3(properties, make, size)
                builder = make(**properties)
                declared = builder.call("declare_table", ln.DeclareTableRequest(id=table))
                lance.write_dataset(pa.table({"x": [1]}), declared.location, mode="append", storage_options=options)
                hook = _hook(make(**properties))
                counts: dict[str, Any] = {}
                for sensor, case, check, table_id in POKE_CASES:
                    answer = check(hook, table_id)  # the previous poke: warms the hook's namespace
                    with server.counting() as warm:
                        check(hook, table_id)
                    with server.counting() as cold:
                        check(_hook(make(**properties)), table_id)
                    counts[f"{sensor}|{case}"] = {"warm": dict(warm), "cold": dict(cold)}
                    if make is ours:  # a new process on a machine that never read the catalog (no rows cache)
                        with server.counting() as fresh:
                            check(_hook(make(**properties, manifest_cache_dir="")), table_id)
                        counts[f"{sensor}|{case}"]["cold_new_machine"] = dict(fresh)
                    results["expected"][f"{sensor}|{case}"] = repr(answer)
                results["s3"].setdefault(str(size), {})[make.__name__] = counts
                log(
                    f"  S3 pokes at {size} tables, {make.__name__}: "
                    + ", ".join(f"{k.split('|')[1]} {sum(v['warm'].values())}" for k, v in counts.items())
                )
    # our storage requests on local disk (pylance's own reads of __manifest are not ours: see the S3 counts)
    template = work / "template"
    for size in POKE_SIZES:
        root = work / f"local-{size}"
        catalog.build(root, size, data_tables=1, template=template)
        calls: dict[str, Any] = {}
        hook = _hook(ours(root))
        for sensor, case, check, table_id in POKE_CASES:
            table_id = [catalog.NAMESPACE, "data0"] if table_id == table else table_id
            check(hook, table_id)  # the previous poke of the warm hook
            by_temperature = {}
            for temperature in ("warm", "cold"):
                target = hook if temperature == "warm" else _hook(ours(root))
                with CountingStorage(target.namespace.storage) as counter:
                    check(target, table_id)
                by_temperature[temperature] = dict(counter.calls)
            calls[f"{sensor}|{case}"] = by_temperature
        results["local_storage"][str(size)] = calls
        catalog.remove(root)
    return results


# -- 5. Spark staging (owned by benchmarks/spark_staging.py) -----------------------------------------------------------
def spark_staging() -> dict[str, Any]:
    """Call ``benchmarks/spark_staging.py`` (owned by the Spark work) and include its markdown section."""
    if importlib.util.find_spec("benchmarks.spark_staging") is None:
        return {"status": "placeholder", "note": "measured by benchmarks/spark_staging.py (not present in this run)"}
    try:
        module = importlib.import_module("benchmarks.spark_staging")
        rows, repeat = (200_000, 1) if QUICK else (2_000_000, 3)
        numbers = module.measure(2, rows, repeat, "local[2]")
        return {"status": "measured", "result": module.render(numbers), "numbers": numbers}
    except Exception as error:  # the Spark benchmark must not break the others
        return {"status": "failed", "note": f"{type(error).__name__}: {error}"}


def _scale(section: str) -> Any:
    """A section of ``benchmarks/scale.py`` (imported late: it imports this module)."""
    return getattr(importlib.import_module("benchmarks.scale"), section)()


# -- driver -----------------------------------------------------------------------------------------------------
def main() -> int:
    started = time.perf_counter()
    base = Path(os.environ.get("BENCH_DIR") or tempfile.mkdtemp(prefix="lance-bench-"))
    base.mkdir(parents=True, exist_ok=True)
    template = catalog.make_template(base / "template", max(REPS + 3, LIST_VERSIONS, 2 * BATCH_ROUNDS * 3 + 2) + 1)
    results: dict[str, Any] = {
        "quick": QUICK,
        "machine": f"{platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "pylance": lance.__version__,
        "date": time.strftime("%Y-%m-%d"),
    }
    sections: list[tuple[str, Callable[[], Any]]] = [
        *[(f"operations/{size}", lambda size=size: operations_at(size, base, template)) for size in SIZES],
        ("batch", lambda: batch_commits(base, template)),
        ("writes/ours", lambda: write_scaling(base, ours, WRITE_CHECKPOINTS)),
        ("writes/reference", lambda: write_scaling(base, reference, REFERENCE_WRITE_CHECKPOINTS)),
        ("poke", lambda: sensor_poke(base)),
        ("s3_writes", lambda: _scale("s3_writes")),
        ("threads", lambda: _scale("threads")),
        ("processes", lambda: _scale("processes")),
        ("writers", lambda: importlib.import_module("benchmarks.writers").run()),
        ("data_plane", lambda: _scale("data_plane")),
        ("spark", spark_staging),
        ("soak", lambda: importlib.import_module("benchmarks.soak").run(QUICK)),
    ]
    only = ONLY
    for name, section in sections:
        if only and not any(name.startswith(prefix) for prefix in only):
            continue
        log(f"section {name}")
        section_started = time.perf_counter()
        try:
            results[name] = section()
        except Exception as error:  # one broken section must not lose the others
            log(f"section {name} failed: {type(error).__name__}: {error}")
            results.setdefault("_failed", {})[name] = f"{type(error).__name__}: {error}"
        results.setdefault("_seconds", {})[name] = time.perf_counter() - section_started
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(results, indent=1, default=str))  # after every section
    results["total_seconds"] = time.perf_counter() - started
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1, default=str))
    if not PARTIAL:
        DOC.parent.mkdir(parents=True, exist_ok=True)
        DOC.write_text(render(results))
        log(f"wrote {DOC.relative_to(REPO)} and {RESULTS.relative_to(REPO)} in {results['total_seconds']:.0f} s")
    else:
        log(f"wrote {RESULTS.relative_to(REPO)} (partial run: docs/benchmarks.md not rewritten)")
    if not os.environ.get("BENCH_DIR"):
        catalog.remove(base)
    return 0


if __name__ == "__main__":
    sys.exit(main())
