"""``python -m benchmarks`` (``make bench``): every section, our engine against the reference (pylance's Rust
``DirectoryNamespace``) in one run, then ``docs/benchmarks.md``.

The raw numbers go to ``benchmarks/results/latest.json`` after every section; ``BENCH_QUICK=1`` writes
``benchmarks/results/quick.{md,json}`` instead, and a partial run (``BENCH_ONLY`` or ``BENCH_SIZES``, see
``benchmarks/common.py``) ``partial.json`` only.

Layout: ``common.py`` (settings, the two engines, timing, goals, marker sections), ``catalog.py`` (catalogs
built in bulk), ``s3_counter.py`` (the request-counting moto server), one module per section, in the order of
``report.SECTIONS`` (operations, batch, writes, poke, s3_writes, threads, processes, writers, data_plane, scale
with its child ``scale_probe``, spark around ``spark_staging``, soak, page, rest, vending, changes): each
measures (``jobs``), renders its part of the page (``section``) and its goals (``targets``); ``report.py`` puts
the page together (fixed text in ``notes.py``), this module runs the sections.
"""

from __future__ import annotations

import json
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

import lance

from benchmarks import catalog
from benchmarks.common import BENCH_DIR, DOC, MERGE, PARTIAL, QUICK, REPO, RESULTS_DIR, log, selected
from benchmarks.report import SECTIONS, render

RESULTS = RESULTS_DIR / ("quick.json" if QUICK else "partial.json" if PARTIAL else "latest.json")
PAGE = RESULTS_DIR / "quick.md" if QUICK else DOC  # a quick run must not overwrite the real numbers


def main() -> int:
    """Run the selected sections (a failing one is recorded, the others still run), then write the page."""
    started = time.perf_counter()
    work = Path(BENCH_DIR or tempfile.mkdtemp(prefix="lance-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {
        "quick": QUICK,
        "machine": f"{platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "pylance": lance.__version__,
        "date": time.strftime("%Y-%m-%d"),
    }
    if MERGE and RESULTS.exists():  # the last full run, its selected sections measured again (none yet: a new one)
        results = json.loads(RESULTS.read_text())
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    for name, measure in (job for module in SECTIONS for job in module.jobs(work)):
        if not selected(name):
            continue
        log(f"section {name}")
        section_started = time.perf_counter()
        try:
            results[name] = measure()
            results.get("_failed", {}).pop(name, None)  # a merged run's earlier failure of it
        except Exception as error:  # one broken section must not lose the others
            log(f"section {name} failed: {type(error).__name__}: {error}")
            results.setdefault("_failed", {})[name] = f"{type(error).__name__}: {error}"
        results.setdefault("_seconds", {})[name] = time.perf_counter() - section_started
        if MERGE:
            results.setdefault("_measured_on", {})[name] = time.strftime("%Y-%m-%d")
        RESULTS.write_text(json.dumps(results, indent=1, default=str))  # after every section
    if not MERGE:
        results["total_seconds"] = time.perf_counter() - started
    RESULTS.write_text(json.dumps(results, indent=1, default=str))
    if PARTIAL:
        log(f"wrote {RESULTS.relative_to(REPO)} (partial run: docs/benchmarks.md not rewritten)")
    else:
        PAGE.write_text(render(results))
        log(f"wrote {PAGE.relative_to(REPO)} and {RESULTS.relative_to(REPO)} in {time.perf_counter() - started:.0f} s")
    if not BENCH_DIR:
        catalog.remove(work)
    return 0
