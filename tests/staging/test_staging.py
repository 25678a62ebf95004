"""Staging API: stage versions of several tables, nothing visible until the entries are committed."""

from __future__ import annotations

import json
from pathlib import Path

import lance
import lance.namespace
import lance_namespace as ln
import pyarrow as pa
import pytest

from airflow_provider_lance import staging as st


def _engines() -> list[str]:
    engines = ["reference"]
    try:
        from airflow_provider_lance.namespace import DirectoryNamespace  # noqa: F401
    except ImportError:
        pass
    else:
        engines.append("ours")
    return engines


@pytest.fixture(params=_engines())
def namespace(request: pytest.FixtureRequest, tmp_path: Path) -> ln.LanceNamespace:
    root = tmp_path / "root"
    root.mkdir()
    if request.param == "reference":
        return lance.namespace.DirectoryNamespace(root=str(root))
    from airflow_provider_lance.namespace import DirectoryNamespace

    return DirectoryNamespace(root=str(root))


def commit(namespace: ln.LanceNamespace, entries: list[ln.CreateTableVersionEntry]) -> None:
    """Commit entries: batch where implemented; the reference only has create_table_version (takes dicts)."""
    try:
        st.commit_entries(namespace, entries)
    except ln.UnsupportedOperationError:
        for entry in entries:
            namespace.create_table_version(entry.model_dump(exclude_none=True))


def rows(n: int, start: int = 0) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()), "name": [f"r{i}" for i in range(n)]})


def location(namespace: ln.LanceNamespace, table_id: list[str]) -> str:
    return namespace.describe_table(ln.DescribeTableRequest(id=table_id)).location


def visible_version(namespace: ln.LanceNamespace, table_id: list[str]) -> int:
    return st.latest_version(namespace, table_id)


def test_stage_three_tables_then_commit(namespace: ln.LanceNamespace) -> None:
    namespace.create_namespace(ln.CreateNamespaceRequest(id=["prod"]))
    existing = ["prod", "events"]
    lance.write_dataset(rows(10), namespace_client=namespace, table_id=existing, mode="create")
    namespace.declare_table(ln.DeclareTableRequest(id=["prod", "declared"]))
    before = lance.dataset(location(namespace, existing)).version

    staging = st.StagingNamespace(namespace)
    e1 = st.stage_data(namespace, existing, rows(5, 10), mode="append", staging=staging)
    e2 = st.stage_data(namespace, ["prod", "declared"], rows(3), staging=staging)
    e3 = st.stage_data(namespace, ["fresh", "users"], rows(7), staging=staging, create_parents=True)
    assert [e.version for e in (e1, e2, e3)] == [before + 1, 1, 1]
    assert staging.entries == [e1, e2, e3]
    for entry in (e1, e2, e3):
        assert "-" in entry.manifest_path.rsplit(".manifest", 1)[1]  # a staged name: <final>-<uuid>

    # Nothing visible: directly through pylance and through the namespace.
    assert lance.dataset(location(namespace, existing)).version == before
    assert lance.dataset(location(namespace, existing)).count_rows() == 10
    assert visible_version(namespace, existing) == before
    assert visible_version(namespace, ["prod", "declared"]) == 0
    assert visible_version(namespace, ["fresh", "users"]) == 0

    commit(namespace, staging.entries)
    ds = lance.dataset(namespace_client=namespace, table_id=existing)
    assert ds.version == before + 1
    assert sorted(ds.to_table()["id"].to_pylist()) == list(range(15))
    assert lance.dataset(namespace_client=namespace, table_id=["prod", "declared"]).count_rows() == 3
    users = lance.dataset(namespace_client=namespace, table_id=["fresh", "users"]).to_table()
    assert users.sort_by("id").equals(rows(7))


def test_stage_overwrite_and_fragments(namespace: ln.LanceNamespace, tmp_path: Path) -> None:
    table_id = ["t"]
    lance.write_dataset(rows(4), namespace_client=namespace, table_id=table_id, mode="create")
    entry = st.stage_data(namespace, table_id, pa.table({"other": ["x", "y"]}), mode="overwrite")
    commit(namespace, [entry])
    assert lance.dataset(location(namespace, table_id)).to_table().to_pydict() == {"other": ["x", "y"]}

    target = st.prepare_target(namespace, table_id)
    assert target.read_version == 2 and target.exists
    fragments = lance.fragment.write_fragments(pa.table({"other": ["z"]}), target.location)
    as_json = [st.fragment_to_json(f) for f in fragments]
    staged = st.stage_fragments(namespace, target, as_json, mode="append")
    assert staged.version == 3
    assert lance.dataset(target.location).count_rows() == 2
    commit(namespace, [staged])
    assert sorted(lance.dataset(target.location).to_table()["other"].to_pylist()) == ["x", "y", "z"]


