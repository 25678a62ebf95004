"""What every benchmark section shares: the settings of the run, the two engines, timing, logging, the goals'
shape, and the Markdown sections that are rewritten in place between markers.

Settings (environment): ``BENCH_QUICK=1`` a small smoke run; ``BENCH_ONLY=operations,poke`` some sections
(by prefix of their results key); ``BENCH_SIZES=300,1000`` the catalog sizes of the operations and poke
sections; ``BENCH_SCALE_SIZES`` those of the scale section; ``BENCH_DIR`` where catalogs are built (and the
scale section's catalogs cached between runs); ``BENCH_MERGE=1`` with ``BENCH_ONLY``: the selected sections
replace theirs in the last full run's ``latest.json`` and the page is rendered again (it names each section
measured on another day than the full run).
"""

from __future__ import annotations

import gc
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import lance_namespace as ln
from lance.namespace import DirectoryNamespace as ReferenceNamespace

from airflow_provider_lance.implementations import pages
from airflow_provider_lance.namespace import DirectoryNamespace
from benchmarks import git_export

QUICK = os.environ.get("BENCH_QUICK", "") not in ("", "0", "false")
ONLY = set(filter(None, os.environ.get("BENCH_ONLY", "").split(",")))
SIZES = [int(n) for n in os.environ.get("BENCH_SIZES", "").split(",") if n]
BENCH_DIR = os.environ.get("BENCH_DIR", "")
# A partial run (BENCH_ONLY or BENCH_SIZES) must not overwrite the last full run's numbers (docs/benchmarks.md
# is rendered from latest.json): it writes partial.json and leaves the page alone.
MERGE = bool(ONLY) and os.environ.get("BENCH_MERGE", "") not in ("", "0", "false")
PARTIAL = bool(ONLY or SIZES) and not MERGE
REPO = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO / "benchmarks" / "results"
DOC = REPO / "docs" / "benchmarks.md"

# The reference's version methods take plain dicts (its other methods take request models).
_REFERENCE_DICT_METHODS = {"create_table_version", "describe_table_version", "batch_delete_table_versions"}


def export_package(commit: str, work: Path) -> Path:
    """A directory holding the engine package of ``commit``, to put first on a process's ``PYTHONPATH`` when
    measuring that commit's engine (``before``) with this checkout's benchmarks.

    :param commit: the commit.
    :param work: the run's directory (the package goes to ``before-<commit>/`` in it).
    """
    return git_export.export(commit, work / f"before-{commit}", "airflow_provider_lance")


def log(message: str) -> None:
    """A progress line on stderr (stdout may carry a section's Markdown).

    :param message: what happened.
    """
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def selected(key: str) -> bool:
    """Whether ``BENCH_ONLY`` (when set) selects the section whose results key is ``key``.

    :param key: the section's results key (``operations/300``, ``poke``, ...).
    """
    return not ONLY or any(key.startswith(prefix) for prefix in ONLY)


@dataclass
class Engine:
    """One implementation behind a uniform ``call``."""

    name: str
    namespace: Any

    def call(self, method: str, request: Any) -> Any:
        """Call ``method`` with ``request`` (as a dict where the reference takes one).

        :param method: the namespace method.
        :param request: its request model.
        """
        if self.name == "reference" and method in _REFERENCE_DICT_METHODS:
            request = request.model_dump(exclude_none=True)
        return getattr(self.namespace, method)(request)


def ours(root: Path | str, **properties: str) -> Engine:
    """Our engine on ``root``.

    :param root: the catalog root.
    :param properties: other constructor properties.
    """
    return Engine("ours", DirectoryNamespace(root=str(root), **properties))


def reference(root: Path | str, **properties: str) -> Engine:
    """The reference (pylance's Rust ``DirectoryNamespace``) on ``root``.

    :param root: the catalog root.
    :param properties: other constructor properties.
    """
    return Engine("reference", ReferenceNamespace(root=str(root), **properties))


ENGINES: dict[str, Callable[..., Engine]] = {"ours": ours, "reference": reference}


def percentile(samples: list[float], q: float) -> float:
    """The ``q`` quantile of ``samples`` (nearest rank).

    :param samples: the values.
    :param q: between 0 and 1.
    """
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


@dataclass
class Timing:
    """Samples of one operation, in milliseconds."""

    samples: list[float] = field(default_factory=list)

    @property
    def p50(self) -> float:
        return statistics.median(self.samples)

    @property
    def p95(self) -> float:
        return percentile(self.samples, 0.95)

    def as_dict(self) -> dict[str, float]:
        return {"p50": self.p50, "p95": self.p95, "n": len(self.samples)}


