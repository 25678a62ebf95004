"""The guarded append of ``__manifest`` inserts (fragments.py): a commit on top of version N fails when anything
was committed after N, new fragments never reuse an id, a commit that landed but reported a conflict is
recognised as one's own, and data files no version took are removed."""

from __future__ import annotations

import copy
from pathlib import Path

import lance
import lance_namespace as ln
import pyarrow as pa
import pytest
from lance.commit import CommitConflictError
from lance.namespace import DirectoryNamespace as ReferenceNamespace

from airflow_provider_lance.namespace import DirectoryNamespace, fragments
from airflow_provider_lance.namespace.manifest import DuplicateObjectError
from airflow_provider_lance.namespace.manifest_rows import NAMESPACE, ManifestRow, rows_table

ROW_SCHEMA = pa.schema([pa.field("id", pa.string())])


def _dataset(root: Path) -> lance.LanceDataset:
    return lance.write_dataset(pa.table({"id": ["a", "b"]}, schema=ROW_SCHEMA), str(root / "t"))


def _append(dataset: lance.LanceDataset, value: str) -> lance.LanceDataset:
    written = fragments.write_rows(dataset, pa.table({"id": [value]}, schema=ROW_SCHEMA), None)
    return fragments.commit_append(dataset, written, None)


@pytest.mark.parametrize(
    "concurrent",
    [
        pytest.param(lambda ds: _append(ds, "x"), id="another guarded append"),
        pytest.param(
            lambda ds: lance.write_dataset(pa.table({"id": ["x"]}, schema=ROW_SCHEMA), ds.uri, mode="append"),
            id="a plain append",
        ),
        pytest.param(lambda ds: copy.copy(ds).delete("id = 'a'"), id="a delete"),
        pytest.param(lambda ds: copy.copy(ds).optimize.compact_files(), id="a compaction"),
        pytest.param(
            lambda ds: lance.write_dataset(pa.table({"id": ["z"]}, schema=ROW_SCHEMA), ds.uri, mode="overwrite"),
            id="an overwrite",
        ),
    ],
)
def test_a_commit_after_the_read_version_fails_instead_of_rebasing(tmp_path: Path, concurrent) -> None:
    base = _dataset(tmp_path)
    _append(base, "first")  # two fragments: compaction has something to do
    base = lance.dataset(base.uri)
    concurrent(base)
    latest = lance.dataset(base.uri)

    with pytest.raises(CommitConflictError):
        _append(base, "late")

    assert lance.dataset(base.uri).version == latest.version
    assert "late" not in lance.dataset(base.uri).to_table()["id"].to_pylist()


def test_new_fragments_never_reuse_an_id(tmp_path: Path) -> None:
    dataset = _append(_append(_dataset(tmp_path), "c"), "d")
    assert [f.fragment_id for f in dataset.get_fragments()] == [0, 1, 2]
    dataset.delete("id = 'd'")  # fragment 2 goes away entirely
    dataset = lance.dataset(dataset.uri)
    assert fragments.max_fragment_id(dataset) == 2

    dataset = _append(dataset, "e")

    assert [f.fragment_id for f in dataset.get_fragments()] == [0, 1, 3]
    assert sorted(dataset.to_table()["id"].to_pylist()) == ["a", "b", "c", "e"]


@pytest.fixture
def ns(tmp_path: Path) -> DirectoryNamespace:
    """A catalog with one namespace, ``a``."""
    namespace = DirectoryNamespace(root=str(tmp_path))
    namespace.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    return namespace


