"""The data plane, ours against the reference: the same requests give the same rows, versions, tags, indices
and error codes (where the reference is right; the documented differences are tested on ours alone)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import lance
import pyarrow as pa
import pytest
from lance_namespace import (
    CreateTableIndexRequest,
    CreateTableRequest,
    InsertIntoTableRequest,
    LanceNamespace,
    ListTablesRequest,
    MergeInsertIntoTableRequest,
    QueryTableRequest,
)
from lance_namespace_urllib3_client.models import QueryTableRequestColumns, QueryTableRequestVector

from tests.namespace.conftest import call, do
from tests.namespace.data.helpers import TABLE, ipc, outcome, read_ipc_file, rows, with_table

KINDS = ("ours", "reference")
# Operations whose request model is not named after them.
_MODELS = {"create_table_scalar_index": CreateTableIndexRequest, "list_all_tables": ListTablesRequest}


def both(make_namespace: Callable[..., LanceNamespace]) -> dict[str, LanceNamespace]:
    return {kind: with_table(make_namespace(kind)) for kind in KINDS}


def same(namespaces: dict[str, LanceNamespace], method: str, **fields: Any) -> tuple[str, Any]:
    """Run on both; the outcomes (without transaction uuids, which are random) must be equal."""
    results = []
    for namespace in namespaces.values():
        if method in _MODELS:
            status, value = outcome(getattr(namespace, method), _MODELS[method](**fields))
            value = value.model_dump(exclude_none=True) if status == "ok" else value
        else:
            status, value = call(namespace, method, **fields)
        if isinstance(value, dict):
            value.pop("transaction_id", None)
            value.get("properties", {}).pop("uuid", None)  # DescribeTransaction: random too
            for tag in value.get("tags", {}).values():  # a manifest's size varies with its timestamp's varint
                tag.pop("manifest_size", None)
        results.append((status, value))
    assert results[0] == results[1], method
    return results[0]


def test_writes_give_the_same_rows_and_versions(make_namespace: Callable[..., LanceNamespace]) -> None:
    namespaces = both(make_namespace)
    for kind, namespace in namespaces.items():
        inserted = namespace.insert_into_table(InsertIntoTableRequest(id=TABLE), ipc(rows(5, start=10)))
        assert (inserted.num_inserted_rows, inserted.version) == (5, 2), kind
        merged = namespace.merge_insert_into_table(
            MergeInsertIntoTableRequest(
                id=TABLE, on=["id"], when_matched_update_all=True, when_not_matched_insert_all=True
            ),
            ipc(rows(4, start=13)),
        )
        assert (merged.num_updated_rows, merged.num_inserted_rows, merged.version) == (2, 2, 3), kind
    same(namespaces, "update_table", id=TABLE, predicate="id < 3", updates=[["name", "'x'"]])
    same(namespaces, "delete_from_table", id=TABLE, predicate="id >= 15")
    assert same(namespaces, "count_table_rows", id=TABLE) == ("ok", {"count": 15})
    same(namespaces, "count_table_rows", id=TABLE, predicate="name = 'x'")
    same(namespaces, "count_table_rows", id=TABLE, version=2)
    tables = [
        read_ipc_file(namespace.query_table(_query(filter="id < 20", k=100)).data).sort_by("id")
        for namespace in namespaces.values()
    ]
    assert tables[0].equals(tables[1])
    assert [v.version for v in do(namespaces["ours"], "list_table_versions", id=TABLE).versions] == [1, 2, 3, 4, 5]


def _query(**fields: Any) -> QueryTableRequest:
    return QueryTableRequest(id=TABLE, vector=fields.pop("vector", QueryTableRequestVector()), **fields)


@pytest.mark.parametrize(
    "fields",
    [
        {"filter": "id < 3", "k": 10, "columns": QueryTableRequestColumns(column_names=["id", "name"])},
        {"filter": "id < 3", "k": 10, "columns": QueryTableRequestColumns(column_aliases={"x": "id"})},
        {"k": 3, "offset": 2, "columns": QueryTableRequestColumns(column_names=["id"])},
        {"k": 2, "vector": QueryTableRequestVector(single_vector=[1.0, 1, 1, 1]), "vector_column": "vec"},
        {"k": 10, "version": 1, "with_row_id": True},
    ],
)
def test_queries_answer_the_same_arrow_file(make_namespace: Callable[..., LanceNamespace], fields: dict) -> None:
    namespaces = both(make_namespace)
    answers = [read_ipc_file(namespace.query_table(_query(**dict(fields))).data) for namespace in namespaces.values()]
    assert answers[0].equals(answers[1])


def test_indices_tags_branches_and_schema_changes_agree(make_namespace: Callable[..., LanceNamespace]) -> None:
    namespaces = both(make_namespace)
    for kind, namespace in namespaces.items():
        namespace.insert_into_table(InsertIntoTableRequest(id=TABLE), ipc(rows(10, start=10)))
        request = CreateTableIndexRequest(id=TABLE, column="id", index_type="BTREE")
        assert outcome(namespace.create_table_scalar_index, request)[0] == "ok", kind
    same(namespaces, "create_table_scalar_index", id=TABLE, column="id", index_type="BTREE")  # name taken: 7
    same(namespaces, "create_table_index", id=TABLE, column="name", index_type="BITMAP", name="nm")
    same(namespaces, "create_table_scalar_index", id=TABLE, column="vec", index_type="IVF_PQ")
    same(namespaces, "create_table_scalar_index", id=TABLE, column="id", index_type="NOPE")
    same(namespaces, "create_table_scalar_index", id=TABLE, column="zz", index_type="BTREE")
    listed = [
        sorted(
            (i.index_name, tuple(i.columns), i.index_type, i.num_indexed_rows)
            for i in do(ns, "list_table_indices", id=TABLE).indexes
        )
        for ns in namespaces.values()
    ]
    assert listed[0] == listed[1] == [("id_idx", ("id",), "BTree", 20), ("nm", ("name",), "Bitmap", 20)]
    same(namespaces, "describe_table_index_stats", id=TABLE, index_name="id_idx")
    same(namespaces, "describe_table_index_stats", id=TABLE, index_name="nope")
    same(namespaces, "drop_table_index", id=TABLE, index_name="nm")
    same(namespaces, "drop_table_index", id=TABLE, index_name="nm")
    for operation in (
        ("create_table_tag", {"tag": "v1", "version": 1}),
        ("create_table_tag", {"tag": "v1", "version": 1}),
        ("create_table_tag", {"tag": "v9", "version": 99}),
        ("create_table_tag", {"tag": "v2", "version": 2}),
        ("get_table_tag_version", {"tag": "v1"}),
        ("get_table_tag_version", {"tag": "zz"}),
        ("update_table_tag", {"tag": "v1", "version": 2}),
        ("update_table_tag", {"tag": "zz", "version": 2}),
        ("delete_table_tag", {"tag": "v2"}),
        ("delete_table_tag", {"tag": "v2"}),
        ("list_table_tags", {}),
        ("create_table_branch", {"name": "b1", "from_version": 1}),
        ("create_table_branch", {"name": "b1"}),
        ("delete_table_branch", {"name": "zz"}),
        ("update_table_schema_metadata", {"metadata": {"a": "1"}}),
        ("alter_table_add_columns", {"new_columns": [{"name": "d", "expression": "id * 2"}]}),
        ("alter_table_alter_columns", {"alterations": [{"path": "d", "rename": "d2"}]}),
        ("alter_table_drop_columns", {"columns": ["d2"]}),
        ("restore_table", {"version": 2}),
        ("count_table_rows", {}),
        ("describe_transaction", {}),
    ):
        method, fields = operation
        if method == "describe_transaction":
            same(namespaces, method, id=[*TABLE, "2"])
        else:
            same(namespaces, method, id=TABLE, **fields)
    branches = [sorted(do(ns, "list_table_branches", id=TABLE).branches) for ns in namespaces.values()]
    assert branches[0] == branches[1] == ["b1"]


def test_bad_input_gives_the_same_errors(make_namespace: Callable[..., LanceNamespace]) -> None:
    namespaces = both(make_namespace)
    for kind, namespace in namespaces.items():
        assert outcome(namespace.create_table, CreateTableRequest(id=TABLE), ipc(rows())) == ("error", 5), kind
        assert outcome(namespace.create_table, CreateTableRequest(id=["w", "e"]), b"") == ("error", 13), kind
        assert outcome(namespace.create_table, CreateTableRequest(id=["w", "m"], mode="bogus"), ipc(rows()))[1] == 13
        assert outcome(namespace.insert_into_table, InsertIntoTableRequest(id=TABLE), b"xx") == ("error", 13), kind
        assert outcome(namespace.insert_into_table, InsertIntoTableRequest(id=["w", "zz"]), ipc(rows())) == ("error", 4)
        bad_key = MergeInsertIntoTableRequest(id=TABLE, on=["zz"], when_matched_update_all=True)
        assert outcome(namespace.merge_insert_into_table, bad_key, ipc(rows())) == ("error", 13), kind
        no_clause = MergeInsertIntoTableRequest(id=TABLE, on=["id"])
        assert outcome(namespace.merge_insert_into_table, no_clause, ipc(rows())) == ("error", 13), kind
    same(namespaces, "update_table", id=TABLE, predicate="id <<< 3", updates=[["name", "'x'"]])
    same(namespaces, "update_table", id=TABLE, updates=[["zz", "'x'"]])
    same(namespaces, "update_table", id=TABLE, updates=[["name", "'x"]])
    same(namespaces, "delete_from_table", id=TABLE, predicate="id === 0")
    same(namespaces, "delete_from_table", id=TABLE, predicate="zz = 0")
    same(namespaces, "count_table_rows", id=TABLE, version=99)
    same(namespaces, "count_table_rows", id=["w", "zz"])
    same(namespaces, "describe_transaction", id=["abc"])
    same(namespaces, "describe_transaction", id=[*TABLE, "99"])


def test_each_reads_what_the_other_wrote(make_namespace: Callable[..., LanceNamespace], tmp_path: Any) -> None:
    root = tmp_path / "shared"
    ours, reference = make_namespace("ours", root), make_namespace("reference", root)
    with_table(ours)
    reference.insert_into_table(InsertIntoTableRequest(id=TABLE), ipc(rows(5, start=10)))
    ours.insert_into_table(InsertIntoTableRequest(id=TABLE), ipc(rows(5, start=20)))
    reference.create_table(CreateTableRequest(id=["w", "r"]), ipc(rows(3)))
    for namespace in (ours, reference):
        assert do(namespace, "count_table_rows", id=TABLE).count == 20
        assert do(namespace, "count_table_rows", id=["w", "r"]).count == 3
    location = do(ours, "describe_table", id=TABLE).location
    assert lance.dataset(location).to_table().num_rows == 20
    assert lance.dataset(namespace_client=reference, table_id=TABLE).version == 3
    assert pa.compute.sum(lance.dataset(location).to_table()["id"]).as_py() == sum(range(10)) + sum(
        range(10, 15)
    ) + sum(range(20, 25))
