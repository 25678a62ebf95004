"""Lance's own dataset APIs on a managed catalog (issue 37): every pylance ``LanceDataset`` write and maintenance
call and lancedb's ``Table`` maintenance, through the namespace, on our engine with table version management and
on the reference with version tracking, from the same start; the call's outcome, the rows and the namespace's
view (list, describe, describe and open each listed version) must agree. Deliberate differences are listed in
docs/engine.md ("Lance's dataset APIs on a managed catalog")."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import lance
import lance_namespace as ln
import lancedb
import pyarrow as pa
import pytest
from lance.namespace import DirectoryNamespace as ReferenceNamespace

from airflow_provider_lance.namespace import IMPL
from tests.namespace.dataset_apis import (
    MANAGED,
    Side,
    ask,
    make_side,
    outcome,
    root_of,
    rows,
    run_on,
    start,
    table_rows,
    view,
)


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Side]:
    """One catalog per engine for the module; each test writes its own table."""
    base = tmp_path_factory.mktemp("dataset-apis")
    return {kind: make_side(kind, root_of(base, kind)) for kind in ("ours", "reference")}


@pytest.fixture(scope="module")
def reader(sides: dict[str, Side]) -> Side:
    """The reference (tracking) on our catalog: it must read every catalog we write."""
    ours = sides["ours"]
    return Side(
        "reference", ours.root, ReferenceNamespace(root=ours.root, **MANAGED["reference"]), MANAGED["reference"]
    )


_VEC = pa.list_(pa.float32(), 2)


def same(results: dict[str, Any]) -> None:
    assert results["ours"] == results["reference"]


def _version(dataset: lance.LanceDataset) -> int:
    return dataset.version


def _tagged_cleanup(side: Side, name: str) -> Any:
    """Clean-up refuses to remove a tagged version; without the tag it goes."""
    dataset = side.open(name)
    dataset.tags.create("first", 1)
    refused = outcome(lambda: dataset.cleanup_old_versions(older_than=timedelta(0)))
    dataset.tags.delete("first")
    return refused, side.open(name).cleanup_old_versions(older_than=timedelta(0)).old_versions


def _kept_tag_cleanup(side: Side, name: str) -> Any:
    """A tagged version below removed ones stays (error_if_tagged_old_versions=False): a hole in the line."""
    dataset = side.open(name)
    dataset.tags.create("kept", 1)
    lance.write_dataset(rows([30]), side.open(name), mode="append")
    stats = side.open(name).cleanup_old_versions(older_than=timedelta(0), error_if_tagged_old_versions=False)
    return stats.old_versions, sorted(side.open(name).tags.list())


def _branch_then_cleanup(side: Side, name: str) -> Any:
    """The version a branch was created from survives the clean-up; the branch still reads."""
    side.open(name, version=2).create_branch("b2")
    lance.write_dataset(rows([40]), side.open(name), mode="append")
    removed = side.open(name).cleanup_old_versions(older_than=timedelta(0)).old_versions
    return removed, side.open(name).checkout_version(("b2", None)).count_rows()


def _tags_on_branches(side: Side, name: str) -> Any:
    dataset = side.open(name)
    branch = dataset.create_branch("dev")
    lance.write_dataset(rows([50]), branch, mode="append")
    dataset = side.open(name)
    dataset.tags.create("on-dev", ("dev", None))
    dataset.tags.create("on-main", 2)
    dataset.tags.update("on-main", ("dev", 3))
    tags = {tag: (info["branch"], info["version"]) for tag, info in sorted(side.open(name).tags.list().items())}
    tagged = side.open(name).checkout_version("on-dev").count_rows()
    side.open(name).tags.delete("on-main")
    return tags, tagged, sorted(side.open(name).tags.list())


def _shallow_clone(side: Side, name: str) -> Any:
    """Through the namespace pylance refuses a clone outside the table ("cannot derive a branch", both engines);
    from the table's location it clones, and the clone takes writes of its own."""
    target = Path(side.root) / "clones" / name
    refused = outcome(lambda: side.open(name).shallow_clone(str(target), 2))
    location = ask(side.ns, "describe_table", id=side.table_id(name))["location"]
    clone = lance.dataset(location).shallow_clone(str(target.with_name(f"{name}-by-path")), 2)
    lance.write_dataset(rows([60]), clone, mode="append")
    return refused, clone.version, table_rows(lance.dataset(clone.uri))


def _restore(side: Side, name: str) -> Any:
    old = side.open(name, version=1)
    old.restore()
    return side.open(name).version


def _scalar_index_and_optimize(side: Side, name: str) -> Any:
    dataset = side.open(name)
    dataset.create_scalar_index("id", "BTREE", name="id_idx")
    dataset.create_scalar_index("v", "BITMAP")
    lance.write_dataset(rows([70, 71]), side.open(name), mode="append")
    side.open(name).optimize.optimize_indices()
    indexed = side.open(name)
    names = sorted(index.name for index in indexed.describe_indices())
    return names, indexed.to_table(filter="id = 70").num_rows, indexed.version