def test_one_version_per_table_per_staging(namespace: ln.LanceNamespace) -> None:
    staging = st.StagingNamespace(namespace)
    st.stage_data(namespace, ["t"], rows(1), staging=staging)
    with pytest.raises(ln.InvalidInputError, match="already staged"):
        st.stage_data(namespace, ["t"], rows(1), staging=staging)


def test_entries_json_round_trip(tmp_path: Path, namespace: ln.LanceNamespace) -> None:
    entries = [
        st.stage_data(namespace, ["a"], rows(2)),
        ln.CreateTableVersionEntry(id=["ns", "b"], version=7, manifest_path="bucket/p/_versions/7.manifest-u"),
    ]
    path = tmp_path / "out" / "entries.json"
    st.write_entries(entries, path)
    document = json.loads(path.read_text())
    assert list(document) == ["entries"]
    assert document["entries"][1] == {
        "id": ["ns", "b"],
        "version": 7,
        "manifest_path": "bucket/p/_versions/7.manifest-u",
    }
    assert st.read_entries(path) == entries
    assert st.read_entries(f"file://{path}") == entries
    assert st.entries_from_json(st.entries_to_json(entries)) == entries
    with pytest.raises(ln.InvalidInputError):
        st.entries_from_json('{"entries": [{"id": ["x"]}]}')
    with pytest.raises(ln.InvalidInputError):
        st.entries_from_json('{"nope": 1}')


def test_entries_paths_follow_the_engine_root_rule(tmp_path: Path) -> None:
    """A ``file://`` URI is percent-decoded as the engine decodes a root, a plain path is literal: the URI of a
    directory named ``a #b%41`` reaches that directory, not ``a%20%23b%2541``."""
    from airflow_provider_lance.namespace.storage import normalize_root

    entries = [ln.CreateTableVersionEntry(id=["t"], version=2, manifest_path="p/_versions/2.manifest-u")]
    directory = tmp_path / "a #b%41"
    st.write_entries(entries, f"{normalize_root(str(directory))}/entries.json")
    assert [p.name for p in tmp_path.iterdir()] == [directory.name]
    assert st.read_entries(directory / "entries.json") == entries


def test_a_failed_first_write_leaves_no_declared_table(tmp_path) -> None:
    """stage_data declares a new table, then writes: when the write fails, the declaration is taken back, so no
    declared-but-empty table is left for readers (issue 12, point 9)."""
    from airflow_provider_lance.namespace import DirectoryNamespace

    ns = DirectoryNamespace(root=str(tmp_path))
    with pytest.raises(Exception, match="bogus_option"):
        st.stage_data(ns, ["fresh"], pa.table({"x": [1]}), bogus_option=True)
    assert ns.list_tables(ln.ListTablesRequest(id=[])).tables == []
    assert not (tmp_path / "fresh.lance").exists()


def test_staged_content_is_readable_before_the_commit(tmp_path) -> None:
    """Write-audit-publish: staging with audit=True keeps the staged content readable (a detached version)
    while every reader still sees the committed version; the commit then publishes exactly that content."""
    from airflow_provider_lance.namespace import DirectoryNamespace

    ns = DirectoryNamespace(root=str(tmp_path), table_version_management="true")
    ns.create_namespace(ln.CreateNamespaceRequest(id=["p"]))
    lance.write_dataset(pa.table({"x": [1, 2]}), namespace_client=ns, table_id=["p", "t"], mode="create")
    staging = st.StagingNamespace(ns)
    entry = st.stage_data(ns, ["p", "t"], pa.table({"x": [3, -1]}), staging=staging, audit=True)
    staged = st.staged_dataset(ns, entry)
    assert staged.count_rows() == 4 and staged.count_rows("x < 0") == 1
    assert lance.dataset(namespace_client=ns, table_id=["p", "t"]).count_rows() == 2  # nothing visible yet
    st.commit_entries(ns, staging.entries)
    assert lance.dataset(namespace_client=ns, table_id=["p", "t"]).count_rows() == 4
    with pytest.raises(ln.InvalidInputError, match="first version"):
        st.stage_data(ns, ["p", "new"], pa.table({"x": [1]}), audit=True)
    assert ns.list_tables(ln.ListTablesRequest(id=["p"])).tables == ["t"]  # the declaration is taken back
