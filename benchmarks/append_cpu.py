"""The CPU of one managed append (issue 42), load-robust: process CPU time per append, ours against the floor.

``python -m benchmarks.append_cpu [--tables N] [--versions N] [--before COMMIT] [--runs N]``: each run builds new
catalogs (ours with ``table_version_management=true``, the reference with ``table_version_tracking_enabled=true``)
of ``--tables`` tables through pylance (``lance.write_dataset(..., namespace_client=ns)``), then appends to each
table ``--versions`` - 2 times, ours, the reference and the floor's one guarded ``__manifest`` append
(commit_floor.py) taking turns append by append, as the managed section does. Each append is timed by
``time.process_time`` (the CPU of every thread of the process: pylance's Rust threads and the engine's) and by
the wall clock; the floor is the reference's append plus that one append of the same turn. A shared machine's
load stretches CPU time far less than wall time, so these ratios hold where the section's wall-clock ones drift.

``--before COMMIT``: each run is made twice, in turn, by processes of their own: that commit's engine (its package
first on ``PYTHONPATH``, as the managed section's ``BENCH_MANAGED_BEFORE``) and this checkout's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import lance
import lance_namespace as ln
import pyarrow as pa

from benchmarks import catalog
from benchmarks.commit_floor import CommitFloor
from benchmarks.common import REPO, export_package, ours, reference

ENGINES = {
    "ours": (ours, {"table_version_management": "true"}),
    "reference": (reference, {"table_version_tracking_enabled": "true"}),
}
COMMIT, FLOOR = "commit", "floor"  # the floor's one append alone; the reference's append plus it


def measure(work: Path, tables: int, versions: int) -> dict[str, dict[str, list[float]]]:
    """One run: every timed append's CPU and wall milliseconds by engine (``floor``: the reference's plus the
    floor's append of the same turn).

    :param work: a new directory for the catalogs.
    :param tables: tables per catalog.
    :param versions: versions per table (the first two untimed).
    """
    engines = {name: make(work / name, **properties) for name, (make, properties) in ENGINES.items()}
    for engine in engines.values():
        engine.call("create_namespace", ln.CreateNamespaceRequest(id=[catalog.NAMESPACE]))
    data = pa.table({"x": [1, 2, 3]})

    def write(name: str, table: int, version: int) -> Callable[[], object]:
        return lambda: lance.write_dataset(
            data,
            namespace_client=engines[name].namespace,
            table_id=[catalog.NAMESPACE, f"t{table}"],
            mode="create" if version == 0 else "append",
        )

    for version in range(2):
        for table in range(tables):
            for name in engines:
                write(name, table, version)()
    floor = CommitFloor(str(work / "ours" / "__manifest"), str(work / "floor"))
    cpu: dict[str, list[float]] = {name: [] for name in [*engines, COMMIT]}
    wall: dict[str, list[float]] = {name: [] for name in cpu}
    for version in range(2, versions):
        for table in range(tables):
            floor.maintain()  # untimed
            steps = {name: write(name, table, version) for name in engines}
            steps[COMMIT] = lambda table=table, version=version: floor.append(
                f"{catalog.NAMESPACE}$t{table}${version + 1}"
            )
            names = list(steps) if (version + table) % 2 == 0 else list(reversed(steps))
            for name in names:
                started_cpu, started = time.process_time(), time.perf_counter()
                steps[name]()
                cpu[name].append((time.process_time() - started_cpu) * 1000)
                wall[name].append((time.perf_counter() - started) * 1000)
    for figures in (cpu, wall):
        figures[FLOOR] = [mine + one for mine, one in zip(figures["reference"], figures[COMMIT], strict=True)]
    return {"cpu": cpu, "wall": wall}


def summary(run: dict[str, dict[str, list[float]]]) -> dict[str, float]:
    """A run's medians: each engine's CPU and wall ms per append, and the medians of the per-turn ratios ours ÷
    floor and ours ÷ reference (CPU and wall).

    :param run: what :func:`measure` returned.
    """
    figures: dict[str, float] = {"load": os.getloadavg()[0]}
    for kind, values in run.items():
        for name, samples in values.items():
            figures[f"{kind} {name}"] = statistics.median(samples)
        for against in (FLOOR, "reference"):
            pairs = zip(values["ours"], values[against], strict=True)
            figures[f"{kind} ours/{against}"] = statistics.median(mine / theirs for mine, theirs in pairs)
    return figures


def main() -> None:
    """Runs in turn (each in a process of its own), a line per run, then each engine's medians over the runs."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=20)
    parser.add_argument("--versions", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--before", help="also measure this commit's engine, run by run in turn")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a child process: one run, JSON out
    arguments = parser.parse_args()
    if arguments.one:
        with tempfile.TemporaryDirectory(prefix="append-cpu-") as work:
            print(json.dumps(summary(measure(Path(work), arguments.tables, arguments.versions))))
        return
    command = [sys.executable, "-m", "benchmarks.append_cpu", "--one", "--tables", str(arguments.tables)]
    command += ["--versions", str(arguments.versions)]
    paths = {"after": [str(REPO)]}
    if arguments.before:
        package = export_package(arguments.before, Path(tempfile.mkdtemp(prefix="append-cpu-before-")))
        paths = {"before": [str(package), str(REPO)], **paths}
    results: dict[str, list[dict[str, float]]] = {label: [] for label in paths}
    for number in range(arguments.runs):
        for label, path in paths.items():
            environment = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
            answer = subprocess.run(command, env=environment, cwd=path[0], check=True, capture_output=True, text=True)
            results[label].append(json.loads(answer.stdout.splitlines()[-1]))
            figures = results[label][-1]
            print(
                f"run {number + 1} {label}: load {figures['load']:.1f}; CPU ms per append ours"
                f" {figures['cpu ours']:.2f}, reference {figures['cpu reference']:.2f},"
                f" floor {figures['cpu floor']:.2f};"
                f" ours ÷ floor CPU {figures['cpu ours/floor']:.3f}, wall {figures['wall ours/floor']:.3f};"
                f" ours ÷ reference CPU {figures['cpu ours/reference']:.3f}, wall {figures['wall ours/reference']:.3f}",
                flush=True,
            )
    for label, runs in results.items():
        medians = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
        print(
            f"{label}, median of {len(runs)} runs: "
            + json.dumps({key: round(value, 3) for key, value in medians.items()})
        )


if __name__ == "__main__":
    main()
