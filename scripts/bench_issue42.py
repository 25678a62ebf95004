"""Every section that holds one of issue 42's rows (``benchmarks/issue42.py``), measured again with the engine and
server of the commit before the issue's changes alongside where the section can measure it, merged into
``benchmarks/results/latest.json`` and rendered into ``docs/benchmarks.md`` (``make bench-issue42``). Run it on a
quiet machine: it first prints what the last measurement of these sections took (``_seconds`` of the results).

1. ``git archive`` of that commit's package (``bench_compare.export``) into ``.bench-compare/parts/<commit>``;
2. the managed section with that package (a run of its own from that directory, which puts the package first on
   the path while the benchmarks stay this checkout's): results key ``managed/<commit>``;
3. every row's section in one run of this checkout (``BENCH_MERGE=1``): the short-lived writers with the commit's
   engine in the same runs (``BENCH_SHORT_LIVED_BEFORE``), the authenticated REST load with its server in the same
   rounds (``BENCH_REST_BEFORE``); that run renders the page at its end.

``--quick``: the smoke versions (``BENCH_QUICK=1``: ``quick.json`` and ``quick.md``; the page stays as it is).
``--sections``: the results keys to measure (default: every row's; the poke's counts need no quiet machine).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import RESULTS_DIR
from benchmarks.issue42 import BEFORE, ROWS
from scripts.bench_compare import REPO, export

OUT = REPO / ".bench-compare"
PACKAGE = "airflow_provider_lance"
SECTIONS = list(dict.fromkeys(row.key for row in ROWS))
MANAGED = "managed/after"  # the section that measures the commit's engine in a run of its own


def runs(package: Path, sections: list[str], quick: bool) -> list[tuple[str, Path, dict[str, str]]]:
    """(what, working directory, environment) of each ``python -m benchmarks`` run, in order.

    :param package: the directory holding the commit's package.
    :param sections: the results keys to measure.
    :param quick: the smoke versions.
    """
    environment = {key: value for key, value in os.environ.items() if not key.startswith("BENCH_")}
    environment |= {"BENCH_MERGE": "1", **({"BENCH_QUICK": "1"} if quick else {})}
    if "BENCH_DIR" in os.environ:
        environment["BENCH_DIR"] = os.environ["BENCH_DIR"]
    found: list[tuple[str, Path, dict[str, str]]] = []
    if MANAGED in sections:
        before = {"BENCH_ONLY": f"managed/{BEFORE}", "BENCH_MANAGED_LABEL": BEFORE, "PYTHONPATH": str(package)}
        found.append((f"the managed section with {BEFORE}'s engine", package, environment | before))
    every = {
        "BENCH_ONLY": ",".join(sections),
        "BENCH_REST_BEFORE": str(package),
        "BENCH_SHORT_LIVED_BEFORE": BEFORE,
    }
    found.append(("every row's section", REPO, environment | every))
    return found


def estimate(results: dict[str, Any], sections: list[str]) -> float:
    """Seconds the last measurement of ``sections`` took (``_seconds``), the managed section's run with the
    commit's engine counted as its own last one or else as the current engine's.

    :param results: the results file's content.
    :param sections: the results keys to measure.
    """
    seconds: dict[str, float] = results.get("_seconds") or {}
    total = sum(value for key, value in seconds.items() if any(key.startswith(section) for section in sections))
    if MANAGED in sections:
        total += seconds.get(f"managed/{BEFORE}", seconds.get(MANAGED, 0.0))
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sections", default=",".join(SECTIONS), help="results keys, comma-separated")
    parser.add_argument("--quick", action="store_true", help="the smoke versions (BENCH_QUICK=1): no figures")
    args = parser.parse_args()
    sections = list(filter(None, args.sections.split(",")))
    results_file = RESULTS_DIR / ("quick.json" if args.quick else "latest.json")
    last = json.loads(results_file.read_text()) if results_file.exists() else {}
    print(
        f"[issue42] {', '.join(sections)}; their last measurement took {estimate(last, sections) / 60:.0f} min",
        file=sys.stderr,
        flush=True,
    )
    started = time.perf_counter()
    package = export(BEFORE, OUT, PACKAGE)
    for what, directory, environment in runs(package, sections, args.quick):
        print(f"[issue42] {what}: BENCH_ONLY={environment['BENCH_ONLY']}", file=sys.stderr, flush=True)
        completed = subprocess.run([sys.executable, "-m", "benchmarks"], cwd=directory, env=environment)
        if completed.returncode:
            return completed.returncode
    failed = json.loads(results_file.read_text()).get("_failed") or {}
    for name, error in failed.items():
        print(f"[issue42] section {name} failed: {error}", file=sys.stderr)
    print(f"[issue42] done in {(time.perf_counter() - started) / 60:.1f} min", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
