"""Operators against real local namespaces."""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import timedelta
from types import SimpleNamespace

import pytest
from airflow.providers.common.compat.sdk import AirflowException, AirflowFailException, Asset

from airflow_provider_lance.assets.lance import create_asset
from airflow_provider_lance.hooks.lance import RUN_KEY_METADATA, LanceHook
from airflow_provider_lance.operators.lance import (
    LanceBatchCreateTableVersionsOperator,
    LanceBatchDeleteTableVersionsOperator,
    LanceCreateNamespaceOperator,
    LanceCreateTableVersionOperator,
    LanceDeclareTableOperator,
    LanceDeregisterTableOperator,
    LanceDropNamespaceOperator,
    LanceDropTableOperator,
    LanceRegisterTableOperator,
    compute_retention_ranges,
)
from tests.airflow_helpers import engine_available, skip_if_unsupported, stage_append, write_table

ALL_OPERATORS = [
    LanceCreateNamespaceOperator,
    LanceDropNamespaceOperator,
    LanceDeclareTableOperator,
    LanceRegisterTableOperator,
    LanceDeregisterTableOperator,
    LanceDropTableOperator,
    LanceCreateTableVersionOperator,
    LanceBatchCreateTableVersionsOperator,
    LanceBatchDeleteTableVersionsOperator,
]


class _Events(defaultdict):
    def __init__(self):
        super().__init__(lambda: SimpleNamespace(extra={}))


def make_context(task_id: str = "task", run_id: str = "run1", map_index: int = -1) -> dict:
    ti = SimpleNamespace(dag_id="dag", run_id=run_id, task_id=task_id, map_index=map_index)
    return {"ti": ti, "outlet_events": _Events()}


@pytest.mark.parametrize("op_class", ALL_OPERATORS)
def test_template_fields(op_class):
    assert isinstance(op_class.template_fields, tuple)
    assert "lance_conn_id" in op_class.template_fields
    ident = "namespace_id" if "Namespace" in op_class.__name__ else "table_id"
    if op_class is not LanceBatchCreateTableVersionsOperator:
        assert ident in op_class.template_fields
    else:
        assert {"entries", "entries_file"} <= set(op_class.template_fields)


def test_namespace_operators(hook):
    created = LanceCreateNamespaceOperator(task_id="c", namespace_id="a.b" if False else "a").execute(make_context())
    assert created == {"namespace_id": ["a"], "created": True}
    again = LanceCreateNamespaceOperator(task_id="c", namespace_id=["a"]).execute(make_context())
    assert again == {"namespace_id": ["a"], "created": False}
    with pytest.raises(AirflowException, match="already exists"):
        LanceCreateNamespaceOperator(task_id="c", namespace_id="a", if_exists="fail").execute(make_context())
    assert LanceDropNamespaceOperator(task_id="d", namespace_id="a").execute(make_context())["dropped"]
    with pytest.raises(AirflowException, match="does not exist"):
        LanceDropNamespaceOperator(task_id="d", namespace_id="a").execute(make_context())
    result = LanceDropNamespaceOperator(task_id="d", namespace_id="a", ignore_if_missing=True).execute(make_context())
    assert result == {"namespace_id": ["a"], "dropped": False}


def test_if_exists_is_validated():
    with pytest.raises(ValueError, match="if_exists"):
        LanceDeclareTableOperator(task_id="x", table_id="t", if_exists="replace")


def test_table_operators(hook):
    hook.create_namespace("ns")
    declared = LanceDeclareTableOperator(task_id="d", table_id="ns.t").execute(make_context())
    assert declared["created"] is True
    assert declared["table_id"] == ["ns", "t"]
    json.dumps(declared)
    again = LanceDeclareTableOperator(task_id="d", table_id=["ns", "t"]).execute(make_context())
    assert again == {**declared, "created": False}
    with pytest.raises(AirflowException, match=r"Table ns\.t already exists"):
        LanceDeclareTableOperator(task_id="d", table_id="ns.t", if_exists="fail").execute(make_context())

    write_table(hook.namespace, ["ns", "data"])
    location = hook.describe_table("ns.data").location
    out = LanceDeregisterTableOperator(task_id="x", table_id="ns.data").execute(make_context())
    assert out["deregistered"] is True
    assert not hook.table_exists("ns.data")
    relative = location.rstrip("/").rsplit("/", 1)[-1]
    registered = LanceRegisterTableOperator(task_id="r", table_id="ns.data2", location=relative).execute(make_context())
    assert registered["created"] is True
    assert hook.table_exists("ns.data2")

    assert LanceDropTableOperator(task_id="x", table_id="ns.data2").execute(make_context())["dropped"]
    assert not hook.table_exists("ns.data2")
    with pytest.raises(AirflowException, match="does not exist"):
        LanceDropTableOperator(task_id="x", table_id="ns.data2").execute(make_context())
    skipped = LanceDropTableOperator(task_id="x", table_id="ns.data2", ignore_if_missing=True).execute(make_context())
    assert skipped["dropped"] is False
    assert not LanceDeregisterTableOperator(task_id="x", table_id="ns.gone", ignore_if_missing=True).execute(
        make_context()
    )["deregistered"]


