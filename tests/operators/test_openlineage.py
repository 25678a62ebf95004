"""OpenLineage facets of the operators, on real local namespaces."""

from __future__ import annotations

import sys

import pytest

from airflow_provider_lance.hooks.lance import LanceHook
from airflow_provider_lance.operators.table import (
    LanceDeclareTableOperator,
    LanceDeregisterTableOperator,
    LanceDropTableOperator,
)
from airflow_provider_lance.operators.version import LanceBatchCreateTableVersionsOperator
from airflow_provider_lance.utils.openlineage import openlineage_location
from tests.airflow_helpers import stage_append, write_table
from tests.operators.context import make_context


def _facets(lineage) -> dict[str, dict]:
    """``{table path: {facet name: facet}}`` of the lineage's outputs."""
    return {dataset.name: dataset.facets for dataset in lineage.outputs}


def _check_common(dataset, lance_root, table: str) -> None:
    """The facets of a table's dataset; the catalog is the root, or the REST server for ``impl=rest``."""
    from openlineage.client.serde import Serde

    from airflow_provider_lance.hooks.lance import LanceHook

    _, properties = LanceHook().get_namespace_config()
    root_uri = properties["uri"] if "uri" in properties else lance_root.as_uri()
    assert dataset.namespace == "file"
    assert dataset.name.startswith(str(lance_root) + "/")
    facets = dataset.facets
    assert facets["storage"].storageLayer == "lance"
    assert facets["storage"].fileFormat == "lance"
    (symlink,) = facets["symlinks"].identifiers
    assert (symlink.namespace, symlink.name, symlink.type) == (root_uri, table, "TABLE")
    catalog = facets["catalog"]
    assert (catalog.framework, catalog.type) == ("lance", "lance_namespace")
    assert catalog.name == catalog.metadataUri == catalog.warehouseUri == root_uri
    assert Serde.to_json(dataset)  # the facets serialise as OpenLineage events need


def test_declare_reports_create(hook, lance_root):
    hook.create_namespace("ns")
    op = LanceDeclareTableOperator(task_id="d", table_id="ns.t")
    result = op.execute(make_context())
    (dataset,) = op.get_openlineage_facets_on_complete(None).outputs
    _check_common(dataset, lance_root, "ns.t")
    assert dataset.name == openlineage_location(result["location"])[1]
    assert dataset.facets["lifecycleStateChange"].lifecycleStateChange.value == "CREATE"
    assert "version" not in dataset.facets

    again = LanceDeclareTableOperator(task_id="d", table_id="ns.t")
    again.execute(make_context())
    (dataset,) = again.get_openlineage_facets_on_complete(None).outputs
    assert "lifecycleStateChange" not in dataset.facets  # the table already existed: nothing changed


@pytest.mark.parametrize("op_class", [LanceDropTableOperator, LanceDeregisterTableOperator])
def test_drop_and_deregister_report_drop(hook, lance_root, op_class):
    hook.create_namespace("ns")
    write_table(hook.namespace, ["ns", "t"])
    location = hook.describe_table("ns.t").location
    op = op_class(task_id="x", table_id="ns.t")
    op.execute(make_context())
    (dataset,) = op.get_openlineage_facets_on_complete(None).outputs
    _check_common(dataset, lance_root, "ns.t")
    assert (dataset.namespace, dataset.name) == openlineage_location(location)
    assert dataset.facets["lifecycleStateChange"].lifecycleStateChange.value == "DROP"

    missing = op_class(task_id="x", table_id="ns.t", ignore_if_missing=True)
    missing.execute(make_context())
    assert missing.get_openlineage_facets_on_complete(None) is None  # nothing was touched


def test_batch_create_reports_overwrite_and_versions(set_conn, engine_impl, lance_root):
    set_conn(engine_impl, extra={"table_version_management": "true"})
    hook = LanceHook()
    hook.create_namespace("ns")
    write_table(hook.namespace, ["ns", "a"])
    write_table(hook.namespace, ["ns", "b"])
    write_table(hook.namespace, ["ns", "b"], mode="append")
    entries = [stage_append(hook.namespace, ["ns", "a"]), stage_append(hook.namespace, ["ns", "b"])]
    op = LanceBatchCreateTableVersionsOperator(task_id="batch", entries=entries)
    op.execute(make_context("batch"))
    lineage = op.get_openlineage_facets_on_complete(None)
    assert len(lineage.outputs) == 2
    by_table = {dataset.facets["symlinks"].identifiers[0].name: dataset for dataset in lineage.outputs}
    assert set(by_table) == {"ns.a", "ns.b"}
    for table, version in (("ns.a", "2"), ("ns.b", "3")):
        dataset = by_table[table]
        _check_common(dataset, lance_root, table)
        assert dataset.name == openlineage_location(hook.describe_table(table).location)[1]
        assert dataset.facets["version"].datasetVersion == version
        assert dataset.facets["lifecycleStateChange"].lifecycleStateChange.value == "OVERWRITE"


@pytest.mark.parametrize("impl", ["default"])  # about the import, not the catalog
def test_openlineage_is_optional(hook, monkeypatch):
    op = LanceDeclareTableOperator(task_id="d", table_id="t")
    op.execute(make_context())
    assert op.get_openlineage_facets_on_complete(None) is not None
    monkeypatch.setitem(sys.modules, "airflow.providers.openlineage.extractors", None)  # import raises ImportError
    assert op.get_openlineage_facets_on_complete(None) is None


def test_nothing_touched_reports_nothing():
    assert LanceDropTableOperator(task_id="x", table_id="t").get_openlineage_facets_on_complete(None) is None


def test_secrets_in_the_root_do_not_reach_lineage(set_conn, lance_root, impl):
    set_conn(impl, root=str(lance_root), password="very-s3cret-value")
    hook = LanceHook()
    hook.create_namespace("ns")
    op = LanceDeclareTableOperator(task_id="d", table_id="ns.t")
    op.execute(make_context())
    from openlineage.client.serde import Serde

    text = "".join(Serde.to_json(dataset) for dataset in op.get_openlineage_facets_on_complete(None).outputs)
    assert "very-s3cret-value" not in text
