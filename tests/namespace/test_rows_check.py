"""Check mode (``manifest_check_rows``, snapshots.py): the rows of a version derived from a write or read
incrementally are compared with a fresh read of that version: its rows and its staged candidates. It is on for
the whole suite (tests/conftest.py); here a deliberately wrong derivation (of the rows, of the staged candidates)
and a wrong incremental read are caught, naming the version; a wrong one goes unnoticed without it (what the check
is for)."""

from __future__ import annotations

from pathlib import Path

import lance
import lance_namespace as ln
import pyarrow as pa
import pytest

from airflow_provider_lance.namespace import DirectoryNamespace, group_commit, snapshots
from airflow_provider_lance.namespace.config import CHECK_ROWS_ENVIRONMENT, NamespaceConfig
from airflow_provider_lance.namespace.row_index import RowIndex
from tests.namespace.helpers_versions import batch, stage


def test_check_mode_is_on_in_the_suite_and_a_property_turns_it_off(tmp_path: Path) -> None:
    assert NamespaceConfig.from_properties({"root": str(tmp_path)}).check_rows is True
    assert NamespaceConfig.from_properties({"root": str(tmp_path), "manifest_check_rows": "false"}).check_rows is False
    with pytest.raises(ln.InvalidInputError, match="manifest_check_rows"):
        NamespaceConfig.from_properties({"root": str(tmp_path), "manifest_check_rows": "sometimes"})


def test_check_mode_default_comes_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CHECK_ROWS_ENVIRONMENT)
    assert NamespaceConfig.from_properties({"root": str(tmp_path)}).check_rows is False


def _forget_inserts(group: group_commit.InsertGroup, index: RowIndex) -> RowIndex:
    """A wrong derivation: the inserted rows are not appended."""
    return index


@pytest.mark.parametrize("check", ["true", "false"])
def test_a_wrong_derivation_is_caught_naming_the_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, check: str
) -> None:
    ns = DirectoryNamespace(root=str(tmp_path), manifest_check_rows=check)
    ns.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    version = ns.manifest.latest().version
    monkeypatch.setattr(group_commit.InsertGroup, "change", _forget_inserts)
    if check == "true":
        caught = rf"__manifest version {version + 1}: the rows derived from the write differ"
        with pytest.raises(ln.InternalError, match=caught):
            ns.declare_table(ln.DeclareTableRequest(id=["a", "t"]))
        monkeypatch.undo()
        ns.table_exists(ln.TableExistsRequest(id=["a", "t"]))  # the commit landed: found by a fresh read
    else:
        ns.declare_table(ln.DeclareTableRequest(id=["a", "t"]))
        with pytest.raises(ln.TableNotFoundError):  # the wrong rows answer, unnoticed
            ns.table_exists(ln.TableExistsRequest(id=["a", "t"]))


def test_a_wrong_incremental_read_is_caught_naming_the_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reader = DirectoryNamespace(root=str(tmp_path))
    writer = DirectoryNamespace(root=str(tmp_path))
    writer.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    assert reader.list_namespaces(ln.ListNamespacesRequest()).namespaces == ["a"]  # the reader holds the rows
    writer.create_namespace(ln.CreateNamespaceRequest(id=["b"]))  # only a fragment added: read incrementally
    version = writer.manifest.latest().version
    monkeypatch.setattr(snapshots.Snapshot, "_added_since", staticmethod(lambda base, keys, current: []))  # misses it
    with pytest.raises(ln.InternalError, match=rf"__manifest version {version}: the rows read incrementally differ"):
        reader.list_namespaces(ln.ListNamespacesRequest())


def test_a_wrong_staged_candidate_derivation_is_caught_naming_the_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The staged candidates (rows that may still point at a staged manifest) are derived commit by commit too:
    a derivation that forgets the commit point's row is caught at the commit point's version."""
    ns = DirectoryNamespace(root=str(tmp_path), table_version_management="true")
    ns.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    lance.write_dataset(pa.table({"id": [1]}), namespace_client=ns, table_id=["a", "t"], mode="create")
    ns.finalize_pending_versions()  # the create's deferred repoint (issue 42), made now
    entries = stage(ns, {("a", "t"): pa.table({"id": [2]})})
    assert ns.manifest.index().staged_ids() == []  # derived from here on
    version = ns.manifest.latest().version
    appended = RowIndex.appended

    def forget_candidates(index: RowIndex, rows: pa.Table) -> RowIndex:
        derived = appended(index, rows)
        derived._staged = index._staged  # the appended rows' candidates forgotten
        return derived

    monkeypatch.setattr(RowIndex, "appended", forget_candidates)
    caught = rf"__manifest version {version + 1}: the rows derived from the write differ .*staged candidates \[\]"
    with pytest.raises(ln.InternalError, match=caught):
        batch(ns, entries)
