"""Issue 13: all-or-nothing batch commits, idempotent whole-run reruns, errors for people, assets, data operators."""

from __future__ import annotations

import pytest
from airflow.providers.common.compat.sdk import AirflowFailException
from airflow.sdk import Asset, AssetAlias

from airflow_provider_lance.hooks.lance import LanceHook
from airflow_provider_lance.operators.data import (
    LanceOptimizeTableOperator,
    LanceRollbackRunOperator,
    LanceTableCheckOperator,
    LanceTagTableVersionsOperator,
)
from airflow_provider_lance.operators.table import LanceDropTableOperator
from airflow_provider_lance.operators.version import LanceBatchCreateTableVersionsOperator
from airflow_provider_lance.sensors.lance import LanceTableVersionSensor
from tests.airflow_helpers import stage_append, write_table
from tests.operators.context import make_context

TVM = {"table_version_management": "true"}


def _two_tables(set_conn, engine_impl, extra):
    set_conn(engine_impl, extra=extra)
    hook = LanceHook()
    hook.create_namespace("c")
    for table in ("x", "y"):
        write_table(hook.namespace, ["c", table])
    return hook


def _commit(entries, **kwargs):
    return LanceBatchCreateTableVersionsOperator(task_id="commit", entries=entries, **kwargs)


def test_batch_refuses_non_atomic_commit_by_default(set_conn, engine_impl):
    hook = _two_tables(set_conn, engine_impl, {})
    entries = [stage_append(hook.namespace, ["c", t]) for t in ("x", "y")]
    with pytest.raises(AirflowFailException, match=r"Refusing to commit 2 tables non-atomically.*allow_non_atomic"):
        _commit(entries).execute(make_context("commit"))
    assert [hook.get_latest_version(f"c.{t}") for t in ("x", "y")] == [1, 1]


def test_non_atomic_opt_in_checks_every_entry_before_committing(set_conn, engine_impl):
    hook = _two_tables(set_conn, engine_impl, {})
    entries = [stage_append(hook.namespace, ["c", t]) for t in ("x", "y")]
    write_table(hook.namespace, ["c", "y"], mode="append")  # another writer: y's staged version is stale
    with pytest.raises(AirflowFailException, match=r"version 2 of table c\.y: the table is at version 2") as err:
        _commit(entries, allow_non_atomic=True).execute(make_context("commit"))
    assert "$" not in str(err.value) and "Clear the whole DAG run" in str(err.value)
    assert hook.get_latest_version("c.x") == 1  # nothing committed


def test_non_atomic_opt_in_commits_when_every_entry_is_next(set_conn, engine_impl):
    hook = _two_tables(set_conn, engine_impl, {})
    entries = [stage_append(hook.namespace, ["c", t]) for t in ("x", "y")]
    result = _commit(entries, allow_non_atomic=True).execute(make_context("commit"))
    assert [v["version"] for v in result["versions"]] == [2, 2]


def test_conflict_with_table_version_management_fails_without_retry_and_commits_nothing(set_conn, engine_impl):
    hook = _two_tables(set_conn, engine_impl, TVM)
    entries = [stage_append(hook.namespace, ["c", t]) for t in ("x", "y")]
    _commit([stage_append(hook.namespace, ["c", "y"])]).execute(make_context("commit", run_id="other"))
    with pytest.raises(AirflowFailException) as err:
        _commit(entries).execute(make_context("commit"))
    assert "c.y" in str(err.value) and "$" not in str(err.value)
    assert "max_active_runs=1" in str(err.value)
    assert hook.get_latest_version("c.x") == 1


def test_cleared_dag_run_does_not_commit_twice(set_conn, engine_impl):
    hook = _two_tables(set_conn, engine_impl, TVM)
    first = [stage_append(hook.namespace, ["c", t]) for t in ("x", "y")]
    assert not _commit(first).execute(make_context("commit"))["already_committed"]
    # The whole run is cleared: staging runs again (new staged versions on top), then the commit, new try number.
    second = [stage_append(hook.namespace, ["c", t]) for t in ("x", "y")]
    result = _commit(second).execute(make_context("commit"))
    assert result == {
        "versions": [{"table_id": ["c", "x"], "version": 2}, {"table_id": ["c", "y"], "version": 2}],
        "already_committed": True,
    }
    assert [v.version for v in hook.list_table_versions("c.x")] == [1, 2]
    assert hook.describe_table_version("c.x", 2).metadata["airflow_run_id"] == "dag/run1"
    # Another run commits normally.
    third = [stage_append(hook.namespace, ["c", t]) for t in ("x", "y")]
    assert not _commit(third).execute(make_context("commit", run_id="run2"))["already_committed"]


@pytest.mark.parametrize("engine_impl", ["default"])  # refused before any call: REST would add no information
def test_errors_name_the_parameter(set_conn, engine_impl):
    set_conn(engine_impl)
    with pytest.raises(AirflowFailException, match=r"Invalid table_id 'demo\.\.users'.*demo\.users"):
        LanceDropTableOperator(task_id="d", table_id="demo..users").execute(make_context())
    sensor = LanceTableVersionSensor(task_id="s", table_id="demo.users", version="latest")
    with pytest.raises(AirflowFailException, match=r"version must be a version number.*'latest'"):
        sensor.poke(make_context())


