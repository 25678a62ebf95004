"""OpenLineage conversion of what a Lance operator touched: tables as output datasets with their facets."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from airflow_provider_lance.namespace.identifiers import literal_path, uri_path
from airflow_provider_lance.namespace.storage import normalize_root


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
    Return the namespace root as the engine names it (``namespace.storage.normalize_root``: a plain path becomes
    a ``file://`` URI, ``#``, ``?``, ``%``, spaces and non-ASCII are percent-encoded, no trailing slash) without
    user info: the one root→URI rule of assets, lineage and the page.

    :param root: The namespace root (path or URI).
    """
    scheme, _, rest = normalize_root(str(root)).partition("://")
    netloc, slash, path = rest.partition("/")
    return f"{scheme.lower()}://{netloc.rpartition('@')[2]}{slash}{path}"


def table_uri(root: str, table_id: Sequence[str]) -> str:
    """
    Return the URI of the path ``<root>/<ns.table>`` (where an asset or a dataset of unknown location points).

    :param root: The namespace root (path or URI).
    :param table_id: The table identifier.
    """
    return f"{catalog_uri(root)}/{uri_path('.'.join(table_id))}"


def openlineage_location(location: str) -> tuple[str, str]:
    """
    Split a table location into an OpenLineage dataset ``(namespace, name)``, the name a literal path.

    Local files: ``("file", "/abs/path")``; object stores: ``("s3://bucket", "prefix/table")``.

    :param location: The table location (path or URI).
    """
    scheme, _, rest = catalog_uri(location).partition("://")
    netloc, _, path = rest.partition("/")
    if scheme == "file":
        return ("file://" + netloc if netloc else "file"), literal_path("/" + path)
    return f"{scheme}://{netloc}", literal_path(path)


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

    catalog = redact(catalog_uri(root)) if root else None
    outputs = []
    for table, location, version in touched:
        location = location or locate(table) or table_uri(root or "", table)
        ol_namespace, ol_name = openlineage_location(redact(location))
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
