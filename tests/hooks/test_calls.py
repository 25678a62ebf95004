"""How the hook picks the request form of an operation and checks responses."""

from __future__ import annotations

from typing import Any

import lance.namespace
import lance_namespace as ln
import pytest
from airflow.providers.common.compat.sdk import AirflowException

from airflow_provider_lance.hooks.calls import as_model
from airflow_provider_lance.implementations import wants_mapping
from airflow_provider_lance.namespace import DirectoryNamespace


def test_reference_declares_dict_requests_for_version_calls(tmp_path):
    reference = lance.namespace.DirectoryNamespace(root=str(tmp_path))
    for operation in ("create_table_version", "describe_table_version", "batch_delete_table_versions"):
        assert wants_mapping(getattr(reference, operation))
    assert not wants_mapping(reference.describe_table)
    assert not wants_mapping(reference.list_table_versions)


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


def test_as_model_validates():
    assert as_model({"version": 2, "manifest_path": "m"}, ln.TableVersion).version == 2
    assert as_model(None, ln.TableVersion) is None
    with pytest.raises(AirflowException, match="invalid TableVersion"):
        as_model({"version": "not a number"}, ln.TableVersion)


def test_removed_aliases_are_not_the_engine(set_conn):
    from airflow_provider_lance.hooks.lance import LanceHook

    set_conn(extra={"impl": "default"})
    with pytest.raises(AirflowException, match="Cannot build Lance namespace 'default'"):
        LanceHook().get_conn()
