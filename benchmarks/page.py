"""Catalog page load times (issue 21): ``python -m benchmarks.page`` (also run at the end of ``make bench``).

The page is served by uvicorn on 127.0.0.1 (the same app ``lance-namespace-server`` mounts at ``/``) and fetched
with httpx: the time to the last byte of the HTML (the stylesheet is a static file). Measured pages:

* the namespace list: ``/`` (the root's first 100 of 10,000 tables, and the child namespace ``bench`` with
  its 10,000 tables counted) and ``/namespace?id=bench`` (first page), ``.../page 2`` (``page_token``);
* a table with 1,000 versions committed with table version management, each recording an Airflow run:
  its table page and its version history (newest 50 versions, the chart of all 1,000).

The first load of each page is reported apart (``cold``): it reads what later loads take from the page's cache
of committed manifests. Target: p50 <= 300 ms. Results go to ``benchmarks/results/page.json`` and into
``docs/benchmarks.md`` between the ``page`` markers when run alone (``BENCH_QUICK=1``: 1,000 tables and 100
versions, results to ``benchmarks/results/page-quick.json`` only).
"""

from __future__ import annotations

import json
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import lance_namespace as ln
import pyarrow as pa

from airflow_provider_lance import staging
from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.page import create_page_app
from airflow_provider_lance.staging.runs import RUN_ID_METADATA, RUN_KEY_METADATA
from benchmarks import catalog
from benchmarks.common import QUICK, RESULTS_DIR, Job, Target, log, marked, write_section

TABLES = 1_000 if QUICK else 10_000
VERSIONS = 100 if QUICK else 1_000
REPS = 5 if QUICK else 30
TARGET_MS = 300.0
RESULTS = RESULTS_DIR / ("page-quick.json" if QUICK else "page.json")


def versioned_table(root: Path, versions: int) -> None:
    """Commit ``versions`` versions of ``runs.history`` (one row appended each), as the operators do: staged,
    then committed with the run identity in the version metadata."""
    namespace = DirectoryNamespace(root=str(root), table_version_management="true")
    namespace.create_namespace(ln.CreateNamespaceRequest(id=["runs"]))
    for number in range(1, versions + 1):
        if number % 100 == 0:
            log(f"  {number} versions")
        run = f"bench_dag/scheduled__{number:05d}"
        entry = staging.stage_data(namespace, ["runs", "history"], pa.table({"x": [number]}))
        metadata = {**(entry.metadata or {}), RUN_ID_METADATA: run, RUN_KEY_METADATA: f"{run}/commit/-1"}
        staging.commit_entries(namespace, [entry.model_copy(update={"metadata": metadata})])


def timed(client: httpx.Client, path: str) -> tuple[float, str]:
    started = time.perf_counter()
    response = client.get(path)
    elapsed = (time.perf_counter() - started) * 1000
    response.raise_for_status()
    return elapsed, response.text


def measure(client: httpx.Client, path: str, expect: str) -> dict[str, Any]:
    cold, text = timed(client, path)
    assert expect in text, f"{path} does not show {expect!r}"
    samples = [timed(client, path)[0] for _ in range(REPS)]
    ordered = sorted(samples)
    return {
        "cold_ms": cold,
        "p50_ms": statistics.median(samples),
        "p95_ms": ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))],
        "reps": REPS,
    }


