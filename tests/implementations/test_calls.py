"""How an operation's request form is picked: pylance's implementations take dicts for the version calls."""

from __future__ import annotations

from typing import Any

import lance.namespace
import lance_namespace as ln

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