def test_error_message_names_the_namespace_error(hook):
    op = LanceRegisterTableOperator(task_id="r", table_id="t", location="/abs/path")
    with pytest.raises(AirflowException, match=r"Cannot register table t: InvalidInputError"):
        op.execute(make_context())


@pytest.mark.parametrize(
    ("conn_impl", "extra"),
    [("dir", {}), ("default", {}), ("default", {"table_version_management": "true"})],
    ids=["dir", "default", "default-table_version_management"],
)
def test_create_table_version_emits_asset_event_and_is_not_committed_twice(set_conn, lance_root, conn_impl, extra):
    if conn_impl == "default" and not engine_available():
        pytest.skip("airflow_provider_lance.namespace.DirectoryNamespace is not importable yet")
    set_conn(conn_impl, extra=extra)
    hook = LanceHook()
    write_table(hook.namespace, ["t"])
    entry = stage_append(hook.namespace, ["t"])
    asset = create_asset(root=str(lance_root), table_id="t")
    kwargs = {k: v for k, v in entry.items() if k != "id"}
    op = LanceCreateTableVersionOperator(task_id="commit", table_id="t", outlets=[asset], **kwargs)
    context = make_context("commit")
    result = op.execute(context)
    assert result == {"versions": [{"table_id": ["t"], "version": 2}], "already_committed": False}
    assert context["outlet_events"][asset].extra == {"version": 2, "table_id": ["t"]}
    assert hook.get_latest_version("t") == 2
    if not extra:
        return  # retry detection needs version metadata, recorded with table version management

    described = hook.describe_table_version("t", 2)
    if not (described.metadata or {}).get(RUN_KEY_METADATA):
        pytest.skip("this engine does not record version metadata: retry detection needs it")
    retry = LanceCreateTableVersionOperator(task_id="commit", table_id="t", **kwargs).execute(make_context("commit"))
    assert retry == {"versions": [{"table_id": ["t"], "version": 2}], "already_committed": True}
    assert hook.get_latest_version("t") == 2


def test_create_table_version_failure_is_clear(hook):
    write_table(hook.namespace, ["t"])
    op = LanceCreateTableVersionOperator(task_id="c", table_id="t", version=2, manifest_path="nowhere/x.manifest")
    with pytest.raises(AirflowException, match="Cannot commit version 2 of table t"):
        op.execute(make_context())


@pytest.mark.parametrize("source", ["list", "json", "file", "file_uri"])
def test_batch_create_from_all_sources(set_conn, engine_impl, tmp_path, lance_root, source):
    set_conn(engine_impl, extra={"table_version_management": "true"})
    hook = LanceHook()
    hook.create_namespace("ns")
    write_table(hook.namespace, ["ns", "a"])
    write_table(hook.namespace, ["ns", "b"])
    entries = [stage_append(hook.namespace, ["ns", "a"]), stage_append(hook.namespace, ["ns", "b"])]
    entries[1]["table_id"] = "ns.b"  # dotted ids are accepted too
    del entries[1]["id"]
    kwargs: dict = {}
    if source == "list":
        kwargs["entries"] = entries
    elif source == "json":
        kwargs["entries"] = json.dumps(entries)
    else:
        path = tmp_path / "entries.json"
        path.write_text(json.dumps({"entries": entries}))
        kwargs["entries_file"] = str(path) if source == "file" else path.as_uri()
    assets = [create_asset(root=str(lance_root), table_id=t) for t in ("ns.a", "ns.b")]
    op = LanceBatchCreateTableVersionsOperator(
        task_id="batch", outlets=[*assets, Asset(uri="s3://x/y", name="o")], **kwargs
    )
    context = make_context("batch")
    result = skip_if_unsupported(op.execute, context)
    expected = [{"table_id": ["ns", "a"], "version": 2}, {"table_id": ["ns", "b"], "version": 2}]
    assert result == {"versions": expected, "already_committed": False}
    assert context["outlet_events"][assets[0]].extra["version"] == 2
    assert context["outlet_events"][assets[1]].extra["version"] == 2
    assert hook.get_latest_version("ns.a") == hook.get_latest_version("ns.b") == 2

    retry = LanceBatchCreateTableVersionsOperator(task_id="batch", **kwargs).execute(make_context("batch"))
    assert retry == {"versions": expected, "already_committed": True}
    assert hook.get_latest_version("ns.a") == 2


