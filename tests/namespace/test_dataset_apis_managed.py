"""Lance's own dataset APIs on a managed catalog (issue 37): every pylance ``LanceDataset`` write and maintenance
call and lancedb's ``Table`` maintenance, through the namespace, on our engine with table version management and
on the reference with version tracking, from the same start; the call's outcome, the rows and the namespace's
view (list, describe, describe and open each listed version) must agree. Deliberate differences are listed in
docs/engine.md ("Lance's dataset APIs on a managed catalog")."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import lance
import lance_namespace as ln
import lancedb
import pytest

from airflow_provider_lance.namespace import IMPL
from tests.namespace.dataset_apis import Side, ask, make_side, root_of, rows, run_on, start, view


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Side]:
    """One catalog per engine for the module; each test writes its own table."""
    base = tmp_path_factory.mktemp("dataset-apis")
    return {kind: make_side(kind, root_of(base, kind)) for kind in ("ours", "reference")}


def same(results: dict[str, Any]) -> None:
    assert results["ours"] == results["reference"]


# -- the two failures of issue 37 ------------------------------------------------------------------------------
def test_create_branch_on_a_managed_table(sides: dict[str, Side]) -> None:
    """``create_branch`` through the namespace works on a managed table (it raised "Commit result for version N
    is unknown"), and the branch is appended to, listed, described, checked out and deleted as on the reference."""
    for side in sides.values():
        dataset = start(side, "branch")
        branch = dataset.create_branch("dev")
        assert branch.version == dataset.version
        lance.write_dataset(rows([100]), branch, mode="append")
        assert side.open("branch").checkout_version(("dev", None)).count_rows() == 6
        assert side.open("branch").count_rows() == 5  # the main line is untouched
    same({kind: view(side, "branch", branch="dev") for kind, side in sides.items()})
    same({kind: view(side, "branch") for kind, side in sides.items()})
    for side in sides.values():
        side.open("branch").branches.delete("dev")
        assert "dev" not in side.open("branch").branches.list()
    for side in sides.values():
        with pytest.raises(ln.LanceNamespaceError):
            ask(side.ns, "list_table_versions", id=side.table_id("branch"), branch="dev")
    same({kind: view(side, "branch") for kind, side in sides.items()})


def test_cleanup_old_versions_removes_them_from_the_namespace(sides: dict[str, Side]) -> None:
    """After pylance's clean-up the namespace lists only the versions storage still has, and every listed version
    opens (ours listed every removed version, and opening them failed)."""
    results = run_on(
        sides, "cleanup", lambda side, name: side.open(name).cleanup_old_versions(older_than=timedelta(0)).old_versions
    )
    same(results)
    assert results["ours"]["view"]["listed"] == [3]


def test_lancedb_optimize_cleans_up_as_on_the_reference(sides: dict[str, Side]) -> None:
    """lancedb's standard maintenance, ``optimize(cleanup_older_than=0)``, then ``list_versions`` and the view."""

    def scenario(side: Side, name: str) -> Any:
        db = lancedb.connect_namespace(IMPL if side.kind == "ours" else "dir", {"root": side.root, **side.properties})
        table = db.open_table(name, namespace_path=side.table_id(name)[:1])
        table.optimize(cleanup_older_than=timedelta(0))
        return [version["version"] for version in table.list_versions()]

    results = run_on(sides, "optimize", scenario)
    same(results)
    assert results["ours"]["view"]["listed"] == results["ours"]["outcome"][1]