def test_an_insert_whose_commit_landed_but_reported_a_conflict_is_not_a_duplicate(
    tmp_path: Path, ns: DirectoryNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    commit = fragments.commit_append
    calls = []

    def lost_acknowledgement(dataset, written, options):
        calls.append(1)
        committed = commit(dataset, written, options)
        if len(calls) == 1:
            raise CommitConflictError("commit conflict (the acknowledgement was lost)")
        return committed

    monkeypatch.setattr(fragments, "commit_append", lost_acknowledgement)
    ns.create_namespace(ln.CreateNamespaceRequest(id=["b"]))

    assert len(calls) == 1  # the retry found its own data file in the latest version and did not commit again
    assert sorted(ns.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces) == ["a", "b"]
    ids = lance.dataset(str(tmp_path / "__manifest")).to_table()["object_id"].to_pylist()
    assert sorted(ids) == ["a", "b"]


def test_data_files_of_an_insert_that_lost_the_race_are_removed(
    tmp_path: Path, ns: DirectoryNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest = ns.manifest
    data_dir = tmp_path / "__manifest" / "data"
    files_before = set(data_dir.iterdir())
    commit = fragments.commit_append

    def another_writer_first(dataset, written, options):
        # the same id lands first, from the reference: our commit conflicts, the retry finds the duplicate
        ReferenceNamespace(root=str(tmp_path)).create_namespace(ln.CreateNamespaceRequest(id=["b"]))
        return commit(dataset, written, options)

    monkeypatch.setattr(fragments, "commit_append", another_writer_first)
    with manifest.operation(), pytest.raises(DuplicateObjectError):
        manifest.latest()  # the operation's snapshot: before the other writer's commit
        manifest.insert([ManifestRow("b", NAMESPACE)])

    referenced = {
        data_file.path
        for fragment in lance.dataset(str(tmp_path / "__manifest")).get_fragments()
        for data_file in fragment.metadata.files
    }
    new_files = {path.name for path in set(data_dir.iterdir()) - files_before}
    assert new_files == new_files & referenced  # the loser's file is gone; the winner's is referenced


def test_the_reference_reads_a_catalog_written_by_guarded_appends(tmp_path: Path) -> None:
    ns = DirectoryNamespace(root=str(tmp_path))
    for name in ("a", "b", "c"):
        ns.create_namespace(ln.CreateNamespaceRequest(id=[name]))
        ns.declare_table(ln.DeclareTableRequest(id=[name, "t"]))
    ns.drop_table(ln.DropTableRequest(id=["b", "t"]))

    reference = ReferenceNamespace(root=str(tmp_path))
    assert sorted(reference.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces) == ["a", "b", "c"]
    assert reference.list_tables(ln.ListTablesRequest(id=["a"])).tables == ["t"]
    assert reference.list_tables(ln.ListTablesRequest(id=["b"])).tables == []
    reference.create_namespace(ln.CreateNamespaceRequest(id=["d"]))  # its copy-on-write rewrite over ours
    ns.create_namespace(ln.CreateNamespaceRequest(id=["e"]))
    assert sorted(ns.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces) == ["a", "b", "c", "d", "e"]
    schema = lance.dataset(str(tmp_path / "__manifest")).schema
    assert schema.field("object_id").metadata == rows_table([]).schema.field("object_id").metadata
    assert not schema.field("object_id").nullable


def test_an_update_takes_rows_out_of_small_and_large_fragments(tmp_path: Path) -> None:
    """Rows to replace: a small fragment is removed (its other rows kept, to be written again), a large one gets
    a deletion vector. The Update is rebased over a concurrent plain append (Lance numbers its fragments), and
    fails on a concurrent change of its fragments or a guarded append."""
    schema = pa.schema([pa.field("object_id", pa.string())])
    dataset = lance.write_dataset(pa.table({"object_id": [f"big{i}" for i in range(10)]}, schema=schema), str(tmp_path))
    for rows in (["s1", "s2"], ["alone"]):
        written = fragments.write_rows(dataset, pa.table({"object_id": rows}, schema=schema), None)
        dataset = fragments.commit_append(dataset, written, None)
    assert fragments.fragments_holding(dataset, {"big3", "missing"}, max_rows=2) is None
    removed, updated, kept = fragments.fragments_holding(dataset, {"big3", "s1", "alone"}, max_rows=2)
    assert sorted(removed) == [1, 2]  # the two small fragments
    assert [(fragment.id, fragment.deletion_file.num_deleted_rows) for fragment in updated] == [(0, 1)]
    assert kept["object_id"].to_pylist() == ["s2"]
    replacement = pa.table({"object_id": ["s2", "big3", "s1", "alone"]}, schema=schema)
    written = fragments.write_rows(dataset, replacement, None)
    stale = copy.copy(dataset)
    lance.write_dataset(pa.table({"object_id": ["other"]}, schema=schema), str(tmp_path), mode="append")
    dataset = fragments.commit_update(dataset, removed, updated, written, None)
    ids = dataset.to_table()["object_id"].to_pylist()
    assert sorted(ids) == sorted([f"big{i}" for i in range(10)] + ["s1", "s2", "alone", "other"])
    assert len({fragment.fragment_id for fragment in dataset.get_fragments()}) == len(dataset.get_fragments())
    with pytest.raises(CommitConflictError):  # the same fragments were changed since
        fragments.commit_update(stale, removed, updated, fragments.write_rows(stale, replacement, None), None)
    guarded = fragments.write_rows(dataset, pa.table({"object_id": ["guarded"]}, schema=schema), None)
    fragments.commit_append(copy.copy(dataset), guarded, None)
    with pytest.raises(CommitConflictError):  # a guarded append conflicts with every later commit
        fragments.commit_update(dataset, [], [], fragments.write_rows(dataset, replacement, None), None)


def test_a_small_fragment_this_process_wrote_is_not_read_again(tmp_path: Path) -> None:
    """The rows known for a data file answer for its fragment (no read) while it has no deletions; a fragment of
    another file, or one with deletions, is read; in check mode known rows that differ from the file fail."""
    schema = pa.schema([pa.field("object_id", pa.string())])
    dataset = lance.write_dataset(pa.table({"object_id": ["a", "b"]}, schema=schema), str(tmp_path))
    rows = pa.table({"object_id": ["s1", "s2"]}, schema=schema)
    written = fragments.write_rows(dataset, rows, None)
    dataset = fragments.commit_append(dataset, written, None)
    small = dataset.get_fragments()[-1]
    path = fragments.data_file_paths(written)[0]
    marked = pa.table({"object_id": ["s1", "s2"]}, schema=schema.with_metadata({"from": "memory"}))
    answered = fragments.small_fragment_rows(small, {path: marked}, check=False)
    assert answered is marked  # taken as known, not read
    assert fragments.small_fragment_rows(small, {}, check=False).equals(rows)  # unknown: read
    other = dataset.get_fragments()[0]
    assert fragments.small_fragment_rows(other, {path: marked}, check=False)["object_id"].to_pylist() == ["a", "b"]
    assert fragments.small_fragment_rows(small, {path: marked}, check=True) is marked  # checked: the same rows
    wrong = pa.table({"object_id": ["s1", "x"]}, schema=schema)
    assert fragments.small_fragment_rows(small, {path: wrong}, check=False) is wrong
    with pytest.raises(ln.InternalError, match="differ"):
        fragments.small_fragment_rows(small, {path: wrong}, check=True)
    dataset.delete("object_id = 's1'")  # a deletion vector on the small fragment: its rows are read
    assert fragments.small_fragment_rows(dataset.get_fragments()[-1], {path: marked}, check=False)[
        "object_id"
    ].to_pylist() == ["s2"]


def test_an_insert_with_a_repoint_fails_on_a_concurrent_update_of_other_fragments(tmp_path: Path) -> None:
    """Two writers, each repointing a row of its own small fragment and inserting the same new row, both checked
    against one version: a plain Update is rebased over the other (their fragments differ) and the row lands
    twice; an inserting Update fails and leaves one row."""
    schema = pa.schema([pa.field("object_id", pa.string())])
    dataset = lance.write_dataset(pa.table({"object_id": ["big"]}, schema=schema), str(tmp_path))
    for row in ("a", "b"):
        written = fragments.write_rows(dataset, pa.table({"object_id": [row]}, schema=schema), None)
        dataset = fragments.commit_append(dataset, written, None)
    stale = copy.copy(dataset)

    def repoint_and_insert(read: lance.LanceDataset, row: str, inserting: bool) -> lance.LanceDataset:
        removed, updated, kept = fragments.fragments_holding(read, {row}, max_rows=2)
        rows = pa.concat_tables([kept, pa.table({"object_id": [row, "new"]}, schema=schema)])
        return fragments.commit_update(read, removed, updated, fragments.write_rows(read, rows, None), None, inserting)

    repoint_and_insert(dataset, "a", inserting=True)
    with pytest.raises(CommitConflictError):
        repoint_and_insert(copy.copy(stale), "b", inserting=True)
    assert sorted(lance.dataset(str(tmp_path)).to_table()["object_id"].to_pylist()) == ["a", "b", "big", "new"]

    rebased = repoint_and_insert(copy.copy(stale), "b", inserting=False)  # what a plain Update does
    assert sorted(rebased.to_table()["object_id"].to_pylist()) == ["a", "b", "big", "new", "new"]
