"""One engine on one large catalog, in a process of its own (the child of ``benchmarks/scale.py``).

``python -m benchmarks.scale_probe`` reads a job (JSON on stdin: engine, root, size, repetitions, list page
tokens) and writes what it measured (JSON on stdout). It imports only lance, pyarrow, lance_namespace and the
engine under test, so that the memory it reports before opening the catalog is the same for both engines and
what grows after is the catalog's.
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

NAMESPACE = "bench"  # benchmarks.catalog.NAMESPACE (not imported: it would load our engine into both probes)
LIST_LIMIT = 1000
DESCRIBES = 200  # memory is read again after these


def rss_mb(field: str = "VmRSS") -> float:
    """This process's resident set (``VmRSS``), or its private part (``RssAnon``: without the file-backed pages
    of the shared libraries' code, which every process of the machine shares), in MB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def pylance_code_mb() -> float:
    """The resident pages of pylance's shared library (``lance.abi3.so``: its code, file-backed, shared by every
    process of the machine), in MB."""
    total, in_pylance = 0, False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            field = line.split(maxsplit=1)[0]
            if not field.endswith(":"):  # a mapping's header line: address range, permissions, ..., path
                in_pylance = line.rstrip().endswith("/lance.abi3.so")
            elif in_pylance and field == "Rss:":
                total += int(line.split()[1])
    return total / 1024


def measure_memory(at: str, memory: dict[str, dict[str, float]]) -> None:
    """Record VmRSS, RssAnon and pylance's code pages at the moment ``at``."""
    memory["rss_mb"][at], memory["anon_mb"][at] = rss_mb(), rss_mb("RssAnon")
    memory["pylance_code_mb"][at] = pylance_code_mb()


def pick(i: int, size: int, seed: int) -> str:
    """The name of a varying declared table of ``bench``.

    :param i: the repetition.
    :param size: tables in ``bench``.
    :param seed: a different walk for each operation.
    """
    return f"t{(i * 7919 + seed) % size}"


def timed(call: Callable[[int], Any], reps: int) -> dict[str, float]:
    """p50 / p95 (ms) of ``call(i)`` for i in range(reps).

    :param call: the operation.
    :param reps: how many calls.
    """
    samples = []
    for i in range(reps):
        started = time.perf_counter()
        call(i)
        samples.append((time.perf_counter() - started) * 1000)
    ordered = sorted(samples)
    return {"p50": statistics.median(samples), "p95": ordered[round(0.95 * (reps - 1))], "n": reps}


def probe(job: dict[str, Any]) -> dict[str, Any]:
    """Open the catalog, answer once, then time describes, exists, list pages and declares.

    :param job: ``engine`` (ours / reference), ``root``, ``size``, ``reps`` and ``tokens`` (list page tokens).
    """
    import lance  # noqa: F401  (both engines' imports, before the baseline)
    import lance_namespace as ln
    import pyarrow  # noqa: F401

    if job["engine"] == "ours":
        from airflow_provider_lance.namespace import DirectoryNamespace as Namespace
    else:
        from lance.namespace import DirectoryNamespace as Namespace
    size, reps, tokens = job["size"], job["reps"], job["tokens"]
    gc.collect()
    memory: dict[str, dict[str, float]] = {"rss_mb": {}, "anon_mb": {}, "pylance_code_mb": {}}
    measure_memory("imported", memory)
    started = time.perf_counter()
    namespace = Namespace(root=job["root"])
    first = namespace.describe_table(ln.DescribeTableRequest(id=[NAMESPACE, pick(0, size, 1)]))
    open_ms = (time.perf_counter() - started) * 1000
    measure_memory("first_answer", memory)
    assert first.location, "the first describe has no location"

    def describe(i: int) -> None:
        assert namespace.describe_table(ln.DescribeTableRequest(id=[NAMESPACE, pick(i, size, 13)])).location

    def exists(i: int) -> None:
        namespace.table_exists(ln.TableExistsRequest(id=[NAMESPACE, pick(i, size, 29)]))

    def list_page(i: int) -> None:
        request = ln.ListTablesRequest(id=[NAMESPACE], limit=LIST_LIMIT, page_token=tokens[i % len(tokens)])
        assert len(namespace.list_tables(request).tables) == min(LIST_LIMIT, size)

    def declare(i: int) -> None:
        namespace.declare_table(ln.DeclareTableRequest(id=[NAMESPACE, f"new{i}"]))

    describes = timed(describe, DESCRIBES)
    measure_memory("after_200_describes", memory)
    operations = {
        "describe_table": describes,
        "table_exists": timed(exists, reps),
        "list_tables page": timed(list_page, reps),
        "declare_table": timed(declare, reps),
    }
    measure_memory("end", memory)
    return {"open_ms": open_ms, **memory, "operations": operations}


if __name__ == "__main__":
    json.dump(probe(json.load(sys.stdin)), sys.stdout)
