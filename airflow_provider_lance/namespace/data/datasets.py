"""Opening a located table's Lance dataset."""

from __future__ import annotations

import lance
from lance_namespace import TableTagNotFoundError

from airflow_provider_lance.namespace.catalog import Catalog, Table
from airflow_provider_lance.namespace.storage import is_not_found_error


def open_dataset(catalog: Catalog, table: Table, version: int | None = None) -> lance.LanceDataset | None:
    """The table's Lance dataset (at ``version``, else the latest), or None when it has no such version."""
    try:
        return lance.dataset(
            catalog.storage.uri(table.location),
            version=version,
            storage_options=catalog.config.storage_options or None,
        )
    except (ValueError, OSError) as error:
        if is_not_found_error(error):  # not a 403 or a missing bucket: those must fail
            return None
        raise


def tag_not_found(table: Table, tag: str) -> TableTagNotFoundError:
    return TableTagNotFoundError(f"Table tag not found: '{tag}' of '{table.object_id}'")


def tag_target(dataset: lance.LanceDataset | None, table: Table, tag: str) -> tuple[int, str | None]:
    """The version and branch that ``tag`` names (``dataset``: the table's, None when it is only declared);
    TableTagNotFound when there is no such tag."""
    tags = dataset.tags.list() if dataset is not None else {}
    if tag not in tags:
        raise tag_not_found(table, tag)
    return tags[tag]["version"], tags[tag]["branch"]
