"""Before/after benchmark comparison of two commits, interleaved (issue 38's acceptance: the same benchmarks before
and after, within run-to-run spread).

Each commit is exported with ``git archive`` into ``OUT/trees/<commit>`` (no worktree, nothing shared with this
checkout) and gets its own venv from its own lock (``make venv``). Then, for ``--rounds`` rounds, every section
runs once per commit as ``BENCH_ONLY=<section> python -m benchmarks`` in that commit's tree, the two commits in
turn and in alternating order (A B, B A, A B, ...), so that a drift of the machine's speed falls on both. Each
commit keeps its own ``BENCH_DIR`` (the scale sections cache their catalogs there between rounds; neither reads
catalogs the other wrote). Every run's results file and its process figures (wall, user + sys CPU of the run and
its children) go to ``OUT/runs``; ``OUT/summary.md`` gives, per section and per numeric result that varies, the
median of each commit, the ratio after/before and the before commit's own spread (max/min over its rounds).

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
SECTIONS = ("scale", "scale_managed", "rest", "writers")


def export(commit: str, out: Path) -> Path:
    """The tree of ``commit`` in ``out/trees/<commit>`` with its own venv (``make venv``: its own lock).

    :param commit: A full commit hash.
    :param out: The comparison's directory.
    """
    tree = out / "trees" / commit[:12]
    if not (tree / "Makefile").exists():
        tree.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "archive", commit], cwd=REPO, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    subprocess.run(["make", "venv"], cwd=tree, check=True)
    return tree


def run_section(tree: Path, section: str, quick: bool, bench_dir: Path) -> dict[str, Any]:
    """One run of ``section`` in ``tree``: its results and the run's process figures.

    :param tree: An exported commit with its venv.
    :param section: The results key (``BENCH_ONLY``) of the section.
    :param quick: Whether to run the smoke version.
    :param bench_dir: The commit's ``BENCH_DIR``.
    """
    env = {**os.environ, "BENCH_ONLY": section, "BENCH_DIR": str(bench_dir)}
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
        "failed": results.get("_failed", {}).get(section),
        "result": results.get(section),
        "pylance": results.get("pylance"),
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


def summary(runs: dict[str, dict[str, list[dict[str, Any]]]], labels: tuple[str, str]) -> str:
    """The Markdown comparison: per section, its process figures and every varying number of its results.

    :param runs: section -> commit label -> that commit's runs.
    :param labels: (before, after) labels.
    """
    before, after = labels
    lines = [f"# Benchmarks: {after} against {before}", ""]
    for section, by_label in runs.items():
        lines += [f"## {section}", "", f"| figure | {before} (median) | {after} (median) | ratio | {before} spread |"]
        lines.append("|---|---|---|---|---|")
        series: dict[str, dict[str, list[float]]] = {}
        for label in labels:
            for run in by_label.get(label, []):
                if run["failed"] or run["exit_code"]:
                    lines.insert(2, f"**{label} failed**: {run['failed'] or 'exit code ' + str(run['exit_code'])}")
                    continue
                numbers = {"run.wall_seconds": run["wall_seconds"], "run.cpu_seconds": run["cpu_seconds"]}
                numbers.update(leaves(run["result"]))
                for path, number in numbers.items():
                    series.setdefault(path, {}).setdefault(label, []).append(number)
        for path, values in series.items():
            first, second = values.get(before, []), values.get(after, [])
            if not first or not second or len(set(first + second)) == 1:
                continue  # a setting or a count, the same in every run
            median_first, median_second = statistics.median(first), statistics.median(second)
            ratio = f"{median_second / median_first:.2f}" if median_first else "-"
            spread = f"{max(first) / min(first):.2f}" if min(first) > 0 else "-"
            lines.append(f"| {path} | {median_first:.4g} | {median_second:.4g} | {ratio} | {spread} |")
        lines.append("")
    return "\n".join(lines)


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
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for round_number in range(args.rounds):
        order = [0, 1] if round_number % 2 == 0 else [1, 0]
        for section in filter(None, args.sections.split(",")):
            for index in order:
                bench_dir = out / "work" / commits[index][:12]
                print(f"[compare] round {round_number + 1}: {section} on {labels[index]}", file=sys.stderr, flush=True)
                run = run_section(trees[index], section, args.quick, bench_dir)
                runs.setdefault(section, {}).setdefault(labels[index], []).append(run)
                target = out / "runs" / section / f"{commits[index][:12]}-round{round_number + 1}.json"
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(json.dumps(run, indent=1, default=str))
    text = summary(runs, labels)
    (out / "summary.md").write_text(text)
    print(text)
    every_run = [run for by_label in runs.values() for label_runs in by_label.values() for run in label_runs]
    return 1 if any(run["failed"] or run["exit_code"] for run in every_run) else 0


if __name__ == "__main__":
    sys.exit(main())