def test_batch_create_bad_inputs(hook, tmp_path):
    with pytest.raises(ValueError, match="entries"):
        LanceBatchCreateTableVersionsOperator(task_id="b")
    with pytest.raises(AirflowFailException, match="does not exist"):
        LanceBatchCreateTableVersionsOperator(task_id="b", entries_file=str(tmp_path / "none.json")).execute(
            make_context()
        )
    with pytest.raises(AirflowFailException, match="No table version entries"):
        LanceBatchCreateTableVersionsOperator(task_id="b", entries=[]).execute(make_context())
    with pytest.raises(AirflowFailException, match="Invalid table version entries"):
        LanceBatchCreateTableVersionsOperator(task_id="b", entries=[{"id": "t"}]).execute(make_context())


def _versions(*pairs):
    return [SimpleNamespace(version=v, timestamp_millis=ts) for v, ts in pairs]


class TestRetention:
    def test_keep_last(self):
        ranges, deleted = compute_retention_ranges(_versions((1, 0), (2, 0), (3, 0), (4, 0), (5, 0)), keep_last=2)
        assert ranges == [{"start_version": 1, "end_version": 4}]
        assert deleted == [1, 2, 3]

    def test_latest_is_always_kept(self):
        ranges, deleted = compute_retention_ranges(_versions((1, 0), (2, 0)), keep_newer_than=10, now_millis=10**9)
        assert deleted == [1]
        assert ranges == [{"start_version": 1, "end_version": 2}]

    def test_keep_newer_than_and_gaps(self):
        now = 100_000
        versions = _versions((1, 1_000), (2, 1_500), (4, 2_000), (5, 95_000), (7, 50_000), (9, 99_000))
        ranges, deleted = compute_retention_ranges(versions, keep_newer_than=timedelta(seconds=10), now_millis=now)
        assert deleted == [1, 2, 4, 7]
        # ranges never span missing versions: engines may refuse to delete what does not exist
        assert ranges == [
            {"start_version": 1, "end_version": 3},
            {"start_version": 4, "end_version": 5},
            {"start_version": 7, "end_version": 8},
        ]

    def test_rules_are_a_union_of_kept_versions(self):
        versions = _versions((1, 0), (2, 99_000), (3, 0), (4, 0))
        _, deleted = compute_retention_ranges(versions, keep_last=2, keep_newer_than=5, now_millis=100_000)
        assert deleted == [1]

    def test_nothing_to_delete(self):
        assert compute_retention_ranges([], keep_last=1) == ([], [])
        assert compute_retention_ranges(_versions((1, 0)), keep_last=3) == ([], [])


def test_batch_delete_operator(hook):
    write_table(hook.namespace, ["t"])
    for _ in range(4):
        write_table(hook.namespace, ["t"], mode="append")
    out = LanceBatchDeleteTableVersionsOperator(task_id="x", table_id="t", ranges=[[1, 2]]).execute(make_context())
    assert out == {"table_id": ["t"], "deleted_count": 1, "ranges": [{"start_version": 1, "end_version": 2}]}
    out = LanceBatchDeleteTableVersionsOperator(task_id="x", table_id="t", keep_last=2).execute(make_context())
    assert out["deleted_count"] == 2
    assert [v.version for v in hook.list_table_versions("t")] == [4, 5]
    out = LanceBatchDeleteTableVersionsOperator(task_id="x", table_id="t", keep_newer_than=0).execute(make_context())
    assert [v.version for v in hook.list_table_versions("t")] == [5]
    assert out["deleted_count"] == 1
    with pytest.raises(AirflowException, match="does not exist"):
        LanceBatchDeleteTableVersionsOperator(task_id="x", table_id="nope", keep_last=1).execute(make_context())


def test_batch_delete_arguments_are_validated():
    with pytest.raises(ValueError, match="retention"):
        LanceBatchDeleteTableVersionsOperator(task_id="x", table_id="t")
    with pytest.raises(ValueError, match="cannot be combined"):
        LanceBatchDeleteTableVersionsOperator(task_id="x", table_id="t", ranges=[], keep_last=1)