def test_missing_table_message_uses_dotted_names(set_conn, engine_impl):
    set_conn(engine_impl, extra=TVM)
    LanceHook().create_namespace("demo")
    with pytest.raises(AirflowFailException) as err:
        LanceDropTableOperator(task_id="d", table_id="demo.users", ignore_if_missing=False).execute(make_context())
    assert "demo.users" in str(err.value) and "$" not in str(err.value)


def test_asset_alias_gets_one_event_per_table(set_conn, engine_impl, lance_root):
    hook = _two_tables(set_conn, engine_impl, TVM)
    entries = [stage_append(hook.namespace, ["c", t]) for t in ("x", "y")]
    alias, named = AssetAlias("committed"), Asset(name="c.y", uri="lance://localhost/elsewhere/c.y")
    context = make_context("commit")
    added = []
    context["outlet_events"][alias].add = lambda asset, extra: added.append((asset.uri, extra))
    _commit(entries, outlets=[alias, named]).execute(context)
    tables = [(uri.split("?")[0].rsplit("/", 1)[-1], extra["version"]) for uri, extra in added]
    assert tables == [("c.x", 2), ("c.y", 2)]
    # the catalog's identity: the local root, or the REST server the connection names
    prefix = "lance://127.0.0.1:" if engine_impl == "rest" else "lance://localhost/"
    assert all(uri.startswith(prefix) for uri, _ in added)
    assert context["outlet_events"][named].extra == {"version": 2, "table_id": ["c", "y"]}


def test_check_tag_rollback_optimize(set_conn, engine_impl):
    hook = _two_tables(set_conn, engine_impl, TVM)
    before = {t: hook.count_table_rows(f"c.{t}") for t in ("x", "y")}
    _commit([stage_append(hook.namespace, ["c", t], rows=5) for t in ("x", "y")]).execute(make_context("commit"))

    check = LanceTableCheckOperator(task_id="audit", tables=["c.x", "c.y"], min_rows=8, forbidden=["x >= 4"])
    with pytest.raises(AirflowFailException, match=r"c\.x has 1 rows matching 'x >= 4'"):
        check.execute(make_context())
    ok = LanceTableCheckOperator(task_id="audit", tables="c.x", min_rows=8, forbidden=["x > 100"]).execute(
        make_context()
    )
    assert ok == {"c.x": {"rows": 8, "forbidden": {"x > 100": 0}}}

    tagged = LanceTagTableVersionsOperator(task_id="tag", tables=["c.x"], tag="audited").execute(make_context())
    assert tagged["tagged"][0]["version"] == 2 and hook.get_table_tag_version("c.x", "audited") == 2

    rollback = LanceRollbackRunOperator(task_id="rb", tables=["c.x", "c.y"], run_id="dag/run1")
    result = rollback.execute(make_context())
    assert [r["restored_version"] for r in result["restored"]] == [1, 1]
    assert result["atomic"] is True  # table version management: both restores in one commit
    assert [v.version for v in hook.list_table_versions("c.y")][-1] == 3
    assert {t: hook.count_table_rows(f"c.{t}") for t in ("x", "y")} == before
    assert (
        LanceRollbackRunOperator(task_id="rb", tables=["c.x"], run_id="dag/run1").execute(make_context())["restored"]
        == []
    )  # a rerun leaves the rolled-back table alone

    optimized = LanceOptimizeTableOperator(task_id="opt", tables=["c.x", "c.missing"]).execute(make_context())
    assert [r["table_id"] for r in optimized["tables"]] == [["c", "x"]]
    assert hook.count_table_rows("c.x") == before["x"]


def test_write_audit_publish_checks_staged_data_before_the_commit(set_conn, engine_impl):
    """Stage with audit=True → check the staged versions → commit: a failed check leaves every table as it was,
    and nothing staged is visible before the commit."""
    import pyarrow as pa

    from airflow_provider_lance.staging import StagingNamespace, stage_data

    hook = _two_tables(set_conn, engine_impl, TVM)
    before = {t: hook.count_table_rows(f"c.{t}") for t in ("x", "y")}
    staging = StagingNamespace(hook.namespace)
    entries = [
        stage_data(hook.namespace, ["c", t], pa.table({"x": [7, -1]}), staging=staging, audit=True).model_dump(
            exclude_none=True
        )
        for t in ("x", "y")
    ]
    check = LanceTableCheckOperator(task_id="audit", entries=entries, min_rows=1, forbidden=["x < 0"])
    with pytest.raises(AirflowFailException, match=r"c\.x \(staged v2\) has 1 rows matching 'x < 0'"):
        check.execute(make_context())
    assert {t: hook.count_table_rows(f"c.{t}") for t in ("x", "y")} == before  # nothing visible

    ok = LanceTableCheckOperator(task_id="audit", entries=entries, forbidden=["x > 100"]).execute(make_context())
    assert ok["c.y (staged v2)"] == {"rows": before["y"] + 2, "forbidden": {"x > 100": 0}}
    _commit(entries).execute(make_context("commit"))
    assert {t: hook.count_table_rows(f"c.{t}") for t in ("x", "y")} == {t: n + 2 for t, n in before.items()}
