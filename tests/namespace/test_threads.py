"""One instance shared by many threads, as Airflow's triggerer, lancedb and Ray share one (issue 12, point 2):
every answer right, no error, no pylance panic (a ``BaseException`` that kills the thread)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import lance
import lance_namespace as ln
import pyarrow as pa
import pytest

from airflow_provider_lance.namespace import DirectoryNamespace, fragments

THREADS = 8
OPERATIONS = 25
WRITERS = 3


def _run(threads: int, work: Callable[[int], None]) -> list[BaseException]:
    errors: list[BaseException] = []

    def guarded(index: int) -> None:
        try:
            work(index)
        except BaseException as error:  # pylance's PanicException is a BaseException
            errors.append(error)

    pool = [threading.Thread(target=guarded, args=(index,)) for index in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join(timeout=600)
    return errors


def test_catalog_operations_from_many_threads(tmp_path: Path) -> None:
    ns = DirectoryNamespace(root=str(tmp_path))
    ns.create_namespace(ln.CreateNamespaceRequest(id=["w"]))

    def work(index: int) -> None:
        for i in range(OPERATIONS):
            table_id = ["w", f"t{index}_{i}"]
            ns.declare_table(ln.DeclareTableRequest(id=table_id))
            assert ns.describe_table(ln.DescribeTableRequest(id=table_id)).location.endswith(f"_w$t{index}_{i}")
            ns.table_exists(ln.TableExistsRequest(id=table_id))
            assert f"t{index}_{i}" in ns.list_tables(ln.ListTablesRequest(id=["w"])).tables
            ns.create_namespace(ln.CreateNamespaceRequest(id=["shared"], mode="exist_ok"))

    assert _run(THREADS, work) == []
    assert len(ns.list_tables(ln.ListTablesRequest(id=["w"])).tables) == THREADS * OPERATIONS
    assert len(DirectoryNamespace(root=str(tmp_path)).list_tables(ln.ListTablesRequest(id=["w"])).tables) == (
        THREADS * OPERATIONS
    )


@pytest.mark.parametrize("managed", [False, True], ids=["unmanaged", "managed"])
def test_pylance_writers_in_many_threads_through_one_instance(tmp_path: Path, managed: bool) -> None:
    """pylance calls back into the instance from its own threads while other threads use it too.

    Fewer writer threads than pylance's CPU pool: a callback blocks the pool thread that makes
    it while the namespace's own pylance calls need that pool, so as many simultaneous writers as pool threads
    can wait on each other (seen once under heavy load; docs/engine.md)."""
    ns = DirectoryNamespace(root=str(tmp_path), table_version_management=str(managed).lower())
    ns.create_namespace(ln.CreateNamespaceRequest(id=["w"]))

    def work(index: int) -> None:
        table_id = ["w", f"t{index}"]
        lance.write_dataset(pa.table({"n": [index]}), namespace_client=ns, table_id=table_id, mode="create")
        for _ in range(3):
            lance.write_dataset(pa.table({"n": [index]}), namespace_client=ns, table_id=table_id, mode="append")

    assert _run(WRITERS, work) == []
    for index in range(WRITERS):
        dataset = lance.dataset(namespace_client=ns, table_id=["w", f"t{index}"])
        assert (dataset.version, dataset.count_rows()) == (4, 4)


def test_writers_of_one_instance_take_turns_instead_of_conflicting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ns = DirectoryNamespace(root=str(tmp_path))
    ns.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    commit = fragments.commit_append
    conflicts: list[int] = []

    def counted(*args, **kwargs):
        try:
            return commit(*args, **kwargs)
        except Exception:
            conflicts.append(1)
            raise

    monkeypatch.setattr(fragments, "commit_append", counted)

    def declare(worker: int) -> None:
        for i in range(10):
            ns.declare_table(ln.DeclareTableRequest(id=["a", f"w{worker}_{i}"]))

    threads = [threading.Thread(target=declare, args=(worker,)) for worker in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    assert sorted(ns.list_tables(ln.ListTablesRequest(id=["a"])).tables) == sorted(
        f"w{worker}_{i}" for worker in range(4) for i in range(10)
    )
    assert conflicts == []  # each group committed on the snapshot the previous one published
