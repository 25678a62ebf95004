"""OpenLineage conversion of what a Lance operator touched: tables as output datasets with their facets."""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple


class TouchedTable(NamedTuple):
    """
    A table an operator created, dropped or committed to.

    :param table_id: The table identifier.
    :param location: Its storage location when known (looked up otherwise).
    :param version: The version committed, if any.
    """

    table_id: list[str]
    location: str | None
    version: int | None


def catalog_uri(root: str) -> str:
    """
    Return the namespace root as a URI without credentials (user info, query and fragment dropped).

    A plain local path becomes a ``file://`` URI; the trailing slash is removed.

    :param root: The namespace root (path or URI).
    """
    parsed = urllib.parse.urlsplit(str(root))
    if len(parsed.scheme) <= 1:  # no scheme, or a Windows drive letter
        return Path(os.path.abspath(str(root))).as_uri().rstrip("/")
    netloc = parsed.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit((parsed.scheme, netloc, parsed.path.rstrip("/"), "", ""))


def openlineage_location(location: str) -> tuple[str, str]:
    """
    Split a table location into an OpenLineage dataset ``(namespace, name)``.

    Local files: ``("file", "/abs/path")``; object stores: ``("s3://bucket", "prefix/table")``.

    :param location: The table location (path or URI).
    """
    uri = catalog_uri(location)
    parsed = urllib.parse.urlsplit(uri)
    path = urllib.parse.unquote(parsed.path)
    if parsed.scheme == "file":
        return ("file://" + parsed.netloc if parsed.netloc else "file"), path
    return f"{parsed.scheme}://{parsed.netloc}", path.lstrip("/")


def operator_lineage(
    touched: Sequence[TouchedTable],
    lifecycle: str | None,
    *,
    root: str | None,
    redact: Callable[[str], str],
    locate: Callable[[list[str]], str | None],
) -> Any:
    """
    Build the ``OperatorLineage`` reporting ``touched`` tables as output datasets.

    A dataset is named after the table's storage location (namespace ``file`` or ``s3://bucket``,
    name the path) and carries the facets ``storage`` (layer ``lance``), ``catalog`` (the namespace
    root, without credentials), ``symlinks`` (the logical ``ns.table`` name in that catalog),
    ``lifecycleStateChange`` (CREATE, DROP or OVERWRITE) and ``version`` (committed version).

    :param touched: The tables the task touched.
    :param lifecycle: ``CREATE``, ``DROP``, ``OVERWRITE`` or None.
    :param root: The namespace root, when known.
    :param redact: Removes the connection's secrets from a text.
    :param locate: Returns the location of a table whose location is unknown (None when it cannot).
    :return: an ``OperatorLineage``, or None when OpenLineage is not installed or nothing was touched.
    """
    if not touched:
        return None
    try:
        from airflow.providers.common.compat.openlineage.facet import (
            Dataset,
            Identifier,
            LifecycleStateChange,
            LifecycleStateChangeDatasetFacet,
            SymlinksDatasetFacet,
        )
        from airflow.providers.openlineage.extractors import OperatorLineage
        from openlineage.client.generated.dataset_version_dataset import DatasetVersionDatasetFacet
        from openlineage.client.generated.storage_dataset import StorageDatasetFacet
    except ImportError:
        return None
    try:
        from openlineage.client.generated.catalog_dataset import CatalogDatasetFacet
    except ImportError:  # pragma: no cover - older openlineage-python without the catalog facet
        CatalogDatasetFacet = None

    from airflow_provider_lance.assets.lance import convert_asset_to_openlineage, create_asset

    catalog = redact(catalog_uri(root)) if root else None
    outputs = []
    for table, location, version in touched:
        location = location or locate(table)
        if location:
            ol_namespace, ol_name = openlineage_location(redact(location))
        else:
            fallback = convert_asset_to_openlineage(create_asset(root=root or "", table_id=table), None)
            ol_namespace, ol_name = fallback.namespace, fallback.name
        facets: dict[str, Any] = {"storage": StorageDatasetFacet(storageLayer="lance", fileFormat="lance")}
        if catalog:
            facets["symlinks"] = SymlinksDatasetFacet(
                identifiers=[Identifier(namespace=catalog, name=".".join(table), type="TABLE")]
            )
            if CatalogDatasetFacet is not None:
                facets["catalog"] = CatalogDatasetFacet(
                    framework="lance",
                    type="lance_namespace",
                    name=catalog,
                    metadataUri=catalog,
                    warehouseUri=catalog,
                )
        if version is not None:
            facets["version"] = DatasetVersionDatasetFacet(datasetVersion=str(version))
        if lifecycle:
            facets["lifecycleStateChange"] = LifecycleStateChangeDatasetFacet(
                lifecycleStateChange=getattr(LifecycleStateChange, lifecycle)
            )
        outputs.append(Dataset(namespace=ol_namespace, name=ol_name, facets=facets))
    return OperatorLineage(outputs=outputs)
