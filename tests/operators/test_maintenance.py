"""``LanceMaintainManifestOperator`` and ``LanceHook.maintain_manifest`` on real local namespaces."""

from __future__ import annotations

import json
from datetime import timedelta

import lance
import pytest
from airflow.providers.common.compat.sdk import AirflowException, AirflowFailException

from airflow_provider_lance.hooks.lance import LanceHook
from airflow_provider_lance.operators.maintenance import LanceMaintainManifestOperator
from tests.operators.context import make_context


@pytest.fixture
def engine_impl() -> str:
    """The engine called directly: ``__manifest`` maintenance is no protocol operation (the REST server runs it
    itself; through REST the operators refuse clearly, see below)."""
    return "default"


@pytest.fixture
def busy_catalog(set_conn, engine_impl, lance_root):
    """Our engine's catalog after many small writes, with automatic maintenance off so fragments pile up."""
    set_conn(engine_impl, extra={"manifest_maintenance_every": "0", "manifest_cleanup_every": "0"})
    hook = LanceHook()
    hook.create_namespace("prod")
    for i in range(12):
        hook.declare_table(f"prod.t{i}", properties={"i": str(i)})
    hook.drop_table("prod.t0")  # a deletion for compaction to materialise
    return hook


def _manifest(lance_root) -> lance.LanceDataset:
    return lance.dataset(str(lance_root / "__manifest"))


def _rows(lance_root) -> list[dict]:
    return sorted(_manifest(lance_root).to_table().to_pylist(), key=lambda row: row["object_id"])


def test_compacts_and_keeps_every_row(busy_catalog, lance_root):
    rows, fragments = _rows(lance_root), len(_manifest(lance_root).get_fragments())
    assert fragments > 10

    result = LanceMaintainManifestOperator(task_id="maintain").execute(make_context())

    json.dumps(result)
    assert result["compacted"] is True
    assert result["fragments_before"] == fragments
    assert result["fragments_after"] == len(_manifest(lance_root).get_fragments()) < fragments
    assert result["versions_removed"] == 0  # every version is inside the default 10-minute window
    assert _rows(lance_root) == rows
    assert sorted(busy_catalog.list_tables("prod")) == sorted(f"t{i}" for i in range(1, 12))
    assert busy_catalog.describe_table("prod.t5").properties == {"i": "5"}
    busy_catalog.declare_table("prod.after")  # the catalog stays writable
    assert busy_catalog.table_exists("prod.after")


def test_compaction_only_and_templated_arguments(busy_catalog, lance_root):
    op = LanceMaintainManifestOperator(task_id="m", cleanup=False, min_fragments="1000")
    assert {"older_than", "min_fragments", "lance_conn_id"} <= set(op.template_fields)
    result = op.execute(make_context())
    assert result["compacted"] is False  # fewer fragments than asked for
    assert "bytes_removed" not in result
    result = LanceMaintainManifestOperator(task_id="m", cleanup=False, older_than=0).execute(make_context())
    assert result["compacted"] is True


def test_window_too_short_fails_without_retry(busy_catalog):
    with pytest.raises(AirflowFailException, match="Invalid __manifest maintenance arguments"):
        LanceMaintainManifestOperator(task_id="m", older_than=timedelta(seconds=1)).execute(make_context())
    with pytest.raises(AirflowFailException, match="must not be negative"):
        LanceMaintainManifestOperator(task_id="m", older_than=-5).execute(make_context())


def test_nothing_to_do_is_refused():
    with pytest.raises(ValueError, match="Nothing to do"):
        LanceMaintainManifestOperator(task_id="m", compact=False, cleanup=False)


@pytest.mark.parametrize("impl", ["dir", "rest"])
def test_other_implementations_get_a_clear_error(set_conn, impl):
    set_conn(impl)
    with pytest.raises(AirflowException, match=r"__manifest maintenance needs the provider's engine"):
        LanceMaintainManifestOperator(task_id="m").execute(make_context())


def test_empty_catalog_is_skipped(set_conn, engine_impl):
    set_conn(engine_impl)
    result = LanceHook().maintain_manifest()
    assert result["compacted"] is False
    assert "skipped" in result


def test_finalize_pending_versions_operator(set_conn, engine_impl, lance_root, monkeypatch):
    """A batch whose committer stopped after the commit point: path-based readers see the old versions until
    the operator finishes them (issue 12, point 7)."""
    import lance_namespace as ln
    import pyarrow as pa

    from airflow_provider_lance.namespace import commit
    from airflow_provider_lance.operators.maintenance import LanceFinalizePendingVersionsOperator
    from airflow_provider_lance.staging import stage_data

    set_conn(engine_impl, extra={"table_version_management": "true"})
    hook = LanceHook()
    hook.create_namespace("prod")
    entries = [stage_data(hook.namespace, ["prod", name], pa.table({"x": [1, 2]})) for name in ("a", "b")]
    with monkeypatch.context() as patch:
        patch.setattr(commit, "finalize", _stop)  # the committer stops right after the commit point
        with pytest.raises(_Stopped):
            hook.namespace.batch_create_table_versions(ln.BatchCreateTableVersionsRequest(entries=entries))
    locations = {name: lance_root / hook.namespace.manifest.get(f"prod${name}").location for name in ("a", "b")}
    assert all(not list(path.glob("_versions/*.manifest")) for path in locations.values())  # path readers: nothing

    result = LanceFinalizePendingVersionsOperator(task_id="finalize").execute(make_context())
    assert sorted(tuple(item["table_id"]) for item in result["finalized"]) == [("prod", "a"), ("prod", "b")]
    assert all(lance.dataset(str(path)).count_rows() == 2 for path in locations.values())
    assert LanceFinalizePendingVersionsOperator(task_id="again").execute(make_context()) == {"finalized": []}


class _Stopped(Exception):
    pass


def _stop(*args, **kwargs):
    raise _Stopped


@pytest.mark.parametrize("impl", ["dir", "rest"])
def test_finalize_needs_the_engine(set_conn, impl):
    from airflow_provider_lance.operators.maintenance import LanceFinalizePendingVersionsOperator

    set_conn(impl)
    with pytest.raises(AirflowException, match=r"finalizing pending versions needs the provider's engine"):
        LanceFinalizePendingVersionsOperator(task_id="f").execute(make_context())
