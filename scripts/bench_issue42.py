"""Every section that holds one of issue 42's rows (``benchmarks/issue42.py``), measured again with the engine and
server of the commit before the issue's changes alongside where the section can measure it, merged into
``benchmarks/results/latest.json`` and rendered into ``docs/benchmarks.md`` (``make bench-issue42``). Run it on a
quiet machine: it first prints what the last measurement of these sections took (``_seconds`` of the results).

every row's section in one run of this checkout (``BENCH_MERGE=1``), each with the engine or server of that
commit where it can measure one: the managed section in a run of its own (``BENCH_MANAGED_BEFORE``: results key
``managed/before``), the short-lived writers in the same runs (``BENCH_SHORT_LIVED_BEFORE``), the authenticated
REST load with its server in the same rounds (``BENCH_REST_BEFORE``: the commit's package,
``benchmarks.common.export_package``); that run renders the page at its end.

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

from benchmarks.common import REPO, RESULTS_DIR, export_package
from benchmarks.issue42 import BEFORE, ROWS

OUT = REPO / ".bench-compare"
SECTIONS = list(dict.fromkeys(row.key for row in ROWS))
MANAGED = "managed/after"  # the section that measures the commit's engine in a run of its own (``managed/before``)


def environment(package: Path, sections: list[str], quick: bool) -> dict[str, str]:
    """The environment of the ``python -m benchmarks`` run.

    :param package: the directory holding the commit's package.
    :param sections: the results keys to measure.
    :param quick: the smoke versions.
    """
    found = {key: value for key, value in os.environ.items() if not key.startswith("BENCH_")}
    if "BENCH_DIR" in os.environ:
        found["BENCH_DIR"] = os.environ["BENCH_DIR"]
    return found | {
        "BENCH_MERGE": "1",
        **({"BENCH_QUICK": "1"} if quick else {}),
        "BENCH_ONLY": ",".join([*sections, *(["managed/before"] if MANAGED in sections else [])]),
        "BENCH_MANAGED_BEFORE": BEFORE,
        "BENCH_REST_BEFORE": str(package),
        "BENCH_SHORT_LIVED_BEFORE": BEFORE,
    }


def estimate(results: dict[str, Any], sections: list[str]) -> float:
    """Seconds the last measurement of ``sections`` took (``_seconds``), the managed section's run with the
    commit's engine counted as its own last one or else as the current engine's.

    :param results: the results file's content.
    :param sections: the results keys to measure.
    """
    seconds: dict[str, float] = results.get("_seconds") or {}
    total = sum(value for key, value in seconds.items() if any(key.startswith(section) for section in sections))
    if MANAGED in sections:
        total += seconds.get("managed/before", seconds.get(MANAGED, 0.0))
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
    package = export_package(BEFORE, OUT)
    run = environment(package, sections, args.quick)
    completed = subprocess.run([sys.executable, "-m", "benchmarks"], cwd=REPO, env=run)
    if completed.returncode:
        return completed.returncode
    failed = json.loads(results_file.read_text()).get("_failed") or {}
    for name, error in failed.items():
        print(f"[issue42] section {name} failed: {error}", file=sys.stderr)
    print(f"[issue42] done in {(time.perf_counter() - started) / 60:.1f} min", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
