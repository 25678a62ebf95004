"""Table version management: our engine with ``table_version_management=true`` against the reference with
``table_version_tracking_enabled=true`` (and both with it off, for scale), on catalogs that pylance writers build
through the namespace; results key ``managed/<label>`` (``after``; ``before``: the engine of the commit
``BENCH_MANAGED_BEFORE=<commit>`` names, measured by this section in a process of its own with that commit's
package first on ``PYTHONPATH``; ``BENCH_MANAGED_LABEL`` renames the in-process engine's key).

Each engine writes its own catalog: ``TABLES`` tables in the child namespace ``bench``, each created and then
appended to ``VERSIONS - 1`` times with ``lance.write_dataset(..., namespace_client=ns, mode=...)`` (pylance's
``describe_table`` and ``create_table_version`` callbacks), the engines taking turns append by append so that the
load of this shared machine hits them alike. In the same turns, the *floor* (commit_floor.py): seed 003's one
guarded append of a ``table_version`` row, made with pylance alone into a copy of our ``__manifest``; the
reference's append plus that one is what the protocol costs at least. Then the reads every sensor, task and
writer makes, interleaved. ``RUNS`` runs, each on new catalogs; the off engines in the first run only.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lance
import lance_namespace as ln
import pyarrow as pa

from benchmarks import catalog, rest
from benchmarks.commit_floor import CommitFloor
from benchmarks.common import (
    QUICK,
    REPO,
    Engine,
    Job,
    Target,
    export_package,
    interleaved,
    log,
    ms,
    ours,
    over_runs,
    reference,
    spread,
    times,
)
from benchmarks.s3_counter import CountingS3Server

TABLES, VERSIONS = (8, 5) if QUICK else (40, 25)
S3_SIZE = (4, 3) if QUICK else (8, 6)  # tables, versions on moto S3
REPS = 10 if QUICK else 60
RUNS = int(os.environ.get("BENCH_MANAGED_RUNS", "2" if QUICK else "5"))  # each on new catalogs (issue 42: >= 5)
LABEL = os.environ.get("BENCH_MANAGED_LABEL", "after")
BEFORE = os.environ.get("BENCH_MANAGED_BEFORE", "")  # a commit whose engine is measured as ``managed/before``
PAGE = 20  # ListTableVersions page
# (name, engine maker, properties): the two compared, then both with management off
ENGINES = [
    ("ours", ours, {"table_version_management": "true"}),
    ("reference", reference, {"table_version_tracking_enabled": "true"}),
    ("ours_off", ours, {}),
    ("reference_off", reference, {}),
]
COMPARED = ("ours", "reference")  # in every run; the off engines (for scale) in the first
COMMIT, FLOOR = "commit", "floor"  # the floor's one append alone; the reference's append plus it
READS = ["describe_table", "table_exists", "describe_table_version", "list_table_versions"]
ORDER = ["append", "build_seconds", *READS]
TITLES = {
    "append": "append through the namespace (ms)",
    "build_seconds": "build the catalog (s)",
    "describe_table": "describe_table (ms)",
    "table_exists": "table_exists (ms)",
    "describe_table_version": "describe_table_version, latest (ms)",
    "list_table_versions": f"list_table_versions, limit {PAGE} (ms)",
}


def run(work: Path) -> dict[str, Any]:
    """``RUNS`` runs of the catalogs on local disk, each on new catalogs.

    :param work: a directory for the catalogs.
    """
    runs = []
    for number in range(RUNS):
        log(f"managed run {number + 1} of {RUNS}")
        names = [name for name, _, _ in ENGINES if number == 0 or name in COMPARED]
        roots = {name: {"root": str(work / f"managed-{number}-{name}")} for name in names}
        try:
            runs.append(measure(roots, TABLES, VERSIONS))
        finally:
            for root in roots.values():
                catalog.remove(Path(root["root"]))
            catalog.remove(Path(_floor_uri(roots)))
    return combine(runs)


def run_s3() -> dict[str, Any]:
    """The four catalogs on S3 (a moto server of its own process), smaller; one run."""
    with CountingS3Server() as server:
        return combine([measure({name: server.properties(f"managed-{name}") for name, _, _ in ENGINES}, *S3_SIZE)])


def run_before(work: Path) -> dict[str, Any]:
    """:func:`run` with the engine of commit ``BEFORE``: this module in a new process whose ``PYTHONPATH`` puts
    that commit's package first (this checkout's benchmarks after it).

    :param work: a directory for the catalogs.
    """
    package = export_package(BEFORE, work)
    answer = work / "managed-before.json"
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(package), str(REPO)])}
    command = [sys.executable, "-m", "benchmarks.managed", str(work / "managed-before"), str(answer)]
    subprocess.run(command, cwd=package, env=environment, check=True)  # cwd: the package, not this checkout's
    results: dict[str, Any] = json.loads(answer.read_text())
    results["_meta"]["engine"] = BEFORE
    return results


def _floor_uri(locations: dict[str, dict[str, str]]) -> str:
    return locations["ours"]["root"] + "-commit-floor"


def measure(locations: dict[str, dict[str, str]], tables: int, versions: int) -> dict[str, Any]:
    """One run: build the catalogs append by append (the floor's appends in the same turns), then time the
    reads; each figure by engine (``p50``, and ``p95``/``n`` for the reads).

    :param locations: each engine's ``root`` and ``storage.*`` properties (the engines measured).
    :param tables: tables per catalog.
    :param versions: versions per table.
    """
    engines: dict[str, Engine] = {}
    for name, make, properties in ENGINES:
        if name not in locations:
            continue
        where = locations[name]
        # the engine keeps its own name (how ``call`` passes requests)
        engine = make(where["root"], **{k: v for k, v in where.items() if k != "root"}, **properties)
        engine.call("create_namespace", ln.CreateNamespaceRequest(id=[catalog.NAMESPACE]))
        engines[name] = engine
    options = catalog.s3_options(locations["ours"]) or None
    data = pa.table({"x": [1, 2, 3]})
    samples: dict[str, list[float]] = {name: [] for name in [*engines, COMMIT]}
    building: dict[str, float] = dict.fromkeys(samples, 0.0)
    floor: CommitFloor | None = None
    log(f"building {len(engines)} catalogs of {tables} tables x {versions} versions through pylance, and the floor")

    def write(name: str, table: int, version: int) -> Callable[[], Any]:
        if name == COMMIT:
            assert floor is not None
            return lambda: floor.append(f"{catalog.NAMESPACE}$t{table}${version + 1}")
        return lambda: lance.write_dataset(
            data,
            namespace_client=engines[name].namespace,
            table_id=[catalog.NAMESPACE, f"t{table}"],
            mode="create" if version == 0 else "append",
            storage_options=options,
        )

    for version in range(versions):
        if version == 1:  # the appends start: the floor starts from our __manifest as it is now
            floor = CommitFloor(locations["ours"]["root"] + "/__manifest", _floor_uri(locations), options)
        names = [*engines, COMMIT] if version else list(engines)
        for table in range(tables):
            if floor is not None:
                floor.maintain()  # untimed
            for name in names if (version + table) % 2 == 0 else reversed(names):
                step = write(name, table, version)
                started = time.perf_counter()
                step()
                elapsed = time.perf_counter() - started
                building[name] += elapsed
                if version:
                    samples[name].append(elapsed * 1000)
    # the floor: the reference's append and the floor's one append of the same turn
    samples[FLOOR] = [mine + commit for mine, commit in zip(samples["reference"], samples[COMMIT], strict=True)]
    building[FLOOR] = building["reference"] + building[COMMIT]
    results: dict[str, Any] = {
        "_meta": {"tables": tables, "versions": versions, "reps": REPS},
        "append": {name: {"p50": statistics.median(values)} for name, values in samples.items()},
        "build_seconds": {name: {"p50": seconds} for name, seconds in building.items()},
    }
    for method in READS:
        operations = {name: (_read(engine, method, tables), None) for name, engine in engines.items()}
        timings = interleaved(operations, REPS)
        results[method] = {name: timing.as_dict() for name, timing in timings.items()}
        log(f"  {method}: " + ", ".join(f"{e} {t.p50:.2f} ms" for e, t in timings.items()))
    log("  append: " + ", ".join(f"{e} {v['p50']:.2f} ms" for e, v in results["append"].items()))
    return results


def combine(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Runs as one result: per figure and engine, ``p50`` = the median of the runs' p50s, ``runs`` = each run's
    p50 (``p95`` the median of the runs' p95s, ``n`` every sample); ``_ratios``: per figure, each run's ours ÷
    reference and ours ÷ floor (the ratio of one run's interleaved turns).

    :param runs: what :func:`measure` returned, run by run.
    """
    combined: dict[str, Any] = {"_meta": {**runs[0]["_meta"], "runs": len(runs)}, "_ratios": {}}
    for figure in ORDER:
        combined[figure] = {
            name: over_runs([one[figure][name] for one in runs if name in one[figure]])
            for name in dict.fromkeys(name for one in runs for name in one[figure])
        }
        combined["_ratios"][figure] = {
            against: [one[figure]["ours"]["p50"] / one[figure][against]["p50"] for one in runs]
            for against in ("reference", FLOOR)
            if all(against in one[figure] for one in runs)
        }
    return combined


def _read(engine: Engine, method: str, tables: int) -> Any:
    def table(i: int) -> list[str]:
        return [catalog.NAMESPACE, f"t{(i * 7) % tables}"]

    requests = {
        "describe_table": lambda i: ln.DescribeTableRequest(id=table(i)),
        "table_exists": lambda i: ln.TableExistsRequest(id=table(i)),
        "describe_table_version": lambda i: ln.DescribeTableVersionRequest(id=table(i)),
        "list_table_versions": lambda i: ln.ListTableVersionsRequest(id=table(i), limit=PAGE, descending=True),
    }
    return lambda i: engine.call(method, requests[method](i))


def jobs(work: Path) -> list[Job]:
    """(results key, measure) of the section (``managed/before`` first when ``BENCH_MANAGED_BEFORE`` is set).

    :param work: the run's directory for catalogs.
    """
    local: list[Job] = [(f"managed/{LABEL}", lambda: run(work))]
    if BEFORE:
        local.insert(0, ("managed/before", lambda: run_before(work)))
    return [
        *local,
        (f"managed_s3/{LABEL}", run_s3),
        (f"managed_rest/{LABEL}", lambda: run_rest(work)),
    ]


REST_CLIENTS = 8  # the goal's client count; the table shows every count of the REST section
REST_OPERATIONS = (*rest.OPERATIONS, "mixed")


def run_rest(work: Path) -> dict[str, Any]:
    """The REST section's workload from 1, 8 and 32 client threads (pylance's ``RestNamespace``), both
    servers in managed mode: ours over our engine, the reference's ``RestAdapter`` over its directory namespace.

    :param work: a directory for the catalogs.
    """
    roots = {name: work / f"managed-rest-{name}" for name in ("ours", "reference")}
    with (
        rest.ours({"root": str(roots["ours"]), "table_version_management": "true"}) as mine,
        rest.reference({"root": str(roots["reference"]), "table_version_tracking_enabled": "true"}) as theirs,
    ):
        results = rest.servers_workload({"ours": mine, "reference": theirs}, rest.CLIENTS, REST_OPERATIONS)
    for root in roots.values():
        catalog.remove(root)
    return results


WHY = (
    "With `table_version_tracking_enabled=true` the reference commits a pylance write through the namespace with a"
    " put-if-not-exists copy of the staged manifest and nothing more (measured: its `__manifest` gets no"
    " `table_version` row and no new version). Seed 003, which atomic BatchCreateTableVersions rests on, makes"
    " the row the commit point: one guarded append to `__manifest` that the reference's tracking mode does not"
    " make, so the protocol's floor is the reference's append plus that one append (the *floor* column: measured"
    " with pylance alone, in the same interleaved turns; see the section). Ours makes that one commit per version"
    " (the repoint of the row rides on the next one), the copy, and answers pylance's describe from its rows.",
    "Below the floor only with another protocol: a version committed without a `__manifest` commit (the copy as"
    " the commit point of a single-table commit; a single and a batch racing on one version would then need a"
    " rule of their own).",
)


WHY_DESCRIBE = (
    "The reads go round the tables, so the p50 describe is the first of its version: its schema is not known yet"
    " and pylance opens the table (~0.3-0.5 ms); a describe of a version described before answers from the"
    " remembered schema (~0.2 ms on this machine). Both engines' p50 stay within ~0.1 ms of each other from run to"
    " run (0.94x and 1.04x in two runs of this page).",
    "Learn the schema of a committed version without opening it (pylance exposes none from a manifest); the opens"
    " of an instance already share one pylance `Session` (issue 42: ~0.2 -> ~0.1 ms of CPU a first open).",
)
FLOORED = ("append", "build_seconds")  # the figures with a floor


def _rest_operations(served: dict[str, Any]) -> list[str]:
    """The REST operations a run measured (``mixed`` is newer than some runs)."""
    return [operation for operation in REST_OPERATIONS if operation in served["ours"][str(REST_CLIENTS)]]


def run_ratios(values: dict[str, Any], figure: str, against: str) -> list[float]:
    """Each run's ours ÷ ``against`` (``reference`` or ``floor``) of one figure; one value for a result of
    one run stored before runs were (no ``_ratios``); none when ``against`` was not measured.

    :param values: one ``managed/<label>`` result.
    :param figure: the figure (``append``, a read, ...).
    :param against: the engine divided by.
    """
    stored = values.get("_ratios", {}).get(figure)
    if stored is not None:
        return list(stored.get(against, []))
    measured = values[figure]
    return [measured["ours"]["p50"] / measured[against]["p50"]] if against in measured else []


def targets(results: dict[str, Any]) -> list[Target]:
    """Every p50 in managed mode ≤ the reference's in tracking mode (the append and the build: or ≤ the
    protocol's floor); REST throughput ≥ the reference's."""
    rows = []
    served = results.get("managed_rest/after")
    for operation in _rest_operations(served) if served else ():
        value = (
            served["ours"][str(REST_CLIENTS)][operation]["per_s"]
            / served["reference"][str(REST_CLIENTS)][operation]["per_s"]
        )
        rows.append(
            Target(
                f"managed mode through REST, {REST_CLIENTS} client threads: {operation} calls/s ours ÷ reference",
                "≥ 1.0x",
                f"{value:.2f}x",
                value >= 1.0,
            )
        )
    after = results.get("managed/after")
    if not after:
        return rows
    runs = after["_meta"].get("runs", 1)
    for op in ORDER:
        value = statistics.median(run_ratios(after, op, "reference"))
        floored = run_ratios(after, op, FLOOR)
        floor = statistics.median(floored) if floored else None
        measured = f"{value:.2f}x" + (f" (÷ floor {floor:.2f}x)" if floor is not None else "")
        rows.append(
            Target(
                f"managed mode: {TITLES[op]} p50, ours ÷ reference tracking ({TABLES} tables x {VERSIONS} versions)"
                + (f", median of {runs} runs" if runs > 1 else ""),
                "≤ 1.0x, or ≤ 1.0x of the protocol's floor" if op in FLOORED else "≤ 1.0x",
                measured,
                value <= 1.0 or (floor is not None and floor <= 1.0),
                WHY if op in FLOORED else WHY_DESCRIBE if op == "describe_table" else None,
            )
        )
    return rows


def section(results: dict[str, Any]) -> list[str]:
    """The managed-mode tables (local disk, S3), before and after when both were measured."""
    measured = _runs(results, "managed/")
    if not measured:
        return []
    meta = next(iter(measured.values()))["_meta"]
    lines = [
        "## Table version management against the reference's tracking mode",
        "",
        f"Each engine writes its own catalog: {meta['tables']} tables x {meta['versions']} versions, written by"
        " pylance through the namespace (`lance.write_dataset(..., namespace_client=ns, mode='append')`: pylance"
        " calls `describe_table`, `list_table_versions` and `create_table_version`); ours with"
        " `table_version_management=true`, the"
        " reference with `table_version_tracking_enabled=true`, and both with it off for scale (first run only)."
        " The engines take turns append by append; then"
        f" {meta['reps']} reads of each kind, interleaved (p50). Each run builds new catalogs; a cell is the"
        " median of the runs' p50s (min-max of the runs), a ratio the median of each run's own ratio (min-max).",
        "",
        "The *floor* is what seed 003 costs at least: the reference's append plus one guarded append of a"
        " `table_version` row to `__manifest` (the commit point, which the reference's tracking mode does not"
        " write), made with pylance alone (`benchmarks/commit_floor.py`: a one-row `write_fragments` and a Merge"
        " commit of every fragment plus the new one, `max_retries=0`, as our engine makes its guarded append) into a"
        " copy of our `__manifest` that grows by a row per append, timed in the same turn as the reference's; so no"
        " change of ours can lower it. Ours ÷ floor ≤ 1.0x: the gap to the reference is the protocol's.",
        "",
        *_table(measured),
        "",
    ]
    lines += [line for each_run in _append_runs(measured) for line in (each_run, "")]
    before = measured.get("before")
    if before:
        engine = before["_meta"].get("engine")
        lines += [
            (
                f"*before*: the engine of commit `{engine}` (`BENCH_MANAGED_BEFORE={engine}`: that commit's package,"
                " first on the `PYTHONPATH` of a process of its own, with this checkout's benchmarks), measured just"
                " before *after*"
                if engine
                else "*before*: an earlier engine (`BENCH_MANAGED_LABEL=before`, that commit's package first on"
                " `PYTHONPATH`), measured in the same hour"
            )
            + "; compare the ratios (each run's own), not the milliseconds.",
            "",
        ]
    on_s3 = _runs(results, "managed_s3/")
    if on_s3:
        meta = next(iter(on_s3.values()))["_meta"]
        lines += [
            f"On S3 (a moto server in its own process, {meta['tables']} tables x {meta['versions']} versions, the"
            " same calls, one run; no goal of its own). Each call of ours makes the freshness LIST of `__manifest`"
            " and one LIST of the table's `_versions/` (the versions are its files and its rows), and a describe of"
            " a version not described before opens it (several GETs); moto answers each request in milliseconds:",
            "",
            *_table(on_s3),
        ]
    lines += ["", *MANAGED_NOTES, ""]
    served = _runs(results, "managed_rest/")
    if served:
        lines += [
            "Through REST, both servers in managed mode (the REST section's workload from client threads of"
            " pylance's `RestNamespace`: 200 declared tables, then declares and reads, and the mixed load: a"
            " declare among a describe, an exists and a list, call by call; server CPU per call of the server"
            " process):",
            "",
            "| run | clients | operation | ours calls/s | reference calls/s | ours ÷ reference |"
            " ours server CPU µs/call | reference server CPU µs/call |",
            "|---|---:|---|---:|---:|---:|---:|---:|",
        ]
        for label, values in served.items():
            for clients, operation in ((c, o) for c in values["ours"] for o in _rest_operations(values)):
                mine = values["ours"][clients][operation]
                theirs = values["reference"][clients][operation]
                lines.append(
                    f"| {label} | {clients} | {operation} | {mine['per_s']:.0f} | {theirs['per_s']:.0f} |"
                    f" {mine['per_s'] / theirs['per_s']:.2f}x | {mine['server_cpu_us']:.0f} |"
                    f" {theirs['server_cpu_us']:.0f} |"
                )
        lines.append("")
    return lines


def _runs(results: dict[str, Any], prefix: str) -> dict[str, Any]:
    """The runs of one table by label, ``before`` first."""
    runs = {key.removeprefix(prefix): value for key, value in results.items() if key.startswith(prefix)}
    return dict(sorted(runs.items(), key=lambda item: (item[0] != "before", item[0] != "after", item[0])))


def _p50s(figure: dict[str, Any], name: str) -> list[float]:
    measured = figure.get(name)
    return [] if measured is None else list(measured.get("runs", [measured["p50"]]))


def _table(measured: dict[str, Any]) -> list[str]:
    lines = [
        "| operation | run | ours, managed | reference, tracking | floor | ours ÷ reference | ours ÷ floor |"
        " ours, off | reference, off |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]

    for op in ORDER:
        for label, values in measured.items():
            cells = [
                spread(_p50s(values[op], name), ms)
                for name in ("ours", "reference", FLOOR, "ours_off", "reference_off")
            ]
            ratios = [spread(run_ratios(values, op, against), times) for against in ("reference", FLOOR)]
            lines.append(
                f"| {TITLES[op]} | {label} | {' | '.join(cells[:3])} | {' | '.join(ratios)} | {cells[3]} | {cells[4]} |"
            )
    return lines


def _append_runs(measured: dict[str, Any]) -> list[str]:
    """Each run's append figures: the p50s and the ratios, and the floor's one append alone."""
    lines = []
    for label, values in measured.items():
        against_reference = run_ratios(values, "append", "reference")
        against_floor = run_ratios(values, "append", FLOOR)
        if len(against_reference) < 2 or not against_floor:
            continue
        append = values["append"]
        lines.append(
            f"Append p50 of each run, *{label}* (ms): ours "
            + ", ".join(ms(v) for v in _p50s(append, "ours"))
            + "; reference "
            + ", ".join(ms(v) for v in _p50s(append, "reference"))
            + "; the floor's one `__manifest` append alone "
            + ", ".join(ms(v) for v in _p50s(append, COMMIT))
            + "; ours ÷ reference "
            + ", ".join(map(times, against_reference))
            + "; ours ÷ floor "
            + ", ".join(map(times, against_floor))
            + "."
        )
    return lines


MANAGED_NOTES = [
    "Where the time went (cProfile of the callbacks on pylance's threads, before): an append's"
    " `create_table_version` was two `__manifest` commits, the commit point (a guarded append, ~9 ms loaded)"
    " and the repoint at the final manifest (a pylance merge-insert joining against every row, ~17 ms), plus"
    " `versions.version_rows` (a scan of the table's children with several pyarrow calls, twice per call);"
    " `describe_table` listed `_versions/` with a `stat` per file, scanned the children twice and opened the"
    " table with pylance. After: a table's version rows are one range of the index's sorted ids"
    " (`RowIndex.version_line`, read once per `__manifest` version and table, the numbers cast vectorised), the"
    " pending commits are the rows whose `manifest_path` is staged (one vectorised match, checked exactly), a"
    " version is described only when a page or a call asks for it (a names-only listing), DescribeTable"
    " remembers a managed version's schema by its row (the row names an immutable manifest), and the repoint"
    " is a Lance Update that rewrites the small fragment the commit point wrote (a deletion vector when a"
    " compaction merged the row into a large one) instead of the merge-insert.",
]


if __name__ == "__main__":  # run_before's process: ``python -m benchmarks.managed <work> <answer.json>``
    import airflow_provider_lance

    log(f"managed section, engine {Path(airflow_provider_lance.__file__).parent}")
    Path(sys.argv[2]).write_text(json.dumps(run(Path(sys.argv[1])), default=str))
