"""Storage requests per sensor poke (results key ``poke``): HTTP requests at a request-counting S3 server
(moto), both engines; our storage requests on local disk."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

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


# What a poke's answer rests on, one S3 request each (issue 42): a LIST reads one contiguous range of keys under one
# prefix, a GET or HEAD one key, and no two of these ranges are next to each other in key order (the keys of other
# tables, fragments and versions lie between them), so a poke's floor is one request per range it needs.
RANGES = {
    "catalog": "LIST `__manifest/_versions/` (MaxKeys=1): the newest manifest file and its e-tag, whether what the "
    "process holds is still the catalog",
    "rows": "GET the rows object of that manifest file: on a machine whose processes never read that version (it is "
    "named by the e-tag the LIST answers, so it cannot be asked for with the LIST)",
    "directory": "LIST `<name>.lance/`: a root table known only by its directory (compatibility mode), with its "
    "`.lance-deregistered` marker",
    "versions": "LIST the table's `_versions/`: without table version management a table's versions are files only",
    "next manifest": "HEAD `_versions/<latest row + 1>.manifest`: with table version management a version committed "
    "round the namespace (the reference in tracking mode writes no row) is a file only",
}
# The catalog kinds the cases poke (our constructor properties, the reference's): table versions as files only,
# and with table version management (the reference's: tracking).
CATALOGS: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    "": ({}, {}),
    "managed": (
        {"table_version_management": "true", "credential_vending_enabled": "true"},
        {"table_version_tracking_enabled": "true"},
    ),
}
DIRECTORY_TABLE = "dironly"  # a root table written by path as `<name>.lance`, without a manifest row


class Case(NamedTuple):
    """One poke: its sensor and case (the results key ``sensor|case``), the catalog kind (``CATALOGS``), the
    sensor's version parameters, the table, the answer, and the ranges (``RANGES``) the answer rests on."""

    sensor: str
    case: str
    catalog: str
    params: dict[str, int]
    table: list[str]
    answer: Any
    ranges: tuple[str, ...]

    @property
    def key(self) -> str:
        return f"{self.sensor}|{self.case}"

    def check(self, hook: Any, table: list[str] | None = None) -> Any:
        """The sensor's hook call (``check_table_exists``, or ``check_table_version`` with the parameters).

        :param hook: a ``LanceHook``.
        :param table: another table than the case's.
        """
        table = self.table if table is None else table
        if self.sensor == EXISTENCE:
            return hook.check_table_exists(table)
        return hook.check_table_version(table, **self.params)

    def floor(self, temperature: str) -> int:
        """The fewest requests of the poke: one per range, the rows GET on a new machine only.

        :param temperature: ``warm``, ``cold`` or ``cold_new_machine`` (``MODES``).
        """
        return sum(1 for name in self.ranges if name != "rows" or temperature == "cold_new_machine")


EXISTENCE, VERSION = "LanceTableExistenceSensor", "LanceTableVersionSensor"
DATA = ["bench", "data"]
MISSING = ["bench", "missing"]
# Each sensor's poke is the one hook call it makes (``LanceTableExistenceSensor`` -> ``check_table_exists`` ->
# TableExists; ``LanceTableVersionSensor`` -> ``check_table_version`` -> DescribeTableVersion, of the latest
# version with ``min_version`` / ``newer_than_baseline``, of version N with ``version=N``), made through a real
# ``LanceHook`` whose namespace is the engine under test. ``tests/s3/test_s3_sensor_pokes.py`` holds the real
# sensors and triggers to these floors.
CASES: list[Case] = [
    Case(EXISTENCE, "table exists", "", {}, DATA, True, ("catalog", "rows")),
    Case(EXISTENCE, "not yet (child namespace)", "", {}, MISSING, False, ("catalog", "rows")),
    Case(EXISTENCE, "root table, directory only", "", {}, [DIRECTORY_TABLE], True, ("directory",)),
    Case(EXISTENCE, "not yet (root table)", "", {}, ["missing"], False, ("catalog", "rows", "directory")),
    Case(VERSION, "min_version: latest version", "", {"min_version": 1}, DATA, (True, 1),
         ("catalog", "rows", "versions")),
    Case(VERSION, "min_version: not yet (no table)", "", {"min_version": 1}, MISSING, (False, None),
         ("catalog", "rows")),
    Case(VERSION, "version=1", "", {"version": 1}, DATA, (True, 1), ("catalog", "rows", "versions")),
    Case(VERSION, "version=2: not yet", "", {"version": 2}, DATA, (False, None), ("catalog", "rows", "versions")),
    Case(VERSION, "root table, directory only: min_version", "", {"min_version": 1}, [DIRECTORY_TABLE], (True, 1),
         ("catalog", "rows", "directory", "versions")),
    Case(VERSION, "managed: min_version: latest version", "managed", {"min_version": 1}, DATA, (True, 1),
         ("catalog", "rows", "next manifest")),
    Case(VERSION, "managed: version=1", "managed", {"version": 1}, DATA, (True, 1), ("catalog", "rows")),
    Case(VERSION, "managed: version=2: not yet", "managed", {"version": 2}, DATA, (False, None),
         ("catalog", "rows", "next manifest")),
]  # fmt: skip
CASE_BY_KEY = {case.key: case for case in CASES}


