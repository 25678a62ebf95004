"""Large catalogs in managed mode (issue 29): 10,000 tables x 100 versions and 100 tables x 10,000 versions
(1,000,000 ``table_version`` rows each), ours with ``table_version_management=true`` against the reference with
``table_version_tracking_enabled=true``; results key ``scale_managed``.

A shape ``<tables>x<versions>`` is built in bulk once and reused from ``BENCH_DIR``
(``scale-managed-<shape>/``), never through a million commits: a template table with ``versions`` versions is
written by pylance once per version count, and every table of ``bench`` gets its data files and manifests as
hard links (the bytes are shared, so a million manifests cost directory entries, not disk). Each engine then
gets the ``__manifest`` it would have written itself, over the same table directories:

* ours: the namespace ``bench``, one ``table`` row per table and one ``table_version`` row per version, made by
  the engine's own row builder (``manifest_rows.ManifestRow`` / ``rows_table``, metadata pointing at the final
  manifest as ``external_reader.finalize`` leaves it) and appended in one Lance write, with the writer feature flag
  the engine sets (``commit.mark_table_versions``). The build first commits two versions through the engine in a
  scratch catalog and checks that its rows have exactly the keys of the bulk-built ones.
* the reference's: the namespace and the ``table`` rows only (in tracking mode it writes no version rows: a
  table's versions are its ``_versions/`` files).

The reference also reads our catalog (it lists and describes a catalog with ``table_version`` rows and writes
versions into it: they are files, not rows): *reference on ours* runs it on our bytes, for information.

Each engine runs in a fresh process (``benchmarks/scale_managed_probe.py``) after a reset (its pristine
``__manifest`` linked back, the tables the previous probe appended to linked again). It times the p50 of
DescribeTable, TableExists, DescribeTableVersion (latest; an old version), a ListTableVersions page (20,
descending), a version sensor's poke (``LanceHook.check_table_version(min_version=1)``, what
``LanceTableVersionSensor`` calls, through a hook whose namespace is the engine) and a new version (pylance
``write_dataset(..., namespace_client=ns, mode="append")``: DescribeTable, the staged manifest,
CreateTableVersion), each call on a varying table.

Goals: every p50 <= 1.0x the reference's and <= 1.5x ours at the baseline, 10 tables x 100 versions (1,000
version rows). ``BENCH_SCALE_MANAGED_SHAPES=10000x100,100x10000`` picks shapes (the baseline is always
measured); quick runs measure 100 x 100. ``python -m benchmarks.scale_managed`` runs it alone.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

import lance
import lance_namespace as ln
import pyarrow as pa
from lance.namespace import DirectoryNamespace as ReferenceNamespace

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.namespace import identifiers as ids
from airflow_provider_lance.namespace.commit import mark_table_versions
from airflow_provider_lance.namespace.manifest_rows import TABLE_VERSION, ManifestRow, rows_table
from benchmarks import catalog
from benchmarks.common import QUICK, Job, Target, log, ms
from benchmarks.scale import cached, run_catalogs, run_probe

BASELINE = (10, 100)  # 1,000 version rows
SHAPES = sorted(
    {BASELINE}
    | {
        (int(t), int(v))
        for t, _, v in (s.partition("x") for s in os.environ.get("BENCH_SCALE_MANAGED_SHAPES", "").split(",") if s)
    }
    | ({(100, 100)} if QUICK else {(10_000, 100), (100, 10_000)}),
    key=lambda shape: (shape[0] * shape[1], -shape[0]),
)
REPS = 20 if QUICK else 100
APPENDS = 5 if QUICK else 20
PAGE = 20
# engine -> the catalog (``__manifest``) it runs on
ENGINES = {"ours": "ours", "reference": "reference", "reference_on_ours": "ours"}
OPERATIONS = (
    "describe_table",
    "table_exists",
    "describe_table_version latest",
    "describe_table_version old",
    "list_table_versions page",
    "version sensor poke",
    "new version",
)
P50_GOAL = 1.0  # x the reference
FLAT_GOAL = 1.5  # x ours at BASELINE
CATALOG_FORMAT = f"managed catalog 1, pylance {lance.__version__}"  # a cached catalog of another format is rebuilt
# The engine before this section's changes, measured once by this section with that commit's package (results
# key BEFORE_KEY, merged into latest.json by hand: see docs/benchmarks.md's note under the section).
BEFORE_KEY, BEFORE_COMMIT = "scale_managed/before", "e592d9b"
PROBE_SECONDS = 1800  # the reference's version calls take 0.2-0.3 s each at 10,000 versions
ROW_BATCH = 100_000  # version rows built and appended per Lance write (memory stays bounded)


def shape_name(shape: tuple[int, int]) -> str:
    return f"{shape[0]}x{shape[1]}"


def _shown(name: str) -> str:
    """``10000x100`` as ``10,000 x 100``."""
    tables, versions = (int(n) for n in name.split("x"))
    return f"{tables:,} x {versions:,}"


def _ratio(mine: float, theirs: float) -> str:
    """``mine / theirs``, with a significant digit below 0.01x (the reference's listing of 10,000 manifests)."""
    value = mine / theirs
    return f"{value:.2f}x" if value >= 0.01 else f"{value:.1g}x"


def location(i: int) -> str:
    """Where table ``t<i>`` of ``bench`` lives (the child-namespace form: ``<8 hex>_bench$t<i>``)."""
    return f"{i:08x}_{catalog.NAMESPACE}$t{i}"


_BUILT = re.compile(r"__manifest|[0-9a-f]{8}_bench\$t\d+")


def template(work: Path, versions: int) -> Path:
    """A table of ``versions`` versions written by pylance (one row per version; overwrites above 100 versions,
    so that a manifest stays one fragment), built once per version count."""
    path = work / f"template-managed-{versions}"
    if not path.exists():
        started = time.perf_counter()
        partial = catalog.make_template(
            work / f"template-managed-{versions}.part", versions, "append" if versions <= 100 else "overwrite"
        )
        partial.rename(path)
        log(f"  template of {versions:,} versions written in {time.perf_counter() - started:.0f} s")
    return path


def link_table(source: Path, target: Path) -> None:
    """The template's data files and manifests as hard links in a new table directory (Lance never changes a
    file in place; a writer adds files, so the template is never touched)."""
    target.mkdir()
    (target / ".lance-reserved").write_bytes(catalog.MARKER)
    for part in ("data", "_versions"):
        (target / part).mkdir()
        with os.scandir(source / part) as entries:
            for entry in entries:
                os.link(entry.path, target / part / entry.name)


def version_rows(namespace: DirectoryNamespace, tables: int, versions: int) -> list[pa.Table]:
    """Our ``table_version`` rows of every table, in batches of ``ROW_BATCH``: the engine's row builder, the
    metadata of a finished commit (final manifest path, size and e-tag, naming scheme, commit time). The files
    of one version number are hard links of one file, so one ``info`` per version number serves every table."""
    storage = namespace.catalog.storage
    infos = {v: storage.info(ids.manifest_key(location(0), v, ids.V2)) for v in range(1, versions + 1)}
    batches, rows = [], []
    for i in range(tables):
        for version, info in infos.items():
            metadata = {
                "manifest_path": storage.object_path(ids.manifest_key(location(i), version, ids.V2)),
                "manifest_size": info.size,
                "e_tag": info.e_tag,
                "naming_scheme": ids.V2,
                "timestamp_millis": info.timestamp_millis,
            }
            rows.append(
                ManifestRow(ids.version_object_id([catalog.NAMESPACE, f"t{i}"], version), TABLE_VERSION, None, metadata)
            )
            if len(rows) == ROW_BATCH:
                batches.append(rows_table(rows))
                rows = []
    return [*batches, rows_table(rows)] if rows else batches


def check_row_format(work: Path, source: Path) -> None:
    """Two versions committed through our engine (pylance through the namespace) in a scratch catalog: its
    ``table_version`` rows must have exactly the metadata keys, in the same order, that :func:`version_rows`
    writes (a format drift fails the build instead of measuring a catalog the engine never writes)."""
    scratch = work / "managed-row-format"
    catalog.remove(scratch)
    namespace = DirectoryNamespace(root=str(scratch), table_version_management="true")
    namespace.create_namespace(ln.CreateNamespaceRequest(id=[catalog.NAMESPACE]))
    for mode in ("create", "append"):
        lance.write_dataset(
            pa.table({"x": [1]}), namespace_client=namespace, table_id=[catalog.NAMESPACE, "t"], mode=mode
        )
    written = lance.dataset(str(scratch / "__manifest")).to_table(filter=f"object_type = '{TABLE_VERSION}'")
    keys = {tuple(json.loads(meta)) for meta in written["metadata"].to_pylist()}
    ours = DirectoryNamespace(root=str(source), table_version_management="true")
    built = {tuple(json.loads(meta)) for meta in version_rows(ours, 1, 1)[0]["metadata"].to_pylist()}
    catalog.remove(scratch)
    if keys != built:
        raise RuntimeError(f"table_version rows drifted: the engine writes {keys}, the bulk build {built}")


def build(home: Path, work: Path, tables: int, versions: int) -> None:
    """The table directories under ``home/catalog`` and each engine's pristine ``__manifest`` under
    ``home/manifest-<engine>``."""
    root = home / "catalog"
    root.mkdir()
    source = template(work, versions)
    for i in range(tables):
        link_table(source, root / location(i))
    check_row_format(work, root)
    table_ids = [f"{catalog.NAMESPACE}$t{i}" for i in range(tables)]
    table_rows = catalog.table_rows(table_ids, [location(i) for i in range(tables)])
    ours = DirectoryNamespace(root=str(root), table_version_management="true")
    ours.create_namespace(ln.CreateNamespaceRequest(id=[catalog.NAMESPACE]))
    with ours.catalog.manifest.operation():
        mark_table_versions(ours.catalog)  # what the engine's first version commit sets
    manifest = lance.dataset(str(root / "__manifest"))
    manifest.insert(table_rows)
    for rows in version_rows(ours, tables, versions):
        manifest.insert(rows)
    (root / "__manifest").rename(home / "manifest-ours")
    theirs = ReferenceNamespace(root=str(root), table_version_tracking_enabled="true")
    theirs.create_namespace(ln.CreateNamespaceRequest(id=[catalog.NAMESPACE]))
    lance.dataset(str(root / "__manifest")).insert(table_rows)
    (root / "__manifest").rename(home / "manifest-reference")


def prepared(work: Path, shape: tuple[int, int]) -> tuple[Path, dict[str, Any]]:
    """The catalog of ``shape`` under ``work/scale-managed-<shape>`` (built now, or reused), and how it came."""
    home = work / f"scale-managed-{shape_name(shape)}"
    return home, cached(home, CATALOG_FORMAT, lambda: build(home, work, *shape))


def appended_tables(shape: tuple[int, int]) -> list[int]:
    """The tables the probe's new versions go to (``scale_managed_probe.pick`` with the appends' walk)."""
    from benchmarks.scale_managed_probe import APPEND_SEED, pick_index

    return sorted({pick_index(i, shape[0], APPEND_SEED) for i in range(APPENDS)})


def reset(home: Path, shape: tuple[int, int], manifest: str) -> float:
    """The catalog as built, with ``manifest``'s ``__manifest`` (hard links: Lance never changes a file in
    place): the tables a probe appended to linked again from the template, anything a probe added removed."""
    started = time.perf_counter()
    root = home / "catalog"
    catalog.remove(root / "__manifest")
    shutil.copytree(home / f"manifest-{manifest}", root / "__manifest", copy_function=os.link)
    source = template(home.parent, shape[1])
    for i in appended_tables(shape):
        catalog.remove(root / location(i))
        link_table(source, root / location(i))
    with os.scandir(root) as entries:
        for entry in entries:
            if not _BUILT.fullmatch(entry.name):
                catalog.remove(Path(entry.path))
    return time.perf_counter() - started


def probe(engine: str, home: Path, shape: tuple[int, int]) -> dict[str, Any]:
    """Run ``benchmarks.scale_managed_probe`` for one engine in a new process; its results, or the error."""
    job = {
        "engine": engine.split("_")[0],
        "root": str(home / "catalog"),
        "tables": shape[0],
        "versions": shape[1],
        "reps": REPS,
        "appends": APPENDS,
        "page": PAGE,
    }
    return run_probe("benchmarks.scale_managed_probe", job, PROBE_SECONDS)


def run() -> dict[str, Any]:
    """Every shape, the three probes, one fresh process each."""
    return run_catalogs(
        "scale_managed",
        SHAPES,
        shape_name,
        prepared,
        list(ENGINES),
        lambda home, shape, engine: reset(home, shape, ENGINES[engine]),
        lambda home, shape, engine: probe(engine, home, shape),
        summary,
        {"shapes": [shape_name(s) for s in SHAPES], "reps": REPS, "appends": APPENDS, "page": PAGE},
    )


def summary(measured: dict[str, Any]) -> str:
    """One log line of a probe."""
    if "error" in measured:
        return f"failed: {measured['error']}"
    operations = ", ".join(f"{name} {value['p50']:.2f}" for name, value in measured["operations"].items())
    return f"open {measured['open_ms']:.0f} ms, p50 ms: {operations}; {measured['seconds']:.0f} s"


def jobs(work: Path) -> list[Job]:
    """(results key, measure) of the section."""
    return [("scale_managed", run)]


_FIRST_TOUCH = (
    "At the baseline (10 tables) every call after a table's first hits what the engine keeps per `__manifest`"
    " version: the table's version line (`RowIndex.version_line`) and, for DescribeTable, the schema of the"
    " version its row names, so its p50 is a cache hit (0.04-0.11 ms). At 10,000 tables every call of the probe"
    " is a table's first in the process: its version line is read (a range of the sorted ids and ~10 vectorised"
    " pyarrow calls, ~0.1-0.2 ms at 100 versions; a row is found by a binary search of its id, no Python object"
    " per row) and a page describes its 20 rows. Nothing reads the catalog's million rows or lists `_versions/`:"
    " at 100 tables x 10,000 versions (each table's line read once, then kept) the same calls are 1.2-1.3x the"
    " baseline, and every p50 here is 0.04-0.54x the reference's.",
    "Compare first calls with first calls (a baseline of as many tables as calls), or keep version lines across"
    " `__manifest` versions (derived commit by commit, like the pending list).",
)
_DESCRIBE = (
    "DescribeTable answers the latest version and its schema; the reference answers neither (its p50 is its"
    " `__manifest` lookup alone). Each of the probe's describes is a table's first in the process: ours reads the"
    " table's version line (vectorised over its rows: ~0.1 ms at 100 versions, ~0.4 ms at 10,000, then kept for"
    " that `__manifest` version) and opens the version with pylance for the schema (~0.3-0.5 ms); at the"
    " baseline both are cached (0.11 ms). cProfile of 99 first describes at 100 x 10,000: the version line 1.6 ms"
    " a call before the byte-wise read (0.4 ms after, timed alone), the pylance open 0.4 ms, the rest lookups"
    " and the response.",
    "Learn the latest number without the whole line (the longest ids of the table's range), keep lines across"
    " `__manifest` versions, or learn a version's schema without opening it (pylance exposes none from a"
    " manifest).",
)
_COMMIT = (
    "The reference in tracking mode commits a version by copying the staged manifest (put-if-not-exists) and"
    " nothing else. Ours follows seed 003's external manifest store: the `table_version` row is the commit point"
    " (a guarded append to `__manifest`), then the copy, then the repoint of the row at the final manifest (a"
    " Lance Update of the commit point's small fragment): two `__manifest` commits, each a `write_fragments`"
    " (~6 ms on this loaded machine) and a Lance commit (~5-9 ms), and every 8th commit a compaction of the"
    " small fragments. A profile of 8 appends at 10,000 x 100 (`create_table_version` on pylance's callback"
    " thread) holds nothing else: no step reads or filters the million rows any more (`RowIndex.replaced`"
    " derives the repointed index from the tail; it filtered every row before: 33 ms a commit at 300,000 rows"
    " under cProfile).",
    "One `__manifest` commit per version needs a protocol change (see the managed-mode section's notes).",
)
WHY: dict[str, tuple[str, str]] = {  # operation -> (why it can miss, what next), from the profiles
    "describe_table": _DESCRIBE,
    "describe_table_version latest": _FIRST_TOUCH,
    "describe_table_version old": _FIRST_TOUCH,
    "list_table_versions page": _FIRST_TOUCH,
    "version sensor poke": _FIRST_TOUCH,
    "table_exists": _FIRST_TOUCH,
    "new version": _COMMIT,
}


def targets(results: dict[str, Any]) -> list[Target]:
    """Per shape above the baseline and operation: p50 ÷ the reference's (on its own catalog) and ÷ ours at the
    baseline."""
    measured = results.get("scale_managed")
    if not measured:
        return []
    base = measured["probes"].get(shape_name(BASELINE), {}).get("ours", {})
    rows = []
    for name, engines in measured["probes"].items():
        ours, theirs = engines["ours"], engines["reference"]
        if name == shape_name(BASELINE) or "error" in ours or "error" in theirs:
            continue
        tables, versions = (int(n) for n in name.split("x"))
        for op in OPERATIONS:
            mine, reference = ours["operations"][op]["p50"], theirs["operations"][op]["p50"]
            baseline = base["operations"][op]["p50"] if "operations" in base else float("nan")
            rows.append(
                Target(
                    f"managed mode, {tables:,} tables x {versions:,} versions: {op} p50 ÷ reference tracking;"
                    f" ÷ ours at {BASELINE[0]} x {BASELINE[1]}",
                    f"≤ {P50_GOAL:.1f}x; ≤ {FLAT_GOAL:.1f}x",
                    f"{_ratio(mine, reference)}; {_ratio(mine, baseline)}",
                    mine / reference <= P50_GOAL and mine / baseline <= FLAT_GOAL,
                    WHY.get(op),
                )
            )
    return rows


def section(results: dict[str, Any]) -> list[str]:
    """The section's Markdown lines."""
    measured = results.get("scale_managed")
    if not measured:
        return []
    lines = [
        "## Large catalogs in managed mode: 1,000,000 version rows (issue 29)",
        "",
        "Ours with `table_version_management=true`, the reference with `table_version_tracking_enabled=true`."
        " A shape *tables x versions* is built in bulk (`benchmarks/scale_managed.py`): a template table written"
        " by pylance, hard-linked into every table of `bench`; ours gets a `__manifest` of table rows and one"
        " `table_version` row per version (the engine's row builder, checked against a real commit), the"
        " reference the table rows only (it writes no version rows: its versions are the `_versions/` files)."
        " *Reference on ours* is the reference on our catalog's bytes (it reads them and commits versions into"
        " them). Each engine runs in a fresh process after a reset, one after the other, on this shared 2-core"
        f" machine. p50 (ms) of {measured['reps']} calls on varying tables; *old* = a varying version below the"
        f" latest; a page = `list_table_versions(limit={measured['page']}, descending=True)`; the poke ="
        " `LanceHook.check_table_version(min_version=1)` (LanceTableVersionSensor's poke); a new version ="
        f" pylance `write_dataset(..., namespace_client=ns, mode='append')` ({measured['appends']} on varying"
        f" tables). *Open* = construct + the first DescribeTable. Section run time {measured['seconds']:.0f} s.",
        "",
        *_p50_table(measured),
    ]
    base = measured["probes"].get(shape_name(BASELINE), {}).get("ours", {})
    lines += ["", f"Ours ÷ reference tracking; ours ÷ ours at {_shown(shape_name(BASELINE))} (flatness):", ""]
    lines += ["| tables x versions | " + " | ".join(OPERATIONS) + " |", "|---|" + "---:|" * len(OPERATIONS)]
    for name, engines in measured["probes"].items():
        ours, theirs = engines["ours"], engines["reference"]
        if "error" in ours or "error" in theirs:
            continue
        cells = [
            _ratio(ours["operations"][op]["p50"], theirs["operations"][op]["p50"])
            + (
                "; " + _ratio(ours["operations"][op]["p50"], base["operations"][op]["p50"])
                if "operations" in base
                else ""
            )
            for op in OPERATIONS
        ]
        lines.append(f"| {_shown(name)} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Catalogs: " + "; ".join(_built(name, made) for name, made in measured["catalogs"].items()) + ".",
        "",
    ]
    before = results.get(BEFORE_KEY)
    if before:
        lines += [
            f"Before: the engine this work started from ({BEFORE_COMMIT}, its package run by the same section on"
            " the same catalogs, against the reference in the same run; no *reference on ours*). The calls that"
            " listed `_versions/` grow with the versions, the new version with the rows (a filter of every row"
            " per repoint):",
            "",
            *_p50_table(before),
            "",
        ]
    for note in NOTES:
        lines += [note, ""]
    return lines


NOTES = [
    "What changed in the engine for this section (issue 29; profiles of our probe at 20 x 2,000, 3,000 x 100 and"
    " 10,000 x 100): a version line no longer builds a Python dict of every version (a version is found by a"
    " binary search of its row's id; the dict only when the rows are walked), and the versions a commit"
    " left pending come from one list of candidate ids per `__manifest` version (a vectorised match once, then"
    " derived commit by commit), so TableExists reads no version line at all; when the rows hold every version"
    " from 1 to their latest, reads and commits look for newer manifests with one `stat` each instead of"
    " listing `_versions/` (a listing and parse of 10,000 names cost ~15-25 ms; under cProfile at 2,000"
    " versions describe 19.6 -> 1.7 ms, describe_table_version 35 -> 2.2 ms); local names are listed with `os.listdir`"
    " (fsspec's local `ls` normalised every path: 13 ms for 2,000 names); the repoint derives the next index"
    " from the tail only (`RowIndex.replaced`: it filtered every row), and a version line reads its numbers by"
    " bytes (1.1 -> 0.4 ms at 10,000 versions). Before -> after (the table above): at 100 x 10,000 describe"
    " 47.6 -> 1.3 ms, describe_table_version 28 -> 0.14 ms, a page 28 -> 0.86 ms, the sensor's poke 28 -> 0.14"
    " ms, a new version 145 -> 12 ms; at 10,000 x 100 a new version 36 -> 14 ms, TableExists 0.77 -> 0.05 ms.",
    "The reference's version calls list `_versions/` (10,000 manifests: 0.1-0.3 s a call in our runs) and read"
    " `__manifest` whole when it holds our million rows (*reference on ours*: 30-55 ms per DescribeTable); its"
    " DescribeTable answers neither version nor schema. A new process of ours finds the table's row and its"
    " version rows by point (two scans of the ids, step 2 of `Snapshot.index`: by id, then the table's id range):"
    " the open"
    " 72-81 ms where it read the million rows whole and matched every row's metadata for pending commits before"
    " (578-614 ms in the run before this change); its fifth lookup reads them whole.",
]


def _p50_table(measured: dict[str, Any]) -> list[str]:
    """The p50 of every probe of a run, a row per shape and engine."""
    lines = [
        "| tables x versions | engine | open | " + " | ".join(OPERATIONS) + " | probe s |",
        "|---|---|---:|" + "---:|" * (len(OPERATIONS) + 1),
    ]
    for name, engines in measured["probes"].items():
        for engine, probed in engines.items():
            label = engine.replace("_", " ")
            if "error" in probed:
                lines.append(f"| {_shown(name)} | {label} | **failed**: {probed['error']} |" + " |" * len(OPERATIONS))
                continue
            lines.append(
                f"| {_shown(name)} | {label} | {probed['open_ms']:,.0f} | "
                + " | ".join(ms(probed["operations"][op]["p50"]) for op in OPERATIONS)
                + f" | {probed['seconds']:.0f} |"
            )
    return lines


def _built(name: str, made: dict[str, Any]) -> str:
    built = f"{made['build_seconds']:.0f} s"
    how = f"reused from BENCH_DIR (built in {built})" if made["reused"] else f"built in {built}"
    return f"{_shown(name)} {how}, {made['seconds']:.0f} s with the probes"


if __name__ == "__main__":
    print(json.dumps(run(), indent=1))