def over_runs(measured: list[dict[str, float]]) -> dict[str, Any]:
    """One engine's figure over several runs: ``p50`` the median of the runs' p50s, ``runs`` each run's p50 and,
    where the runs have them, ``p95`` the median of their p95s and ``n`` every sample.

    :param measured: the figure of each run (``{"p50": ...}``, or :meth:`Timing.as_dict`).
    """
    values = [one["p50"] for one in measured]
    combined: dict[str, Any] = {"p50": statistics.median(values), "runs": values}
    if all("p95" in one for one in measured):
        combined["p95"] = statistics.median(one["p95"] for one in measured)
        combined["n"] = sum(one["n"] for one in measured)
    return combined


Job = tuple[str, Callable[[], Any]]  # (results key, measure) of one section, or of one size of it
Operation = tuple[Callable[[int], Any], Callable[[int], Any] | None]  # operation(i), setup(i) run untimed before


def measure(operation: Callable[[int], Any], reps: int) -> Timing:
    """Time ``operation(i)`` for i in range(reps), after one untimed call.

    :param operation: the call.
    :param reps: how many timed calls.
    """
    return interleaved({"one": (operation, None)}, reps)["one"]


def interleaved(
    operations: dict[str, Operation], reps: int, around: Callable[[str, int], Any] | None = None
) -> dict[str, Timing]:
    """Time the operations of several engines interleaved: repetition i runs each engine's operation in turn
    (the order alternates), so background load hits them alike; repetition -1 warms up, untimed.

    :param operations: engine name -> (operation(i), setup(i) or None).
    :param reps: timed repetitions.
    :param around: (engine name, i) -> a context manager entered around each timed call (e.g. a request count).
    """
    from contextlib import nullcontext

    timings = {name: Timing() for name in operations}
    names = list(operations)
    for i in range(-1, reps):
        if i == 0:
            gc.collect()
        for name in names if i % 2 == 0 else reversed(names):
            operation, setup = operations[name]
            if setup:
                setup(i)
            with around(name, i) if around else nullcontext():
                started = time.perf_counter()
                operation(i)
                elapsed = (time.perf_counter() - started) * 1000
            if i >= 0:
                timings[name].samples.append(elapsed)
    return timings


def list_all(namespace: Any, namespace_id: list[str]) -> list[str]:
    """Every table name of a namespace, page by page.

    :param namespace: a namespace object (either engine's, or an :class:`Engine`'s ``namespace``).
    :param namespace_id: the namespace.
    """
    request = ln.ListTablesRequest(id=namespace_id, limit=1000)
    return [name for answer in pages(namespace.list_tables, request) for name in answer.tables]


class Target(NamedTuple):
    """One goal of the page's Targets table; ``why`` = (why it can miss, what to do next), shown when missed."""

    name: str
    wanted: str
    measured: str
    met: bool
    why: tuple[str, str] | None = None


def ms(value: float | None) -> str:
    """Milliseconds for a table cell."""
    return "-" if value is None else (f"{value:.2f}" if value < 100 else f"{value:,.0f}")


def ratio(mine: float, theirs: float) -> str:
    """``mine / theirs`` as ``0.42x``."""
    return f"{mine / theirs:.2f}x" if theirs else "-"


def times(value: float) -> str:
    """A ratio already divided, as ``0.42x``."""
    return f"{value:.2f}x"


def spread(values: list[float], cell: Callable[[float], str]) -> str:
    """``median (min-max)`` of several runs' values for a table cell (``cell`` formats one: :func:`ms`,
    :func:`times`); the value alone of one run, ``-`` of none.

    :param values: each run's value.
    :param cell: how one value is shown.
    """
    if not values:
        return "-"
    if len(values) == 1:
        return cell(values[0])
    return f"{cell(statistics.median(values))} ({cell(min(values))}-{cell(max(values))})"


def kinds(counts: dict[str, float]) -> str:
    """``GET 2, PUT 1`` of a by-kind request count."""
    return ", ".join(f"{k} {v:g}" for k, v in sorted(counts.items()) if v) or "none"


def marked(name: str, markdown: str) -> str:
    """A section between its markers, so that running it alone can replace it in the page.

    :param name: the section's marker name.
    :param markdown: the section.
    """
    return f"<!-- {name}:begin -->\n{markdown.strip()}\n<!-- {name}:end -->"


def write_section(name: str, markdown: str, doc: Path = DOC) -> None:
    """Replace the section between its markers in ``doc`` (appended when absent).

    :param name: the section's marker name.
    :param markdown: the section (without markers).
    :param doc: the page.
    """
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    text = doc.read_text() if doc.exists() else ""
    if begin in text and end in text:
        text = text[: text.index(begin)] + marked(name, markdown) + text[text.index(end) + len(end) :]
    else:
        text = text.rstrip("\n") + "\n\n" + marked(name, markdown) + "\n"
    doc.write_text(text)