def _hook(engine: Engine) -> Any:
    """A ``LanceHook`` whose (cached) namespace is ``engine``'s: the sensors' code path, no connection."""
    from airflow_provider_lance.hooks.lance import LanceHook

    hook = LanceHook()
    hook.__dict__["namespace"] = engine.namespace
    return hook


def build_catalog(server: CountingS3Server, prefix: str, name: str, size: int, kind: str) -> dict[str, str]:
    """A poke catalog on S3: ``size`` declared tables in ``bench``, ``bench.data`` holding one version (with
    management: committed through the namespace) and a root table written by path (``DIRECTORY_TABLE``).

    :param server: the counting S3 server.
    :param prefix: the catalog's root under the bucket.
    :param name: the engine (``ENGINES``) whose catalog it is.
    :param size: declared tables.
    :param kind: the catalog kind (``CATALOGS``).
    :return: the engine's constructor properties for it.
    """
    make = ENGINES[name]
    properties = {**server.properties(prefix), **CATALOGS[kind][0 if make is ours else 1]}
    catalog.build_s3(properties, make(**properties).namespace, size)
    options = catalog.s3_options(properties)
    builder = make(**properties)
    one = pa.table({"x": [1]})
    if kind:
        lance.write_dataset(one, namespace_client=builder.namespace, table_id=DATA, storage_options=options)
    else:
        declared = builder.call("declare_table", ln.DeclareTableRequest(id=DATA))
        lance.write_dataset(one, declared.location, mode="append", storage_options=options)
    lance.write_dataset(one, f"{properties['root']}/{DIRECTORY_TABLE}.lance", storage_options=options)
    return properties


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
    with CountingS3Server() as server:
        for size in POKE_SIZES:
            for name, make in ENGINES.items():
                counts: dict[str, Any] = {}
                for kind in CATALOGS:
                    properties = build_catalog(server, f"{name}-{kind or 'files'}-{size}", name, size, kind)
                    hook = _hook(make(**properties))
                    for case in (case for case in CASES if case.catalog == kind):
                        answer = case.check(hook, case.table)  # the previous poke: warms the hook's namespace
                        with server.counting() as warm:
                            case.check(hook, case.table)
                        with server.counting() as cold:
                            case.check(_hook(make(**properties)), case.table)
                        counts[case.key] = {"warm": dict(warm), "cold": dict(cold)}
                        if make is ours:  # a new process on a machine that never read the catalog (no rows cache)
                            with server.counting() as fresh:
                                case.check(_hook(make(**properties, manifest_cache_dir="")), case.table)
                            counts[case.key]["cold_new_machine"] = dict(fresh)
                        results["expected"][case.key] = repr(answer)
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
        lance.write_dataset(pa.table({"x": [1]}), str(root / f"{DIRECTORY_TABLE}.lance"))
        calls: dict[str, Any] = {}
        hook = _hook(ours(root))
        for case in (case for case in CASES if not case.catalog):
            table_id = [catalog.NAMESPACE, "data0"] if case.table == DATA else case.table
            case.check(hook, table_id)  # the previous poke of the warm hook
            by_temperature = {}
            for temperature in ("warm", "cold"):
                target = hook if temperature == "warm" else _hook(ours(root))
                with CountingStorage(target.namespace.storage) as counter:
                    case.check(target, table_id)
                by_temperature[temperature] = dict(counter.calls)
            calls[case.key] = by_temperature
        results["local_storage"][str(size)] = calls
        catalog.remove(root)
    return results


