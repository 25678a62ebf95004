"""BatchCommitTables: declare, create versions, delete versions and deregister across tables in one
``__manifest`` commit, all or nothing (issue 14; the reference answers Unsupported)."""

from __future__ import annotations

from pathlib import Path

import lance
import lance_namespace as ln
import pytest
from lance.namespace import DirectoryNamespace as ReferenceNamespace

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.namespace import identifiers as ids
from tests.conftest import tree_snapshot
from tests.namespace.helpers_versions import make_ns, read, rows, stage, versions


def _catalog(root: Path, managed: bool = True) -> DirectoryNamespace:
    ns = make_ns(root, managed=managed)
    ns.create_namespace(ln.CreateNamespaceRequest(id=["p"]))
    for name in ("a", "b", "old"):
        lance.write_dataset(rows(3), namespace_client=ns, table_id=["p", name], mode="create")
    lance.write_dataset(rows(2), namespace_client=ns, table_id=["p", "a"], mode="append")
    return ns


def _version_op(entry: ln.CreateTableVersionEntry) -> ln.CommitTableOperation:
    request = ln.CreateTableVersionRequest(**entry.model_dump(exclude_none=True))
    return ln.CommitTableOperation(create_table_version=request)


def test_mixed_operations_commit_together(root: Path) -> None:
    ns = _catalog(root)
    entries = stage(ns, {("p", "a"): rows(5, 100), ("p", "b"): rows(7, 100)})
    response = ns.batch_commit_tables(
        ln.BatchCommitTablesRequest(
            operations=[
                ln.CommitTableOperation(declare_table=ln.DeclareTableRequest(id=["p", "new"])),
                *(_version_op(entry) for entry in entries),
                ln.CommitTableOperation(
                    delete_table_versions=ln.BatchDeleteTableVersionsRequest(
                        id=["p", "a"], ranges=[{"start_version": 1, "end_version": 2}]
                    )
                ),
                ln.CommitTableOperation(deregister_table=ln.DeregisterTableRequest(id=["p", "old"])),
            ]
        )
    )
    assert response.transaction_id
    results = response.results
    assert results[0].declare_table.location.endswith("_p$new")
    assert [r.create_table_version.version.version for r in results[1:3]] == [3, 2]
    assert results[3].delete_table_versions.deleted_count == 1
    assert results[4].deregister_table.id == ["p", "old"]

    assert sorted(ns.list_tables(ln.ListTablesRequest(id=["p"])).tables) == ["a", "b", "new"]
    assert versions(ns, ("p", "a")) == [2, 3] and read(ns, ("p", "a")).count_rows() == 10
    assert versions(ns, ("p", "b")) == [1, 2] and read(ns, ("p", "b")).count_rows() == 10
    assert lance.dataset(str(root / ns.manifest.get("p$b").location)).version == 2  # finalized for path readers


def test_one_bad_operation_commits_nothing(root: Path) -> None:
    ns = _catalog(root)
    entries = stage(ns, {("p", "a"): rows(5, 100)})
    stale = entries[0].model_copy(update={"version": 7})  # not the next version: a conflict
    before = {name: versions(ns, ("p", name)) for name in ("a", "b", "old")}
    with pytest.raises(ln.InvalidInputError):
        ns.batch_commit_tables(
            ln.BatchCommitTablesRequest(
                operations=[
                    ln.CommitTableOperation(declare_table=ln.DeclareTableRequest(id=["p", "new"])),
                    ln.CommitTableOperation(deregister_table=ln.DeregisterTableRequest(id=["p", "old"])),
                    _version_op(stale),
                ]
            )
        )
    assert sorted(ns.list_tables(ln.ListTablesRequest(id=["p"])).tables) == ["a", "b", "old"]
    assert {name: versions(ns, ("p", name)) for name in ("a", "b", "old")} == before
    assert not any(path.name.endswith("_p$new") for path in root.iterdir())  # the reservation is taken back


