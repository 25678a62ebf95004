"""Table version operators against real local namespaces."""

from __future__ import annotations

import json

import lance
import pytest
from airflow.providers.common.compat.sdk import AirflowException, AirflowFailException, Asset

from airflow_provider_lance.assets.lance import create_asset
from airflow_provider_lance.hooks.lance import RUN_KEY_METADATA, LanceHook
from airflow_provider_lance.operators.version import (
    LanceBatchCreateTableVersionsOperator,
    LanceBatchDeleteTableVersionsOperator,
    LanceCreateTableVersionOperator,
)
from tests.airflow_helpers import ENGINE_ONLY, stage_append, write_table
from tests.operators.context import make_context


@pytest.mark.parametrize(
    ("conn_impl", "extra"),
    [("dir", {}), ("default", {}), ("default", {"table_version_management": "true"})],
    ids=["dir", "default", "default-table_version_management"],
)
def test_create_table_version_emits_asset_event_and_is_not_committed_twice(set_conn, lance_root, conn_impl, extra):
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

    assert hook.describe_table_version("t", 2).metadata[RUN_KEY_METADATA]  # what retry detection reads
    retry = LanceCreateTableVersionOperator(task_id="commit", table_id="t", **kwargs).execute(make_context("commit"))
    assert retry == {"versions": [{"table_id": ["t"], "version": 2}], "already_committed": True}
    assert hook.get_latest_version("t") == 2


@ENGINE_ONLY
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
    _, properties = hook.get_namespace_config()  # the catalog's identity: its root, or the REST server's URI
    assets = [create_asset(root=properties.get("uri", str(lance_root)), table_id=t) for t in ("ns.a", "ns.b")]
    op = LanceBatchCreateTableVersionsOperator(
        task_id="batch", outlets=[*assets, Asset(uri="s3://x/y", name="o")], **kwargs
    )
    context = make_context("batch")
    result = op.execute(context)
    expected = [{"table_id": ["ns", "a"], "version": 2}, {"table_id": ["ns", "b"], "version": 2}]
    assert result == {"versions": expected, "already_committed": False}
    assert context["outlet_events"][assets[0]].extra["version"] == 2
    assert context["outlet_events"][assets[1]].extra["version"] == 2
    assert hook.get_latest_version("ns.a") == hook.get_latest_version("ns.b") == 2

    retry = LanceBatchCreateTableVersionsOperator(task_id="batch", **kwargs).execute(make_context("batch"))
    assert retry == {"versions": expected, "already_committed": True}
    assert hook.get_latest_version("ns.a") == 2


@ENGINE_ONLY
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


@pytest.mark.parametrize(
    ("conn_impl", "extra"),
    [
        ("dir", {"table_version_tracking_enabled": "true"}),
        ("default", {"table_version_management": "true", "manifest_maintenance_every": "0"}),
        ("rest", {"table_version_management": "true"}),
    ],
    ids=["reference-per-table", "engine-one-call", "rest-per-table"],
)
def test_batch_delete_operator_cleans_up_several_tables(set_conn, lance_root, conn_impl, extra):
    """Every table of a namespace, or named tables: the engine in one call (its rows in one ``__manifest``
    commit, nothing deleted when a table is missing), other implementations one call per table."""
    set_conn(conn_impl, extra=extra)
    hook = LanceHook()
    hook.create_namespace("ns")
    tables = [["ns", "a"], ["ns", "b"], ["ns", "c"]]
    for table in tables:
        write_table(hook.namespace, table)
        for _ in range(2):
            write_table(hook.namespace, table, mode="append")
    if conn_impl == "default":
        hook.namespace.finalize_pending_versions()  # the last append's deferred repoint (issue 42), made now
    before = lance.dataset(str(lance_root / "__manifest")).version

    out = LanceBatchDeleteTableVersionsOperator(task_id="x", namespace_id="ns", keep_last=1).execute(make_context())
    assert out == {"deleted_count": 6, "tables": {"ns.a": 2, "ns.b": 2, "ns.c": 2}}
    assert [[v.version for v in hook.list_table_versions(t)] for t in tables] == [[3], [3], [3]]
    if conn_impl == "default":
        assert lance.dataset(str(lance_root / "__manifest")).version == before + 1  # one commit, three tables

    for table in tables:
        write_table(hook.namespace, table, mode="append")
    named = LanceBatchDeleteTableVersionsOperator(
        task_id="x", table_ids=["ns.a", "ns.b", "ns.nope"], ranges=[[3, 4]], ignore_if_missing=True
    )
    assert named.execute(make_context()) == {"deleted_count": 2, "tables": {"ns.a": 1, "ns.b": 1}}
    with pytest.raises(AirflowFailException, match="TableNotFoundError"):
        LanceBatchDeleteTableVersionsOperator(task_id="x", table_ids=["ns.c", "ns.nope"], ranges=[[3, 4]]).execute(
            make_context()
        )
    # the engine checks every table first; one call per table has cleaned the tables before the missing one
    assert [v.version for v in hook.list_table_versions("ns.c")] == ([3, 4] if conn_impl == "default" else [4])


def test_batch_delete_names_exactly_one_target():
    with pytest.raises(ValueError, match="exactly one of table_id, table_ids and namespace_id"):
        LanceBatchDeleteTableVersionsOperator(task_id="x", table_id="t", namespace_id="ns", keep_last=1)
    with pytest.raises(ValueError, match="exactly one of"):
        LanceBatchDeleteTableVersionsOperator(task_id="x", keep_last=1)


@pytest.mark.parametrize("pylance_first", [True, False], ids=["pylance-then-operator", "operator-then-pylance"])
def test_clean_up_operator_and_pylance_clean_up_agree(set_conn, lance_root, pylance_first):
    """The provider's clean-up (BatchDeleteTableVersions) and pylance's ``cleanup_old_versions`` on one managed
    table, in either order: every version listed exists, opens and is described, and ``__manifest`` holds a
    row for exactly the versions storage has (issue 37)."""
    from datetime import timedelta

    set_conn("default", extra={"table_version_management": "true"})
    hook = LanceHook()
    write_table(hook.namespace, ["t"])
    for _ in range(5):  # versions 1-6
        write_table(hook.namespace, ["t"], mode="append")
    dataset = lance.dataset(namespace_client=hook.namespace, table_id=["t"])

    def operator() -> int:
        operator = LanceBatchDeleteTableVersionsOperator(task_id="x", table_id="t", keep_last=4)
        return operator.execute(make_context())["deleted_count"]

    def pylance() -> int:
        return dataset.cleanup_old_versions(versions=[4]).old_versions

    if pylance_first:
        assert pylance() == 1
        assert operator() == 1  # of 1, 2, 3, 5, 6 (4 is gone): version 1
    else:
        assert operator() == 2  # versions 1 and 2
        assert pylance() == 1
    listed = [v.version for v in hook.list_table_versions("t")]
    assert listed == ([2, 3, 5, 6] if pylance_first else [3, 5, 6])
    for number in listed:
        assert hook.describe_table_version("t", number).version == number
        assert lance.dataset(namespace_client=hook.namespace, table_id=["t"], version=number).version == number
    rows = hook.namespace.manifest.query("object_type = 'table_version'")
    assert sorted(int(row.object_id.rpartition("$")[2]) for row in rows) == listed
    assert hook.check_table_version("t", version=4) == (False, None)
    assert dataset.cleanup_old_versions(older_than=timedelta(0)).old_versions == len(listed) - 1
    assert [v.version for v in hook.list_table_versions("t")] == [6]
    assert [row.object_id for row in hook.namespace.manifest.query("object_type = 'table_version'")] == ["t$6"]