_FLOOR = (
    "A poke costs one S3 request per key range its answer rests on, and S3 reads one contiguous range of keys per "
    "request; the ranges (the section's list) are never next to each other, so no design of ours reads two with "
    "one request without answering from something storage has not confirmed. The cases above the goal are at "
    "that floor: a root table that is not there yet in compatibility mode (the catalog's newest manifest for a "
    "row, the `<name>.lance/` directory for a table written by path: the spec's manifest-first lookup needs "
    "both), and every latest-version or not-yet-version poke (the table's `_versions/` without table version "
    "management, the next manifest's HEAD with it: versions committed round the namespace, the reference's in "
    "tracking mode among them, have no row); a root table known only by its directory, polled for versions, "
    "needs three (the catalog for a row, the directory for its `.lance-deregistered` marker, its `_versions/`: "
    "between the marker and `_versions/` lie `_indices/` and `_transactions/`, one object per version). A "
    "machine that never read the catalog's newest manifest adds the GET of its rows.",
    "Nothing in the engine: the request-count test holds every case at its floor (`version=N` of a managed "
    "table and existence pokes that need no directory are at 1 warm, 2 on a new machine).",
)
WHY = {
    "cold": _FLOOR,
    "cold_new_machine": _FLOOR,
    "warm": _FLOOR,
    "local": (
        "On local disk freshness is one `stat` of `__manifest/_versions/` once its mtime has settled (2 s after"
        " the last commit: file system timestamps are coarse), two `stat`s before (no manifest N+1, manifest N"
        " unchanged); the benchmark's catalog was just written, so its pokes pay the two. The root listing or the"
        " table's `_versions/` listing (names only: a detailed listing on local disk is a `stat` per version) adds"
        " one where the S3 poke has its second request, and describing the version found one `stat`.",
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


def at_floor(poke: dict[str, Any], sensor: str | None = None) -> list[bool]:
    """Whether each of our S3 pokes (every case of a known ``CASES`` entry, size and temperature) took at most its
    floor.

    :param poke: the section's result.
    :param sensor: only this sensor's cases (all when ``None``).
    """
    return [
        _total(counts) <= CASE_BY_KEY[key].floor(temperature)
        for size in poke["s3"]
        for key, by_temperature in poke["s3"][size]["ours"].items()
        if key in CASE_BY_KEY and sensor in (None, key.split("|")[0])
        for temperature, counts in by_temperature.items()
    ]


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
        floors = at_floor(poke, sensor)
        rows.append(
            Target(
                f"{sensor} poke, S3 requests at the floor of its key ranges (every case, size and temperature)",
                "every poke",
                f"{sum(floors)} of {len(floors)}",
                all(floors),
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
        "Cases marked *managed* poke a catalog with table version management (the reference: tracking mode,"
        " `table_version_tracking_enabled=true`), the others one without; `dironly` is a root table written by"
        " path as `dironly.lance`, with no manifest row. The *floor* is one request per key range the answer"
        " rests on (below the table; warm and cold / new machine), and `tests/s3/test_s3_sensor_pokes.py` fails"
        " when a real sensor's poke (poke, reschedule and deferrable mode) takes more.",
        "",
        "| sensor | case | floor: ranges | floor warm / cold / new machine | "
        + " | ".join(f"ours {int(n):,} warm / cold / new machine" for n in sizes)
        + " | "
        + " | ".join(f"reference {int(n):,} warm / cold" for n in sizes)
        + " |",
        "|---|---|---|---:|" + "---:|" * (2 * len(sizes)),
    ]
    for key in poke["s3"][sizes[0]]["ours"]:
        sensor, case = key.split("|")
        known = CASE_BY_KEY.get(key)
        cells = [
            ", ".join(known.ranges) if known else "-",
            "/".join(str(known.floor(t)) for t in ("warm", "cold", "cold_new_machine")) if known else "-",
        ]
        for engine in ENGINES:
            for n in sizes:
                counts = poke["s3"][n][engine][key]
                fresh = f" / {_total(counts['cold_new_machine'])}" if "cold_new_machine" in counts else ""
                cells.append(f"{_total(counts['warm'])} / {_total(counts['cold'])}{fresh}")
        lines.append(f"| {sensor} | {case} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "The key ranges (S3 reads one contiguous range of keys under one prefix per request, a GET or HEAD one"
        " key; no two of these are next to each other in key order, so a poke that needs two pays two):",
        "",
        *(f"- *{name}*: {text}." for name, text in RANGES.items()),
        "",
        "Why not fewer: without the *catalog* LIST a warm process would answer from rows storage has not"
        " confirmed (a drop, a deregister, a rename, a table registered elsewhere, the reference's commits);"
        " without the *directory* LIST a root table the reference (or any writer by path) made as"
        " `<name>.lance` without a row would stay invisible, and the spec looks the manifest up first"
        " (compatibility mode) so a registered root table elsewhere needs the *catalog* as well; without the"
        " *versions* LIST or the *next manifest* HEAD a version committed round `__manifest` would stay"
        " invisible. The reference takes fewer requests at the root (1 for a root table not there yet, 2 for"
        " the versions of a directory-only one) because in compatibility mode it answers root tables from the"
        " directory listing alone (shared/REFERENCE.md), where the spec looks the manifest up first."
        " The change feed's idle poll (docs/change-feed.md) is the *catalog* LIST itself: it"
        " covers no *directory*, *versions* or *next manifest* range, so it cannot replace them.",
        "",
        "Issue 42, before → after: every case of the table above took what it takes now (the floor); the"
        " change is in the version sensor's first poke with `newer_than_baseline=True`, which made two hook"
        " calls (the baseline's latest version, then the check of the same storage) and makes one (the first"
        " poke cannot be done: the latest version is the baseline). Measured on moto (5 tables, a table"
        " without table version management): 5 requests → 3 on a new machine, 4 → 2 with the machine's rows"
        " cache; later pokes 2 → 2 (`tests/s3/test_s3_sensor_pokes.py::test_a_first_baseline_poke_is_one_poke`)."
        " And a deferrable sensor's trigger now waits one `poke_interval` before its first check"
        " (`wait_first`): the sensor has just poked in the worker, so the triggerer's first poll, a cold poke of"
        " its own (the case's cold or new-machine count), read the same storage again; one such poke less per"
        " deferral.",
        "",
        f"Requests by kind at {int(sizes[-1]):,} tables (warm; cold):",
        "",
    ]
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
