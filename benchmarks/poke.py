"""Storage requests per sensor poke (results key ``poke``): HTTP requests at a request-counting S3 server
(moto), both engines; our storage requests on local disk."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lance
import lance_namespace as ln
import pyarrow as pa

from benchmarks import catalog
from benchmarks.common import ENGINES, QUICK, SIZES, Engine, Job, Target, kinds, log, ours
from benchmarks.s3_counter import CountingS3Server

POKE_SIZES = SIZES or ([100] if QUICK else [100, 1000, 10000])
GOALS = {"warm": 1, "cold": 2, "cold_new_machine": 2}
MODES = {
    "warm": "poke/deferrable mode",
    "cold": "reschedule mode",
    "cold_new_machine": "reschedule mode, first process of a machine",
}
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
CASES: list[tuple[str, str, Callable[[Any, list[str]], Any], list[str]]] = [
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


def run(work: Path) -> dict[str, Any]:
    """HTTP requests per sensor poke against a request-counting S3 server (moto), both engines; plus our
    storage requests on local disk through :class:`CountingStorage`. Warm = the hook (and namespace object) of
    the previous poke (a sensor in poke mode); cold = a new one (reschedule mode: a new process) on a machine
    whose processes read the catalog before (the engine's rows cache), and for ours also on a machine that
    never did.

    :param work: a directory for the local catalogs.
    """
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    results: dict[str, Any] = {"s3": {}, "local_storage": {}, "expected": {}}
    table = [catalog.NAMESPACE, "data"]
    with CountingS3Server() as server:
        for size in POKE_SIZES:
            for name, make in ENGINES.items():
                properties = server.properties(f"{name}-{size}")
                catalog.build_s3(properties, make(**properties).namespace, size)
                builder = make(**properties)
                declared = builder.call("declare_table", ln.DeclareTableRequest(id=table))
                options = catalog.s3_options(properties)
                lance.write_dataset(pa.table({"x": [1]}), declared.location, mode="append", storage_options=options)
                hook = _hook(make(**properties))
                counts: dict[str, Any] = {}
                for sensor, case, check, table_id in CASES:
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
                results["s3"].setdefault(str(size), {})[name] = counts
                log(
                    f"  S3 pokes at {size} tables, {name}: "
                    + ", ".join(f"{k.split('|')[1]} {sum(v['warm'].values())}" for k, v in counts.items())
                )
    # our storage requests on local disk (pylance's own reads of __manifest are not ours: see the S3 counts)
    template = catalog.make_template(work / "template-poke", 1)
    for size in POKE_SIZES:
        root = work / f"local-{size}"
        catalog.build(root, size, data_tables=1, template=template)
        calls: dict[str, Any] = {}
        hook = _hook(ours(root))
        for sensor, case, check, table_id in CASES:
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


_WHY_COLD = (
    "The first process of a machine reads the rows of the newest manifest file from the rows object our "
    "engine writes next to it after each commit (the freshness LIST names the file and its e-tag, one GET "
    "reads it: 2 requests); a later process of the machine finds them in its rows cache (the LIST alone). The "
    "cases that need a second listing warm need it cold as well: a root table without a manifest row (its "
    "`<name>.lance` directory) and the latest version of a table without table version management (its own "
    "`_versions/`): 3. A version the reference committed has no rows object: one 404, then pylance opens the "
    "table.",
    "The LIST and the GET are the limit for a poke that needs no listing of its own (existence in a child "
    "namespace, `version=N` of a managed table: 2; a root table whose directory exists: 1); the others "
    "list their table or directory whatever the temperature.",
)
WHY = {
    "cold": _WHY_COLD,
    "cold_new_machine": _WHY_COLD,
    "warm": (
        "Two cases need a second listing by design: a root table in compatibility mode lives in two places "
        "(a `__manifest` row or a `<name>.lance` directory: the freshness LIST plus the directory listing), and "
        "without table version management a table's versions are only in its own `_versions/` (the "
        "freshness LIST to locate the table plus the table's listing); child-namespace existence pokes and "
        "version pokes of managed tables take 1.",
        "Keep the root check manifest-first (a registered root table may live elsewhere); with table "
        "version management the version sensor reads the `table_version` rows.",
    ),
    "local": (
        "On local disk freshness is one `stat` of `__manifest/_versions/` once its mtime has settled (2 s after"
        " the last commit: file system timestamps are coarse), two `stat`s before (no manifest N+1, manifest N"
        " unchanged); the benchmark's catalog was just written, so its pokes pay the two. The root listing or the"
        " table's `_versions/` listing adds one where the S3 poke has its second request.",
        "Nothing in the engine: a catalog that has not been written for 2 s costs one `stat`.",
    ),
}


def _total(counts: dict[str, int]) -> int:
    return sum(counts.values())


def _sensors(poke: dict[str, Any]) -> list[str]:
    keys = next(iter(next(iter(poke["s3"].values())).values()))
    return list(dict.fromkeys(key.split("|")[0] for key in keys))


def jobs(work: Path) -> list[Job]:
    """(results key, measure) of the section.

    :param work: the run's directory for catalogs.
    """
    return [("poke", lambda: run(work))]


def targets(results: dict[str, Any]) -> list[Target]:
    """Per sensor: S3 requests of a warm and a cold poke at any size, of a machine's first (cold) poke at each
    size (issue 22: ≤ 2 at 100 and 10,000 tables), and our storage requests of a warm poke on local disk."""
    poke = results.get("poke")
    if not poke or "local_storage" not in poke:
        return []
    rows: list[Target] = []
    for sensor in _sensors(poke):

        def worst(temperature: str, sizes: list[str], sensor: str = sensor) -> int | None:
            totals = [
                _total(counts[temperature])
                for size in sizes
                for key, counts in poke["s3"][size]["ours"].items()
                if key.split("|")[0] == sensor and temperature in counts
            ]
            return max(totals) if totals else None

        for temperature, mode in MODES.items():
            scopes = (
                [(f"at {int(size):,} tables", [size]) for size in poke["s3"]]
                if temperature == "cold_new_machine"
                else [("any size", list(poke["s3"]))]
            )
            for scope, sizes in scopes:
                value = worst(temperature, sizes)
                if value is None:
                    continue
                goal = GOALS[temperature]
                rows.append(
                    Target(
                        f"{sensor} poke ({mode}: {temperature.split('_')[0]}), S3 requests, {scope}, every case",
                        f"≤ {goal}",
                        str(value),
                        value <= goal,
                        WHY[temperature],
                    )
                )
        local = max(
            _total(counts["warm"])
            for calls in poke["local_storage"].values()
            for key, counts in calls.items()
            if key.split("|")[0] == sensor
        )
        name = f"{sensor} poke (warm), our storage requests on local disk"
        rows.append(Target(name, "≤ 1", str(local), local <= 1, WHY["local"]))
    return rows


def section(results: dict[str, Any]) -> list[str]:
    """Requests per poke on S3 (totals, then by kind at the largest size) and our requests on local disk."""
    poke = results.get("poke")
    if not poke or "local_storage" not in poke:
        return []
    sizes = list(poke["s3"])
    lines = [
        "## Storage requests per sensor poke",
        "",
        "A poke is the one hook call a sensor makes, made through a real `LanceHook` whose namespace is the"
        " engine under test: `LanceTableExistenceSensor` → `check_table_exists` → TableExists;"
        " `LanceTableVersionSensor` → `check_table_version` → DescribeTableVersion (of the latest version with"
        " `min_version` / `newer_than_baseline`, of version N with `version=N`; TableNotFound = not yet)."
        " Tables are in the child namespace `bench` (`data` has one version) except the root-table case"
        " (compatibility mode). **Method**: both engines run against a moto S3 server (its own process, started"
        " and stopped by the benchmark) whose WSGI app is wrapped with a counter, so every HTTP request is"
        " counted whoever sends it (our s3fs calls and the Lance/Rust `object_store` reads of `__manifest`)."
        " *Warm* = the hook of the previous poke"
        " (`mode='poke'`, and a deferrable sensor's trigger, keep their hook); *cold* = a new hook and namespace"
        " object (`mode='reschedule'`: a new process) on a machine where processes read the catalog before"
        " (our engine's rows cache: the rows of the newest manifest file, found by its e-tag); *new machine* ="
        " the same without the cache (ours only; the reference has none). On local disk our `Storage` requests"
        " are counted (each method is one request or listing; pylance's own reads of `__manifest` are not"
        " included there).",
        "",
        "| sensor | case | "
        + " | ".join(f"ours {int(n):,} warm / cold / new machine" for n in sizes)
        + " | "
        + " | ".join(f"reference {int(n):,} warm / cold" for n in sizes)
        + " |",
        "|---|---|" + "---:|" * (2 * len(sizes)),
    ]
    for key in poke["s3"][sizes[0]]["ours"]:
        sensor, case = key.split("|")
        cells = []
        for engine in ENGINES:
            for n in sizes:
                counts = poke["s3"][n][engine][key]
                fresh = f" / {_total(counts['cold_new_machine'])}" if "cold_new_machine" in counts else ""
                cells.append(f"{_total(counts['warm'])} / {_total(counts['cold'])}{fresh}")
        lines.append(f"| {sensor} | {case} | " + " | ".join(cells) + " |")
    lines += ["", f"Requests by kind at {int(sizes[-1]):,} tables (warm; cold):", ""]
    for key, counts in poke["s3"][sizes[-1]]["ours"].items():
        theirs = poke["s3"][sizes[-1]]["reference"][key]
        lines.append(
            f"- {key.replace('|', ', ')}: ours {kinds(counts['warm'])}; {kinds(counts['cold'])} — reference"
            f" {kinds(theirs['warm'])}; {kinds(theirs['cold'])}"
        )
    local = poke["local_storage"]
    lines += [
        "",
        "Our storage requests per poke on local disk (warm / cold):",
        "",
        "| sensor | case | " + " | ".join(f"{int(n):,} tables" for n in local) + " |",
        "|---|---|" + "---|" * len(local),
    ]
    for key in next(iter(local.values())):
        sensor, case = key.split("|")
        cells = [f"{kinds(calls[key]['warm'])} / {kinds(calls[key]['cold'])}" for calls in local.values()]
        lines.append(f"| {sensor} | {case} | " + " | ".join(cells) + " |")
    return [*lines, ""]
