"""Opening a located table's Lance dataset."""

from __future__ import annotations

import lance

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
