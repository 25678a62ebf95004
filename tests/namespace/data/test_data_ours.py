"""The data plane on ours alone: managed writes (a ``table_version`` row per write), branches, bad input that
writes nothing, and RenameTable."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from lance_namespace import (
    CreateTableRequest,
    InsertIntoTableRequest,
    LanceNamespace,
    MergeInsertIntoTableRequest,
)

from tests.namespace.conftest import call, do
from tests.namespace.data.helpers import TABLE, ipc, outcome, rows, with_table


def _version_rows(namespace: LanceNamespace) -> list[str]:
    return sorted(row.object_id for row in namespace.manifest.query("object_type = 'table_version'"))


def test_every_managed_write_is_a_table_version_row(make_namespace: Callable[..., LanceNamespace]) -> None:
    namespace = with_table(make_namespace("ours", table_version_management="true"))
    namespace.insert_into_table(InsertIntoTableRequest(id=TABLE), ipc(rows(5, start=10)))
    merge = MergeInsertIntoTableRequest(id=TABLE, on=["id"], when_matched_update_all=True)
    namespace.merge_insert_into_table(merge, ipc(rows(2)))
    writes = [
        ("update_table", {"updates": [["name", "'x'"]], "predicate": "id < 2"}),
        ("delete_from_table", {"predicate": "id = 0"}),
        ("alter_table_add_columns", {"new_columns": [{"name": "d", "expression": "id * 2"}]}),
        ("alter_table_alter_columns", {"alterations": [{"path": "d", "rename": "d2"}]}),
        ("alter_table_drop_columns", {"columns": ["d2"]}),
        ("update_table_schema_metadata", {"metadata": {"a": "1"}}),
        ("create_table_index", {"column": "id", "index_type": "BTREE"}),
        ("drop_table_index", {"index_name": "id_idx"}),
        ("restore_table", {"version": 1}),
    ]
    for method, fields in writes:
        assert call(namespace, method, id=TABLE, **fields)[0] == "ok", method
    assert _version_rows(namespace) == sorted(f"w$t${version}" for version in range(1, 13))
    assert do(namespace, "count_table_rows", id=TABLE).count == 10
    # A branch of a managed table (issue 37): its versions are its files, not rows; the main line is untouched.
    to_branch = InsertIntoTableRequest(id=TABLE, branch="b")
    assert outcome(namespace.insert_into_table, to_branch, ipc(rows())) == ("error", 22)  # no such branch yet
    assert call(namespace, "create_table_branch", id=TABLE, name="b")[0] == "ok"
    assert outcome(namespace.insert_into_table, to_branch, ipc(rows(3, start=100)))[0] == "ok"
    assert do(namespace, "count_table_rows", id=TABLE, branch="b").count == 13
    branch_versions = do(namespace, "list_table_versions", id=TABLE, branch="b").versions
    assert [version.version for version in branch_versions] == [12, 13]
    assert all("/tree/b/_versions/" in version.manifest_path for version in branch_versions)
    assert _version_rows(namespace) == sorted(f"w$t${version}" for version in range(1, 13))
    assert do(namespace, "count_table_rows", id=TABLE, branch="main").count == 10


def test_main_and_the_empty_branch_name_the_main_line(make_namespace: Callable[..., LanceNamespace]) -> None:
    """``branch`` of ``""`` or ``"main"`` is the main line (as in the reference), managed writes included, in a
    request and in the requests a batch holds; a branch that does not exist is TableBranchNotFound."""
    namespace = with_table(make_namespace("ours", table_version_management="true"))  # version 1
    for branch in ("main", ""):
        namespace.insert_into_table(InsertIntoTableRequest(id=TABLE, branch=branch), ipc(rows(1, start=20)))
        name = f"c{len(branch)}"
        fields = {"new_columns": [{"name": name, "expression": "id"}], "branch": branch}
        assert call(namespace, "alter_table_add_columns", id=TABLE, **fields)[0] == "ok"
        assert call(namespace, "update_table_schema_metadata", id=TABLE, metadata={"k": "v"}, branch=branch)[0] == "ok"
        assert do(namespace, "count_table_rows", id=TABLE, branch=branch).count == 10 + (2 if branch == "" else 1)
    assert call(namespace, "restore_table", id=TABLE, version=1, branch="main")[0] == "ok"
    assert _version_rows(namespace) == sorted(f"w$t${version}" for version in range(1, 9))
    commit = {
        "operations": [
            {
                "delete_table_versions": {
                    "id": TABLE,
                    "ranges": [{"start_version": 2, "end_version": 3}],
                    "branch": "main",
                }
            }
        ]
    }
    assert call(namespace, "batch_commit_tables", **commit)[0] == "ok"
    assert "w$t$2" not in _version_rows(namespace)
    refused = InsertIntoTableRequest(id=TABLE, branch="b")
    assert outcome(namespace.insert_into_table, refused, ipc(rows())) == ("error", 22)


def test_describe_table_follows_tag_and_branch(make_namespace: Callable[..., LanceNamespace]) -> None:
    """``tag`` describes the version (and branch) it names, ``branch`` that branch's latest version; a missing
    tag or branch, or a tag with a version, is refused (the reference ignores both fields)."""
    namespace = with_table(make_namespace("ours"))  # version 1: 10 rows
    namespace.insert_into_table(InsertIntoTableRequest(id=TABLE), ipc(rows(5, start=10)))  # version 2
    assert call(namespace, "create_table_tag", id=TABLE, tag="first", version=1)[0] == "ok"
    assert call(namespace, "create_table_branch", id=TABLE, name="b", from_version=1)[0] == "ok"
    for start in (50, 60):  # branch versions 2 and 3; the main line stays at 2
        namespace.insert_into_table(InsertIntoTableRequest(id=TABLE, branch="b"), ipc(rows(1, start=start)))
    branch_version = do(namespace, "describe_table", id=TABLE, branch="b").version
    assert branch_version == 3 and do(namespace, "count_table_rows", id=TABLE, branch="b").count == 12
    assert call(namespace, "create_table_tag", id=TABLE, tag="on_b", version=branch_version, branch="b")[0] == "ok"
    assert do(namespace, "describe_table", id=TABLE).version == 2
    assert do(namespace, "describe_table", id=TABLE, tag="first").version == 1
    assert do(namespace, "describe_table", id=TABLE, tag="first", load_detailed_metadata=False).version == 1
    on_b = do(namespace, "describe_table", id=TABLE, tag="on_b")
    assert on_b.version == 3 and on_b.location == do(namespace, "describe_table", id=TABLE).location
    assert call(namespace, "describe_table", id=TABLE, tag="nope") == ("error", 8)  # TableTagNotFound
    assert call(namespace, "describe_table", id=TABLE, branch="nope") == ("error", 22)  # TableBranchNotFound
    assert call(namespace, "describe_table", id=TABLE, tag="first", version=1) == ("error", 13)  # InvalidInput


def test_branches_are_honoured(make_namespace: Callable[..., LanceNamespace]) -> None:
    namespace = with_table(make_namespace("ours"))
    assert call(namespace, "create_table_branch", id=TABLE, name="b")[0] == "ok"
    namespace.insert_into_table(InsertIntoTableRequest(id=TABLE, branch="b"), ipc(rows(5, start=10)))
    assert do(namespace, "count_table_rows", id=TABLE).count == 10
    assert do(namespace, "count_table_rows", id=TABLE, branch="b").count == 15
    assert call(namespace, "delete_from_table", id=TABLE, branch="zz", predicate="id = 1") == ("error", 22)
    assert call(namespace, "create_table_tag", id=TABLE, tag="t", version=2, branch="b")[0] == "ok"
    assert do(namespace, "get_table_tag_version", id=TABLE, tag="t").branch == "b"
    assert call(namespace, "delete_table_tag", id=TABLE, tag="t")[0] == "ok"  # a tagged branch stays
    assert call(namespace, "delete_table_branch", id=TABLE, name="b")[0] == "ok"
    assert do(namespace, "list_table_branches", id=TABLE).branches == {}


@pytest.mark.parametrize(
    ("method", "fields", "code"),
    [
        ("update_table", {"updates": [["zz", "'x'"]]}, 13),
        ("update_table", {"updates": [["name", "'x'"]], "predicate": "id <<< 1"}, 13),
        ("delete_from_table", {"predicate": "zz = 1"}, 13),
        ("count_table_rows", {"predicate": "id <<< 1"}, 13),
        ("create_table_index", {"column": "id", "index_type": "NOPE"}, 13),
        ("create_table_index", {"column": "zz", "index_type": "BTREE"}, 12),
        ("drop_table_index", {"index_name": "nope"}, 6),
        ("delete_table_tag", {"tag": "nope"}, 8),
        ("create_table_tag", {"tag": "t", "version": 99}, 11),
        ("create_table_tag", {"tag": "", "version": 1}, 13),  # pylance's "Ref is invalid": no longer 18
        ("create_table_tag", {"tag": "x\x01y", "version": 1}, 13),
        ("create_table_branch", {"name": "a b"}, 13),
        ("analyze_table_query_plan", {"k": 1, "vector": {"multi_vector": [[]]}}, 13),  # an IndexError in pylance
        ("query_table", {"k": 1, "vector": {"multi_vector": [[1.0, 2.0, 3.0, 4.0], [1.0]]}}, 13),
        ("query_table", {"k": 1, "vector": {"single_vector": [1.0] * 4, "multi_vector": [[1.0] * 4]}}, 13),
        # pylance's ValueError/TypeError for arguments it refuses (found by tests/rest/test_spec_fuzz.py's probes)
        ("query_table", {"k": 1, "vector": {"single_vector": [1.0] * 4}, "distance_type": "nope"}, 13),
        ("query_table", {"k": 1, "vector": {"single_vector": [1.0] * 4}, "vector_column": "name"}, 13),
        (
            "create_table_index",
            {"column": "vec", "index_type": "IVF_PQ", "num_partitions": 1, "num_sub_vectors": 3},
            13,
        ),
        ("create_table_index", {"column": "vec", "index_type": "BTREE"}, 13),
        ("create_table_tag", {"tag": "x" * 10_000, "version": 1}, 13),  # once an I/O error: file name too long
        ("alter_table_add_columns", {"new_columns": [{"name": "", "expression": "1"}]}, 13),
        ("alter_table_alter_columns", {"alterations": [{"path": "id", "rename": "name"}]}, 13),
        ("alter_table_alter_columns", {"alterations": [{"path": "id", "rename": ""}]}, 13),
        ("alter_table_drop_columns", {"columns": ["zz"]}, 12),
        ("alter_table_alter_columns", {"alterations": [{"path": "id", "data_type": {"type": "nope"}}]}, 13),
        ("alter_table_add_columns", {"new_columns": [{"name": "id", "expression": "1"}]}, 13),
        ("restore_table", {"version": 99}, 11),
    ],
)
def test_bad_input_writes_nothing(
    make_namespace: Callable[..., LanceNamespace],
    snapshot: Callable[[Path], dict[str, bytes]],
    tmp_path: Path,
    method: str,
    fields: dict,
    code: int,
) -> None:
    namespace = with_table(make_namespace("ours"))
    before = snapshot(tmp_path / "ours")
    assert call(namespace, method, id=TABLE, **fields) == ("error", code)
    assert snapshot(tmp_path / "ours") == before


def test_malformed_bodies_write_nothing(
    make_namespace: Callable[..., LanceNamespace], snapshot: Callable[[Path], dict[str, bytes]], tmp_path: Path
) -> None:
    namespace = with_table(make_namespace("ours"))
    before = snapshot(tmp_path / "ours")
    assert outcome(namespace.create_table, CreateTableRequest(id=["w", "n"]), b"garbage") == ("error", 13)
    assert outcome(namespace.insert_into_table, InsertIntoTableRequest(id=TABLE), b"garbage") == ("error", 13)
    assert outcome(namespace.create_table, CreateTableRequest(id=["nope", "n"]), ipc(rows())) == ("error", 1)
    wrong_schema = ipc(rows().select(["id"]).rename_columns(["x"]))
    assert outcome(namespace.insert_into_table, InsertIntoTableRequest(id=TABLE), wrong_schema) == ("error", 13)
    assert snapshot(tmp_path / "ours") == before


def test_rename_table_is_one_commit_and_keeps_the_location(make_namespace: Callable[..., LanceNamespace]) -> None:
    namespace = with_table(make_namespace("ours", table_version_management="true"))
    do(namespace, "create_namespace", id=["x"])
    location = do(namespace, "describe_table", id=TABLE).location
    manifest_version = namespace.manifest.latest().version
    assert call(namespace, "rename_table", id=TABLE, new_table_name="u", new_namespace_id=["x"])[0] == "ok"
    assert namespace.manifest.latest().version == manifest_version + 1
    assert do(namespace, "describe_table", id=["x", "u"]).location == location
    assert do(namespace, "count_table_rows", id=["x", "u"]).count == 10
    assert call(namespace, "table_exists", id=TABLE) == ("error", 4)
    assert _version_rows(namespace) == ["x$u$1"]
    namespace.insert_into_table(InsertIntoTableRequest(id=["x", "u"]), ipc(rows(1, start=50)))
    assert _version_rows(namespace) == ["x$u$1", "x$u$2"]


def test_rename_table_refusals(make_namespace: Callable[..., LanceNamespace], tmp_path: Path) -> None:
    namespace = with_table(make_namespace("ours"))
    namespace.create_table(CreateTableRequest(id=["w", "taken"]), ipc(rows(1)))
    assert call(namespace, "rename_table", id=TABLE, new_table_name="taken") == ("error", 5)
    assert call(namespace, "rename_table", id=TABLE, new_table_name="u", new_namespace_id=["nope"]) == ("error", 1)
    assert call(namespace, "rename_table", id=["w", "zz"], new_table_name="u") == ("error", 4)
    reference = make_namespace("reference", tmp_path / "ours", manifest_enabled="false")
    reference.create_table(CreateTableRequest(id=["v1"]), ipc(rows(1)))  # a root table with no manifest row
    assert call(namespace, "rename_table", id=["v1"], new_table_name="u") == ("error", 0)


def test_renaming_a_root_table_hides_the_old_directory_name(make_namespace: Callable[..., LanceNamespace]) -> None:
    namespace = make_namespace("ours")
    namespace.create_table(CreateTableRequest(id=["a"]), ipc(rows(3)))
    assert call(namespace, "rename_table", id=["a"], new_table_name="b")[0] == "ok"
    assert do(namespace, "list_tables", id=[]).tables == ["b"]
    assert do(namespace, "count_table_rows", id=["b"]).count == 3


def test_alter_transaction_refuses_to_change_a_committed_transaction(
    make_namespace: Callable[..., LanceNamespace],
) -> None:
    """The reference answers AlterTransaction as DescribeTransaction and ignores the actions; a committed Lance
    transaction cannot change, so ours refuses an action that would change it and accepts a no-op."""
    from lance_namespace import AlterTransactionRequest, UnsupportedOperationError
    from lance_namespace_urllib3_client.models import AlterTransactionAction

    namespace = with_table(make_namespace("ours"))
    transaction = [*TABLE, "1"]  # the version that created the table

    def alter(action: dict) -> object:
        request = AlterTransactionRequest(id=transaction, actions=[AlterTransactionAction.model_validate(action)])
        return namespace.alter_transaction(request)

    assert alter({"set_status_action": {"status": "Succeeded"}}).status == "SUCCEEDED"
    for action in ({"set_status_action": {"status": "Canceled"}}, {"set_property_action": {"key": "k", "value": "v"}}):
        with pytest.raises(UnsupportedOperationError):
            alter(action)