def test_version_operations_need_table_version_management(root: Path) -> None:
    ns = _catalog(root, managed=False)
    entries = stage(ns, {("p", "a"): rows(5, 100)})
    before = tree_snapshot(root)
    with pytest.raises(ln.UnsupportedOperationError):
        ns.batch_commit_tables(
            ln.BatchCommitTablesRequest(
                operations=[
                    ln.CommitTableOperation(declare_table=ln.DeclareTableRequest(id=["p", "new"])),
                    _version_op(entries[0]),
                ]
            )
        )
    assert tree_snapshot(root) == before


def test_declares_and_deregisters_commit_together_without_management(root: Path) -> None:
    ns = _catalog(root, managed=False)
    ns.batch_commit_tables(
        ln.BatchCommitTablesRequest(
            operations=[
                ln.CommitTableOperation(declare_table=ln.DeclareTableRequest(id=["p", "x"])),
                ln.CommitTableOperation(declare_table=ln.DeclareTableRequest(id=["y"])),
                ln.CommitTableOperation(deregister_table=ln.DeregisterTableRequest(id=["p", "old"])),
            ]
        )
    )
    assert sorted(ns.list_tables(ln.ListTablesRequest(id=["p"])).tables) == ["a", "b", "x"]
    assert ReferenceNamespace(root=str(root)).list_tables(ln.ListTablesRequest(id=[])).tables == ["y"]


@pytest.mark.parametrize(
    "operations",
    [
        [],
        [ln.CommitTableOperation()],
        [ln.CommitTableOperation(declare_table=ln.DeclareTableRequest(id=["p", "x"]))] * 2,
        [ln.CommitTableOperation(deregister_table=ln.DeregisterTableRequest(id=["p", "a"]))] * 2,
    ],
    ids=["empty", "no-operation", "declare-twice", "deregister-twice"],
)
def test_malformed_batches_are_refused(root: Path, operations: list[ln.CommitTableOperation]) -> None:
    ns = _catalog(root)
    before = tree_snapshot(root)
    with pytest.raises(ln.InvalidInputError):
        ns.batch_commit_tables(ln.BatchCommitTablesRequest(operations=operations))
    assert tree_snapshot(root) == before


def test_the_reference_does_not_implement_it(tmp_path: Path) -> None:
    with pytest.raises((ln.UnsupportedOperationError, NotImplementedError)):
        ReferenceNamespace(root=str(tmp_path)).batch_commit_tables(ln.BatchCommitTablesRequest(operations=[]))


@pytest.mark.parametrize("through", ["declare_table", "batch_commit_tables"])
def test_losing_the_reservation_race_is_table_already_exists(
    root: Path, monkeypatch: pytest.MonkeyPatch, through: str
) -> None:
    """DeclareTable and BatchCommitTables share one declare path: a declare that finds the location empty and
    then loses the ``.lance-reserved`` put-if-not-exists to a concurrent declare (whose marker is there when it
    writes) answers TableAlreadyExists in both, and leaves the winner's marker and nothing else."""
    ns = _catalog(root)
    location = ids.table_location(["p", "t"], ns.config.dir_listing_enabled)
    real_list_names = ns.storage.list_names

    def list_names_then_lose(key: str = "") -> list[str]:
        listed = real_list_names(key)
        if key == location:  # the concurrent declare writes its marker right after this listing
            ns.storage.put_if_not_exists(f"{location}/.lance-reserved", b"reserved")
        return listed

    monkeypatch.setattr(ns.storage, "list_names", list_names_then_lose)
    monkeypatch.setattr(ids, "table_location", lambda parts, dir_listing: location)  # the same random location
    request = ln.DeclareTableRequest(id=["p", "t"])
    with pytest.raises(ln.TableAlreadyExistsError, match="declared concurrently"):
        if through == "declare_table":
            ns.declare_table(request)
        else:
            ns.batch_commit_tables(
                ln.BatchCommitTablesRequest(operations=[ln.CommitTableOperation(declare_table=request)])
            )
    assert sorted(p.name for p in (root / location).iterdir()) == [".lance-reserved"]  # the winner's, kept
    assert ns.manifest.get("p$t") is None
