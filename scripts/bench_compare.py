"""Before/after benchmark comparison of two commits, interleaved (issue 38's acceptance: the same benchmarks before
and after, within run-to-run spread).

Each commit is exported with ``git archive`` into ``OUT/trees/<commit>`` (no worktree, nothing shared with this
checkout) and gets its own venv from its own lock (``make venv``). Then, for ``--rounds`` rounds, the sections
run once per commit as ``BENCH_ONLY=<sections> python -m benchmarks`` in that commit's tree (one run: ``BENCH_ONLY``
selects by prefix, so ``scale`` alone would run ``scale_managed`` too), the two commits in turn and in
alternating order (A B, B A, A B, ...), so that a drift of the machine's speed falls on both. Each commit keeps
its own ``BENCH_DIR`` (the scale sections cache their catalogs there between rounds; neither reads catalogs the
other wrote). Every run's results and its process figures (wall, user + sys CPU of the run and its children) go
to ``OUT/runs``; ``OUT/summary.md`` gives, per section and per numeric result that varies, the median of each
commit, the ratio after/before and the before commit's own spread (max/min over its rounds).

Run it on a quiet machine, from a checkout that has both commits::

    python3 scripts/bench_compare.py --before 5ecbabb --after main --rounds 3

``--quick`` runs the sections' smoke versions (``BENCH_QUICK=1``): a check that they run, not figures.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # run by any Python 3: only the standard library and benchmarks/git_export.py

from benchmarks import git_export  # noqa: E402

SECTIONS = ("scale", "scale_managed", "rest", "writers")


def export(commit: str, out: Path) -> Path:
    """The tree of ``commit`` in ``out/trees/<commit>`` with its own venv (``make venv``: its own lock).

    :param commit: A full commit hash.
    :param out: The comparison's directory.
    """
    tree = git_export.export(commit, out / "trees" / commit[:12])
    subprocess.run(["make", "venv"], cwd=tree, check=True)
    return tree


def run_benchmarks(tree: Path, sections: list[str], quick: bool, bench_dir: Path) -> dict[str, Any]:
    """One run of ``sections`` in ``tree``: each section's results, and the run's process figures.

    :param tree: An exported commit with its venv.
    :param sections: The results keys (``BENCH_ONLY``) of the sections.
    :param quick: Whether to run the smoke versions.
    :param bench_dir: The commit's ``BENCH_DIR``.
    """
    env = {**os.environ, "BENCH_ONLY": ",".join(sections), "BENCH_DIR": str(bench_dir)}
    env.pop("BENCH_MERGE", None)
    if quick:
        env["BENCH_QUICK"] = "1"
    else:
        env.pop("BENCH_QUICK", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    completed = subprocess.run([str(tree / ".venv" / "bin" / "python"), "-m", "benchmarks"], cwd=tree, env=env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    results_file = tree / "benchmarks" / "results" / ("quick.json" if quick else "partial.json")
    results = json.loads(results_file.read_text()) if results_file.exists() else {}
    return {
        "exit_code": completed.returncode,
        "wall_seconds": wall,
        "cpu_seconds": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "pylance": results.get("pylance"),
        "sections": {
            section: {
                "failed": results.get("_failed", {}).get(section),
                "seconds": results.get("_seconds", {}).get(section),
                "result": results.get(section),
            }
            for section in sections
        },
    }


def leaves(value: Any, path: str = "") -> Iterator[tuple[str, float]]:
    """Every number in a section's results, by its path (``a.b[2].c``)."""
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        yield path, float(value)
    elif isinstance(value, dict):
        for key, inner in value.items():
            yield from leaves(inner, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from leaves(inner, f"{path}[{index}]")


def summary(runs: dict[str, list[dict[str, Any]]], labels: tuple[str, str]) -> str:
    """The Markdown comparison: per section, its time and every varying number of its results.

    :param runs: commit label -> that commit's runs, in round order.
    :param labels: (before, after) labels.
    """
    before, after = labels
    lines = [f"# Benchmarks: {after} against {before}", ""]
    for label in labels:
        lines.append(f"- {label}: pylance {', '.join(sorted({str(run['pylance']) for run in runs[label]}))}")
    sections = list(runs[before][0]["sections"]) if runs[before] else []
    for section in sections:
        lines += ["", f"## {section}", ""]
        series: dict[str, dict[str, list[float]]] = {}
        for label in labels:
            for run in runs[label]:
                measured = run["sections"][section]
                if measured["failed"] or measured["result"] is None:
                    reason = measured["failed"] or f"no result (exit code {run['exit_code']})"
                    lines.append(f"**{label} failed**: {reason}")
                    continue
                numbers = dict(leaves(measured["result"]))
                numbers["section seconds"] = measured["seconds"] or 0.0
                for path, number in numbers.items():
                    series.setdefault(path, {}).setdefault(label, []).append(number)
        lines += [
            f"| figure | {before} (median) | {after} (median) | ratio | {before} spread |",
            "|---|---|---|---|---|",
        ]
        for path, values in series.items():
            first, second = values.get(before, []), values.get(after, [])
            if not first or not second or len(set(first + second)) == 1:
                continue  # a setting or a count, the same in every run
            median_first, median_second = statistics.median(first), statistics.median(second)
            ratio = f"{median_second / median_first:.2f}" if median_first else "-"
            spread = f"{max(first) / min(first):.2f}" if min(first) > 0 else "-"
            lines.append(f"| {path} | {median_first:.4g} | {median_second:.4g} | {ratio} | {spread} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", default="5ecbabb", help="the commit before (default: 5ecbabb, before issue 38)")
    parser.add_argument("--after", default="main", help="the commit after (default: main)")
    parser.add_argument("--sections", default=",".join(SECTIONS), help="results keys, comma-separated")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each section per commit, interleaved")
    parser.add_argument("--quick", action="store_true", help="the smoke versions (BENCH_QUICK=1): no figures")
    parser.add_argument("--out", type=Path, default=REPO / ".bench-compare", help="trees, runs and summary.md")
    args = parser.parse_args()

    commits = [
        subprocess.run(["git", "rev-parse", ref], cwd=REPO, check=True, capture_output=True, text=True).stdout.strip()
        for ref in (args.before, args.after)
    ]
    labels = (f"{args.before} ({commits[0][:8]})", f"{args.after} ({commits[1][:8]})")
    out = args.out.resolve()
    trees = [export(commit, out) for commit in commits]
    sections = list(filter(None, args.sections.split(",")))
    runs: dict[str, list[dict[str, Any]]] = {label: [] for label in labels}
    for round_number in range(args.rounds):
        for index in [0, 1] if round_number % 2 == 0 else [1, 0]:
            print(f"[compare] round {round_number + 1}: {labels[index]}", file=sys.stderr, flush=True)
            run = run_benchmarks(trees[index], sections, args.quick, out / "work" / commits[index][:12])
            runs[labels[index]].append(run)
            target = out / "runs" / f"{commits[index][:12]}-round{round_number + 1}.json"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(run, indent=1, default=str))
    text = summary(runs, labels)
    (out / "summary.md").write_text(text)
    print(text)
    every_run = [run for label_runs in runs.values() for run in label_runs]
    failed = any(run["exit_code"] or any(m["failed"] for m in run["sections"].values()) for run in every_run)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