def run() -> dict[str, Any]:
    from tests.browser import serve  # the same uvicorn-in-a-thread the page tests use

    base = Path(tempfile.mkdtemp(prefix="lance-bench-page-"))
    # Two catalogs: the size of one does not change the other's pages, and committing 1,000 versions into a
    # catalog of 20,000 tables would only make the set-up slow.
    tables_root, versions_root = base / "tables", base / "versions"
    log(f"building {TABLES} tables in the root and in 'bench'")
    catalog.build(tables_root, TABLES)
    log(f"committing {VERSIONS} versions of runs.history")
    versions_root.mkdir()
    started = time.perf_counter()
    versioned_table(versions_root, VERSIONS)
    log(f"committed in {time.perf_counter() - started:.0f} s")
    results: dict[str, Any] = {
        "tables": TABLES,
        "versions": VERSIONS,
        "machine": f"{platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "date": time.strftime("%Y-%m-%d"),
    }
    with (
        serve(create_page_app(DirectoryNamespace(root=str(tables_root)))) as tables_url,
        serve(create_page_app(DirectoryNamespace(root=str(versions_root)))) as versions_url,
        httpx.Client(base_url=tables_url, timeout=60) as client,
        httpx.Client(base_url=versions_url, timeout=60) as versions_client,
    ):
        first = client.get("/namespace?id=bench").text
        token = re.search(r'page_token=([^"&]+)"', first)
        assert token, "the first page of 'bench' has no link to the next one"
        pages = {
            f"namespace list: / (root, {TABLES:,} tables + child 'bench' counted)": (client, "/", f"{TABLES:,}"),
            f"namespace list: bench ({TABLES:,} tables), first page": (client, "/namespace?id=bench", "t0"),
            f"namespace list: bench ({TABLES:,} tables), page 2": (
                client,
                f"/namespace?id=bench&page_token={token.group(1)}",
                "next page",
            ),
            f"table page ({VERSIONS:,} versions)": (
                versions_client,
                "/table?id=runs&id=history",
                f"scheduled__{VERSIONS:05d}",
            ),
            f"version history ({VERSIONS:,} versions, 50 per page + chart)": (
                versions_client,
                "/table/versions?id=runs&id=history",
                f"scheduled__{VERSIONS:05d}",
            ),
        }
        for name, (page_client, path, expect) in pages.items():
            log(f"measuring {name}")
            results[name] = measure(page_client, path, expect)
    catalog.remove(base)
    return results


def render(results: dict[str, Any]) -> str:
    lines = [
        "## Catalog page load (issue 21)",
        "",
        f"`python -m benchmarks.page` (run by `make bench`): the page app served by uvicorn on 127.0.0.1, fetched "
        f"with httpx, time to the whole HTML; p50/p95 of {REPS} loads "
        "after a first (cold) load. Target: p50 <= 300 ms.",
        "",
        "| page | cold ms | p50 ms | p95 ms | target met |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    for name, value in results.items():
        if isinstance(value, dict):
            met = "yes" if value["p50_ms"] <= TARGET_MS else "**no**"
            lines.append(f"| {name} | {value['cold_ms']:.0f} | {value['p50_ms']:.0f} | {value['p95_ms']:.0f} | {met} |")
    lines += [
        "",
        "A page reads one page of names (`list_tables` with `limit`/`page_token`, 100 per page) and counts a child "
        "namespace with one `list_tables` call of up to 10,001 names; the history reads 50 versions "
        "(`list_table_versions` with `limit`) and the chart's rows and sizes from the manifests' summaries, read "
        "once per table and latest version (the cold load of a 1,000-version table) and kept, since committed "
        "manifests never change. The root page's time is mostly the engine listing a root of 10,000 tables; "
        "the table pages' is mostly the engine's `describe_table` and `list_table_versions` on a managed table.",
        "",
        f"Measured {results.get('date', '')} on {results.get('machine', '')} (shared with other jobs).",
    ]
    return "\n".join(lines)


def jobs(work: Path) -> list[Job]:
    """(results key, measure) of the section.

    :param work: the run's directory for catalogs.
    """
    return [("page", run)]


def targets(results: dict[str, Any]) -> list[Target]:
    """Every measured page's p50 ≤ 300 ms."""
    pages = {name: value for name, value in (results.get("page") or {}).items() if isinstance(value, dict)}
    return [
        Target(
            f"page load p50: {name}", f"≤ {TARGET_MS:.0f} ms", f"{value['p50_ms']:.0f} ms", value["p50_ms"] <= TARGET_MS
        )
        for name, value in pages.items()
    ]


def section(results: dict[str, Any]) -> list[str]:
    """The section in the page (between its markers), when measured."""
    return [marked("page", render(results["page"])), ""] if "page" in results else []


def main() -> int:
    """Run the section alone: its numbers to ``RESULTS``, and (full runs) its part of the page rewritten."""
    results = run()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1))
    if not QUICK:
        write_section("page", render(results))
    for name, value in results.items():
        if isinstance(value, dict):
            log(f"{name}: cold {value['cold_ms']:.0f} ms, p50 {value['p50_ms']:.0f} ms, p95 {value['p95_ms']:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
