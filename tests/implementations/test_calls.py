"""How an operation's request form is picked: pylance's implementations take dicts for the version calls."""

from __future__ import annotations

from typing import Any

import lance.namespace
import lance_namespace as ln
import pyarrow as pa
import pytest

from airflow_provider_lance.implementations import connect, wants_mapping
from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.page.catalog import CatalogReader


def test_reference_declares_dict_requests_for_version_calls(tmp_path):
    reference = lance.namespace.DirectoryNamespace(root=str(tmp_path))
    for operation in ("create_table_version", "describe_table_version", "batch_delete_table_versions"):
        assert wants_mapping(getattr(reference, operation))
    assert not wants_mapping(reference.describe_table)
    assert not wants_mapping(reference.list_table_versions)


def test_the_references_dict_answers_come_back_as_models(tmp_path):
    """pylance answers the three version calls with dicts; callers of any implementation (the hook, the page)
    read the protocol's response models."""
    reference = connect("dir", {"root": str(tmp_path), "manifest_enabled": "true"})
    lance.write_dataset(pa.table({"a": [1, 2]}), str(tmp_path / "t.lance"))
    lance.write_dataset(pa.table({"a": [3]}), str(tmp_path / "t.lance"), mode="append")
    described = reference.describe_table_version(ln.DescribeTableVersionRequest(id=["t"], version=1))
    assert isinstance(described, ln.DescribeTableVersionResponse)
    assert described.version.version == 1
    deleted = reference.batch_delete_table_versions(
        ln.BatchDeleteTableVersionsRequest(id=["t"], ranges=[{"start_version": 1, "end_version": 2}])
    )
    assert isinstance(deleted, ln.BatchDeleteTableVersionsResponse)


def test_the_page_reads_a_version_of_the_reference(tmp_path):
    reference = connect("dir", {"root": str(tmp_path), "manifest_enabled": "true"})
    lance.write_dataset(pa.table({"a": [1, 2]}), str(tmp_path / "t.lance"))
    row = CatalogReader(reference).version(["t"], 1)
    assert (row.version, row.rows) == (1, 2)


def test_engine_takes_models(tmp_path):
    engine = DirectoryNamespace(root=str(tmp_path))
    for operation in ("create_table_version", "describe_table_version", "describe_table", "list_tables"):
        assert not wants_mapping(getattr(engine, operation))


def test_annotation_spellings():
    def as_text(request: dict[str, Any]) -> None: ...  # postponed: the annotation is the text "dict[str, Any]"

    def untyped(request): ...

    def model(request: ln.DescribeTableRequest) -> None: ...

    assert wants_mapping(as_text)
    assert not wants_mapping(untyped)
    assert not wants_mapping(model)
    assert not wants_mapping(len)


def test_the_registry_builds_each_named_implementation(tmp_path):
    """One registry: every name of the provider's engine builds it, ``dir`` pylance's (adapted), ``rest`` the
    provider's client; the connection-extra prefix comes from the same table."""
    from airflow_provider_lance.implementations import ENGINE_IMPL, AdaptedNamespace, connect, property_prefix
    from airflow_provider_lance.rest.client import RestNamespace

    for name in (None, "", "auto", ENGINE_IMPL):
        assert type(connect(name, {"root": str(tmp_path)})) is DirectoryNamespace
        assert property_prefix(name) == "dir."
    adapted = connect("dir", {"root": str(tmp_path)})
    assert isinstance(adapted, AdaptedNamespace)
    assert isinstance(adapted.inner, lance.namespace.DirectoryNamespace)
    assert type(connect("rest", {"uri": "http://127.0.0.1:9"})) is RestNamespace
    assert (property_prefix("rest"), property_prefix("glue"), property_prefix("my.Class")) == ("rest.", "glue.", None)


def test_auto_raises_the_engines_import_error_rather_than_falling_back(tmp_path, monkeypatch):
    """The Spark job's ``auto`` once fell back to pylance's engine when ours did not import: a different engine,
    silently. The registry raises the ImportError instead."""
    import sys

    from airflow_provider_lance.implementations import connect

    monkeypatch.setitem(sys.modules, "airflow_provider_lance.namespace", None)
    with pytest.raises(ImportError):
        connect("auto", {"root": str(tmp_path)})
