"""Concurrency: real processes (multiprocessing "spawn") racing on one catalog.

One pool of 8 spawned workers serves every test of this module (spawning costs ~1.5 s of imports per process
on this 2-core machine). A shared barrier lines the workers up right before the contended call.
"""

from __future__ import annotations

import multiprocessing
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lance
import lance_namespace as ln
import pytest

from airflow_provider_lance.namespace.manifest_rows import NAMESPACE, TABLE
from tests.namespace.helpers_versions import (
    adopt_template,
    build_template,
    copy_staged,
    make_ns,
    pool_worker,
    read,
    rows,
    staged_files,
    version_rows,
    versions,
)
from tests.races import BARRIER_SECONDS

pytestmark = pytest.mark.slow  # starts processes of its own

WORKERS = 8
ROUNDS = 50
COMMAND_TIMEOUT = 120


class Pool:
    """Eight spawned workers, each with its own command queue, one result queue and one barrier."""

    def __init__(self, size: int) -> None:
        context = multiprocessing.get_context("spawn")
        self.barrier = context.Barrier(size, timeout=BARRIER_SECONDS)
        self.results = context.Queue()
        self.queues = [context.Queue() for _ in range(size)]
        self.processes = [
            context.Process(target=pool_worker, args=(self.barrier, queue, self.results), daemon=True)
            for queue in self.queues
        ]
        started = time.perf_counter()
        for process in self.processes:
            process.start()
        for _ in self.processes:
            assert self.results.get(timeout=COMMAND_TIMEOUT)[0] == "ready"
        self.spawn_seconds = time.perf_counter() - started

    def run(self, function: str, per_worker: list[dict[str, Any]]) -> list[Any]:
        """Run ``function`` in every worker (worker i gets ``per_worker[i]``); results in completion order."""
        self.barrier.reset()
        for queue, kwargs in zip(self.queues, per_worker, strict=True):
            queue.put((function, kwargs))
        results = [self.results.get(timeout=COMMAND_TIMEOUT) for _ in self.queues]
        crashed = [detail for status, detail in results if status != "done"]
        assert not crashed, crashed
        return [detail for _, detail in results]

    def close(self) -> None:
        for queue in self.queues:
            queue.put(None)
        for process in self.processes:
            process.join(30)
            if process.is_alive():
                process.kill()


@pytest.fixture(scope="module")
def pool() -> Iterator[Pool]:
    workers = Pool(WORKERS)
    print(f"\nspawned {WORKERS} workers in {workers.spawn_seconds:.1f}s")
    yield workers
    workers.close()


def test_race_create_namespace(pool: Pool, root: Path) -> None:
    ns = make_ns(root, managed=True)
    ns.create_namespace(ln.CreateNamespaceRequest(id=["warm"]))  # __manifest exists: race on the row
    for name in ("x", "y", "z"):
        outcomes = pool.run("race_create_namespace", [{"root": str(root), "name": name}] * WORKERS)
        counts = Counter(status for status, _ in outcomes)
        assert counts == {"ok": 1, "NamespaceAlreadyExistsError:2": WORKERS - 1}, outcomes
    namespace_rows = [r.object_id for r in ns.manifest.query() if r.object_type == NAMESPACE]
    assert sorted(namespace_rows) == ["warm", "x", "y", "z"]


def test_race_create_first_namespace_of_a_new_catalog(pool: Pool, root: Path) -> None:
    """No ``__manifest`` yet: the racers also race to create the manifest table itself."""
    outcomes = pool.run("race_create_namespace", [{"root": str(root), "name": "first"}] * WORKERS)
    counts = Counter(status for status, _ in outcomes)
    assert counts == {"ok": 1, "NamespaceAlreadyExistsError:2": WORKERS - 1}, outcomes
    assert [r.object_id for r in make_ns(root, managed=False).manifest.query()] == ["first"]


@pytest.mark.parametrize("table_id", [["prod", "t"], ["rootlevel"]], ids=["hashed", "dot_lance"])
def test_race_declare_table(pool: Pool, root: Path, table_id: list[str]) -> None:
    ns = make_ns(root, managed=True)
    ns.create_namespace(ln.CreateNamespaceRequest(id=["prod"]))
    outcomes = pool.run("race_declare_table", [{"root": str(root), "table_id": table_id}] * WORKERS)
    counts = Counter(status for status, _ in outcomes)
    assert counts["ok"] == 1, outcomes
    # Losers see the row or lose the .lance-reserved put-if-not-exists: the table exists either way (5).
    assert counts == {"ok": 1, "TableAlreadyExistsError:5": WORKERS - 1}, outcomes
    table_rows = [r for r in ns.manifest.query() if r.object_type == TABLE]
    assert [r.object_id for r in table_rows] == ["$".join(table_id)]
    # Losers removed what they wrote: exactly one table directory, the one the row points at.
    directories = sorted(p.name for p in root.iterdir() if p.name != "__manifest")
    assert directories == [table_rows[0].location]
    assert (root / table_rows[0].location / ".lance-reserved").exists()


