"""Writers of both implementations on one catalog, in separate processes (issue 12, point 3).

Each worker builds its own namespace, ours or the reference (``lance.namespace.DirectoryNamespace``, which
rewrites ``__manifest`` copy-on-write: an Overwrite that conflicts with our merge-inserts), waits on a shared
barrier, then creates its own namespaces and tables, and contends for shared ids. Outcomes are error class
names (``"ok"`` for success) so the test can count spurious failures.
"""

from __future__ import annotations

import multiprocessing
from typing import Any

import lance_namespace as ln
from lance.namespace import DirectoryNamespace as ReferenceNamespace

from airflow_provider_lance.namespace import DirectoryNamespace
from tests.races import BARRIER_SECONDS

KINDS = {"ours": DirectoryNamespace, "reference": ReferenceNamespace}


def _outcome(call: Any) -> str:
    try:
        call()
    except (ln.NamespaceAlreadyExistsError, ln.TableAlreadyExistsError, ln.ConcurrentModificationError) as error:
        return type(error).__name__  # the answers to a true conflict (the reference's loser may say 14)
    except Exception as error:  # anything else is spurious: keep the message
        return f"{type(error).__name__}: {str(error)[:200]}"
    return "ok"


def worker(kind: str, props: dict[str, str], name: str, rounds: int, barrier: Any) -> list[tuple[str, str]]:
    """``rounds`` times: a namespace of its own, a table in it, and a shared namespace every worker races for
    (exactly one of them wins it). Returns (what, outcome) pairs."""
    ns = KINDS[kind](**props)
    barrier.wait()
    results = []
    for i in range(rounds):
        own = [f"{name}_{i}"]
        results.append(("own-namespace", _outcome(lambda o=own: ns.create_namespace(ln.CreateNamespaceRequest(id=o)))))
        results.append(("own-table", _outcome(lambda o=own: ns.declare_table(ln.DeclareTableRequest(id=[*o, "t"])))))
        shared = [f"shared_{i}"]
        results.append(("shared", _outcome(lambda s=shared: ns.create_namespace(ln.CreateNamespaceRequest(id=s)))))
    return results


def race(props: dict[str, str], kinds: list[str], rounds: int) -> list[list[tuple[str, str]]]:
    """Run one worker per entry of ``kinds`` in its own spawned process; every worker's outcomes."""
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager:
        barrier = manager.Barrier(len(kinds), timeout=BARRIER_SECONDS)
        with context.Pool(len(kinds)) as pool:
            jobs = [
                pool.apply_async(worker, (kind, props, f"{kind}{index}", rounds, barrier))
                for index, kind in enumerate(kinds)
            ]
            return [job.get(timeout=600) for job in jobs]