def _vector_index_and_optimize(side: Side, name: str) -> Any:
    """A vector index (IVF_FLAT) on a table overwritten with vectors, then rows appended and the index
    optimised; a nearest-neighbour query through the namespace."""
    vectors = pa.table({"id": pa.array(range(8), pa.int64()), "vec": pa.array([[i, i + 0.5] for i in range(8)], _VEC)})
    side.write(name, vectors, "overwrite")
    side.open(name).create_index("vec", "IVF_FLAT", num_partitions=1)
    more = pa.table({"id": pa.array([8], pa.int64()), "vec": pa.array([[8, 8.5]], _VEC)})
    lance.write_dataset(more, side.open(name), mode="append")
    side.open(name).optimize.optimize_indices()
    indexed = side.open(name)
    nearest = indexed.to_table(nearest={"column": "vec", "q": [7.9, 8.4], "k": 2})["id"].to_pylist()
    return sorted(index.name for index in indexed.describe_indices()), nearest, indexed.version


def _compaction(side: Side, name: str) -> Any:
    metrics = side.open(name).optimize.compact_files()
    return metrics.fragments_removed, metrics.fragments_added, side.open(name).version


def _merge_insert(side: Side, name: str) -> Any:
    merge = side.open(name).merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
    stats = merge.execute(rows([1, 80]))
    return {key: stats[key] for key in ("num_inserted_rows", "num_updated_rows", "num_deleted_rows")}


def _lancedb(side: Side, name: str) -> Any:
    implementation = IMPL if side.kind == "ours" else "dir"
    db = lancedb.connect_namespace(implementation, {"root": side.root, **side.properties}, storage_options=side.options)
    return db.open_table(name, namespace_path=side.table_id(name)[:1])


def _lancedb_maintenance(side: Side, name: str) -> Any:
    table = _lancedb(side, name)
    compacted = table.compact_files()
    table.restore(2)
    restored = table.version
    removed = table.cleanup_old_versions(older_than=timedelta(0)).old_versions
    return compacted.fragments_removed, restored, removed, [entry["version"] for entry in table.list_versions()]


SCENARIOS = {
    "append": lambda side, name: lance.write_dataset(rows([20, 21]), side.open(name), mode="append").version,
    "append_by_id": lambda side, name: (
        lance.write_dataset(rows([22]), namespace_client=side.ns, table_id=side.table_id(name), mode="append").version
    ),
    "overwrite": lambda side, name: (
        lance.write_dataset(rows([7]), namespace_client=side.ns, table_id=side.table_id(name), mode="overwrite").version
    ),
    "delete": lambda side, name: (side.open(name).delete("id = 1"), side.open(name).version)[1],
    "update": lambda side, name: side.open(name).update({"v": "'changed'"}, where="id = 0"),
    "merge_insert": _merge_insert,
    "add_columns": lambda side, name: (side.open(name).add_columns({"w": "id * 2"}), side.open(name).version)[1],
    "alter_columns": lambda side, name: (
        side.open(name).alter_columns({"path": "v", "name": "label"}),
        side.open(name).schema.names,
    )[1],
    "drop_columns": lambda side, name: (side.open(name).drop_columns(["v"]), side.open(name).schema.names)[1],
    "scalar_index_and_optimize": _scalar_index_and_optimize,
    "vector_index_and_optimize": _vector_index_and_optimize,
    "restore": _restore,
    "compaction": _compaction,
    "cleanup_retain": lambda side, name: side.open(name).cleanup_old_versions(retain_versions=2).old_versions,
    "cleanup_middle": lambda side, name: side.open(name).cleanup_old_versions(versions=[2]).old_versions,
    "cleanup_tagged": _tagged_cleanup,
    "cleanup_kept_tag": _kept_tag_cleanup,
    "branch_then_cleanup": _branch_then_cleanup,
    "tags_on_branches": _tags_on_branches,
    "shallow_clone": _shallow_clone,
    "lancedb_maintenance": _lancedb_maintenance,
    "lancedb_add_and_versions": lambda side, name: (
        _lancedb(side, name).add(rows([90])),
        [entry["version"] for entry in _lancedb(side, name).list_versions()],
    )[1],
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_dataset_api_matches_the_reference(sides: dict[str, Side], reader: Side, scenario: str) -> None:
    """One pylance or lancedb call on both engines from the same start: outcome, rows and the namespace's view;
    and the reference reads our catalog the same way."""
    results = run_on(sides, scenario, SCENARIOS[scenario])
    same(results)
    assert view(reader, scenario) == results["ours"]["view"]


# -- the two failures of issue 37 ------------------------------------------------------------------------------
def test_create_branch_on_a_managed_table(sides: dict[str, Side], reader: Side) -> None:
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
    assert view(reader, "branch", branch="dev") == view(sides["ours"], "branch", branch="dev")
    # DescribeTable of the branch: its latest version (the reference ignores ``branch`` and answers main's)
    assert ask(sides["ours"].ns, "describe_table", id=["s", "branch"], branch="dev")["version"] == 4
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


@pytest.mark.filterwarnings("ignore:optimize\\(cleanup_older_than=0\\):UserWarning")
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
