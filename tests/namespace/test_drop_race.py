"""DropNamespace racing DeclareTable / CreateNamespace in the namespace it drops: never an orphan.

Invariant after every round: either the namespace exists, or nothing is left under it (no row, no table
directory) — and every caller got an answer that matches what is on storage.
"""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

import lance
import lance_namespace as ln
import pytest
from lance_namespace import LanceNamespaceError

from airflow_provider_lance.namespace import DirectoryNamespace
from tests.races import BARRIER_SECONDS

ROUNDS = 6
DECLARERS = 3


def _worker(root: str, action: str, name: str, barrier: Any, results: Any) -> None:
    ns = DirectoryNamespace(root=root)
    barrier.wait()
    try:
        if action == "drop":
            ns.drop_namespace({"id": ["p"]})
        elif action == "declare":
            ns.declare_table({"id": ["p", name]})
        else:
            ns.create_namespace({"id": ["p", name]})
        results.put((action, name, "ok"))
    except LanceNamespaceError as error:
        results.put((action, name, type(error).__name__))


@pytest.mark.slow  # starts processes of its own
def test_drop_namespace_never_leaves_orphans(root: Path) -> None:
    context = multiprocessing.get_context("spawn")
    ns = DirectoryNamespace(root=str(root))
    ns.create_namespace({"id": ["warm"]})
    for round_number in range(ROUNDS):
        ns.create_namespace({"id": ["p"]})
        barrier = context.Barrier(DECLARERS + 1, timeout=BARRIER_SECONDS)
        results = context.Queue()
        action = "declare" if round_number % 2 == 0 else "create"
        jobs = [(str(root), "drop", "", barrier, results)]
        jobs += [(str(root), action, f"c{round_number}_{i}", barrier, results) for i in range(DECLARERS)]
        processes = [context.Process(target=_worker, args=job) for job in jobs]
        for process in processes:
            process.start()
        for process in processes:
            process.join(120)
            assert process.exitcode == 0
        outcomes = [results.get(timeout=10) for _ in processes]
        rows = {row.object_id: row for row in ns.manifest.query()}
        children = sorted(oid for oid in rows if oid.startswith("p$"))
        succeeded = sorted(f"p${name}" for kind, name, status in outcomes if kind != "drop" and status == "ok")
        dropped = ("drop", "", "ok") in outcomes
        assert children == succeeded, outcomes
        if dropped:
            assert "p" not in rows and children == [], outcomes
            assert not [d for d in root.iterdir() if d.name.endswith(tuple(f"_p${n[2:]}" for n in succeeded))]
        else:
            assert "p" in rows, outcomes
        for child in children:  # clean up for the next round
            if rows[child].object_type == "table":
                ns.drop_table({"id": child.split("$")})
            else:
                ns.drop_namespace({"id": child.split("$")})
        if not dropped:
            ns.drop_namespace({"id": ["p"]})


@pytest.mark.parametrize("operation", ["declare", "create"])
def test_a_child_whose_namespace_is_dropped_before_its_commit_fails_there_and_writes_no_row(
    root: Path, operation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parent is looked for in the version the child's insert commits on top of: a drop that committed after
    the child's checks and before its commit fails the child without writing its row (no insert taken back)."""
    ns, dropper = DirectoryNamespace(root=str(root)), DirectoryNamespace(root=str(root))
    ns.create_namespace({"id": ["p"]})
    insert_each = ns.manifest.insert_each

    def dropped_first(rows: Any, parents: Any) -> Any:
        dropper.drop_namespace({"id": ["p"]})  # between the child's checks and its commit
        return insert_each(rows, parents)

    monkeypatch.setattr(ns.manifest, "insert_each", dropped_first)
    before = lance.dataset(str(root / "__manifest")).version
    with pytest.raises(ln.NamespaceNotFoundError, match="dropped concurrently"):
        if operation == "declare":
            ns.declare_table({"id": ["p", "t"]})
        else:
            ns.create_namespace({"id": ["p", "c"]})
    assert lance.dataset(str(root / "__manifest")).version == before + 1  # the drop's commit only
    assert [row.object_id for row in dropper.manifest.query()] == []
    assert sorted(path.name for path in root.iterdir()) == ["__manifest"]  # no table directory left