def test_race_commit_same_version(pool: Pool, root: Path, tmp_path: Path) -> None:
    """8 processes x 50 rounds commit the same version of one table (managed): one winner per round.

    Each round is cheap: the workers stage by copying the bytes of a prebuilt manifest (valid for this table,
    whose data files were copied from the same template) before the barrier, then race create_table_version.
    """
    ns = make_ns(root, managed=True)
    ns.create_namespace(ln.CreateNamespaceRequest(id=["prod"]))
    table_id = ["prod", "t"]
    table_dir = Path(ns.declare_table(ln.DeclareTableRequest(id=table_id)).location.removeprefix("file://"))
    template = tmp_path / "template.lance"
    build_template(template, ROUNDS + 1)
    adopt_template(table_dir, template)
    staged = copy_staged(table_dir, template, 1)
    ns.create_table_version(ln.CreateTableVersionRequest(id=table_id, version=1, manifest_path=staged))

    started = time.perf_counter()
    winners, losers, slowest = 0, Counter(), 0.0
    for version in range(2, ROUNDS + 2):
        kwargs = {"root": str(root), "table_id": table_id, "table_dir": str(table_dir), "template": str(template)}
        outcomes = pool.run("race_commit_version", [{**kwargs, "version": version}] * WORKERS)
        statuses = Counter(status for status, *_ in outcomes)
        assert statuses == {"ok": 1, "ConcurrentModificationError:14": WORKERS - 1}, (version, outcomes)
        winner = next(e_tag for status, _, e_tag, _ in outcomes if status == "ok")
        assert version_rows(ns)[f"prod$t${version}"]["e_tag"] == winner  # the row is the winner's
        winners += 1
        losers.update(_loss(message) for status, message, *_ in outcomes if status != "ok")
        slowest = max(slowest, *(seconds for *_, seconds in outcomes))
    elapsed = time.perf_counter() - started
    print(
        f"\n{ROUNDS} rounds x {WORKERS} processes: {winners} winners, {sum(losers.values())} losers "
        f"({dict(losers)}), {elapsed:.1f}s ({elapsed / ROUNDS * 1000:.0f} ms/round), slowest call {slowest:.2f}s"
    )
    assert winners == ROUNDS

    assert versions(ns, table_id) == list(range(1, ROUNDS + 2))
    assert len([oid for oid in version_rows(ns) if oid.startswith("prod$t$")]) == ROUNDS + 1
    final = read(ns, table_id)
    assert final.version == ROUNDS + 1
    assert sorted(final.to_table()["id"].to_pylist()) == list(range(ROUNDS + 1))
    assert lance.dataset(str(table_dir)).version == ROUNDS + 1
    # Only the losers' staged copies remain (never committed, never finalized).
    assert len(staged_files(table_dir)) == ROUNDS * (WORKERS - 1)


def _loss(message: str) -> str:
    """How a loser lost: the merge-insert found the winner's row, or the version check saw it first."""
    if "already exists" in message:
        return "duplicate row"
    return "not the next version" if "not the next version" in message else message


@pytest.mark.parametrize("managed", [True, False], ids=["managed", "unmanaged"])
def test_racing_appenders_lose_rebase_and_succeed(pool: Pool, root: Path, managed: bool) -> None:
    """pylance appenders through the namespace: a loser of create_table_version (14) asks
    describe_table_version, rebases and retries; no row is lost."""
    appends = 3
    ns = make_ns(root, managed=managed)
    ns.create_namespace(ln.CreateNamespaceRequest(id=["prod"]))
    table_id = ["prod", "events"]
    lance.write_dataset(rows(1, -1), namespace_client=ns, table_id=table_id, mode="create")
    started = time.perf_counter()
    outcomes = pool.run(
        "race_append",
        [{"root": str(root), "table_id": table_id, "worker": i, "appends": appends} for i in range(WORKERS)],
    )
    elapsed = time.perf_counter() - started
    errors = [error for _, _, worker_errors in outcomes for error in worker_errors]
    assert errors == []
    written = sum(w for w, _, _ in outcomes)
    lost = sum(n for _, n, _ in outcomes)
    print(
        f"\n{WORKERS}x{appends} appends ({'managed' if managed else 'unmanaged'}): {lost} lost commits rebased, "
        f"{elapsed:.1f}s"
    )
    assert written == appends * sum(range(1, WORKERS + 1))
    final = read(ns, table_id)
    assert final.count_rows() == written + 1
    assert final.version == 1 + WORKERS * appends
    assert versions(ns, table_id) == list(range(1, 2 + WORKERS * appends))
    ids = final.to_table()["id"].to_pylist()
    assert len(ids) == len(set(ids))  # nothing appended twice
    if managed:
        assert lost > 0  # the race really happened through create_table_version
        assert len(version_rows(ns)) == 1 + WORKERS * appends
